// T_b's baseline workers side by side on a CUDA device (score/baseline.h, docs/score.md
// "Side by side" and "Ahead"), skipped cleanly without one: two workers share the
// workloads, each compiles a workload's shapes before it takes the GPU's timing lock
// and runs the compiled graph's first execution under it; they are asked for beside
// the solution's evaluation and begin no workload before the solution's workers are done.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "gpu_test_util.h"

namespace solbench::gpu {
namespace {

TEST(GpuBaseline, WorkersSideBySideCompileOutsideTheLockAndRunUnderIt) {
  SB_REQUIRE_GPU();
  solbench::testing::TempDir dir;
  const json doc = eval_cuda_rmsnorm(dir.path(), "SOLBENCH_BASELINE_WORKERS=2",
                                     "--smallest 4 --rounds 1 --time-budget-ms 100");
  ASSERT_TRUE(doc.is_object());
  ASSERT_EQ(doc["baseline_workers"].size(), 2u) << doc["baseline_workers"].dump().substr(0, 2000);
  ASSERT_EQ(doc["results"].size(), 4u);
  const json& t = doc["timeline_t_ns"];
  const int64_t done = t.value("workers_done", int64_t{0});
  ASSERT_TRUE(t.contains("baseline_asked")) << t.dump();
  EXPECT_LT(t["baseline_asked"].get<int64_t>(), done) << t.dump();
  for (const json& w : doc["baseline_workers"])
    for (const json& wl : w["workloads"]) EXPECT_GE(wl.value("begin_t_ns", int64_t{0}), done) << w.dump();
  int ahead = 0;
  for (const json& r : doc["results"]) {
    const json& ev = r["evaluation"];
    ASSERT_EQ(ev["status"], "PASSED") << ev.dump().substr(0, 2000);
    const json& tb = ev["solbench_score"]["t_b"];
    ASSERT_GT(tb.value("t_b_ms", 0.0), 0) << tb.dump();
    const json& ph = tb["phases"];
    EXPECT_TRUE(ph.contains("timing_lock_wait_ms")) << ph.dump();
    if (tb["method"] != "torch.compile") continue;  // torch < 2: eager, nothing to compile
    // The compile ran outside the lock and the graph's first execution under it,
    // outside the rounds' steps. Tried ahead of "go", the call stopped at that first
    // execution (ahead_stopped_ms) and was made again after "go", the same way.
    const double all = ph.value("precompile_ms", 0.0), locked = ph.value("precompile_locked_ms", -1.0);
    EXPECT_GT(all, 0) << ph.dump();
    EXPECT_GT(locked, 0) << ph.dump();
    EXPECT_LE(locked, all) << ph.dump();
    EXPECT_FALSE(ph.contains("precompile_stopped")) << ph.dump();  // after "go": not stopped
    // The GPU's memory shared out (harness/timing/memory_shares.h; the H100's and the
    // H200's memory are known): each workload's GPU work held at least one share.
    EXPECT_GE(ph.value("memory_shares", 0.0), 1.0) << ph.dump();
    EXPECT_GE(ph.value("memory_share_wait_ms", -1.0), 0.0) << ph.dump();
    if (ph.contains("ahead_stopped_ms")) ++ahead;
  }
  // How many compiled before "go" depends on how long the solution took.
  std::printf("workloads compiled ahead: %d of 4\n", ahead);
}

// With the automatic count on a GPU, workers ahead hand back at "go" what they would
// reach only later (docs/score.md "Handed back"): whatever each kept, every workload
// is measured once, by one worker, and gets its T_b.
TEST(GpuBaseline, WorkersAheadKeepWhatTheySayAndEveryWorkloadIsMeasuredOnce) {
  SB_REQUIRE_GPU();
  solbench::testing::TempDir dir;
  const json doc = eval_cuda_rmsnorm(dir.path(), "SOLBENCH_BASELINE_HAND_BACK=1",
                                     "--smallest 6 --rounds 1 --time-budget-ms 100");
  ASSERT_TRUE(doc.is_object());
  ASSERT_EQ(doc["results"].size(), 6u);
  size_t begun = 0, kept_by = 0;
  for (const json& w : doc["baseline_workers"]) {
    begun += w["workloads"].size();
    if (w.contains("kept")) {
      ++kept_by;
      EXPECT_EQ(w["kept"].get<size_t>(), w["workloads"].size()) << w.dump();
    }
  }
  EXPECT_EQ(begun, 6u) << doc["baseline_workers"].dump().substr(0, 3000);
  for (const json& r : doc["results"]) {
    const json& ev = r["evaluation"];
    ASSERT_EQ(ev["status"], "PASSED") << ev.dump().substr(0, 2000);
    EXPECT_GT(ev["solbench_score"]["t_b"].value("t_b_ms", 0.0), 0) << ev.dump().substr(0, 2000);
  }
  std::printf("workers ahead that answered go: %zu; baseline workers: %zu\n", kept_by,
              doc["baseline_workers"].size());
}

}  // namespace
}  // namespace solbench::gpu
