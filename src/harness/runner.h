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
//
// A judged evaluation (RunnerOptions::reference_worker) runs two kinds of worker
// per batch of workloads: first the solution's worker, which records its calls
// and decides no verdict on values (WorkerPlan::record_calls), then, once it has
// exited, a reference worker that never loads solution code and judges the
// records (WorkerPlan::reference_role with records). See docs/harness.md,
// "Judging".
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
  std::string phase;      // progress: "correctness", "timing", "judging", "reference_timing"
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
  // Judged: every verdict on values and T_ref come from a reference worker that
  // never loaded solution code. Per batch of workloads (the records of a batch fit
  // a disk budget: min(16 GiB, half the free space of the staging folder's file
  // system); SOLBENCH_RECORD_BUDGET_BYTES overrides it) the solution's worker runs
  // first with WorkerPlan::record_calls: it runs no reference, times the solution,
  // and writes each correctness round's and each sampled timed call's outputs and
  // input digests into judge/<position>/ of its scratch folder, reporting each
  // file's SHA-256 (CallRecord). On each of its result frames the parent moves the
  // files to a folder of its own (out of the solution's writable domain). Once
  // that worker has exited, a reference worker (kind Reference, reference_role,
  // sandbox `reference_sandbox`, the records and the fresh-value secret in its
  // plan; no solution code or path is ever sent to it) generates the same inputs
  // again, runs the reference, judges each record and, for PASSED ones, times the
  // reference. Each workload's outcome is reported when judged: the judge's
  // verdict, else the solution's own failure, else PASSED with the solution's
  // T_k and the reference worker's T_ref; its files are deleted then. Outcomes the
  // runner decides for the solution's worker (crash, timeout, load failure) and
  // skips it reports at once, unjudged. The reference worker's events reach
  // on_event as "worker_start" (message "reference") and "progress" (phases
  // "judging" and "reference_timing") only.
  // false: the reference and every check run in the solution's own worker (the
  // path before the judge; SOLBENCH_REFERENCE_WORKER=0 in eval, for measuring the
  // judge's cost only). The baseline (score/baseline.h) runs no solution code.
  bool reference_worker = false;
  json reference_sandbox = json::object();
  // Workers are forked from the zygote at this address (harness/worker/zygote.h:
  // Python and torch already imported) instead of exec'd; "" or a zygote that
  // declines: exec'd. Each worker record says which ("launch").
  std::string zygote;
  // With a zygote: launch requests name the worker's recipe (zygote.h, "Spares"),
  // so that a spare made ahead serves them, and once the plan's timed work is done
  // the runner asks the zygote for a spare of each recipe it used (the solution's
  // worker, the reference worker), for the next evaluation. Each spare holds a
  // process and, on a GPU, a CUDA context until it is used or the zygote ends.
  bool spares = false;
};

struct RunnerResult {
  std::vector<WorkloadOutcome> outcomes;  // aligned with plan.workloads
  json env = json::object();              // the last ready worker's environment
  json sandbox = json::object();          // the last ready worker's sandbox report
  // One entry per worker started: {spawn_t_ns, hello_t_ns, ready_t_ns, phases_ms,
  // workloads: [{index, begin_t_ns, result_t_ns}], exit, scratch (when kept)}.
  json workers = json::array();
  json reference_workers = json::array();  // the same records, for reference workers
                                           // (one per batch, more after a crash)
};

RunnerResult run_plan(const WorkerPlan& plan, const RunnerOptions& opts = {});

}  // namespace solbench::harness
