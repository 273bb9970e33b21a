// The worker session's inside (worker_session.h), shared by its files.
// Worker-internal (pybind11 types): include from these files only.
//
//   worker_session.cc   the session's life: start (Python, the reference, the timer
//                       and the seal, the solution), warm-ups, work assigned later
//   session_checks.cc   what the solution's behaviour is checked for (threads,
//                       processes, libraries, torch, hooks, inputs, lazy outputs)
//   session_rounds.cc   one workload: its outcome whatever happens, the correctness
//                       round loop, the verification of sampled timed calls, and
//                       the steps they share (inputs, the reference, comparisons)
//   session_timing.cc   the timing input sets, the solution's timed pool run, T_ref
//   session_roles.cc    the verdict strategy of each WorkerRole (RoleVerdict)
//   pooled_run.h/cc     PooledRun, the timed loop's calls
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <pybind11/embed.h>
#include <pybind11/stl.h>  // every file that casts to std:: types needs the same casters

#include "harness/timing/device_lock.h"
#include "harness/timing/memory_shares.h"
#include "harness/timing/timer.h"
#include "harness/values.h"
#include "harness/worker/candidate.h"
#include "harness/worker/native_library.h"
#include "harness/worker/pooled_run.h"
#include "harness/worker/worker_session.h"

namespace solbench::harness {

namespace detail {

namespace fs = std::filesystem;

class Stopwatch {
 public:
  double ms() const {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0_)
        .count();
  }

 private:
  std::chrono::steady_clock::time_point t0_ = std::chrono::steady_clock::now();
};

// Conversions between nlohmann JSON and Python objects, through text: plans are
// small and this keeps pybind11 out of the JSON types.
py::object to_py(const json& j);
// runtime.json_text: non-finite floats (an error ratio that overflowed) become
// finite or null, since Python's "Infinity" is not JSON.
json from_py(const py::handle& o);

// Warm-ups on the CPU (WorkerSession::warm_up) and a spare's (warm_spare) skip
// workloads with more inputs than this: drawing them would cost more than the
// kernels' first loads they save. (A Judge's on a GPU follows kBesideEvaluationBytes.)
inline constexpr uint64_t kWarmUpInputLimit = 256ull << 20;

// Ends a workload's evaluation early with a status (or a skip).
struct Finish {
  Status status;
  std::string message;
  bool skip = false;
};

// "timed call 4", or "warm-up call 2" for a call before the timed ones.
std::string call_name(int call, int pool_call);

// The time of a workload's phases (phases_ms), under the keys a role names, written
// in that order.
class PhaseTimes {
 public:
  PhaseTimes(std::initializer_list<const char*> keys);  // NOLINT: braced lists of keys
  void add(const char* key, double ms);
  // Runs `f` and adds its time to `key`; returns what `f` returns.
  template <typename F>
  auto time(const char* key, F&& f) {
    Stopwatch sw;
    struct Add {
      PhaseTimes& t;
      const char* key;
      Stopwatch& sw;
      ~Add() { t.add(key, sw.ms()); }
    } add{*this, key, sw};
    return f();
  }
  void write(json& phases) const;

 private:
  std::vector<std::pair<std::string, double>> ms_;
};

// One workload in progress: what every step works on.
struct __attribute__((visibility("hidden"))) WorkloadRun {
  WorkloadRun(size_t index, const json& spec, py::object w, WorkloadOutcome& o)
      : index(index), spec(spec), w(std::move(w)), o(o) {}
  size_t index;
  const json& spec;
  py::object w;        // runtime.Workload
  WorkloadOutcome& o;
  Correctness acc;     // over the rounds compared so far
  std::unique_ptr<Candidate> candidate;  // the solution (roles that load one)
};

// The outputs of a timed pool run (session_timing.cc) and what they were made from.
struct __attribute__((visibility("hidden"))) TimedRun {
  TimingResult result;
  std::vector<PooledRun::Saved> kept;  // the calls the parent picked
  py::object pool;                     // the ArgPool
  int sets = 0;
  py::list input_sets, ref_sets;
};

// The sampled timed calls as a role sees them (verify_sampled_calls): made in
// this process (in-process) or read from the Recorder's record (the Judge).
class __attribute__((visibility("hidden"))) SampledSource {
 public:
  virtual ~SampledSource() = default;
  virtual size_t size() const = 0;
  virtual std::string name(size_t i) const = 0;  // call_name
  // Sample i's inputs generated again; a failure is the step's Finish.
  virtual py::list pristine(size_t i) = 0;
  // Sample i's outputs, and (when `inputs` is true) the first input it changed
  // ("" when none) against `pristine`.
  virtual std::pair<py::object, std::string> observed(size_t i, const py::list& pristine,
                                                      bool inputs) = 0;
  // The ArgPool or CallValues whose fresh_inputs() names the refreshed inputs.
  virtual py::object values() = 0;
};

class RoleVerdict;

}  // namespace detail

