// The harness's front door: one call runs an entry point on workloads in
// sandboxed workers and returns one outcome per workload.
//
//   HarnessRequest  what to run (entry point, definition, workloads), where
//                   (device), how (rounds, timing, timeouts) and in which role
//   Role            Solution: the solution's worker records its calls and a
//                   reference worker that never loads solution code judges them
//                   (runner.h); Baseline: the reference under torch.compile,
//                   timed as solutions are (score/ T_b)
//   evaluate()      decides what the caller must not: the worker plan, each
//                   worker's sandbox policy (worker/worker_policy.h), the zygote
//                   to fork from (worker/zygote.h), the GPU's timing lock
//                   (timing/device_lock.h), spare workers and the judge
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <future>
#include <string>
#include <vector>

#include "core/json.h"
#include "harness/protocol.h"
#include "harness/runner.h"
#include "harness/timing/timing.h"

namespace solbench::harness {

enum class Role {
  Solution,  // a solution (or the reference as one), judged by a reference worker
  Baseline,  // the reference under torch.compile, checked against the eager one
};

struct HarnessRequest {
  Role role = Role::Solution;
  std::string name;                  // the solution's name in traces
  EntryPoint entry;                  // Baseline: ignored (the reference's)
  json definition = json::object();  // definition.json (core to_json)
  std::vector<json> workloads;       // workload_spec() of each, in order
  Device device;                     // the CPU unless told
  int rounds = 5;                    // correctness rounds, fresh inputs each
  uint64_t seed = 0;                 // 0: a secret of its own (WorkerPlan::seed)
  bool timed = true;                 // time the candidate (and, as a solution, T_ref)
  TimingOptions timing;              // the stopping rule
  json timer_options = json::object();  // GPU timer keys (make_timer)
  bool profile = false;                 // WorkerPlan::profile (solutions only, not Baseline)
  std::chrono::duration<double> workload_timeout = std::chrono::seconds(300);
  bool keep_scratch = false;
  bool no_sandbox = false;           // debugging only
  // The content the worker's compile caches are keyed by (worker_policy.h): the
  // solution's JSON; empty for the reference (the definition then).
  std::string cache_key;
  // Progress and results as they arrive, on the runner's thread (runner.h).
  std::function<void(const RunnerEvent&)> on_event;
  // Role Solution, judged: T_ref known already (RunnerOptions::known_reference).
  std::function<std::optional<TimingResult>(const json& env, const std::string& uuid)>
      known_reference;
  // Role Baseline: when valid, the workers start now and (on a GPU) compile their
  // workloads' shapes beside whatever else runs, and run the workloads once this
  // holds true (WorkerPlan::gpu_after_go; false: they end without running any).
  std::shared_future<bool> go;
  // Role Baseline with `go`: at "go" each worker keeps what it will soon have
  // compiled and hands the rest back (WorkerPlan::hand_back; EventKind::HandedBack).
  bool hand_back = false;
  // Role Baseline on a GPU: the GPU's memory shares (timing/memory_shares.h) its
  // workers hold for each workload's GPU work; 0: none.
  size_t memory_share_units = 0;
};

RunnerResult evaluate(const HarnessRequest& request);

// Where an evaluation's workers run. On a GPU each sees only that GPU, named in
// its CUDA_VISIBLE_DEVICES by UUID (by this process's entry for it where NVML
// cannot name it), and runs on cuda:0 there: a solution that asks for another
// ordinal gets CUDA's invalid-device error, and one that crashes or hangs its
// GPU reaches no other evaluation's. On the CPU they see no GPU ("").
struct WorkerGpu {
  std::string visible;  // CUDA_VISIBLE_DEVICES for the workers
  Device device;        // the plan's device, as the workers see it
};
WorkerGpu worker_gpu(const Device& device);

}  // namespace solbench::harness
