// The inputs of the SOL Score beside the kernel's own time (docs/score.md):
//
//   T_b    the scoring baseline: the problem's reference under torch.compile (eager
//          where this torch has no torch.compile or compiling fails, with the
//          reason), timed with the same timer, argument pools and stopping rule as
//          solutions, in a worker of its own that never loads solution code
//          (WorkerPlan kind Reference, role Baseline). Kept in the results
//          store per (definition content, workload, GPU model, driver, torch,
//          timer) and reused from there.
// T_SOL is in score/arch.h, the published numbers in score/published.h, the
// environment keys in score/environment.h.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/json.h"
#include "core/problem.h"
#include "harness/runner.h"
#include "harness/timing/timing.h"
#include "score/environment.h"
#include "store/store.h"

namespace solbench::score {

struct BaselineResult {
  std::string uuid;
  std::optional<double> t_b_ms;  // nullopt: no baseline (see reason)
  std::string method;            // "torch.compile" or "eager"; "" when none
  // Why eager ("torch.compile unavailable (torch 1.13.1)"), or why there is no T_b.
  std::string reason;
  bool cached = false;           // from the results store, not measured now
  std::string recorded;          // when it was measured (cached ones)
  std::string status;            // measured: the baseline worker's status (PASSED, ...)
  json timing = nullptr;         // measured: the timing statistics
  // {uuid, t_b_ms, method, reason (null when empty), cached, recorded?, status?, timing?}
  json to_json() const;
};

// The stored baseline for `key`, or nullopt. An eager one is reused only where
// torch has no torch.compile (< 2.0; the reason is restated for rows stored
// without one): elsewhere it is measured again, since what made it eager (a
// solbench bug, the environment, the reference) may be gone.
std::optional<BaselineResult> cached_baseline(store::Store& db, const store::BaselineKey& key);

struct MeasureOptions {
  Device device;
  json timer_options = json::object();   // as WorkerPlan::timer_options
  harness::TimingOptions timing;         // the solutions' stopping rule
  int rounds = 1;        // correctness rounds of the (compiled) reference against the eager one
  uint64_t seed = 0;  // 0: a secret of its own per evaluation (WorkerPlan::seed)
  std::chrono::duration<double> workload_timeout = std::chrono::seconds(300);
  bool keep_scratch = false;
  bool no_sandbox = false;
  // Called on the runner's thread as each workload's baseline arrives:
  // (position in `indices`, the result, the worker's environment).
  std::function<void(size_t, const BaselineResult&, const json&)> on_result;
  // Progress of the worker (harness::RunnerEvent kinds), for live output.
  std::function<void(const harness::RunnerEvent&)> on_event;
};

struct MeasureRun {
  std::vector<BaselineResult> results;  // aligned with `indices`
  json env = json::object();            // the baseline worker's environment
  json workers = json::array();
};

// Measures T_b of problem.workloads[i] for every i in `indices` (resolved ones)
// in a fresh worker (kind Reference, role Baseline). Never throws for
// problems of the reference: those workloads get no T_b and the reason.
MeasureRun measure_baselines(const Problem& problem, const std::vector<size_t>& indices,
                             const MeasureOptions& options);

}  // namespace solbench::score