namespace py = pybind11;
using detail::Finish;
using detail::Stopwatch;

// Hidden like pybind11's own types, which it holds.
struct __attribute__((visibility("hidden"))) WorkerSession::Impl {
  WorkerPlan plan;
  Emit emit;
  std::unique_ptr<detail::RoleVerdict> verdict;  // per plan.role (session_roles.cc)
  py::module_ runtime;
  py::object ref_run = py::none();
  py::object custom_fn = py::none();
  std::string reference_error;  // the reference could not be loaded
  py::object solution_fn = py::none();  // Python-family, torch extension, reference
  // Role Baseline: how the reference runs ("torch.compile" or "eager") and why.
  std::string baseline_method, baseline_reason;
  NativeLibrary native;
  std::unique_ptr<Timer> timer;
  DeviceLock timing_lock;  // opened before any solution code runs
  MemoryShares memory_shares;  // role Baseline on a GPU: held for each workload's GPU work
  void* stream = nullptr;  // cudaStream_t on "cuda:N", nullptr on the CPU
  // Threads before the solution was loaded (ids); later ones must be explained.
  std::vector<int> thread_baseline;
  bool thread_baseline_taken = false;
  // Threads seen and explained (the baseline, then runtimes' threads check_threads
  // accepted): before each timed call only a thread not among them is looked at.
  std::set<int> threads_explained;
  // Identities of torch's functions before the solution was loaded
  // (runtime.torch_fingerprint); a replacement slows or changes the reference.
  py::object torch_fingerprint = py::none();
  // The interpreter's hooks before the solution was loaded (hooks.state): one it
  // installs could run its code between the harness's steps.
  py::object hook_baseline = py::none();
  // True once the solution left a process running (check_processes).
  bool processes_left = false;
  // True once the profile's counter pass ran here (WorkerSession::counters_read).
  bool counters_read = false;
  // Where the seeds of every value come from (values.h): the parent, or, in the
  // Judge, the secret in the plan.
  std::unique_ptr<ValueSource> values;
  std::vector<std::string> input_dtypes;
  json static_findings = json::array();  // static_check.py, reported in env
  py::module_ record_mod;  // solbench_py.record: the judge's files
  std::function<void()> timing_gate;  // set_timing_gate: run once, then cleared
  // A streamed Judge's workloads being judged ahead (WorkerSession::judge_ahead):
  // T_ref is not timed but owed, and the GPU memory is freed by the caller.
  bool judging_ahead = false;
  std::set<size_t> reference_owed;  // workloads judged ahead whose T_ref is owed
  // A record that came with its rounds only (WorkerSession::expect_rest): its
  // workload, how its rest is read, and whether that rest withdrew it.
  std::optional<size_t> rest_owed;
  std::function<std::optional<CallRecord>()> read_rest;
  bool rest_withdrawn = false;
  // Reads the rest of workload i's record where it is owed: false when withdrawn;
  // throws Finish when its rounds are not the ones judged.
  bool take_rest(size_t i);
  json check_ms = json::object();   // after_call's host time by kind, this workload
  // Workloads whose T_ref the parent knows ("go"'s reference_known): not timed here.
  std::set<size_t> reference_known;
  double step_lock_wait_ms = 0;     // GpuStep's waits for the lock, for the caller to take

  // ---- start (worker_session.cc)
  json start_python(json& phases);
  void load_reference();
  void seal_and_take_baselines(json& env, json& phases);  // its parts' times into phases
  void load_solution(json& env);
  void check_after_load();

