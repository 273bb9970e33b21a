// Queries over hand-made traces: leaderboard and best ordering, history
// filters, and export read back by load_traces.
#include <fstream>
#include <sstream>

#include "store_test_util.h"

namespace solbench::store {
namespace {

namespace fs = std::filesystem;
using testing::make_trace;
using testing::solution_record;

// gemm on the H100 (two workloads), gemm on a B200, and rmsnorm on the H100.
class QueryTest : public testing::StoreTest {
 protected:
  void SetUp() override {
    StoreTest::SetUp();
    EnvironmentInfo b200 = testing::h100_env();
    b200.gpu_model = "NVIDIA B200";
    b200_ = store_->put_environment(b200);
    // Mean scores: A 0.75; D, B and C 0.5 (latency decides: 0.1, 0.5, 2.0);
    // F 0.25 (its latest w1 trace counts, not its better first one); H and U
    // correct but unscored (H faster); X last: it passed nothing (a wrong result).
    add("gemm", "A", "w1", Status::Passed, 1.0, 0.75);
    add("gemm", "A", "w2", Status::Passed, 1.0, 0.75);
    add("gemm", "B", "w1", Status::Passed, 0.5, 0.5);
    add("gemm", "B", "w2", Status::Passed, 0.5, 0.5);
    add("gemm", "C", "w1", Status::Passed, 2.0, 0.75);
    add("gemm", "C", "w2", Status::Passed, 2.0, 0.25);
    add("gemm", "D", "w1", Status::Passed, 0.1, 1.0);
    add("gemm", "D", "w2", Status::RuntimeError, 0, std::nullopt);
    add("gemm", "F", "w1", Status::Passed, 0.2, 1.0);
    add("gemm", "F", "w1", Status::Passed, 0.3, 0.25);
    add("gemm", "F", "w2", Status::Passed, 0.3, 0.25);
    add("gemm", "H", "w1", Status::Passed, 0.05, std::nullopt);
    add("gemm", "H", "w2", Status::Passed, 0.05, std::nullopt);
    // An untimed PASSED (latency 0) and a wrong result do not compete for "best".
    add("gemm", "U", "w2", Status::Passed, 0, std::nullopt);
    add("gemm", "X", "w2", Status::IncorrectNumerical, 0, std::nullopt);
    add("gemm", "A", "w1", Status::Passed, 0.01, 0.9, b200_);
    add("rmsnorm", "G", "r1", Status::Passed, 0.3, 0.6);
  }

  void add(const std::string& def, const std::string& sol, const std::string& uuid, Status st,
           double latency, std::optional<double> score, const std::string& env = "") {
    Trace t = make_trace(def, sol, uuid, st, latency);
    // Distinct, increasing timestamps: history is oldest first.
    t.evaluation.timestamp = fmt_time(++n_);
    TraceExtras x;
    x.solution_hash = store_->put_solution(solution_record(sol, def));
    x.environment_hash = env.empty() ? env_ : env;
    x.sol_score = score;
    store_->record_trace(run_, t, x);
  }

  static std::string fmt_time(int i) {
    char buf[40];
    std::snprintf(buf, sizeof buf, "2026-01-01T00:00:%02d.000Z", i);
    return buf;
  }

