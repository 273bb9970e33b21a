// Merging stores (`Store::merge_from`, `solbench db merge`): what a source adds,
// that a second merge adds nothing, conflicting results, runs and baselines
// carried over by content, and refusals (the store itself, a missing file).
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdlib>
#include <iterator>

#include "store_test_util.h"

namespace solbench::store {
namespace {

using namespace testing;

// A second store beside the fixture's, with its own environment and run.
struct Other {
  Other(const std::filesystem::path& file, const EnvironmentInfo& env_info,
        const std::string& command)
      : store(Store::open(file)) {
    env = store.put_environment(env_info);
    run = store.begin_run(RunInfo{command, "/data/set", env, ""});
  }
  std::string record(const Trace& t) {
    TraceExtras x;
    x.solution_hash = store.put_solution(solution_record(t.solution, t.definition));
    x.environment_hash = env;
    store.record_trace(run, t, x);
    return x.solution_hash;
  }
  Store store;
  std::string env;
  int64_t run = 0;
};

std::string count(const std::filesystem::path& db, const std::string& table) {
  return sql_value(db, "SELECT count(*) FROM " + table);
}

class MergeTest : public StoreTest {
 protected:
  std::filesystem::path other_db() const { return dir_.path() / "other.db"; }
};

TEST_F(MergeTest, AddsWhatTheTargetLacksAndASecondMergeAddsNothing) {
  record(make_trace("rmsnorm", "fast", "w1", Status::Passed, 0.5));
  {
    EnvironmentInfo e2 = h100_env();
    e2.hostname = "host-b";  // another node of the cluster
    Other o(other_db(), e2, "solbench run --shard 1/2");
    o.record(make_trace("rmsnorm", "fast", "w2", Status::Passed, 0.6));
    o.record(make_trace("rmsnorm", "slow", "w1", Status::IncorrectNumerical));
    o.store.put_baseline({{"defhash", "w2", "NVIDIA H100 80GB HBM3", "550", "2.4.0", "cupti"},
                          1.5, BaselineMethod::Eager, "2026-01-02T00:00:00.000Z",
                          "torch.compile failed on a call: E: x"});
    o.store.put_reference_time({{"defhash", "w2", "NVIDIA H100 80GB HBM3", "550", "2.4.0", "cupti"},
                                0.25, {{"median_ms", 0.25}}, "2026-01-02T00:00:00.000Z"});
  }
  const MergeResult r = store_->merge_from(other_db());
  EXPECT_EQ(r.traces, 2u);
  EXPECT_EQ(r.traces_present, 0u);
  EXPECT_EQ(r.environments, 1u);
  EXPECT_EQ(r.solutions, 1u);  // "slow"; "fast" is the same content in both
  EXPECT_EQ(r.runs, 1u);
  EXPECT_EQ(r.baselines, 1u);
  EXPECT_EQ(sql_value(db_, "SELECT reason FROM baselines"), "torch.compile failed on a call: E: x");
  EXPECT_EQ(r.reference_times, 1u);
  EXPECT_EQ(sql_value(db_, "SELECT t_ref_ms FROM reference_times"), "0.25");
  EXPECT_TRUE(r.conflicts.empty());
  EXPECT_EQ(store_->trace_count(), 3u);
  // The merged traces belong to the source's run, found by its command line.
  EXPECT_EQ(sql_value(db_, "SELECT count(*) FROM traces t JOIN runs r ON r.id = t.run "
                           "WHERE r.command_line = 'solbench run --shard 1/2'"),
            "2");
  // The store's queries see them: the source's trace of w2 is the best there.
  const auto best = store_->best(Filter{"rmsnorm", "fast", ""});
  ASSERT_EQ(best.size(), 2u);

  const std::string tables[] = {"traces", "runs", "environments", "solutions", "baselines",
                                 "reference_times"};
  std::vector<std::string> before;
  for (const auto& t : tables) before.push_back(count(db_, t));
  const MergeResult again = store_->merge_from(other_db());
  EXPECT_EQ(again.traces + again.runs + again.environments + again.solutions + again.baselines +
                again.reference_times,
            0u);
  EXPECT_EQ(again.traces_present, 2u);
  for (size_t i = 0; i < std::size(tables); ++i) EXPECT_EQ(count(db_, tables[i]), before[i]) << tables[i];
}

TEST_F(MergeTest, ADifferentStatusForTheSameKeyIsAConflictReportedEachTime) {
  record(make_trace("rmsnorm", "fast", "w1", Status::Passed, 0.5));
  {
    // The same environment (same host): the same resume key.
    Other o(other_db(), h100_env(), "solbench run elsewhere");
    o.record(make_trace("rmsnorm", "fast", "w1", Status::RuntimeError));
    o.record(make_trace("rmsnorm", "fast", "w2", Status::Passed, 0.4));
  }
  const MergeResult r = store_->merge_from(other_db());
  ASSERT_EQ(r.conflicts.size(), 1u);
  EXPECT_EQ(r.conflicts[0].kind, "result");
  EXPECT_HAS(r.conflicts[0].key, "w1");
  EXPECT_HAS(r.conflicts[0].detail, "PASSED");
  EXPECT_HAS(r.conflicts[0].detail, "RUNTIME_ERROR");
  EXPECT_EQ(r.traces, 2u);  // both kept: the store is a history
  const MergeResult again = store_->merge_from(other_db());
  EXPECT_EQ(again.traces, 0u);
  ASSERT_EQ(again.conflicts.size(), 1u);  // still there, reported again
  EXPECT_EQ(again.conflicts[0].key, r.conflicts[0].key);
}

TEST_F(MergeTest, SameStatusAgainIsNoConflict) {
  record(make_trace("rmsnorm", "fast", "w1", Status::Passed, 0.5));
  {
    Other o(other_db(), h100_env(), "solbench run again");
    Trace t = make_trace("rmsnorm", "fast", "w1", Status::Passed, 0.55);  // noise
    t.evaluation.timestamp = "2026-01-03T00:00:00.000Z";
    o.record(t);
  }
  const MergeResult r = store_->merge_from(other_db());
  EXPECT_TRUE(r.conflicts.empty());
  EXPECT_EQ(r.traces, 1u);
}

TEST_F(MergeTest, RefusesItselfAndMissingOrForeignFiles) {
  try {
    store_->merge_from(db_);
    ADD_FAILURE() << "merged a store into itself";
  } catch (const StoreError& e) {
    EXPECT_HAS(std::string(e.what()), "into itself");
  }
  const auto missing = dir_.path() / "nope.db";
  try {
    store_->merge_from(missing);
    ADD_FAILURE() << "merged a missing file";
  } catch (const StoreError& e) {
    EXPECT_HAS(std::string(e.what()), missing.string());
  }
  EXPECT_FALSE(std::filesystem::exists(missing));  // not created by the attempt
  const auto text = dir_.path() / "notes.db";
  solbench::testing::write(text, "not a database at all, just text that is long enough\n");
  EXPECT_THROW(store_->merge_from(text), StoreError);
  EXPECT_EQ(store_->trace_count(), 0u);
}

int sh(const std::string& cmd) {
  const int st = std::system(cmd.c_str());
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

TEST_F(MergeTest, CliMergesIntoANewFileAndExitsOneOnConflicts) {
  record(make_trace("rmsnorm", "fast", "w1", Status::Passed, 0.5));
  {
    Other o(other_db(), h100_env(), "solbench run other");
    o.record(make_trace("rmsnorm", "fast", "w2", Status::Passed, 0.5));
  }
  store_.reset();  // the CLI opens the file itself
  const auto out = dir_.path() / "sub" / "merged.db";
  const auto log = dir_.path() / "merge.out";
  const std::string bin = std::string("'") + SOLBENCH_BINARY + "'";
  ASSERT_EQ(sh(bin + " db merge '" + out.string() + "' '" + db_.string() + "' '" +
               other_db().string() + "' --json >'" + log.string() + "'"),
            0)
      << solbench::testing::read(log);
  const json doc = json::parse(solbench::testing::read(log));
  EXPECT_EQ(doc["traces"], 2);
  EXPECT_EQ(doc["sources"].size(), 2u);
  EXPECT_EQ(count(out, "traces"), "2");
  // Again: nothing added, still exit 0.
  ASSERT_EQ(sh(bin + " db merge '" + out.string() + "' '" + db_.string() + "' '" +
               other_db().string() + "' >'" + log.string() + "'"),
            0);
  EXPECT_HAS(solbench::testing::read(log), "0 trace(s) added, 1 already present");
  EXPECT_EQ(count(out, "traces"), "2");

  {
    Other o(dir_.path() / "conflict.db", h100_env(), "solbench run conflicting");
    o.record(make_trace("rmsnorm", "fast", "w2", Status::Timeout));
  }
  EXPECT_EQ(sh(bin + " db merge '" + out.string() + "' '" +
               (dir_.path() / "conflict.db").string() + "' >'" + log.string() + "'"),
            1);
  EXPECT_HAS(solbench::testing::read(log), "conflict (result)");
  // Usage: no input store.
  EXPECT_EQ(sh(bin + " db merge '" + out.string() + "' 2>/dev/null"), 2);
}

}  // namespace
}  // namespace solbench::store