  // ---- the solution's behaviour (session_checks.cc): each throws Finish
  void check_threads(const char* when, bool settle = true);
  // Just before a timed call's span, while its values exist: no thread of the
  // solution's may be alive to work on them beside the harness (hooks.py).
  void check_threads_before_span();
  void check_libraries(const char* when);
  void check_torch(const char* when);
  long torch_full_looks() const;  // identity.torch_changes' full looks so far (0 without)
  void check_hooks(const char* when);
  // "" or what the solution installed since hook_baseline, said with `when`.
  std::string hooks_installed(const char* when);
  void check_processes(const char* when);
  // The verdict on inputs a call changed in place (`when`: "in correctness round 2").
  static Finish inputs_changed(const std::vector<std::string>& names, const std::string& when);
  // Inputs the call changed in place (workload.py Workload.changed_inputs).
  static void check_inputs(py::object& w, const py::handle& inputs, const py::handle& before,
                           const std::string& when);
  // What is checked after every correctness call, in this order: threads,
  // processes, `inputs_check` (the role's look at the inputs, if any), libraries,
  // torch's and the harness's functions, plain tensors out.
  void after_call(int round, const py::list& got, const std::function<void()>& inputs_check);
  // ... and after the timed calls (`lazy`: PooledRun::lazy()).
  void after_timed_calls(const std::string& lazy);

  // ---- one workload (session_rounds.cc)
  WorkloadOutcome evaluate(size_t index);
  // One untimed step that runs kernels (a correctness round, a sampled call's
  // check, the timing inputs, a record written): the GPU's timing lock held shared
  // for its length (device_lock.h), so that no timed loop of any worker on this GPU
  // runs beside it; at its end this process's GPU work is waited for before the lock
  // goes. Nothing on a CPU. Its wait adds to step_lock_wait_ms.
  class GpuStep {
   public:
    explicit GpuStep(Impl& s);
    ~GpuStep();
    GpuStep(const GpuStep&) = delete;
    GpuStep& operator=(const GpuStep&) = delete;

   private:
    Impl& s_;
    bool held_;
  };
  // Waits for the GPU work this process queued (on a GPU; never throws).
  void synchronize_device();
  // Hands the GPU memory torch caches back (runtime.release_memory: gc.collect(),
  // 150-200 ms), for the next workload or another process; nothing where a call
  // left GPU work running (it would hang). Never throws.
  void release_device_memory();
  size_t compile_ahead(const std::function<bool()>& stop, const std::function<void(bool)>& done);
  // runtime.Workload for one of plan.workloads.
  py::object workload_object(const json& spec);
  static const std::string& uuid_of(const json& spec) {
    return spec.at("uuid").get_ref<const std::string&>();
  }
  // A round's inputs (correctness rounds, then the timing input sets) of workload
  // `spec`, drawn from the round's seed, which the parent hands out only now.
  py::list inputs_of(py::object& w, const json& spec, int round);
  // inputs_of, its failures as the workload's end (a skip or RUNTIME_ERROR).
  py::list make_inputs(py::object& w, const json& spec, int round);
  void progress(size_t index, WorkloadPhase phase, int round = -1);
  std::unique_ptr<detail::Candidate> solution_candidate(const py::object& workload);
  // The harness ran out of GPU memory: kOutOfGpuMemory and torch's first line.
  static std::optional<std::string> out_of_gpu_memory(py::error_already_set& e);
  // Why a Python error of the harness's own work (inputs, the reference, copies)
  // means "cannot evaluate this workload here", or nullopt.
  std::optional<std::string> skip_reason(py::error_already_set& e, bool from_reference);
  // The reference's failure: a skip where it cannot run here, else INVALID_REFERENCE
  // with `what` and the error.
  Finish reference_failure(py::error_already_set& e, const std::string& what);
  py::list reference_outputs(py::object& w, const py::list& inputs, const std::string& what);
  // Poisoned outputs for a call (`refs`: the reference's, None without one).
  py::list alloc_outputs(py::object& w, const py::object& refs);
  // The solution's call in correctness round `round`; its outputs.
  py::list call_solution(int round, detail::Candidate& c, const py::list& inputs,
                         const py::list& outs);
  // `got` against the reference's `refs` (runtime.Workload.check), into run.acc;
  // a failure ends the workload.
  void compare_outputs(detail::WorkloadRun& run, int round, const py::handle& got,
                       const py::list& refs);
  // The correctness rounds, each with fresh inputs, as the role's verdict makes them.
  void run_rounds(detail::WorkloadRun& run);
  // The sampled timed calls' outputs and inputs against the reference on the values
  // each saw (generated again): a changed input first, then wrong outputs.
  void verify_sampled_calls(detail::WorkloadRun& run, detail::SampledSource& src, int sets);

