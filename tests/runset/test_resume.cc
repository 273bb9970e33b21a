// Resume: each device's environment probed once (or learned), shared by the
// slots; the store's traces of a solution found by content hash, and only
// those in the probed environment taken; which skips run stores, and a stored
// skip taken back.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "harness/eval_plan.h"
#include "runset/dataset.h"
#include "runset/resume.h"
#include "runset/summary.h"
#include "runset_test_util.h"

namespace solbench::runset {
namespace {

using namespace testing;

const json kCpuEnv = {{"hardware", "AMD EPYC"}, {"torch", "1.13.0"}, {"timer", "cpu-monotonic"}};

TEST(DeviceEnvironments, ProbedOncePerDeviceWhileOthersWait) {
  DeviceEnvironments envs;
  std::atomic<int> calls{0};
  auto probe = [&]() -> std::optional<json> {
    ++calls;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    return kCpuEnv;
  };
  std::vector<std::thread> slots;
  std::atomic<int> got{0};
  for (int i = 0; i < 3; ++i)
    slots.emplace_back([&] {
      if (envs.get("cpu", probe) == kCpuEnv) ++got;
    });
  for (auto& t : slots) t.join();
  EXPECT_EQ(calls.load(), 1);
  EXPECT_EQ(got.load(), 3);
  EXPECT_EQ(envs.get("cuda:1", probe), kCpuEnv);  // another device: its own probe
  EXPECT_EQ(calls.load(), 2);
  EXPECT_EQ(envs.probes(), 2);
}

TEST(DeviceEnvironments, LearnedNeedsNoProbeAndFailuresAreRetriedUpToALimit) {
  DeviceEnvironments envs;
  int calls = 0;
  auto failing = [&]() -> std::optional<json> {
    ++calls;
    return json{{"hardware", ""}};  // a failed build reports no hardware: not usable
  };
  for (int i = 0; i < 5; ++i) EXPECT_FALSE(envs.get("cpu", failing));
  EXPECT_EQ(calls, DeviceEnvironments::kMaxProbes);
  envs.learn("cpu", json::object());  // not an environment: ignored
  EXPECT_FALSE(envs.known("cpu"));
  envs.learn("cpu", kCpuEnv);
  EXPECT_EQ(envs.get("cpu", failing), kCpuEnv);
  EXPECT_EQ(calls, DeviceEnvironments::kMaxProbes);
  json other = kCpuEnv;
  other["torch"] = "2.4.0";
  envs.learn("cpu", other);  // the first one known stays
  EXPECT_EQ(envs.known("cpu"), kCpuEnv);
}

TEST(Resume, OnlyTracesOfThisSolutionInThisEnvironment) {
  TempDir t;
  const LoadedProblem lp = load_for_run({"", kRms, kProblems / kRms}, first_n(3));
  ASSERT_TRUE(lp.problem);
  const Problem& p = *lp.problem;
  store::Store db = store::Store::open(t.path() / "s.db");
  const int64_t run = db.begin_run({"test", "", "", ""});
  const std::string sol = db.put_solution({"mine", p.definition.name, {{"v", 1}}});
  const std::string other_sol = db.put_solution({"mine", p.definition.name, {{"v", 2}}});
  json new_torch = kCpuEnv;
  new_torch["torch"] = "2.4.0";
  // Traces as eval makes them: make_trace with the worker's environment.
  auto record = [&](size_t k, const std::string& sol_hash, const json& env, Status st) {
    harness::WorkloadOutcome o;
    o.status = st;
    o.log = "x";
    Trace tr = harness::make_trace(p, lp.selected[k], "mine", o, env);
    const std::string e = db.put_environment(store::environment_from_trace(tr));
    db.record_trace(run, tr, {sol_hash, e, std::nullopt, std::nullopt, std::nullopt, json::object()});
  };
  record(0, sol, kCpuEnv, Status::RuntimeError);
  record(0, sol, kCpuEnv, Status::Timeout);          // later: wins
  record(1, sol, new_torch, Status::RuntimeError);   // another environment
  record(2, other_sol, kCpuEnv, Status::RuntimeError);  // another version of the solution

  const auto candidates = stored_traces(db, p.definition.name, "mine", sol, lp.uuids);
  EXPECT_EQ(candidates.size(), 3u);
  EXPECT_TRUE(stored_traces(db, p.definition.name, "mine", sol, {lp.uuids[2]}).empty());

  const std::string env = store_environment(p, lp.selected[0], kCpuEnv).hash();
  const auto done = resumable(db, candidates, sol, env);
  ASSERT_EQ(done.size(), 1u);
  ASSERT_TRUE(done.count(lp.uuids[0]));
  EXPECT_EQ(done.at(lp.uuids[0]).status, Status::Timeout);
  const std::string env2 = store_environment(p, lp.selected[0], new_torch).hash();
  EXPECT_NE(env, env2);
  const auto done2 = resumable(db, candidates, sol, env2);
  ASSERT_EQ(done2.size(), 1u);
  EXPECT_TRUE(done2.count(lp.uuids[1]));
}

// On a GPU the environment names the driver. eval records it in every trace and
// reports it in its JSON's environment, from which `run` derives the environment a
// probe finds: the two hashes must agree, or a GPU run never resumes.
TEST(Resume, AProbesEnvironmentIsTheOneTracesAreRecordedIn) {
  const LoadedProblem lp = load_for_run({"", kRms, kProblems / kRms}, first_n(1));
  ASSERT_TRUE(lp.problem);
  json gpu = {{"hardware", "NVIDIA H200"}, {"torch", "2.11.0"}, {"timer", "cupti"},
              {"device", "cuda:1"}, {"driver", "580.159.04"}};
  harness::WorkloadOutcome o;
  o.status = Status::RuntimeError;
  o.log = "x";
  const Trace recorded = harness::make_trace(*lp.problem, lp.selected[0], "mine", o, gpu);
  const store::EnvironmentInfo env = store::environment_from_trace(recorded);
  EXPECT_EQ(env.driver, "580.159.04");
  EXPECT_EQ(store_environment(*lp.problem, lp.selected[0], gpu).hash(), env.hash());
  json other = gpu;
  other["driver"] = "590.1";
  EXPECT_NE(store_environment(*lp.problem, lp.selected[0], other).hash(), env.hash());
}

TEST(ResumeSkips, OnlyAnOutOfMemorySkipWithTheGpuToItselfIsStored) {
  const std::string oom = "out of GPU memory: CUDA out of memory. Tried to allocate 8.00 GiB";
  EXPECT_TRUE(stores_skip(oom, /*gpu_to_itself=*/true));
  // Beside other evaluations (--jobs-per-gpu 2) it may fit alone: tried again, not stored.
  EXPECT_FALSE(stores_skip(oom, /*gpu_to_itself=*/false));
  // Reasons the user fixes are tried again whatever the GPU.
  for (const char* other :
       {"the inputs need safetensors blobs this copy lacks: x.safetensors",
        "dtype float8_e4m3fn is not supported on this device",
        "reference unavailable here: needs a CUDA device",
        "the reference ran out of GPU memory"})  // not the worker's prefix
    EXPECT_FALSE(stores_skip(other, true)) << other;
}

TEST(ResumeSkips, TheLatestOutOfMemorySkipInThisEnvironmentIsTaken) {
  auto skip = [](const std::string& uuid, const std::string& env, const std::string& reason) {
    store::Skip s;
    s.workload_uuid = uuid;
    s.environment_hash = env;
    s.reason = reason;
    return s;
  };
  const std::string here(64, 'a'), there(64, 'b');
  const auto got = resumable_skips({skip("w1", here, "out of GPU memory: first"),
                                    skip("w1", here, "out of GPU memory: second"),
                                    skip("w2", there, "out of GPU memory: elsewhere"),
                                    skip("w3", here, "missing safetensors blob")},
                                   here);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got.at("w1").reason, "out of GPU memory: second");
}

TEST(ResumeSkips, AStoredSkipCountsAsASkipTakenFromTheStore) {
  store::Skip s;
  s.workload_uuid = "w1";
  s.reason = "out of GPU memory: CUDA out of memory (a test)";
  s.recorded = "2026-02-01T00:00:00.000Z";
  const WorkloadResult r = result_of(s);
  EXPECT_FALSE(r.status);
  EXPECT_TRUE(r.resumed);
  EXPECT_EQ(r.skip_reason.rfind(s.reason + kFromTheStore, 0), 0u) << r.skip_reason;
  EXPECT_HAS(r.skip_reason, "2026-02-01T00:00:00.000Z");
  EXPECT_HAS(r.skip_reason, "--rerun skipped");
  EvaluationReport e;
  e.uuids = {"w1"};
  e.results = {r};
  Tally t;
  t.add(e);
  EXPECT_EQ(t.skipped, 1u);
  EXPECT_EQ(t.resumed, 1u);
  EXPECT_EQ(t.evaluated, 0u);
  EXPECT_EQ(t.text(), "1 skipped");
}

}  // namespace
}  // namespace solbench::runset
