// Skips (schema version 3): recording a workload the worker skipped, looking
// them up for resume, the migration that adds the table, and merging them.
#include <gtest/gtest.h>

#include "store_test_util.h"

namespace solbench::store {
namespace {

using namespace testing;

constexpr const char* kOom = "out of GPU memory: CUDA out of memory. Tried to allocate 8.00 GiB";

class SkipsTest : public StoreTest {
 protected:
  // A skip of solution `name` (put first) on `uuid` in `env` (the fixture's by default).
  Skip skip(const std::string& name, const std::string& uuid, const std::string& env = "",
            const std::string& recorded = "") {
    Skip s;
    s.solution_hash = store_->put_solution(solution_record(name, "moe"));
    s.environment_hash = env.empty() ? env_ : env;
    s.definition = "moe";
    s.workload_uuid = uuid;
    s.reason = kOom;
    s.recorded = recorded;
    return s;
  }
};

TEST_F(SkipsTest, ASkipRoundTripsAndIsLookedUpPerSolutionWorkloadAndEnvironment) {
  EXPECT_EQ(store_->skip_count(), 0u);
  const Skip a = skip("fused", "w1", "", "2026-01-01T00:00:00.000Z");
  store_->record_skip(run_, a);
  EnvironmentInfo other_info = h100_env();
  other_info.driver = "560.0";
  const std::string other = store_->put_environment(other_info);
  store_->record_skip(run_, skip("fused", "w2", other));
  store_->record_skip(run_, skip("other_solution", "w1"));
  EXPECT_EQ(store_->skip_count(), 3u);

  const auto here = store_->skips(a.solution_hash, {"w1", "w2", "w3"}, env_);
  ASSERT_EQ(here.size(), 1u);
  Skip expected = a;
  expected.run = run_;
  EXPECT_EQ(here[0], expected);  // every field as recorded, the run filled in

  const auto there = store_->skips(a.solution_hash, {"w1", "w2"}, other);
  ASSERT_EQ(there.size(), 1u);
  EXPECT_EQ(there[0].workload_uuid, "w2");
  EXPECT_FALSE(there[0].recorded.empty());  // "now" when not given

  // "": any environment, in commit order.
  const auto anywhere = store_->skips(a.solution_hash, {"w2", "w1"}, "");
  ASSERT_EQ(anywhere.size(), 2u);
  EXPECT_EQ(anywhere[0].workload_uuid, "w1");
  EXPECT_EQ(anywhere[1].workload_uuid, "w2");
  // Workloads not asked for are not returned.
  EXPECT_TRUE(store_->skips(a.solution_hash, {"w3"}, "").empty());
  // A skip is not a trace: resume's trace look-up does not see it.
  EXPECT_FALSE(store_->has_result(a.solution_hash, "w1", env_));
  EXPECT_EQ(store_->trace_count(), 0u);
}

TEST_F(SkipsTest, EverySkipIsKeptOldestFirst) {
  Skip s = skip("fused", "w1");
  s.reason = std::string(kOom) + " (first)";
  store_->record_skip(run_, s);
  s.reason = std::string(kOom) + " (second)";
  store_->record_skip(run_, s);
  const auto rows = store_->skips(s.solution_hash, {"w1"}, env_);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_HAS(rows[0].reason, "(first)");
  EXPECT_HAS(rows[1].reason, "(second)");
}

TEST_F(SkipsTest, ASkipWithoutItsKeysOrReferencesIsRefusedNamingWhatIsMissing) {
  auto message = [&](int64_t run, const Skip& s) -> std::string {
    try {
      store_->record_skip(run, s);
    } catch (const StoreError& e) {
      return e.what();
    }
    ADD_FAILURE() << "recorded " << s.workload_uuid;
    return "";
  };
  Skip s = skip("fused", "w1");
  Skip no_reason = s;
  no_reason.reason = "";
  std::string msg = message(run_, no_reason);
  EXPECT_HAS(msg, db_.string());
  EXPECT_HAS(msg, "reason");
  Skip no_uuid = s;
  no_uuid.workload_uuid = "";
  EXPECT_HAS(message(run_, no_uuid), "workload_uuid is empty");
  Skip no_env = s;
  no_env.environment_hash = "";
  EXPECT_HAS(message(run_, no_env), "environment_hash is empty");
  Skip unknown_sol = s;
  unknown_sol.solution_hash = std::string(64, 'a');
  EXPECT_HAS(message(run_, unknown_sol), "solution " + unknown_sol.solution_hash + " (put_solution first)");
  EXPECT_HAS(message(run_ + 5, s), "run " + std::to_string(run_ + 5) + " (begin_run first)");
  EXPECT_EQ(store_->skip_count(), 0u);
}

// A version 2 store (before skips) opens as the current version with an empty
// skips table, the same table a new store has, and keeps its traces.
TEST(StoreSkipsSchema, AVersion2StoreGainsTheSkipsTable) {
  TempDir dir;
  const auto db = dir.path() / "v2.db";
  {
    Store s = Store::open(db);
    const std::string env = s.put_environment(h100_env());
    const int64_t run = s.begin_run(RunInfo{"old", "", env, ""});
    TraceExtras x;
    x.solution_hash = s.put_solution(solution_record("fused", "moe"));
    x.environment_hash = env;
    s.record_trace(run, make_trace("moe", "fused", "w1", Status::Passed, 0.5), x);
  }
  // Back to version 2, as the solbench before skips wrote it.
  sql_value(db, "DROP TABLE skips");
  sql_value(db, "DROP TABLE reference_times");  // version 4's
  sql_value(db, "UPDATE meta SET value = '2' WHERE key = 'schema_version'");
  ASSERT_EQ(sql_value(db, "SELECT count(*) FROM sqlite_schema WHERE name = 'skips'"), "0");

  Store s = Store::open(db);
  EXPECT_EQ(s.schema_version(), kSchemaVersion);
  EXPECT_EQ(sql_value(db, "SELECT value FROM meta WHERE key = 'schema_version'"),
            std::to_string(kSchemaVersion));
  EXPECT_EQ(s.trace_count(), 1u);
  EXPECT_EQ(s.skip_count(), 0u);
  const std::string env = s.put_environment(h100_env());
  const int64_t run = s.begin_run(RunInfo{"new", "", env, ""});
  Skip k;
  k.solution_hash = s.put_solution(solution_record("fused", "moe"));
  k.environment_hash = env;
  k.definition = "moe";
  k.workload_uuid = "w2";
  k.reason = kOom;
  s.record_skip(run, k);
  EXPECT_EQ(s.skips(k.solution_hash, {"w2"}, env).size(), 1u);

  const auto fresh = dir.path() / "fresh.db";
  Store::open(fresh);
  for (const char* name : {"skips", "skips_resume"})
    EXPECT_EQ(sql_value(fresh, std::string("SELECT sql FROM sqlite_schema WHERE name = '") + name + "'"),
              sql_value(db, std::string("SELECT sql FROM sqlite_schema WHERE name = '") + name + "'"))
        << name;
}

TEST_F(SkipsTest, MergeCarriesSkipsWithTheirRunAndAddsNothingTheSecondTime) {
  const auto other = dir_.path() / "shard.db";
  std::string sol;
  {
    Store o = Store::open(other);
    EnvironmentInfo e2 = h100_env();
    e2.hostname = "host-b";
    const std::string env = o.put_environment(e2);
    const int64_t run = o.begin_run(RunInfo{"solbench run --shard 1/2", "/data/set", env, ""});
    Skip k;
    k.solution_hash = sol = o.put_solution(solution_record("fused", "moe"));
    k.environment_hash = env;
    k.definition = "moe";
    k.workload_uuid = "w9";
    k.reason = kOom;
    k.recorded = "2026-02-01T00:00:00.000Z";
    o.record_skip(run, k);
  }
  const MergeResult r = store_->merge_from(other);
  EXPECT_EQ(r.skips, 1u);
  EXPECT_EQ(r.runs, 1u);
  EXPECT_TRUE(r.conflicts.empty());
  const auto rows = store_->skips(sol, {"w9"}, "");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].reason, kOom);
  EXPECT_EQ(rows[0].recorded, "2026-02-01T00:00:00.000Z");
  // It belongs to the source's run, found by its command line.
  EXPECT_EQ(sql_value(db_, "SELECT r.command_line FROM skips k JOIN runs r ON r.id = k.run"),
            "solbench run --shard 1/2");
  const MergeResult again = store_->merge_from(other);
  EXPECT_EQ(again.skips, 0u);
  EXPECT_EQ(store_->skip_count(), 1u);
}

}  // namespace
}  // namespace solbench::store
