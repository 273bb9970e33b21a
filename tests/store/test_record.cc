// Recording: environments, solutions, runs, traces, resume look-ups, baselines.
#include <unistd.h>

#include <cmath>

#include "store_test_util.h"

namespace solbench::store {
namespace {

using testing::make_trace;
using testing::solution_record;
using testing::sql_value;
using testing::StoreTest;

TEST_F(StoreTest, RecordedTracesComeBackWithTheirColumnsAndTheirTrace) {
  const Trace passed = make_trace("rmsnorm", "fast", "u1", Status::Passed, 0.25, 1.0);
  const Trace wrong = make_trace("rmsnorm", "fast", "u2", Status::IncorrectNumerical);
  const Trace broken = make_trace("rmsnorm", "fast", "u3", Status::CompileError);
  const std::string hash = record(passed, 0.75);
  record(wrong);
  record(broken);
  const std::vector<StoredTrace> h = store_->history(Filter{});
  ASSERT_EQ(h.size(), 3u);
  EXPECT_EQ(h[0].workload_uuid, "u1");
  EXPECT_EQ(h[0].definition, "rmsnorm");
  EXPECT_EQ(h[0].solution, "fast");
  EXPECT_EQ(h[0].solution_hash, hash);
  EXPECT_EQ(h[0].environment_hash, env_);
  EXPECT_EQ(h[0].gpu_model, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(h[0].run, run_);
  EXPECT_EQ(h[0].status, Status::Passed);
  EXPECT_EQ(h[0].latency_ms, 0.25);
  EXPECT_EQ(h[0].reference_latency_ms, 1.0);
  EXPECT_EQ(h[0].t_sol_ms, 0.01);
  EXPECT_EQ(h[0].t_b_ms, 1.0);
  EXPECT_EQ(h[0].sol_score, 0.75);
  EXPECT_EQ(h[0].recorded, passed.evaluation.timestamp);
  EXPECT_EQ(h[0].trace(), passed);
  EXPECT_EQ(h[1].status, Status::IncorrectNumerical);
  EXPECT_FALSE(h[1].latency_ms);
  EXPECT_FALSE(h[1].sol_score);
  EXPECT_EQ(h[1].trace(), wrong);
  EXPECT_EQ(h[2].status, Status::CompileError);
  EXPECT_EQ(h[2].trace(), broken);
  EXPECT_EQ(store_->trace_count(), 3u);
}

TEST_F(StoreTest, ExtrasAreKeptBesideTheTrace) {
  const Trace t = make_trace("d", "s", "u1", Status::Passed, 0.5);
  TraceExtras x;
  x.solution_hash = store_->put_solution(solution_record("s", "d"));
  x.environment_hash = env_;
  x.extras = {{"sol_bottleneck", "dram"}, {"baseline_method", "torch.compile"}};
  store_->record_trace(run_, t, x);
  const auto h = store_->history(Filter{});
  ASSERT_EQ(h.size(), 1u);
  EXPECT_EQ(h[0].extras, x.extras);
  // Extras are the store's, not the public trace's.
  EXPECT_EQ(h[0].trace(), t);
}

TEST_F(StoreTest, ATraceWithoutAWorkloadUuidIsRefusedByName) {
  Trace t = make_trace("rmsnorm", "fast", "u1", Status::Passed, 0.5);
  t.workload.erase("uuid");
  TraceExtras x;
  x.solution_hash = store_->put_solution(solution_record("fast", "rmsnorm"));
  x.environment_hash = env_;
  try {
    store_->record_trace(run_, t, x);
    FAIL() << "expected a StoreError";
  } catch (const StoreError& e) {
    EXPECT_HAS(e.what(), db_.string());
    EXPECT_HAS(e.what(), "rmsnorm / fast");
    EXPECT_HAS(e.what(), "workload.uuid is missing");
  }
  EXPECT_EQ(store_->trace_count(), 0u);
}

TEST_F(StoreTest, ResumeFindsExactlyTheRecordedSolutionWorkloadAndEnvironment) {
  const std::string hash = record(make_trace("d", "s", "u1", Status::Timeout, 0));
  EXPECT_TRUE(store_->has_result(hash, "u1", env_));
  EXPECT_FALSE(store_->has_result(hash, "u2", env_));  // another workload
  EnvironmentInfo other = testing::h100_env();
  other.driver = "560.28.03";
  const std::string other_env = store_->put_environment(other);
  EXPECT_FALSE(store_->has_result(hash, "u1", other_env));  // another driver
  const std::string v2 = store_->put_solution(solution_record("s", "d", "v2"));
  EXPECT_NE(v2, hash);
  EXPECT_FALSE(store_->has_result(v2, "u1", env_));  // the solution changed
  // A new Store on the same file (a resumed run) sees it too.
  Store reopened = Store::open(db_);
  EXPECT_TRUE(reopened.has_result(hash, "u1", env_));
}

TEST_F(StoreTest, EnvironmentsAndSolutionsAreStoredOncePerContent) {
  EXPECT_EQ(store_->put_environment(testing::h100_env()), env_);
  EXPECT_EQ(sql_value(db_, "SELECT count(*) FROM environments"), "1");
  const std::string a = store_->put_solution(solution_record("s", "d"));
  EXPECT_EQ(store_->put_solution(solution_record("s", "d")), a);
  EXPECT_EQ(a.size(), 64u);
  EXPECT_EQ(sql_value(db_, "SELECT count(*) FROM solutions"), "1");
  EXPECT_EQ(sql_value(db_, "SELECT json FROM solutions"), solution_record("s", "d").content.dump());
  // Every field of an environment is part of its key.
  EnvironmentInfo e = testing::h100_env();
  for (std::string EnvironmentInfo::*f :
       {&EnvironmentInfo::gpu_model, &EnvironmentInfo::driver, &EnvironmentInfo::cuda,
        &EnvironmentInfo::torch, &EnvironmentInfo::timer, &EnvironmentInfo::hostname}) {
    EnvironmentInfo changed = e;
    changed.*f += "x";
    EXPECT_NE(changed.hash(), e.hash());
  }
  EXPECT_EQ(sql_value(db_, "SELECT gpu_model || '|' || driver || '|' || cuda || '|' || torch || "
                           "'|' || timer || '|' || hostname FROM environments"),
            "NVIDIA H100 80GB HBM3|550.54.15|12.4|2.4.0|cupti|host-a");
}

TEST_F(StoreTest, RunsRecordTheirCommandLineEnvironmentAndEnd) {
  const int64_t run = store_->begin_run(RunInfo{"solbench run L1/", "L1/", "", "2026-02-03T04:05:06Z"});
  const std::string where = " FROM runs WHERE id = " + std::to_string(run);
  EXPECT_EQ(sql_value(db_, "SELECT command_line || '|' || dataset_path || '|' || started" + where),
            "solbench run L1/|L1/|2026-02-03T04:05:06Z");
  EXPECT_EQ(sql_value(db_, "SELECT environment IS NULL" + where), "1");
  EXPECT_EQ(sql_value(db_, "SELECT finished IS NULL" + where), "1");
  store_->set_run_environment(run, env_);
  store_->finish_run(run);
  EXPECT_EQ(sql_value(db_, "SELECT environment" + where), env_);
  EXPECT_EQ(sql_value(db_, "SELECT finished IS NOT NULL" + where), "1");
  try {
    store_->begin_run(RunInfo{"x", "", std::string(64, 'f'), ""});
    FAIL() << "expected a StoreError";
  } catch (const StoreError& e) {
    EXPECT_HAS(e.what(), "put_environment first");
  }
}

TEST(StoreEnvironment, IsReadFromATraceWithThisHostsName) {
  Trace t = testing::make_trace("d", "s", "u1", Status::Passed, 0.5);
  t.evaluation.environment.extra["driver"] = "550.54.15";
  const EnvironmentInfo e = environment_from_trace(t);
  EXPECT_EQ(e.gpu_model, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(e.torch, "2.4.0");
  EXPECT_EQ(e.cuda, "12.4");
  EXPECT_EQ(e.driver, "550.54.15");
  EXPECT_EQ(e.timer, "cupti");
  char host[256] = {};
  ASSERT_EQ(::gethostname(host, sizeof host - 1), 0);
  EXPECT_EQ(e.hostname, host);
}

TEST_F(StoreTest, BaselinesKeepEveryMeasurementAndReturnTheLatest) {
  BaselineKey key{std::string(64, 'd'), "u1", "NVIDIA H100 80GB HBM3", "550.54.15", "2.4.0", "cupti"};
  EXPECT_FALSE(store_->baseline(key));
  const Baseline eager{key, 2.0, BaselineMethod::Eager, "2026-01-01T00:00:00Z",
                       "torch.compile failed on a call: RuntimeError: x"};
  store_->put_baseline(eager);
  EXPECT_EQ(*store_->baseline(key), eager);  // the reason comes back with it
  store_->put_baseline(Baseline{key, 1.5, BaselineMethod::TorchCompile, "2026-01-02T00:00:00Z", ""});
  const std::optional<Baseline> b = store_->baseline(key);
  ASSERT_TRUE(b);
  EXPECT_EQ(*b, (Baseline{key, 1.5, BaselineMethod::TorchCompile, "2026-01-02T00:00:00Z", ""}));
  EXPECT_EQ(sql_value(db_, "SELECT count(*) FROM baselines"), "2");
  EXPECT_EQ(sql_value(db_, "SELECT group_concat(method, ',') FROM baselines"), "eager,torch.compile");
  // Each part of the key matters.
  for (std::string BaselineKey::*f : {&BaselineKey::definition_hash, &BaselineKey::workload_uuid,
                                      &BaselineKey::gpu_model, &BaselineKey::driver,
                                      &BaselineKey::torch, &BaselineKey::timer}) {
    BaselineKey other = key;
    other.*f += "x";
    EXPECT_FALSE(store_->baseline(other));
  }
  // An empty recorded time means now.
  BaselineKey k2 = key;
  k2.workload_uuid = "u2";
  store_->put_baseline(Baseline{k2, 0.5, BaselineMethod::Eager, "", "why"});
  EXPECT_EQ(store_->baseline(k2)->recorded.substr(0, 2), "20");
}

TEST_F(StoreTest, ABaselineMustBeAPositiveTime) {
  BaselineKey key{std::string(64, 'd'), "u1", "gpu", "", "", ""};
  for (double bad : {0.0, -1.0, std::nan("")}) {
    try {
      store_->put_baseline(Baseline{key, bad, BaselineMethod::Eager, "", ""});
      FAIL() << "expected a StoreError for " << bad;
    } catch (const StoreError& e) {
      EXPECT_HAS(e.what(), "workload u1");
      EXPECT_HAS(e.what(), "expected a time > 0");
    }
  }
  EXPECT_EQ(sql_value(db_, "SELECT count(*) FROM baselines"), "0");
}

TEST(StoreMethods, NamesRoundTrip) {
  for (BaselineMethod m : {BaselineMethod::TorchCompile, BaselineMethod::Eager})
    EXPECT_EQ(parse_method(method_name(m)), m);
  EXPECT_EQ(method_name(BaselineMethod::TorchCompile), "torch.compile");
  EXPECT_FALSE(parse_method("inductor"));
}

TEST(StoreDefaultPath, FollowsSolbenchCacheDirThenXdgThenHome) {
  const char* keep[] = {"SOLBENCH_CACHE_DIR", "XDG_CACHE_HOME", "HOME"};
  std::vector<std::optional<std::string>> saved;
  for (const char* k : keep) {
    const char* v = std::getenv(k);
    saved.push_back(v ? std::optional<std::string>(v) : std::nullopt);
  }
  ::setenv("SOLBENCH_CACHE_DIR", "/c", 1);
  ::setenv("XDG_CACHE_HOME", "/x", 1);
  ::setenv("HOME", "/h", 1);
  EXPECT_EQ(default_db_path(), "/c/solbench.db");
  ::unsetenv("SOLBENCH_CACHE_DIR");
  EXPECT_EQ(default_db_path(), "/x/solbench/solbench.db");
  ::setenv("XDG_CACHE_HOME", "", 1);
  EXPECT_EQ(default_db_path(), "/h/.cache/solbench/solbench.db");
  for (size_t i = 0; i < saved.size(); ++i) {
    if (saved[i])
      ::setenv(keep[i], saved[i]->c_str(), 1);
    else
      ::unsetenv(keep[i]);
  }
}

TEST(StoreContentHash, FollowsTheJsonsOwnKeyOrder) {
  const json a = json::parse(R"({"inputs": {"x": 1, "w": 2}})");
  const json b = json::parse(R"({"inputs": {"w": 2, "x": 1}})");
  EXPECT_EQ(content_hash(a), content_hash(json::parse(R"({"inputs":{"x":1,"w":2}})")));
  EXPECT_NE(content_hash(a), content_hash(b));  // argument order is meaning
  EXPECT_EQ(content_hash(json::object()),  // SHA-256 of "{}"
            "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a");
}

}  // namespace
}  // namespace solbench::store
