// The parent's side of the worker protocol: runs a plan's workloads in worker
// processes and collects one outcome per workload, whatever the workers do.
//
// A worker gets the workloads not yet finished. If it crashes (signal, abnormal
// exit, broken channel) the workload it was on fails with RUNTIME_ERROR and the log
// captured since that workload began; if a workload runs past its timeout the
// worker's process group is killed and the workload gets TIMEOUT. Either way a new
// worker continues with the remaining workloads, and outcomes already received are
// kept. A worker that fails before its first workload (cannot load the solution,
// crashes while starting) fails all remaining workloads with its reason, so a
// broken solution costs one worker start, not one per workload.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "core/json.h"
#include "harness/protocol.h"

namespace solbench::harness {

// A progress notification for live output: kind is "worker_start", "ready",
// "begin", "progress", "result" or "worker_exit".
struct RunnerEvent {
  std::string kind;
  int workload = -1;      // index into the plan's workloads (-1 when not about one)
  std::string phase;      // progress: "correctness", "timing", "reference_timing"
  int round = -1;
  const WorkloadOutcome* outcome = nullptr;  // result
  std::string message;    // worker_exit: how it ended
  const json* env = nullptr;  // ready: the worker's environment (hardware, torch, timer)
};

struct RunnerOptions {
  std::chrono::duration<double> workload_timeout = std::chrono::seconds(300);
  std::chrono::duration<double> startup_timeout = std::chrono::seconds(120);
  std::filesystem::path staging_base;  // scratch folders; empty: default_staging_base()
  bool keep_scratch = false;
  size_t log_limit_bytes = 64 << 10;
  // Called on the runner's thread; every workload gets exactly one "result".
  std::function<void(const RunnerEvent&)> on_event;
  // T_ref in a worker of its own (when the plan times both): before the solution's
  // worker starts, a reference worker (kind Reference, WorkerPlan::reference_role,
  // sandbox `reference_sandbox`; no solution code or path is ever sent to it) times
  // the reference on every workload and exits. The solution's worker then times
  // only the solution, and each of its PASSED outcomes gets the reference worker's
  // timing before it is reported. Its events reach on_event as "worker_start"
  // (message "reference") and "progress" (phase "reference_timing") only.
  bool reference_worker = false;
  json reference_sandbox = json::object();
  // Workers are forked from the zygote at this address (harness/worker/zygote.h:
  // Python and torch already imported) instead of exec'd; "" or a zygote that
  // declines: exec'd. Each worker record says which ("launch").
  std::string zygote;
};

struct RunnerResult {
  std::vector<WorkloadOutcome> outcomes;  // aligned with plan.workloads
  json env = json::object();              // the last ready worker's environment
  json sandbox = json::object();          // the last ready worker's sandbox report
  // One entry per worker started: {spawn_t_ns, hello_t_ns, ready_t_ns, phases_ms,
  // workloads: [{index, begin_t_ns, result_t_ns}], exit, scratch (when kept)}.
  json workers = json::array();
  json reference_workers = json::array();  // the same records, for reference workers
};

RunnerResult run_plan(const WorkerPlan& plan, const RunnerOptions& opts = {});

}  // namespace solbench::harness
