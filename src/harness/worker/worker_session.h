// Inside the worker: the embedded Python, the reference, the loaded solution, and
// the evaluation of one workload (correctness rounds, timing, checks).
//
// Per workload:
//   1. correctness: `rounds` rounds, each with freshly generated inputs; the
//      reference runs on copies; outputs are poisoned before every call; every
//      round checks the type, shape and dtype of the outputs, that the call left no
//      threads or processes behind, and that torch's functions are unchanged;
//   2. timing: K extra input sets and their reference outputs; the solution is
//      timed with arguments at a new address and, for random-rule inputs, with new
//      values on every call (argument pool, runtime.ArgPool); the outputs of a
//      random sample of timed calls (reservoir sampling, so the sample is fixed only
//      when the loop ends) are checked against the reference run on that call's
//      inputs, generated again afterwards;
//   3. the reference is timed the same way.
// That is role Solution (the in-process path; the Baseline too). A judged
// evaluation (runner.h) splits it over two workers:
//   - a Recorder (the solution's worker): the same calls and the checks of the
//     solution's own behaviour (threads, processes, libraries, torch's and the
//     harness's functions, plain tensors), but no reference runs and no output is
//     compared: each correctness round's and each sampled timed call's outputs and
//     input digests are written to judge/<position>/ (python/solbench_py/record.py)
//     and listed with their SHA-256 in the outcome's record;
//   - a Judge with a record (the reference worker, no solution code): the inputs
//     generated again, the reference run, the records read as data and judged
//     (values, inputs changed, sampled timed calls), then T_ref.
// Each role is a verdict strategy on one round loop (worker/session_state.h lists
// the files that hold them).
// Before the solution is loaded (start()): the timer is made, the code loaded so far
// is sealed (code_seal.h), and the thread and torch baselines are taken.
// Workloads that cannot run here (missing safetensors blob, a dtype this torch
// lacks, a reference that needs a GPU or a newer GPU) are reported as skipped with
// the reason.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/json.h"
#include "harness/protocol.h"
#include "harness/values.h"

namespace solbench::harness {

// The solution could not be loaded (import error, missing symbol, ABI mismatch).
// `skip`: not the solution's fault, it cannot run here (a Blackwell-only language
// on an older GPU, a language runtime that is not installed): every workload is
// reported SKIPPED with the reason instead of failing.
// `reward_hack`: the static look at its sources found what a kernel never needs
// (python/solbench_py/static_check.py); every workload is REWARD_HACK.
class LoadError : public std::runtime_error {
 public:
  explicit LoadError(const std::string& what, bool skip = false, bool reward_hack = false)
      : std::runtime_error(what), skip_(skip), reward_hack_(reward_hack) {}
  bool skip() const { return skip_; }
  bool reward_hack() const { return reward_hack_; }

 private:
  bool skip_;
  bool reward_hack_;
};

// Why the reference's failure (its exception text) means the workload cannot be
// evaluated on `device` ("cpu" or "cuda:N") rather than that something is wrong;
// nullopt for a genuine failure. `input_dtypes` are the definition's input dtypes.
std::optional<std::string> reference_unavailable_here(const std::string& error_text,
                                                      const Device& device,
                                                      const std::vector<std::string>& input_dtypes);

class WorkerSession {
 public:
  // `emit` sends a frame to the parent (progress reports); `ask` sends one and
  // returns the parent's answer (the seeds of the values, values.h), needed by
  // every worker but the Judge.
  using Emit = std::function<void(const json&)>;
  WorkerSession(WorkerPlan plan, Emit emit, ParentValues::Ask ask = {});
  ~WorkerSession();
  WorkerSession(const WorkerSession&) = delete;
  WorkerSession& operator=(const WorkerSession&) = delete;

  // Starts Python and torch, loads the reference, then the solution. Returns
  // {env: {...}, phases_ms: {...}}. Throws LoadError for problems of the solution,
  // std::runtime_error for problems of the worker itself.
  json start();

