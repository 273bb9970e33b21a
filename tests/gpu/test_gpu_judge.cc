// The reference worker judging beside the solution's worker on a CUDA device
// (harness/runner_judged.cc, JudgeOptions::streamed; docs/harness.md "Judging"),
// skipped cleanly without one: it gets each workload's rounds as soon as they are
// recorded, then the rest of its record, judges it holding the GPU's timing lock, and times T_ref only once the solution's
// worker is gone.
#include <gtest/gtest.h>

#include <string>

#include "gpu_test_util.h"

namespace solbench::gpu {
namespace {

TEST(GpuJudge, StreamedBesideTheRecorderAndTimesTheReferenceAfterIt) {
  SB_REQUIRE_GPU();
  solbench::testing::TempDir dir;
  const json doc = eval_cuda_rmsnorm(dir.path(), "",
                                     "--smallest 6 --rounds 2 --time-budget-ms 100 --no-baseline");
  ASSERT_TRUE(doc.is_object());
  ASSERT_EQ(doc["results"].size(), 6u);
  ASSERT_EQ(doc["workers"].size(), 1u) << doc["workers"].dump().substr(0, 2000);
  ASSERT_EQ(doc["reference_workers"].size(), 1u) << doc["reference_workers"].dump().substr(0, 2000);
  const json& judge = doc["reference_workers"][0];
  const json& judged = judge["workloads"];
  const json& recorded = doc["workers"][0]["workloads"];
  ASSERT_TRUE(judge.value("streamed", false)) << judge.dump();
  ASSERT_EQ(judged.size(), 6u) << judge.dump();
  ASSERT_EQ(recorded.size(), 6u);
  // Each workload's judging began once its rounds were recorded, after its begin:
  // they go ahead of its timed calls, so the first workload's judging began before
  // its result (the later ones' often after: their timed calls took 40-90 ms on an
  // H200, less than the Judge's work on the one before); the first before the
  // solution's worker was done with the last; every T_ref after that.
  const int64_t last = recorded[5].value("result_t_ns", int64_t{0});
  int ahead = 0;
  for (size_t i = 0; i < 6; ++i) {
    const int64_t began = judged[i].value("judged_t_ns", int64_t{0});
    EXPECT_GT(began, recorded[i].value("begin_t_ns", int64_t{0})) << judge.dump();
    if (began < recorded[i].value("result_t_ns", int64_t{0})) ++ahead;
  }
  EXPECT_GE(ahead, 1) << doc["workers"].dump().substr(0, 2000) << judge.dump();
  EXPECT_LT(judged[0].value("judged_t_ns", int64_t{0}), last) << judge.dump();
  for (const json& w : judged) EXPECT_GT(w.value("begin_t_ns", int64_t{0}), last);
  for (const json& r : doc["results"]) {
    const json& ev = r["evaluation"];
    ASSERT_EQ(ev["status"], "PASSED") << ev.dump().substr(0, 2000);
    EXPECT_GT(ev["performance"].value("reference_latency_ms", 0.0), 0) << ev.dump().substr(0, 2000);
    // The judging held the lock: its wait is a phase of its own.
    EXPECT_TRUE(ev["solbench_phases_ms"].contains("judge_lock_wait_ms"))
        << ev["solbench_phases_ms"].dump();
  }
}

TEST(GpuJudge, AJudgeStartedAheadWarmsUpOnAWorkloadOfMoreThan256MiB) {
  // batch 32768: 256 MiB and 8 KiB of inputs, over the CPU's warm-up limit; on a GPU
  // the Judge's warm-up follows the rule of everything beside an evaluation, so its
  // reference's first call is made before the solution's result, not after it.
  SB_REQUIRE_GPU();
  solbench::testing::TempDir dir;
  const json doc = eval_cuda_rmsnorm(dir.path(), "",
                                     "-w 1f5f212e --rounds 2 --time-budget-ms 100 --no-baseline");
  ASSERT_TRUE(doc.is_object());
  ASSERT_EQ(doc["results"].size(), 1u);
  EXPECT_EQ(doc["results"][0]["evaluation"]["status"], "PASSED");
  ASSERT_EQ(doc["reference_workers"].size(), 1u) << doc["reference_workers"].dump().substr(0, 2000);
  const json& judge = doc["reference_workers"][0];
  ASSERT_TRUE(judge.value("started_early", false)) << judge.dump();
  const json phases = judge.value("phases_ms", json::object());
  // Before, 0 steps (skipped by size). A step may be refused while the solution's
  // timed loop holds the lock, so the first one made is what is asked.
  EXPECT_GT(phases.value("warm_up_steps", 0), 0) << judge.dump();
}

TEST(GpuJudge, EachTimedLoopsStepsAreInThePhasesAndAddUpToNoMoreThanTheLoop) {
  // timing.h LoopSteps: the solution's loop (timing_*) and T_ref's
  // (reference_timing_*, the Judge's, merged) with the CUPTI timer's own steps.
  SB_REQUIRE_GPU();
  solbench::testing::TempDir dir;
  const json doc = eval_cuda_rmsnorm(dir.path(), "",
                                     "--smallest 2 --rounds 2 --time-budget-ms 100 --no-baseline");
  ASSERT_TRUE(doc.is_object());
  ASSERT_EQ(doc["results"].size(), 2u);
  for (const json& r : doc["results"]) {
    const json& ph = r["evaluation"]["solbench_phases_ms"];
    for (const std::string pre : {"timing", "reference_timing"}) {
      double steps = 0;
      for (const char* k : {"_prepare_ms", "_timer_prepare_ms", "_call_ms", "_read_ms", "_finish_ms"}) {
        ASSERT_TRUE(ph.contains(pre + k)) << pre + k << " in " << ph.dump();
        steps += ph[pre + k].get<double>();
      }
      for (const char* k : {"_timer_gate_ms", "_timer_l2_flush_ms", "_timer_read_records_flush_ms"})
        EXPECT_TRUE(ph.contains(pre + k)) << pre + k << " in " << ph.dump();
      EXPECT_GT(steps, 0) << ph.dump();
      EXPECT_LE(steps, ph.value(pre + "_ms", 0.0)) << pre << ": " << ph.dump();
    }
    EXPECT_TRUE(ph.contains("timing_prepare_seed_ms")) << ph.dump();  // the parent's seeds
  }
}

}  // namespace
}  // namespace solbench::gpu
