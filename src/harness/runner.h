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
// and decides no verdict on values (WorkerRole::Recorder), then, once it has
// exited, a reference worker that never loads solution code and judges the
// records (WorkerRole::Judge). See docs/harness.md, "Judging".
//
// Inside (runner_internal.h): runner.cc (run_plan), runner_launch.cc (starting
// workers, spares), runner_inbox.cc (a worker's channel, read on a thread of its
// own), runner_worker.cc (one worker through its workloads, a fresh one after a
// crash), runner_judged.cc (the batches of a judged evaluation).
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <future>
#include <optional>
#include <string>
#include <vector>

#include "core/json.h"
#include "harness/protocol.h"

namespace solbench::harness {

// What a RunnerEvent says.
enum class EventKind {
  WorkerStart,  // a worker is starting (message "reference" for a judge)
  Ready,        // it loaded what it runs (env)
  Begin,        // a workload began
  Progress,     // a phase of it (phase, round)
  Result,       // its outcome (outcome), once per workload
  HandedBack,   // the worker handed it back unmeasured at "go" (WorkerPlan::hand_back):
                // no Result follows; its outcome in RunnerResult says handed_back
  WorkerExit,   // the worker ended (message: how)
};

// A progress notification for live output.
struct RunnerEvent {
  EventKind kind = EventKind::Progress;
  int workload = -1;      // index into the plan's workloads (-1 when not about one)
  WorkloadPhase phase = WorkloadPhase::None;  // progress
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
  // first as a WorkerRole::Recorder: it runs no reference, times the solution,
  // and writes each correctness round's and each sampled timed call's outputs and
  // input digests into judge/<position>/ of its scratch folder, reporting each
  // file's SHA-256 (CallRecord). On each of its result frames the parent moves the
  // files to a folder of its own (out of the solution's writable domain). Once
  // that worker has exited, a reference worker (kind Reference, role Judge,
  // sandbox `reference_sandbox`, the records and the fresh-value secret in its
  // plan; no solution code or path is ever sent to it) generates the same inputs
  // again, runs the reference, judges each record and, for PASSED ones, times the
  // reference. Each workload's outcome is reported when judged: the judge's
  // verdict, else the solution's own failure, else PASSED with the solution's
  // T_k and the reference worker's T_ref; its files are deleted then. Outcomes the
  // runner decides for the solution's worker (crash, timeout, load failure) and
  // skips it reports at once, unjudged. The reference worker's events reach
  // on_event as WorkerStart (message "reference") and Progress (phases Judging
  // and ReferenceTiming) only.
  // false: the reference and every check run in the solution's own worker
  // (WorkerRole::Solution, the path before the judge; SOLBENCH_REFERENCE_WORKER=0
  // in eval, for measuring the judge's cost only). Only a plan of role Solution is
  // judged: the baseline (score/baseline.h) runs no solution code.
  bool reference_worker = false;
  json reference_sandbox = json::object();
  // Judged: T_ref already measured in the environment the Recorder reported
  // ("ready"'s env: hardware, torch, timer) for a workload (by uuid), or nullopt.
  // The Judge times no reference for such a workload and its outcome carries this
  // T_ref, extra "reference_timing_cached" true; where every judged workload of a
  // batch has one, "go" goes to the Judge without waiting for the Recorder's exit
  // (nothing is timed after it). Unset: every T_ref is timed.
  std::function<std::optional<TimingResult>(const json& env, const std::string& uuid)>
      known_reference;
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
  // The workers' CUDA_VISIBLE_DEVICES (harness/evaluate.h worker_gpu): a GPU
  // evaluation's name only its GPU, a CPU evaluation's none; nullopt: the
  // environment as it is.
  std::optional<std::string> visible_gpu;
  // A plan with gpu_after_go (protocol.h): its workers get "go" once this holds
  // true, "cancel" once it holds false (a broken promise counts as false). Until
  // then a worker that said "ready" has no workload deadline; from then on it has
  // workload_timeout to begin its next workload.
  std::shared_future<bool> go;
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

// What a RunnerOptions::go came to: waits for it; a dropped promise is false.
bool go_given(const std::shared_future<bool>& go);

}  // namespace solbench::harness