  std::string b200_;
  int n_ = 0;
};

std::string ranking(const std::vector<LeaderboardEntry>& rows) {
  std::string s;
  for (const auto& e : rows)
    s += (s.empty() ? "" : " ") + e.definition + "/" + e.gpu_model.substr(7, 4) + "/" +
         std::to_string(e.rank) + e.solution;
  return s;
}

TEST_F(QueryTest, LeaderboardRanksByMeanScoreThenLatencyPerDefinitionAndGpu) {
  const std::vector<LeaderboardEntry> rows = store_->leaderboard(Filter{});
  EXPECT_EQ(ranking(rows),
            "gemm/B200/1A "
            "gemm/H100/1A gemm/H100/2D gemm/H100/3B gemm/H100/4C gemm/H100/5F gemm/H100/6H "
            "gemm/H100/7U gemm/H100/8X "
            "rmsnorm/H100/1G");
  const auto find = [&](const std::string& gpu, const std::string& sol) {
    for (const auto& e : rows)
      if (e.gpu_model == gpu && e.solution == sol && e.definition == "gemm") return e;
    ADD_FAILURE() << sol << " missing";
    return LeaderboardEntry{};
  };
  const LeaderboardEntry a = find("NVIDIA H100 80GB HBM3", "A");
  EXPECT_EQ(a.workloads, 2);
  EXPECT_EQ(a.passed, 2);
  EXPECT_EQ(a.unscored, 0);
  EXPECT_EQ(a.mean_score, 0.75);
  EXPECT_EQ(a.mean_latency_ms, 1.0);
  EXPECT_EQ(a.solution_hash, solution_record("A", "gemm").hash());
  const LeaderboardEntry d = find("NVIDIA H100 80GB HBM3", "D");
  EXPECT_EQ(d.passed, 1);
  EXPECT_EQ(d.mean_score, 0.5);  // the runtime error scores 0
  EXPECT_EQ(d.mean_latency_ms, 0.1);
  const LeaderboardEntry f = find("NVIDIA H100 80GB HBM3", "F");
  EXPECT_EQ(f.workloads, 2);  // w1 counted once, with its latest trace
  EXPECT_EQ(f.mean_score, 0.25);
  EXPECT_DOUBLE_EQ(*f.mean_latency_ms, 0.3);
  const LeaderboardEntry h = find("NVIDIA H100 80GB HBM3", "H");
  EXPECT_EQ(h.unscored, 2);
  EXPECT_FALSE(h.mean_score);
  const LeaderboardEntry u = find("NVIDIA H100 80GB HBM3", "U");
  EXPECT_FALSE(u.mean_latency_ms);  // untimed
  // A B200 trace is not mixed into the H100 ranking.
  EXPECT_EQ(find("NVIDIA B200", "A").mean_score, 0.9);
}

TEST_F(QueryTest, LeaderboardFiltersKeepTheRanks) {
  Filter f;
  f.solution = "B";
  EXPECT_EQ(ranking(store_->leaderboard(f)), "gemm/H100/3B");
  f = Filter{};
  f.definition = "rmsnorm";
  EXPECT_EQ(ranking(store_->leaderboard(f)), "rmsnorm/H100/1G");
  f = Filter{};
  f.gpu_model = "NVIDIA B200";
  EXPECT_EQ(ranking(store_->leaderboard(f)), "gemm/B200/1A");
  f.definition = "nope";
  EXPECT_TRUE(store_->leaderboard(f).empty());
}

std::string best_text(const std::vector<StoredTrace>& rows) {
  std::string s;
  for (const auto& t : rows)
    s += (s.empty() ? "" : " ") + t.definition + "/" + t.gpu_model.substr(7, 4) + "/" +
         t.workload_uuid + "=" + t.solution;
  return s;
}

TEST_F(QueryTest, BestIsTheFastestTimedPassedTracePerWorkloadAndGpu) {
  const std::vector<StoredTrace> rows = store_->best(Filter{});
  EXPECT_EQ(best_text(rows), "gemm/B200/w1=A gemm/H100/w1=H gemm/H100/w2=H rmsnorm/H100/r1=G");
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[1].latency_ms, 0.05);
  EXPECT_EQ(rows[1].status, Status::Passed);
  EXPECT_EQ(rows[1].trace().solution, "H");
  // Among one solution's traces: its own fastest (F's 0.2 on w1, not its latest 0.3).
  Filter f;
  f.solution = "F";
  const auto fr = store_->best(f);
  EXPECT_EQ(best_text(fr), "gemm/H100/w1=F gemm/H100/w2=F");
  ASSERT_EQ(fr.size(), 2u);
  EXPECT_EQ(fr[0].latency_ms, 0.2);
  // Solutions with no timed PASSED trace have no best.
  f.solution = "X";
  EXPECT_TRUE(store_->best(f).empty());
  f.solution = "U";
  EXPECT_TRUE(store_->best(f).empty());
}

TEST_F(QueryTest, HistoryIsOldestFirstAndFiltered) {
  Filter f;
  f.solution = "F";
  const auto h = store_->history(f);
  ASSERT_EQ(h.size(), 3u);
  EXPECT_EQ(h[0].latency_ms, 0.2);
  EXPECT_EQ(h[1].latency_ms, 0.3);
  EXPECT_LT(h[0].recorded, h[1].recorded);
  f = Filter{};
  f.definition = "gemm";
  EXPECT_EQ(store_->history(f).size(), 16u);
  f.definition = "rmsnorm";
  EXPECT_EQ(store_->history(f).size(), 1u);
  EXPECT_EQ(store_->history(Filter{}).size(), 17u);
  // Ordered by the traces' own timestamps, not by insertion.
  Trace early = make_trace("rmsnorm", "G", "r0", Status::Passed, 0.4);
  early.evaluation.timestamp = "2025-12-31T23:59:59.000Z";
  record(early, 0.5);
  const auto all = store_->history(f);
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].workload_uuid, "r0");
}

TEST_F(QueryTest, ExportIsReadBackByLoadTracesFieldForField) {
  // Traces with everything the public format and solbench's extensions carry.
  std::vector<Trace> originals;
  Trace rich = make_trace("rmsnorm", "rich", "e1", Status::Passed, 0.125, 0.5);
  rich.evaluation.log = "line one\nline \"two\" \xc3\xa9\n";
  rich.evaluation.extra["solbench_timing"] = {{"median_ms", 0.125}, {"samples", 37}};
  rich.evaluation.environment.extra["driver"] = "550.54.15";
  rich.extra["run_note"] = json::array({1, "two", nullptr});
  originals.push_back(rich);
  originals.push_back(make_trace("rmsnorm", "rich", "e2", Status::IncorrectNumerical));
  originals.push_back(make_trace("rmsnorm", "rich", "e3", Status::Timeout));
  for (auto& t : originals) {
    t.evaluation.timestamp = "2027-01-01T00:00:00.000Z";  // after every other trace
    record(t, t.evaluation.status == Status::Passed ? std::optional(0.5) : std::nullopt);
  }
  Filter f;
  f.solution = "rich";
  std::ostringstream out;
  EXPECT_EQ(store_->export_jsonl(f, out), 3u);
  const fs::path file = dir_.path() / "export.jsonl";
  std::ofstream(file) << out.str();
  Diagnostics diags;
  const std::vector<Trace> back = load_traces(file, diags);
  ASSERT_TRUE(diags.empty()) << diags.str();
  ASSERT_EQ(back.size(), originals.size());
  for (size_t i = 0; i < back.size(); ++i) EXPECT_EQ(back[i], originals[i]) << i;
  // The whole store exports too, every line a trace.
  std::ostringstream everything;
  EXPECT_EQ(store_->export_jsonl(Filter{}, everything), 20u);
  std::ofstream(file) << everything.str();
  EXPECT_EQ(load_traces(file, diags).size(), 20u);
  EXPECT_TRUE(diags.empty()) << diags.str();
}

}  // namespace
}  // namespace solbench::store