  // Starts Python and torch's runtime on `device` (runtime.init: the CUDA context,
  // cuBLAS; then a few kernels, between `before_kernels` and `after_kernels`) ahead
  // of any plan, for a spare worker (zygote.h); a later start() on the same device
  // finds it done. Returns runtime.init's environment; throws std::runtime_error.
  static json start_runtime(const Device& device, const std::function<void()>& before_kernels,
                            const std::function<void()>& after_kernels);
  // A spare's warm-up after start_runtime (runtime.warm_spare): `warm` is
  // {workload, seed, reference_source, custom_inputs_entrypoint, run_reference}.
  // Returns the steps run; never throws (a warm-up is a courtesy). For workloads
  // with more than 256 MiB of inputs it warms the inputs' dtypes' matrix products only.
  static int warm_spare(const json& warm, const Device& device);
  // Triton's first launch paid ahead by a spare for a Python solution
  // (solbench_py.triton_warm): `launch` false compiles a kernel of its own (no GPU
  // work; outside the GPU's timing lock), true launches it once (under the lock).
  // Returns whether the step ran; never throws.
  static bool warm_triton(const Device& device, bool launch);
  // A spare's last step before it stands by: torch's fingerprint and a first full
  // look at it (identity.torch_changes), kept for its plan. The claimed worker then
  // checks that fingerprint after its reference's load with a quick look, taking a
  // new one only where that load changed something (the fingerprint's 15-20 ms of a
  // warm call's start on an H200; the look after the solution's load stays a full
  // one). Returns the milliseconds it took; never throws.
  static double take_torch_baseline_ahead();

  // Runs the reference and the comparison once on `spec`'s first correctness
  // inputs and drops the results (a reference worker waiting for its work): the
  // kernels and libraries they load are loaded. Each of its three steps (inputs,
  // reference, comparison) runs only if `may_run()` says so, and `done()` follows
  // it; a refusal ends the warm-up. Returns the steps run. Never throws; skips
  // workloads with more than 256 MiB of inputs.
  int warm_up(const json& spec, const std::function<bool()>& may_run,
              const std::function<void()>& done);

  // Called once, before the reference is first timed (judge.timing_after_go: the
  // worker waits there for the parent's "go").
  void set_timing_gate(std::function<void()> gate);
  // A Judge's "go" frame: the workloads whose T_ref it names (reference_known) are
  // not timed here; the parent has them.
  void set_reference_known(const json& go);

  // A Baseline's plan with gpu_after_go: compiles each workload's shapes in order
  // (baseline.precompile, whose kernels hold the GPU's timing lock) until `stop()`
  // says so, then frees the GPU memory it cached; evaluate() then skips the
  // compile of those done. `done(compiled)` after each workload tried (false:
  // nothing to compile ahead, as on the CPU, a compile that a benchmark stopped in
  // its middle, or a failure). Returns how many were compiled. Never throws: a
  // failure is met again, and reported, by the workload's rounds.
  size_t compile_ahead(const std::function<bool()>& stop,
                       const std::function<void(bool compiled)>& done = {});

  // A Judge's plan with work_follows: workloads and records that came after start()
  // (all at once, or with judge.streamed one "work" frame at a time), appended to
  // those before; a missing record means T_ref only. Returns the index of the first.
  size_t add_work(std::vector<json> workloads, std::vector<std::optional<CallRecord>> records);
  // ... each judged as it comes: evaluate(i) but for T_ref, which it owes, every
  // step holding the GPU's timing lock shared (no timed loop of the Recorder's runs
  // beside it); then the GPU memory it cached goes back.
  WorkloadOutcome judge_ahead(size_t i);
  // ... and after "go": T_ref of workload i into `o`, where judge_ahead owes it.
  WorkloadOutcome time_owed_reference(size_t i, WorkloadOutcome o);
  // Workload i's record came with its correctness rounds only (RecordPart::Rounds):
  // its judging calls `read` for the rest (none: the record was withdrawn) once
  // the rounds are judged.
  void expect_rest(size_t i, std::function<std::optional<CallRecord>()> read);
  // After judge_ahead(i): the rest read if the judging ended before it (a round
  // failed); false when the record was withdrawn, workload i then taken off again
  // (it was the last one added).
  bool settle_rest(size_t i);

  // Evaluates plan.workloads[i]. Never throws for problems of the solution.
  WorkloadOutcome evaluate(size_t i);

  // True once the solution left a process running: the worker must not go on
  // (the process could interfere with later workloads); a fresh one takes over.
  bool processes_left() const;

  // True once `--profile` read hardware counters in this worker (CUPTI's range
  // profiler, kernel replay): a later workload gets a fresh worker, since a
  // cuDNN call after it crashed the process once (heap corruption, docs/profile.md).
  bool counters_read() const;

  // The session's inside (worker/session_state.h), named by its files only.
  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace solbench::harness