  // ---- timing (session_timing.cc)
  // Fresh input sets (round indices after the correctness rounds) and, with
  // `with_reference`, their reference outputs; returns how many.
  int timing_sets(const json& spec, py::object& w, py::list& input_sets, py::list& ref_sets,
                  bool with_reference = true);
  // The solution's timed loop on the timing sets (their reference outputs with
  // `with_reference`), then the checks on what it left behind.
  detail::TimedRun timed_pool_run(detail::WorkloadRun& run, bool with_reference);
  // measure() while holding the GPU's timing lock: no other evaluation on this GPU
  // times at the same moment (timing/device_lock.h); the wait is a phase of its own,
  // and the loop's steps' host time go to the phases as `<phase>_<step>_ms`
  // (timing_prepare_ms, reference_timing_read_ms, ...).
  TimingResult locked_measure(Measurable& m, WorkloadOutcome& o, const std::string& phase);
  // `--profile` (plan.profile): after the timed loop, one call on the first timing
  // input set traced kernel by kernel, one with hardware counters; into run.o.profile.
  void profile_pass(detail::WorkloadRun& run, const detail::TimedRun& t);
  // The profile of one more call of `c` (the solution's, or with `solution` false
  // the reference's: no checks of its behaviour, phases reference_profile_*) on the
  // first of `input_sets`, `median_ms` its timed median; the profile's JSON.
  json profile_call(size_t index, py::object& w, detail::Candidate& c, const py::list& input_sets,
                    double median_ms, WorkloadOutcome& o, bool solution);
  // T_ref on the timing sets (after the timing gate, once); with plan.profile, the
  // reference's profile after its timed loop (o.reference_profile).
  void time_reference(size_t index, py::object& w, const py::list& input_sets,
                      const py::list& ref_sets, WorkloadOutcome& o);
  // Whether workload `index`'s T_ref is the parent's (reference_known): then `o`'s
  // phases say so and nothing is timed.
  bool reference_is_known(size_t index, WorkloadOutcome& o) {
    if (!reference_known.count(index)) return false;
    o.phases_ms["reference_timing_known"] = 1;
    return true;
  }
};

namespace detail {

// What a role does where the shared steps leave a choice (session_roles.cc): the
// solution called here or its record read, the reference run here or nowhere,
// outputs compared or recorded. One per session, made for plan.role.
class __attribute__((visibility("hidden"))) RoleVerdict {
 public:
  explicit RoleVerdict(WorkerSession::Impl& s) : s_(s) {}
  virtual ~RoleVerdict() = default;

  // Before anything of workload `index` runs.
  virtual void begin(size_t) {}
  // The workload, from its correctness rounds to T_ref. Throws Finish.
  virtual void evaluate(WorkloadRun& run) = 0;
  // The workload ended early (a skip aside): what the role adds to the outcome.
  virtual void failed(WorkloadOutcome&) {}
  // After the workload, whatever happened.
  virtual void finished(WorkloadOutcome&) {}
  // Before any workload runs (WorkerSession::compile_ahead): what the role can
  // prepare for workload `run` without running it; false when it prepares nothing
  // or only part of it (the rest is left to evaluate()).
  virtual bool ahead(WorkloadRun&) { return false; }

  // The round loop (Impl::run_rounds): how many rounds, under which phase, the
  // phases_ms keys a round adds to and the one for the loop's whole time.
  virtual int round_count(const WorkloadRun&) const;
  virtual WorkloadPhase round_phase() const { return WorkloadPhase::Correctness; }
  virtual PhaseTimes round_phases() const = 0;
  virtual const char* rounds_key() const { return "correctness_ms"; }
  // One round, once its inputs are made (their time is "inputs_ms").
  virtual void round(WorkloadRun& run, int round, py::list& inputs, PhaseTimes& t) = 0;

 protected:
  WorkerSession::Impl& s_;
};

std::unique_ptr<RoleVerdict> make_role_verdict(WorkerSession::Impl& s);

}  // namespace detail

}  // namespace solbench::harness
