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
#include <future>
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
  // measured: the worker's phases for it (ms: precompile_ms, precompile_locked_ms,
  // step_lock_wait_ms, timing_lock_wait_ms, timing_ms, ...; WorkloadOutcome::phases_ms)
  json phases = nullptr;
  // {uuid, t_b_ms, method, reason (null when empty), cached, recorded?, status?, timing?,
  //  phases?}
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
  // Baseline workers measuring side by side, each a share of the workloads
  // (every k-th); 0: SOLBENCH_BASELINE_WORKERS where set, else one on the CPU (a
  // timed CPU loop shares the CPU with nothing) and one per 4 CPUs on a GPU, at
  // most kMaxBaselineWorkers. On a GPU each
  // holds the GPU's timing lock for a workload's GPU work and compiles outside it
  // (session_roles.cc), so that what runs in parallel is torch.compile's CPU work.
  int workers = 0;
  // The GPU's memory in bytes where known (0: unknown). Workers that run after the
  // evaluation's own (no "go" to wait for, or not started ahead) have the GPU to
  // themselves: the automatic count then keeps their values within half of it
  // instead of kBaselineParallelBytes (baseline_worker_count, `alone`).
  uint64_t gpu_memory_bytes = 0;
  unsigned cpus = 0;  // the CPUs the automatic count shares out; 0: this host's
  // When valid: the workers start now, beside the solution's evaluation, compile
  // their workloads' shapes (on a GPU) and measure once this holds true
  // (HarnessRequest::go); false: they end, and each workload says it was not
  // needed. Where the workers' GPU memory would not fit beside the solution's
  // (kBaselineParallelBytes) they start only once it holds true. eval sets it on a
  // GPU only.
  std::shared_future<bool> go;
  // Called as each workload's baseline arrives, one call at a time (from the
  // thread of the worker that measured it): (position in `indices`, the result,
  // that worker's environment).
  std::function<void(size_t, const BaselineResult&, const json&)> on_result;
  // Progress of the workers (harness::RunnerEvent kinds, `workload` a position in
  // `indices`), for live output; one call at a time, as on_result.
  std::function<void(const harness::RunnerEvent&)> on_event;
};

inline constexpr int kMaxBaselineWorkers = 4;
// The reason of each workload when MeasureOptions::go held false.
inline constexpr const char* kBaselineNotNeeded = "not measured: the evaluation needed no T_b";
// Workers side by side each hold a workload's values in GPU memory
// (harness::kValuesFootprint times its bytes); the automatic count keeps their
// sum for the largest workload within this.
inline constexpr uint64_t kBaselineParallelBytes = harness::kBesideEvaluationBytes;
inline constexpr uint64_t kBaselineFootprint = harness::kValuesFootprint;
// The first torch.compile in a process pays Inductor's start-up (about 3.5 s on
// the H100 host), each later shape a fraction of a second: a worker of its own
// gains only where it takes several workloads (three workers for three workloads
// were 0.6-1.3 s slower than one, docs/speed.md). The automatic count gives each
// at least this many.
inline constexpr size_t kMinBaselineWorkloadsPerWorker = 4;
// Workers that start once the evaluation's own are done (`alone`) are the whole
// remaining wall time, and a large reference's compile costs 5-25 s a shape
// (Dynamo's and Inductor's Python, single-threaded; Inductor's parallel Triton
// compile saved 12 % of it): there the count is one per 2 CPUs, up to 8, at least
// 2 workloads each, within half the GPU's memory. On the H100 (16 cores), the
// public L2/042's 16 workloads took 78 s of T_b with the one worker the 16 GiB rule
// allowed, 25 s with 8 (T_b per workload: median ratio 0.99), docs/speed.md.
inline constexpr int kMaxBaselineWorkersAlone = 8;
inline constexpr size_t kMinBaselineWorkloadsPerWorkerAlone = 2;

// How T_b's workers run, for their count (baseline_worker_count says what each changes).
struct WorkerCountFor {
  bool alone = false;          // after the evaluation's own workers
  bool handing_back = false;   // ahead, handing back at "go"
  bool shared_memory = false;  // holding shares of the GPU's memory
};

// The number of baseline workers for `n` workloads whose largest has
// `largest_bytes` of inputs and outputs (MeasureOptions::workers), `how` they run.
// `alone`: they run once the evaluation's own workers are done (kMaxBaselineWorkersAlone).
// `handing_back`: they start ahead and hand back at "go" what they have not
// compiled (harness::WorkerPlan::hand_back): then one workload each is enough. The
// floor above keeps a worker from paying Inductor's start-up for one shape; ahead,
// that start-up runs beside the evaluation, and a workload a worker ahead has not
// reached by "go" goes to a late worker that pays it after the evaluation instead:
// gemma3_swiglu's 3 workloads had one worker ahead, which compiled 1 by "go" and
// handed 2 to late workers, 4.2 s of T_b after the evaluation (docs/speed.md).
// `shared_memory`: the workers hold shares of the GPU's memory for what they put on
// it (memory_share_units > 0, harness/timing/memory_shares.h) and wait there for
// memory: alone, the CPUs alone count them, not kBaselineFootprint times the largest
// workload within half the GPU's memory. The public L2/056 (16 workloads of 1.1-3.4
// GB): one worker by the footprint, 135 s of T_b; six, 42 s, with the same T_b (median
// ratio 1.000) and 61 of 80 GB at the peak (docs/score.md, "Memory shares").
size_t baseline_worker_count(const MeasureOptions& options, size_t n, uint64_t largest_bytes,
                             WorkerCountFor how = {});
// Hand-back's late workers (MeasureOptions::go, harness::WorkerPlan::hand_back): the
// count for workers alone without its floor of 2 workloads each. What is handed back
// is what the workers ahead would not have compiled within seconds, so a workload
// there costs more than a fresh worker's start: the public L2/036's 6 smallest shapes
// took 145-175 s of compile each, and 3 late workers (the floor's count for 6) left
// one of them two in a row (T_b phase 308 s after the evaluation, docs/score.md).
size_t late_baseline_worker_count(const MeasureOptions& options, size_t n,
                                  uint64_t largest_bytes, bool shared_memory = false);
// The shares of the GPU's memory T_b's workers hold for their GPU work
// (harness/timing/memory_shares.h): on a GPU whose memory is known, unless
// SOLBENCH_BASELINE_MEMORY_SHARES=0; 0: none.
size_t memory_share_units(const MeasureOptions& options);

struct MeasureRun {
  std::vector<BaselineResult> results;  // aligned with `indices`
  json env = json::object();            // a baseline worker's environment
  json workers = json::array();         // every worker's record (runner.h)
};

// Measures T_b of problem.workloads[i] for every i in `indices` (resolved ones)
// in fresh workers (kind Reference, role Baseline), baseline_worker_count() of
// them side by side. Never throws for problems of the reference: those
// workloads get no T_b and the reason.
MeasureRun measure_baselines(const Problem& problem, const std::vector<size_t>& indices,
                             const MeasureOptions& options);

}  // namespace solbench::score
