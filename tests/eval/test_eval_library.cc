// The evaluation library's typed edges (src/eval/): the request's settings as a
// child's flags, the report's document read back, the reference's identity, and
// requests refused before anything runs.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/problem.h"
#include "eval/evaluate.h"
#include "eval/report.h"
#include "eval/request.h"
#include "store/store.h"

namespace solbench::eval {
namespace {

using V = std::vector<std::string>;

const std::string kProblem = std::string(SOLBENCH_SOURCE_DIR) + "/problems/001_rmsnorm_llama3_8b_h4096";

TEST(EvalSettings, FlagsCarryOnlyWhatDiffersFromTheDefaults) {
  EXPECT_EQ(Settings{}.flags(), V{});
  Settings s;
  s.rounds = 1;
  s.time_budget_ms = 20;
  s.no_timing = true;
  s.arch = "h100";
  EXPECT_EQ(s.flags(), (V{"--rounds", "1", "--time-budget-ms", "20", "--no-timing", "--arch", "h100"}));
  s = Settings{};
  s.seed = 7;
  s.timer = "events";
  s.timeout_s = 2.5;
  EXPECT_EQ(s.flags(), (V{"--timeout", "2.5", "--seed", "7", "--timer", "events"}));
}

TEST(EvalSettings, DeadlineGrowsWithWorkloadsAndTimeouts) {
  Settings s;
  s.timeout_s = 10;
  s.compile_timeout_s = 5;
  EXPECT_GT(s.deadline(3).count(), 5 + 3 * 10);
  EXPECT_GT(s.deadline(3).count(), s.deadline(1).count());
  EXPECT_EQ(s.deadline(0).count(), s.deadline(1).count());
}

Trace passed_trace(const std::string& uuid) {
  Trace t;
  t.definition = "d";
  t.solution = "s";
  t.workload = {{"uuid", uuid}, {"axes", {{"n", 4}}}, {"inputs", json::object()}};
  t.evaluation.status = Status::Passed;
  t.evaluation.correctness = Correctness{};
  Performance p;
  p.latency_ms = 2;
  p.reference_latency_ms = 8;
  p.speedup_factor = 4;
  t.evaluation.performance = p;
  t.evaluation.environment.hardware = "h";
  t.evaluation.timestamp = "2026-11-25T00:00:00Z";
  return t;
}

TEST(EvalReport, DocumentReadsBack) {
  Report r;
  r.definition = "d";
  r.solution = "s";
  r.device = "cpu";
  r.environment = {{"hardware", "h"}, {"torch", "2.11"}};
  WorkloadReport a;
  a.uuid = "u1";
  a.trace = passed_trace("u1");
  WorkloadReport b;
  b.uuid = "u2";
  b.skipped = true;
  b.skip_reason = "missing blob: x.safetensors";
  r.workloads = {a, b};
  r.problem_score.mean = 0.5;
  r.problem_score.scored = 1;
  r.eager.push_back({"u1", 3.0, "torch.compile unavailable"});
  r.db = {{"path", "/tmp/x.db"}, {"recorded", 1}, {"errors", 0}, {"run", 3}};
  const json doc = r.to_json();
  EXPECT_EQ(doc["summary"]["statuses"]["PASSED"], 1);
  EXPECT_EQ(doc["summary"]["skipped"]["missing blob"], 1);
  EXPECT_DOUBLE_EQ(doc["summary"]["geomean_speedup"].get<double>(), 4.0);
  const Report back = Report::from_json(doc);
  ASSERT_EQ(back.workloads.size(), 2u);
  ASSERT_TRUE(back.workloads[0].trace);
  EXPECT_EQ(back.workloads[0].uuid, "u1");
  EXPECT_TRUE(back.workloads[1].skipped);
  EXPECT_EQ(back.workloads[1].skip_reason, "missing blob: x.safetensors");
  EXPECT_EQ(back.environment, r.environment);
  EXPECT_EQ(back.db, r.db);
  ASSERT_TRUE(back.problem_score.mean);
  EXPECT_DOUBLE_EQ(*back.problem_score.mean, 0.5);
  ASSERT_EQ(back.eager.size(), 1u);
  EXPECT_TRUE(back.all_passed());
  // What the document holds survives a second round trip unchanged.
  json again = back.to_json();
  json first = doc;
  EXPECT_EQ(again, first);
}

TEST(EvalReport, RefusesWhatIsNotAReport) {
  EXPECT_THROW(Report::from_json(json::array()), std::runtime_error);
  EXPECT_THROW(Report::from_json({{"results", 3}}), std::runtime_error);
  // A result whose trace does not parse is unreported, not fatal.
  const Report r = Report::from_json({{"results", {{{"workload", {{"uuid", "u"}}}}}}});
  ASSERT_EQ(r.workloads.size(), 1u);
  EXPECT_FALSE(r.workloads[0].trace);
  EXPECT_FALSE(r.workloads[0].skipped);
  EXPECT_FALSE(r.all_passed());
}

TEST(EvalReference, OneIdentityForTheReferenceAsASolution) {
  Diagnostics d;
  const Problem p = load_problem(problem_paths(kProblem), d);
  ASSERT_TRUE(d.empty());
  const store::SolutionRecord rec = reference_solution_record(p.definition);
  EXPECT_EQ(rec.name, p.definition.name + "/reference");
  EXPECT_EQ(rec.definition, p.definition.name);
  EXPECT_EQ(rec.content["solbench_reference_of"]["name"], p.definition.name);
  EXPECT_EQ(rec.hash(), reference_solution_record(p.definition).hash());
}

int exit_kind(const Request& r) {
  Observer quiet;
  try {
    (void)evaluate(r, quiet);
  } catch (const RequestError& e) {
    return e.usage ? 2 : 1;
  }
  return 0;
}

TEST(EvalRequest, RefusedBeforeAnythingRuns) {
  Request r;
  r.problem_dir = kProblem;
  r.reference = true;
  r.no_db = true;
  r.device = "gpu0";
  EXPECT_EQ(exit_kind(r), 2);
  r.device = "cpu";
  r.settings.timer = "events";
  EXPECT_EQ(exit_kind(r), 2);
  r.settings.timer = "auto";
  r.settings.arch = "h300";
  EXPECT_EQ(exit_kind(r), 2);
  r.settings.arch.clear();
  r.workloads.wanted = {"no-such-workload"};
  EXPECT_EQ(exit_kind(r), 2);  // asked for what is not there: a usage error
  // A solution for another problem is a usage error, never a stored result.
  r.workloads.wanted.clear();
  r.reference = false;
  r.solution = std::string(SOLBENCH_SOURCE_DIR) +
               "/problems/005_softmax_vocab_llama3_8b/solutions/cuda_softmax.json";
  EXPECT_EQ(exit_kind(r), 2);
}

}  // namespace
}  // namespace solbench::eval
