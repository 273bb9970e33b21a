#include "harness/worker/worker_session.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <optional>
#include <random>
#include <set>

#include <fmt/format.h>
#include <pybind11/embed.h>
#include <pybind11/stl.h>

#include "bridge/python.h"
#include "core/dtype.h"
#include "harness/worker/candidate.h"
#include "harness/worker/code_seal.h"
#include "harness/worker/native_library.h"
#include "harness/checks/threads.h"
#include "harness/timing/device_lock.h"
#include "harness/timing/gpu/gpu_errors.h"  // WorkLeftRunning
#include "harness/timing/timer.h"
#include "harness/timing/timing.h"
#include "harness/values.h"

namespace solbench::harness {

namespace py = pybind11;
namespace fs = std::filesystem;
using detail::CallError;
using detail::Candidate;

namespace {

using Ms = std::chrono::duration<double, std::milli>;

class Stopwatch {
 public:
  double ms() const { return Ms(std::chrono::steady_clock::now() - t0_).count(); }

 private:
  std::chrono::steady_clock::time_point t0_ = std::chrono::steady_clock::now();
};

// Conversions between nlohmann JSON and Python objects, through text: plans are
// small and this keeps pybind11 out of the JSON types.
py::object to_py(const json& j) {
  return py::module_::import("json").attr("loads")(j.dump());
}
// runtime.json_text: non-finite floats (an error ratio that overflowed) become
// finite or null, since Python's "Infinity" is not JSON.
json from_py(const py::handle& o) {
  return json::parse(
      py::module_::import("solbench_py.runtime").attr("json_text")(o).cast<std::string>());
}

bool mentions_gpu(const std::string& text) {
  for (const char* k : {"CUDA", "cuda", "NVIDIA", "nvidia", "triton", "Triton"})
    if (text.find(k) != std::string::npos) return true;
  return false;
}

// Warm-ups (WorkerSession::warm_up, warm_spare) skip workloads with more inputs than
// this: drawing them would cost more than the kernels' first loads they save.
constexpr uint64_t kWarmUpInputLimit = 256ull << 20;

uint64_t input_bytes(const json& spec) {
  uint64_t total = 0;
  for (const auto& o : spec.at("inputs")) {
    if (!o.at("shape").is_array()) continue;
    uint64_t n = 1;
    for (const auto& d : o.at("shape")) n *= d.get<uint64_t>();
    auto dt = parse_dtype(o.at("dtype").get<std::string>());
    total += dt ? storage_bytes(*dt, n) : n * 8;
  }
  return total;
}

// Ends a workload's evaluation early with a status (or a skip).
struct Finish {
  Status status;
  std::string message;
  bool skip = false;
};

// "timed call 4", or "warm-up call 2" for a call before the timed ones.
std::string call_name(int call, int pool_call) {
  return call >= 0 ? fmt::format("timed call {}", call + 1)
                   : fmt::format("warm-up call {}", pool_call + 1);
}

// The verdict on the sampled timed calls, the same where the solution's worker
// checks them (in-process) and where the reference worker judges their records:
// the first changed input and the first wrong output, each named by its call.
struct SampledCalls {
  int failed = 0;
  std::string first_failure, input_change;

  void wrong_output(const std::string& call, const std::string& message) {
    if (failed++ == 0) first_failure = call + ": " + message;
  }
  void changed_input(const std::string& call, const std::string& name) {
    if (input_change.empty()) input_change = fmt::format("{}: '{}'", call, name);
  }
  // Records what was checked (`values` is the ArgPool or CallValues whose
  // fresh_inputs() names the refreshed inputs), then throws the verdict: a changed
  // input first, then wrong outputs.
  void finish(WorkloadOutcome& o, size_t checked, int sets, py::object& w,
              const py::object& values, double verify_ms) const {
    const auto fresh = values.attr("fresh_inputs")().cast<py::list>();
    o.extra["verification"] = {{"checked_calls", checked},
                               {"failed_calls", failed},
                               {"input_sets", sets},
                               {"fresh_inputs", w.attr("input_names")(fresh)
                                                    .cast<std::vector<std::string>>()}};
    o.phases_ms["verify_ms"] = verify_ms;
    if (!input_change.empty())
      throw Finish{Status::RewardHack,
                   "the solution changed an input in place during timing (" + input_change +
                       "; the reference leaves it unchanged)"};
    if (failed > 0)
      throw Finish{Status::RewardHack,
                   fmt::format("{} of {} sampled timed calls produced wrong outputs although the "
                               "correctness rounds passed; first: {}",
                               failed, checked, first_failure)};
  }
};

// Times a Candidate with arguments from an ArgPool. Each call's values come from a
// seed handed out just before it (values.h: by the parent in a worker that runs
// solution code), and the calls kept for verification are picked after they
// returned (the grant of the next call, or the end of the loop, names the slot):
// their outputs and their inputs as the call left them are copied then, outside
// the timed spans. Anyone holding the seed can generate a kept call's inputs
// again (CallValues.pristine), so it is checked against the reference computed on
// exactly the values it saw.
class PooledRun final : public Measurable {
 public:
  // `before_span`: run once a call's arguments are ready, just before its span.
  PooledRun(Candidate& c, py::object pool, py::module_& runtime, ValueSource& values,
            bool check_lazy, std::function<void()> before_span = {})
      : c_(c),
        pool_(std::move(pool)),
        runtime_(runtime),
        values_(values),
        check_lazy_(check_lazy),
        before_span_(std::move(before_span)) {}
  ~PooledRun() override { collector_back(); }

  // "call N: main._Lazy" for the first call whose outputs were not plain tensors.
  const std::string& lazy() const { return lazy_; }

  // From the seed's arrival to the span, nothing of the solution's may run
  // (python/solbench_py/hooks.py): the seed reaches Python only once the previous
  // call's objects are released (their finalizers have run) and with the garbage
  // collector off (no collection, no gc.callbacks, no __del__ of cyclic garbage)
  // until the span begins.
  void prepare(int) override {
    const CallGrant g = values_.call(calls_);
    keep(g.keep);  // the previous call, before this one's fill overwrites its views
    c_.release();
    inputs_ = py::list();
    if (!collector_off_) {
      collector_was_on_ = PyGC_Disable() == 1;
      collector_off_ = true;
    }
    py::tuple t = pool_.attr("next")(g.seed).cast<py::tuple>();
    inputs_ = t[1].cast<py::list>();
    call_ = t[3].cast<int>();
    seed_ = g.seed;
    ++calls_;
    c_.bind(inputs_, t[2].cast<py::list>());
    if (before_span_) before_span_();
  }
  void run() override {
    collector_back();
    c_.invoke();
  }
  void finish(int, bool timed) override {
    // Every call, warm-up included: a tensor subclass returned from any call could
    // do its work when the harness first touches it, after the span.
    if (check_lazy_ && lazy_.empty()) {
      const std::string bad = runtime_.attr("lazy_outputs")(c_.outputs()).cast<std::string>();
      if (!bad.empty()) lazy_ = fmt::format("call {}: {}", call_ + 1, bad);
    }
    if (!timed) ++warmup_;
  }
  // After the loop: where the last call goes.
  void end() {
    if (calls_ > 0) keep(values_.calls_end(calls_));
  }

  struct Saved {
    int call = -1;       // index among the timed calls (-1: a warm-up call)
    int pool_call = -1;  // index among the pool's calls (warm-up included)
    uint64_t seed = 0;   // of its values
    py::object outputs;
    py::object inputs_after;  // the inputs as the call left them
  };
  // The kept calls, in slot order.
  std::vector<Saved> saved() const {
    std::vector<Saved> out;
    for (const auto& s : saved_)
      if (s.pool_call >= 0) out.push_back(s);
    return out;
  }

 private:
  void keep(int slot) {
    if (slot < 0 || calls_ == 0) return;
    if (slot > 4096) throw std::runtime_error("a sample slot out of range");
    if (static_cast<size_t>(slot) >= saved_.size()) saved_.resize(slot + 1);
    const int pool_call = calls_ - 1;
    saved_[slot] = {pool_call >= warmup_ ? pool_call - warmup_ : -1, pool_call, seed_,
                    runtime_.attr("clone_all")(c_.outputs()), runtime_.attr("clone_all")(inputs_)};
  }

  void collector_back() {
    if (collector_off_ && collector_was_on_) PyGC_Enable();
    collector_off_ = false;
  }

  Candidate& c_;
  py::object pool_;
  py::module_& runtime_;
  ValueSource& values_;
  bool check_lazy_;
  std::function<void()> before_span_;
  bool collector_off_ = false, collector_was_on_ = false;
  int call_ = 0;
  int calls_ = 0;   // calls prepared so far
  int warmup_ = 0;  // warm-up calls finished so far
  uint64_t seed_ = 0;
  std::vector<Saved> saved_;
  py::list inputs_;
  std::string lazy_;
};

}  // namespace

// Hidden like pybind11's own types, which it holds.
struct __attribute__((visibility("hidden"))) WorkerSession::Impl {
  WorkerPlan plan;
  Emit emit;
  py::module_ runtime;
  py::object ref_run = py::none();
  py::object custom_fn = py::none();
  std::string reference_error;  // the reference could not be loaded
  py::object solution_fn = py::none();  // Python-family, torch extension, reference
  // plan.baseline_compile: how the reference runs ("torch.compile" or "eager") and why.
  std::string baseline_method, baseline_reason;
  NativeLibrary native;
  std::unique_ptr<Timer> timer;
  DeviceLock timing_lock;  // opened before any solution code runs
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
  // Where the seeds of every value come from (values.h): the parent, or, in the
  // reference worker, the secret in the plan.
  std::unique_ptr<ValueSource> values;
  std::vector<std::string> input_dtypes;
  json static_findings = json::array();  // static_check.py, reported in env
  py::module_ record_mod;  // solbench_py.record: the judge's files
  // plan.record_calls: the current workload's record, its folder, and whether its
  // evaluation had reached the timed calls (where a failure happened).
  CallRecord rec;
  fs::path rec_dir;
  bool in_timing = false;
  std::function<void()> timing_gate;  // set_timing_gate: run once, then cleared

  static const std::string& uuid_of(const json& spec) {
    return spec.at("uuid").get_ref<const std::string&>();
  }

  // A round's inputs (correctness rounds, then the timing input sets) of workload
  // `spec`, drawn from the round's seed, which the parent hands out only now.
  py::list inputs_of(py::object& w, const json& spec, int round) {
    return w.attr("make_inputs")(round, values->round_seed(uuid_of(spec), round)).cast<py::list>();
  }

  void progress(size_t index, std::string_view phase, int round = -1) {
    json f = {{"type", "progress"}, {"t_ns", monotonic_ns()}, {"index", index},
              {"phase", phase}};
    if (round >= 0) f["round"] = round;
    emit(f);
  }

  std::unique_ptr<Candidate> solution_candidate(const py::object& workload) {
    if (plan.entry.kind == EntryKind::Native)
      return detail::make_native_candidate(native.entry(), runtime, input_dtypes, stream);
    const bool dps = plan.entry.kind == EntryKind::Reference ? false : plan.entry.dps;
    return detail::make_python_candidate(solution_fn, dps, workload);
  }

  // The harness ran out of GPU memory (the workload is too large for what is free:
  // with other evaluations on the GPU, perhaps only now): kOutOfGpuMemory and torch's
  // first line, which says how much was free.
  static std::optional<std::string> out_of_gpu_memory(py::error_already_set& e) {
    const std::string text = py::str(e.value()).cast<std::string>();
    if (!e.matches(PyExc_Exception) ||
        (text.find("CUDA out of memory") == std::string::npos &&
         std::string(e.what()).find("OutOfMemoryError") == std::string::npos))
      return std::nullopt;
    return std::string(kOutOfGpuMemory) + ": " + text.substr(0, text.find('\n')).substr(0, 300);
  }

  // Why a Python error means "cannot evaluate this workload here", or nullopt.
  // Only for errors of the harness's own work (inputs, the reference, copies): a
  // solution's errors come as CallError.
  std::optional<std::string> skip_reason(py::error_already_set& e, bool from_reference) {
    if (auto oom = out_of_gpu_memory(e)) return oom;
    py::module_ inputs = py::module_::import("solbench_py.inputs");
    if (e.matches(inputs.attr("MissingBlob")))
      return std::string("safetensors blob missing: ") + py::str(e.value()).cast<std::string>();
    if (e.matches(inputs.attr("UnsupportedDtype")))
      return py::str(e.value()).cast<std::string>();
    if (from_reference)
      return reference_unavailable_here(py::str(e.value()).cast<std::string>() + "\n" + e.what(),
                                        plan.device, input_dtypes);
    return std::nullopt;
  }

  // Threads that appeared since the solution was loaded are the solution's unless
  // shown to be a runtime's: a Python thread whose creator (recorded when it
  // started, runtime.thread_origins) is torch's or Triton's code, or a thread Python
  // did not start that carries a GPU runtime's name (threads.h runtime_thread_name).
  void check_threads(const char* when) {
    if (!thread_baseline_taken) return;
    const std::vector<ThreadInfo> now = list_threads();
    std::vector<std::string> unexplained;
    py::dict origins;
    bool have_origins = false;
    for (const ThreadInfo& t : now) {
      if (std::find(thread_baseline.begin(), thread_baseline.end(), t.tid) !=
          thread_baseline.end())
        continue;
      if (!have_origins) {
        origins = runtime.attr("thread_origins")().cast<py::dict>();
        have_origins = true;
      }
      const py::int_ key(t.tid);
      std::string origin;
      if (origins.contains(key)) origin = origins[key].cast<std::string>();
      if (origin.rfind("runtime:", 0) == 0) continue;
      if (origin.empty() && runtime_thread_name(t.name)) continue;
      unexplained.push_back(fmt::format("{} '{}'{}", t.tid, t.name,
                                        origin.empty() ? "" : " started by " + origin));
    }
    if (unexplained.empty()) {
      for (const ThreadInfo& t : now) threads_explained.insert(t.tid);
      return;
    }
    throw Finish{Status::RewardHack,
                 fmt::format("the solution left {} thread(s) running {} ({} threads before it "
                             "was loaded, {} after; first: {})",
                             unexplained.size(), when, thread_baseline.size(), now.size(),
                             unexplained.front())};
  }

  // Just before a timed call's span, while its values exist: no thread of the
  // solution's may be alive to work on them beside the harness (hooks.py).
  void check_threads_before_span() {
    if (!thread_baseline_taken) return;
    for (int tid : thread_ids())
      if (!threads_explained.count(tid)) {
        check_threads("while a timed call's inputs were prepared");
        return;
      }
  }

  // A torch function replaced since the solution was loaded: the reference, which
  // runs in this worker, would run the replacement.
  // Profiler and management libraries the solution's own code loaded through
  // ctypes (runtime.py records them; a kernel never needs CUPTI or NVML).
  void check_libraries(const char* when) {
    const std::string loaded = runtime.attr("violations")().cast<std::string>();
    if (!loaded.empty())
      throw Finish{Status::RewardHack, fmt::format("the solution {} ({})", loaded, when)};
  }

  void check_torch(const char* when) {
    if (torch_fingerprint.is_none()) return;
    const std::string changed =
        runtime.attr("torch_changes")(torch_fingerprint).cast<std::string>();
    if (!changed.empty())
      throw Finish{Status::RewardHack,
                   fmt::format("the solution replaced torch functions {} (the reference runs "
                               "them): {}",
                               when, changed)};
    check_hooks(when);
  }
  // What the solution installed in the interpreter (hooks.py): code that runs
  // between the harness's steps, where a call's values exist before its span.
  void check_hooks(const char* when) {
    if (const std::string why = hooks_installed(when); !why.empty())
      throw Finish{Status::RewardHack, why};
  }
  // "" or what the solution installed since hook_baseline, said with `when`.
  std::string hooks_installed(const char* when) {
    if (hook_baseline.is_none()) return "";
    const std::string installed = py::module_::import("solbench_py.hooks")
                                      .attr("changes")(hook_baseline)
                                      .cast<std::string>();
    if (installed.empty()) return "";
    return fmt::format("the solution installed {} {}: code that runs between the harness's "
                       "steps, where the next call's values exist before its timed span",
                       installed, when);
  }

  // Processes the solution started must be gone when its call returns (toolchains
  // it ran to compile are). One still running is a reward hack; the worker then
  // restarts, and the PID namespace takes the process down with it.
  bool processes_left = false;
  void check_processes(const char* when) {
    const std::vector<ProcessInfo> live = live_descendants();
    if (live.empty()) return;
    processes_left = true;
    std::string names;
    for (size_t i = 0; i < live.size() && i < 5; ++i)
      names += (i ? ", " : "") + live[i].describe();
    if (live.size() > 5) names += fmt::format(" and {} more", live.size() - 5);
    throw Finish{Status::RewardHack,
                 fmt::format("the solution left {} process(es) running {}: {}; a process the "
                             "solution starts must end before its call returns",
                             live.size(), when, names)};
  }

  // Inputs are read-only unless the reference itself writes them (runtime.py
  // Workload.changed_inputs): computing the right answer and then scribbling on an
  // input is a reward hack, named with the input.
  static void check_inputs(py::object& w, const py::handle& inputs, const py::handle& before,
                           const std::string& when) {
    const auto changed = w.attr("changed_inputs")(inputs, before).cast<std::vector<std::string>>();
    if (changed.empty()) return;
    std::string names;
    for (const auto& n : changed) names += (names.empty() ? "" : ", ") + ("'" + n + "'");
    throw Finish{Status::RewardHack,
                 fmt::format("the solution changed its input {} in place {} (the reference "
                             "leaves it unchanged)",
                             names, when)};
  }

  WorkloadOutcome evaluate(size_t index);
  void correctness(size_t index, const json& spec, py::object& w, Candidate& c,
                   WorkloadOutcome& o);
  void timing(size_t index, const json& spec, py::object& w, Candidate& c, WorkloadOutcome& o);
  // measure() while holding the GPU's timing lock: no other evaluation on this GPU
  // times at the same moment (timing/device_lock.h); the wait is a phase of its own.
  TimingResult locked_measure(Measurable& m, WorkloadOutcome& o) {
    const double waited = timing_lock.acquire();
    o.phases_ms["timing_lock_wait_ms"] = o.phases_ms.value("timing_lock_wait_ms", 0.0) + waited;
    struct Release {
      DeviceLock& l;
      ~Release() { l.release(); }
    } release{timing_lock};
    return measure(*timer, m, plan.timing);
  }
  // The solution's timed loop and the checks on what it left behind (threads,
  // processes, libraries, torch, lazy outputs), judged or not.
  TimingResult timed_calls(PooledRun& run, WorkloadOutcome& o) {
    Stopwatch sw;
    TimingResult result;
    try {
      result = locked_measure(run, o);
    } catch (const CallError& e) {
      throw Finish{Status::RuntimeError,
                   std::string("the solution failed during timing: ") + e.what()};
    }
    run.end();
    // What the GPU timer undid (a persisting-L2 set-aside), for the trace.
    if (json f = timer->take_findings(); !f.is_null()) o.extra["gpu_timer"] = std::move(f);
    o.phases_ms["timing_ms"] = sw.ms();
    check_threads("after the timed calls");
    check_processes("after the timed calls");
    check_libraries("during the timed calls");
    check_torch("during the timed calls");
    if (!run.lazy().empty())
      throw Finish{Status::RewardHack,
                   "the outputs are not plain tensors (timed " + run.lazy() +
                       "); tensor subclasses can defer or fake work"};
    return result;
  }
  int timing_sets(const json& spec, py::object& w, py::list& input_sets, py::list& ref_sets,
                  bool with_reference = true);
  // plan.record_calls (the solution's worker under a judge): the same calls and
  // checks of the solution's own behaviour, no reference, every call recorded.
  py::list make_inputs(py::object& w, const json& spec, int round);
  void check_call(int round, Candidate& c, py::list& got);
  void record_correctness(size_t index, py::object& w, Candidate& c, WorkloadOutcome& o);
  void record_timing(size_t index, const json& spec, py::object& w, Candidate& c,
                     WorkloadOutcome& o);
  void attach_record(WorkloadOutcome& o, bool failed);
  // plan.reference_role with a record: the verdict on the solution's recorded calls.
  py::list reference_outputs(py::object& w, const py::list& inputs, const std::string& what);
  py::dict load_record(const fs::path& dir, const RecordedCall& c, const std::string& what);
  // Workload.judge_inputs on a loaded record: (inputs not the ones generated here,
  // inputs the call changed); a malformed digest list is an unreadable record.
  py::tuple judge_inputs(py::object& w, const py::list& inputs, py::dict& got,
                         const py::object& before, const std::string& what);
  void judge(size_t index, const json& spec, py::object& w, const CallRecord& r,
             WorkloadOutcome& o);
  void time_reference(size_t index, py::object& w, const py::list& input_sets,
                      const py::list& ref_sets, WorkloadOutcome& o);
  void reference_only(size_t index, const json& spec, py::object& w, WorkloadOutcome& o);
};

std::optional<std::string> reference_unavailable_here(const std::string& error_text,
                                                      const std::string& device,
                                                      const std::vector<std::string>& input_dtypes) {
  const std::string first = error_text.substr(0, error_text.find('\n')).substr(0, 200);
  if (device != "cpu") {
    // e.g. NVFP4 references (torch._scaled_mm on FP4) on a Hopper GPU: cuBLASLt has
    // no kernel for them there.
    if (error_text.find("CUBLAS_STATUS_NOT_SUPPORTED") == std::string::npos) return std::nullopt;
    const bool fp4 = std::any_of(input_dtypes.begin(), input_dtypes.end(),
                                 [](const std::string& d) { return d.rfind("float4", 0) == 0; });
    return std::string("the reference needs a GPU feature this one lacks (cuBLAS: not supported") +
           (fp4 ? "; FP4 GEMMs need compute capability 10.0 or newer" : "") + "): " + first;
  }
  if (mentions_gpu(error_text)) return "the reference needs a GPU: " + first;
  // e.g. torch 1.13 has no CPU kernels for half-precision matmul.
  if (error_text.find("not implemented for") != std::string::npos)
    return "the reference needs an operator this torch lacks on the CPU: " + first;
  return std::nullopt;
}

WorkerSession::WorkerSession(WorkerPlan plan, Emit emit, ParentValues::Ask ask)
    : impl_(std::make_unique<Impl>()) {
  impl_->plan = std::move(plan);
  impl_->emit = std::move(emit);
  // Only the reference worker, which never loads solution code, holds the secret;
  // every other worker asks the parent for each seed when it needs it.
  if (impl_->plan.reference_role)
    impl_->values = std::make_unique<LocalValues>(impl_->plan.value_secret);
  else if (ask)
    impl_->values = std::make_unique<ParentValues>(std::move(ask));
  else
    throw std::runtime_error("a worker that runs solution code draws its values from the parent");
  for (const auto& [name, spec] : impl_->plan.definition.at("inputs").items())
    impl_->input_dtypes.push_back(spec.at("dtype").get<std::string>());
}

WorkerSession::~WorkerSession() = default;

namespace {
// runtime.init's result, once per process (a spare starts it before its plan).
std::optional<std::pair<std::string, json>> g_runtime_started;
}  // namespace

json WorkerSession::start_runtime(const std::string& device,
                                  const std::function<void()>& before_kernels,
                                  const std::function<void()>& after_kernels) {
  if (g_runtime_started && g_runtime_started->first == device) return g_runtime_started->second;
  bridge::ensure_interpreter();
  try {
    py::module_ runtime = py::module_::import("solbench_py.runtime");
    json env = from_py(runtime.attr("init")(device, py::arg("kernels") = false));
    before_kernels();
    runtime.attr("warm_kernels")(device);
    after_kernels();
    g_runtime_started.emplace(device, env);
    return env;
  } catch (py::error_already_set& e) {
    throw std::runtime_error("starting the runtime on " + device + ": " +
                             detail::python_error_text(e));
  }
}

int WorkerSession::warm_spare(const json& warm, const std::string& device) {
  if (!warm.is_object() || !warm.contains("workload") || input_bytes(warm["workload"]) > kWarmUpInputLimit)
    return 0;
  try {
    return py::module_::import("solbench_py.runtime").attr("warm_spare")(to_py(warm), device).cast<int>();
  } catch (const std::exception&) {
    return 0;  // the evaluation meets (and reports) whatever failed here
  }
}

json WorkerSession::start() {
  Impl& s = *impl_;
  json phases = json::object();
  Stopwatch sw;
  const bool prepared = g_runtime_started && g_runtime_started->first == s.plan.device;
  bridge::ensure_interpreter();
  s.runtime = py::module_::import("solbench_py.runtime");
  s.record_mod = py::module_::import("solbench_py.record");
  json env = prepared ? g_runtime_started->second : from_py(s.runtime.attr("init")(s.plan.device));
  if (s.plan.record_calls) {
    // The records' folder exists before any solution code runs (a solution cannot
    // have planted it); a subfolder per workload is made the same way.
    fs::create_directory(fs::current_path() / "judge");
    env["role"] = "recording for the reference worker";
  }
  phases["python_init_ms"] = sw.ms();

  Stopwatch ref_sw;
  const fs::path cwd = fs::current_path();
  const std::string ref_source = s.plan.definition.value("reference", "");
  try {
    py::object mod = s.runtime.attr("load_reference")(ref_source, (cwd / "_reference.py").string());
    s.ref_run = s.runtime.attr("reference_function")(mod, "run");
    const json& entry = s.plan.definition.contains("custom_inputs_entrypoint")
                            ? s.plan.definition["custom_inputs_entrypoint"]
                            : json(nullptr);
    if (entry.is_string() && !entry.get<std::string>().empty())
      s.custom_fn = s.runtime.attr("reference_function")(mod, entry.get<std::string>());
  } catch (py::error_already_set& e) {
    s.reference_error = "the reference could not be loaded: " + detail::python_error_text(e);
  }
  phases["reference_load_ms"] = ref_sw.ms();

  // Before any solution code: the timer (the GPU timer loads CUPTI), then the
  // seal over all code loaded so far, then the baselines the solution is judged
  // against (threads, torch's functions).
  // On a GPU the native entry launches on torch's current stream, and the timer
  // measures that stream's work (the GPU timer also sees other streams).
  s.stream = reinterpret_cast<void*>(
      s.runtime.attr("current_stream")(s.plan.device).cast<uintptr_t>());
  s.timer = make_timer(s.plan.device, s.stream, s.plan.timer_options);
  s.timing_lock = DeviceLock(s.plan.timing_lock);
  const SealReport seal = seal_loaded_code();
  env["code_seal"] = {{"available", seal.available}, {"objects", seal.objects},
                      {"ranges", seal.ranges}, {"failed", seal.failed}};
  if (!seal.error.empty()) env["code_seal"]["error"] = seal.error;
  // The baseline's worker (EntryKind::Reference) runs no solution code: torch.compile
  // may start what it likes there.
  if (s.plan.entry.kind != EntryKind::Reference) {
    for (const ThreadInfo& t : list_threads()) s.thread_baseline.push_back(t.tid);
    s.threads_explained.insert(s.thread_baseline.begin(), s.thread_baseline.end());
    s.thread_baseline_taken = true;
    s.torch_fingerprint = s.runtime.attr("torch_fingerprint")();
    s.hook_baseline = py::module_::import("solbench_py.hooks").attr("state")();
  }

  if (s.plan.reference_role) {
    // A reference worker loads no solution code at all: T_ref is measured where
    // nothing the solution did at import or in its calls can reach it.
    env["timer"] = s.timer->name();
    env["timer_details"] = s.timer->details();
    env["role"] = "reference";
    return json{{"env", env}, {"phases_ms", phases}};
  }

  Stopwatch sol_sw;
  try {
    switch (s.plan.entry.kind) {
      case EntryKind::Native:
        s.native = NativeLibrary::open(s.plan.entry.library, s.plan.entry.symbol);
        break;
      case EntryKind::Python: {
        const json why = from_py(s.runtime.attr("cannot_run_here")(to_py(s.plan.entry.languages),
                                                                  s.plan.device));
        if (why.is_string()) throw LoadError(why.get<std::string>(), /*skip=*/true);
        // The static look comes before a line of the solution runs.
        const json findings = from_py(py::module_::import("solbench_py.static_check")
                                          .attr("check_sources")(to_py(s.plan.entry.sources)));
        std::string denied;
        for (const auto& f : findings)
          if (f.value("severity", "") == "deny")
            denied += fmt::format("{}{}:{}: {} ({})", denied.empty() ? "" : "; ",
                                  f.value("file", ""), f.value("line", 0), f.value("message", ""),
                                  f.value("rule", ""));
        s.static_findings = findings;
        if (!denied.empty())
          throw LoadError("the solution's sources do what a kernel never needs: " + denied,
                          /*skip=*/false, /*reward_hack=*/true);
        const fs::path root = cwd / "solution";
        fs::create_directories(root);
        s.solution_fn = s.runtime.attr("load_solution")(root.string(), to_py(s.plan.entry.sources),
                                                        s.plan.entry.entry_file, s.plan.entry.symbol);
        break;
      }
      case EntryKind::TorchExtension:
        s.solution_fn = s.runtime.attr("load_extension")(s.plan.entry.library, s.plan.entry.module_name,
                                                         s.plan.entry.symbol);
        break;
      case EntryKind::Reference: {
        // A second, separate module object: the "solution" shares nothing with the
        // reference it is compared against.
        py::object mod = s.runtime.attr("load_reference")(
            ref_source, (cwd / "_reference_as_solution.py").string());
        s.solution_fn = s.runtime.attr("reference_function")(mod, "run");
        if (s.plan.baseline_compile) {
          // The scoring baseline: the reference under torch.compile where it exists.
          py::tuple t = s.runtime.attr("compiled_reference")(s.solution_fn);
          s.solution_fn = t[0];
          s.baseline_method = t[1].cast<std::string>();
          s.baseline_reason = t[2].cast<std::string>();
          env["baseline"] = {{"method", s.baseline_method}, {"reason", s.baseline_reason}};
        }
        break;
      }
    }
  } catch (py::error_already_set& e) {
    // A language runtime that is not installed here is not the solution's fault.
    const json missing = from_py(s.runtime.attr("missing_runtime")(
        to_py(s.plan.entry.languages), e.value()));
    if (missing.is_string()) throw LoadError(missing.get<std::string>(), /*skip=*/true);
    throw LoadError("the solution could not be loaded: " + detail::python_error_text(e));
  } catch (const LoadError&) {
    throw;  // keeps its skip flag
  } catch (const std::runtime_error& e) {
    throw LoadError(e.what());
  }
  phases["solution_load_ms"] = sol_sw.ms();
  if (!s.torch_fingerprint.is_none()) {
    const std::string changed =
        s.runtime.attr("torch_changes")(s.torch_fingerprint).cast<std::string>();
    if (!changed.empty())
      throw LoadError("the solution replaced torch functions when it was loaded (the "
                      "reference runs them): " + changed,
                      /*skip=*/false, /*reward_hack=*/true);
  }
  if (!s.hook_baseline.is_none()) {
    if (const std::string why = s.hooks_installed("when it was loaded"); !why.empty())
      throw LoadError(why, /*skip=*/false, /*reward_hack=*/true);
    const std::string seen = s.runtime.attr("violations")().cast<std::string>();
    if (!seen.empty())
      throw LoadError("the solution " + seen + " when it was loaded", /*skip=*/false,
                      /*reward_hack=*/true);
  }
  env["timer"] = s.timer->name();
  if (!s.static_findings.empty()) env["static_findings"] = s.static_findings;
  env["timer_details"] = s.timer->details();
  return json{{"env", env}, {"phases_ms", phases}};
}

int WorkerSession::warm_up(const json& spec, const std::function<bool()>& may_run,
                           const std::function<void()>& done) {
  Impl& s = *impl_;
  if (!s.reference_error.empty() || !spec.is_object() || input_bytes(spec) > kWarmUpInputLimit)
    return 0;
  int steps = 0;
  try {
    py::object w = s.runtime.attr("Workload")(to_py(spec), s.plan.device, s.ref_run,
                                              s.custom_fn);
    py::list inputs, refs;
    const std::function<void()> step[] = {
        [&] { inputs = s.inputs_of(w, spec, 0); },
        [&] { refs = w.attr("run_reference")(inputs).cast<py::list>(); },
        [&] { w.attr("check")(refs, refs, true); },
    };
    for (const auto& run : step) {
      if (!may_run()) break;
      struct Done {
        const std::function<void()>& f;
        ~Done() { f(); }
      } after{done};
      run();
      ++steps;
    }
  } catch (const std::exception&) {
    // The judge's own run meets (and reports) whatever failed here.
  }
  try {
    s.runtime.attr("release_memory")(s.plan.device);
  } catch (const std::exception&) {
  }
  return steps;
}

void WorkerSession::set_timing_gate(std::function<void()> gate) {
  impl_->timing_gate = std::move(gate);
}

void WorkerSession::assign_work(std::vector<json> workloads,
                                std::vector<std::optional<CallRecord>> records) {
  impl_->plan.workloads = std::move(workloads);
  impl_->plan.records = std::move(records);
}

WorkloadOutcome WorkerSession::evaluate(size_t index) { return impl_->evaluate(index); }

bool WorkerSession::processes_left() const { return impl_->processes_left; }

WorkloadOutcome WorkerSession::Impl::evaluate(size_t index) {
  const json& spec = plan.workloads.at(index);
  WorkloadOutcome o;
  o.index = static_cast<int>(index);
  o.uuid = spec.value("uuid", "");
  o.status = Status::Passed;
  Stopwatch total;
  // The workload ended early with a status (or a skip).
  auto finish = [&](const Finish& f) {
    if (plan.record_calls && !f.skip) attach_record(o, true);
    o.skipped = f.skip;
    if (f.skip) {
      o.skip_reason = f.message;
      o.status = Status::RuntimeError;  // not reported as a trace; see skipped
    } else {
      o.status = f.status;
    }
    if (!f.skip) o.log = f.message;
    if (o.status != Status::Passed && o.status != Status::IncorrectNumerical)
      o.correctness.reset();
    o.timing.reset();
    o.reference_timing.reset();
  };
  try {
    if (!reference_error.empty()) throw Finish{Status::InvalidReference, reference_error};
    py::object w = runtime.attr("Workload")(to_py(spec), plan.device, ref_run,
                                            custom_fn);
    if (plan.reference_role) {
      if (index < plan.records.size() && plan.records[index])
        judge(index, spec, w, *plan.records[index], o);
      else
        reference_only(index, spec, w, o);
    } else if (plan.record_calls) {
      rec = CallRecord{};
      in_timing = false;
      rec_dir = fs::current_path() / "judge" / std::to_string(index);
      std::error_code ec;
      if (!fs::create_directory(rec_dir, ec))  // made by the worker, never found
        throw Finish{Status::RuntimeError,
                     "cannot make the record folder " + rec_dir.string() + ": " +
                         (ec ? ec.message() : std::string("it exists already"))};
      auto cand = solution_candidate(w);
      record_correctness(index, w, *cand, o);
      if (plan.time_solution) record_timing(index, spec, w, *cand, o);
      attach_record(o, false);
    } else {
      auto cand = solution_candidate(w);
      correctness(index, spec, w, *cand, o);
      if (plan.time_solution) timing(index, spec, w, *cand, o);
    }
  } catch (const gpu::WorkLeftRunning& e) {
    // GPU work a call left running (the timer's bounded wait gave up).
    finish(Finish{Status::RewardHack, e.what()});
  } catch (const Finish& f) {
    finish(f);
  } catch (py::error_already_set& e) {
    o.status = Status::RuntimeError;
    o.log = "internal error in the worker: " + detail::python_error_text(e);
    if (auto oom = out_of_gpu_memory(e)) {
      o.skipped = true;
      o.skip_reason = *oom;
      o.log.clear();
    }
    o.correctness.reset();
    if (plan.record_calls) attach_record(o, true);
  } catch (const std::exception& e) {
    // Conversions of what the solution produced (pybind11 cast errors, ...).
    o.status = Status::RuntimeError;
    o.log = std::string("error in the worker: ") + e.what();
    o.correctness.reset();
    o.timing.reset();
    o.reference_timing.reset();
    if (plan.record_calls) attach_record(o, true);
  }
  if (plan.baseline_compile) {
    // A compile that failed on a call switched the callable to eager (its
    // method/reason attributes say so); read after the workload, for the workload.
    std::string method = baseline_method, reason = baseline_reason;
    try {
      py::object m = py::getattr(solution_fn, "method", py::none());
      if (!m.is_none()) method = m.cast<std::string>();
      py::object r = py::getattr(solution_fn, "reason", py::none());
      if (!r.is_none()) reason = r.cast<std::string>();
    } catch (const std::exception&) {
      // Keep what start() reported.
    }
    o.extra["baseline"] = {{"method", method}, {"reason", reason}};
  }
  // A courtesy to the next workload (a failure here changes no result), and not a
  // small one: its gc.collect() walks every object torch made, 150-200 ms. After the
  // plan's last workload the worker's exit frees everything anyway.
  if (index + 1 < plan.workloads.size() && !gpu::work_left_running()) {  // it would hang
    try {
      runtime.attr("release_memory")(plan.device);
    } catch (py::error_already_set&) {
    }
  }
  // The round trips for the seeds of the values (values.h), all outside the spans.
  if (const double waited = values->take_wait_ms(); waited > 0) o.phases_ms["values_wait_ms"] = waited;
  o.phases_ms["total_ms"] = total.ms();
  return o;
}

void WorkerSession::Impl::correctness(size_t index, const json& spec, py::object& w,
                                      Candidate& c, WorkloadOutcome& o) {
  double inputs_ms = 0, reference_ms = 0, solution_ms = 0, check_ms = 0;
  Stopwatch phase;
  Correctness acc;
  for (int round = 0; round < plan.rounds; ++round) {
    progress(index, "correctness", round);
    py::list inputs;
    {
      Stopwatch sw;
      inputs = make_inputs(w, spec, round);
      inputs_ms += sw.ms();
    }
    py::list refs;
    {
      Stopwatch sw;
      try {
        refs = w.attr("run_reference")(inputs).cast<py::list>();
      } catch (py::error_already_set& e) {
        if (auto why = skip_reason(e, true)) throw Finish{Status::RuntimeError, *why, true};
        throw Finish{Status::InvalidReference,
                     "the reference failed: " + detail::python_error_text(e)};
      }
      reference_ms += sw.ms();
    }
    py::list outs;
    try {
      outs = w.attr("alloc_outputs")(refs).cast<py::list>();
    } catch (py::error_already_set& e) {
      if (auto why = skip_reason(e, false)) throw Finish{Status::RuntimeError, *why, true};
      throw;
    }
    py::object before = w.attr("snapshot")(inputs);
    Stopwatch sw;
    py::list got;
    try {
      c.bind(inputs, outs);
      c.invoke();
      timer->wait_idle();  // GPU work left running is refused here already
      got = c.outputs();
    } catch (const CallError& e) {
      throw Finish{Status::RuntimeError,
                   fmt::format("round {}: the solution failed: {}", round, e.what())};
    }
    solution_ms += sw.ms();
    check_threads("after a call");
    check_processes("after a call");
    check_inputs(w, inputs, before, fmt::format("in correctness round {}", round + 1));
    check_libraries("during a call");
    check_torch("during a call");
    {
      const std::string lazy = runtime.attr("lazy_outputs")(got).cast<std::string>();
      if (!lazy.empty())
        throw Finish{Status::RewardHack,
                     fmt::format("the outputs are not plain tensors (correctness round {}: {}); "
                                 "tensor subclasses can defer or fake work",
                                 round + 1, lazy)};
    }
    Stopwatch csw;
    json summary = from_py(w.attr("check")(got, refs, true));
    check_ms += csw.ms();
    const std::string st = summary.value("status", "OK");
    acc.max_absolute_error = std::max(acc.max_absolute_error,
                                      summary.value("max_absolute_error", 0.0));
    acc.max_relative_error = std::max(acc.max_relative_error,
                                      summary.value("max_relative_error", 0.0));
    acc.has_nan = acc.has_nan || summary.value("has_nan", false);
    acc.has_inf = acc.has_inf || summary.value("has_inf", false);
    if (st != "OK") {
      auto status = parse_status(st).value_or(Status::IncorrectNumerical);
      if (status == Status::IncorrectNumerical) o.correctness = acc;
      throw Finish{status, fmt::format("round {} of {}: {}", round + 1, plan.rounds,
                                       summary.value("message", ""))};
    }
  }
  o.correctness = acc;
  o.phases_ms["inputs_ms"] = inputs_ms;
  o.phases_ms["reference_ms"] = reference_ms;
  o.phases_ms["solution_ms"] = solution_ms;
  o.phases_ms["check_ms"] = check_ms;
  o.phases_ms["correctness_ms"] = phase.ms();
}

void WorkerSession::Impl::timing(size_t index, const json& spec, py::object& w, Candidate& c,
                                 WorkloadOutcome& o) {
  progress(index, "timing");
  Stopwatch setup;
  py::list input_sets, ref_sets;
  const int sets = timing_sets(spec, w, input_sets, ref_sets);
  const int capacity = max_calls(plan.timing);
  // Fresh values in every timed call (runtime.ArgPool), from a seed the parent hands
  // out as the call starts: no two calls see the same values of a refreshable input.
  py::object pool = w.attr("arg_pool")(input_sets, ref_sets, capacity, c.destination_passing(),
                                       true);
  o.phases_ms["timing_setup_ms"] = setup.ms();

  PooledRun run(c, pool, runtime, *values, plan.entry.kind != EntryKind::Native,
                [this] { check_threads_before_span(); });
  const TimingResult result = timed_calls(run, o);

  // Gap 1 of docs/harness.md: re-check what timed calls produced, against the
  // reference run on the values each sampled call saw (generated again).
  Stopwatch vsw;
  SampledCalls verdict;
  for (const auto& s : run.saved()) {
    py::list pristine;
    py::list refs;
    try {
      pristine = pool.attr("pristine")(s.pool_call, s.seed).cast<py::list>();
      refs = w.attr("run_reference")(pristine).cast<py::list>();
    } catch (py::error_already_set& e) {
      if (auto why = skip_reason(e, true)) throw Finish{Status::RuntimeError, *why, true};
      throw Finish{Status::InvalidReference,
                   "the reference failed on a timed call's inputs: " +
                       detail::python_error_text(e)};
    }
    const std::string call = call_name(s.call, s.pool_call);
    if (verdict.input_change.empty()) {
      const auto names = w.attr("changed_inputs")(s.inputs_after, pristine)
                             .cast<std::vector<std::string>>();
      if (!names.empty()) verdict.changed_input(call, names.front());
    }
    json summary = from_py(w.attr("check")(s.outputs, refs, true));
    if (summary.value("status", "OK") != "OK") verdict.wrong_output(call, summary.value("message", ""));
  }
  verdict.finish(o, run.saved().size(), sets, w, pool, vsw.ms());
  o.timing = result;

  // In-worker T_ref only where the parent runs no reference worker (runner.h).
  if (plan.time_reference) time_reference(index, w, input_sets, ref_sets, o);
}

// Fresh input sets (round indices after the correctness rounds) and their
// reference outputs; at least two so values change between consecutive calls.
// The solution's and the reference's timing use the same sets (same seed), also
// when they run in different workers.
int WorkerSession::Impl::timing_sets(const json& spec, py::object& w, py::list& input_sets,
                                     py::list& ref_sets, bool with_reference) {
  const uint64_t in_bytes = std::max<uint64_t>(1, input_bytes(spec));
  int sets = std::max(2, plan.input_sets);
  while (sets > 2 && in_bytes * static_cast<uint64_t>(sets) > (512ull << 20)) --sets;
  for (int k = 0; k < sets; ++k) {
    try {
      py::object in = inputs_of(w, spec, plan.rounds + k);
      input_sets.append(in);
      if (with_reference) ref_sets.append(w.attr("run_reference")(in));
    } catch (py::error_already_set& e) {
      // A reference worker has run no correctness round that would have said so.
      if (auto why = skip_reason(e, true)) throw Finish{Status::RuntimeError, *why, true};
      throw Finish{Status::InvalidReference,
                   "preparing the timing inputs failed: " + detail::python_error_text(e)};
    }
  }
  return sets;
}

void WorkerSession::Impl::time_reference(size_t index, py::object& w, const py::list& input_sets,
                                         const py::list& ref_sets, WorkloadOutcome& o) {
  if (timing_gate) {
    Stopwatch gsw;
    std::function<void()> gate = std::move(timing_gate);
    timing_gate = nullptr;
    gate();
    o.phases_ms["reference_timing_go_wait_ms"] = gsw.ms();
  }
  progress(index, "reference_timing");
  Stopwatch rsw;
  try {
    auto ref = detail::make_python_candidate(ref_run, false, w);
    // The same kind of arguments as the solution's: fresh values every call.
    py::object ref_pool = w.attr("arg_pool")(input_sets, ref_sets, max_calls(plan.timing), false,
                                             true);
    // Seeds nobody else needs, and no call kept: the reference is not judged.
    LocalValues own(0);
    PooledRun ref_run_m(*ref, ref_pool, runtime, own, false);
    o.reference_timing = locked_measure(ref_run_m, o);
  } catch (const CallError& e) {
    o.log += std::string("timing the reference failed: ") + e.what() + "\n";
  }
  o.phases_ms["reference_timing_ms"] = rsw.ms();
}

// The reference worker's whole job for one workload: T_ref on the timing sets.
// A reference that cannot run here is a skip or INVALID_REFERENCE, as in the
// solution's worker (which reports the same for its own correctness rounds).
void WorkerSession::Impl::reference_only(size_t index, const json& spec, py::object& w,
                                         WorkloadOutcome& o) {
  py::list input_sets, ref_sets;
  timing_sets(spec, w, input_sets, ref_sets);
  time_reference(index, w, input_sets, ref_sets, o);
  if (!o.reference_timing) {
    o.status = Status::RuntimeError;
    if (o.log.empty()) o.log = "the reference was not timed";
  }
}

// ---------------------------------------------------------------- recording
// The solution's worker under a judge (plan.record_calls): the calls and the checks
// of the solution's own behaviour as in correctness() and timing(), but no
// reference runs here and no output is compared. Each correctness round and each
// sampled timed call is written (record.py) for the reference worker, which
// judges them after this worker has exited.

py::list WorkerSession::Impl::make_inputs(py::object& w, const json& spec, int round) {
  try {
    return inputs_of(w, spec, round);
  } catch (py::error_already_set& e) {
    if (auto why = skip_reason(e, true)) throw Finish{Status::RuntimeError, *why, true};
    throw Finish{Status::RuntimeError,
                 "could not generate the inputs: " + detail::python_error_text(e)};
  }
}

// What the worker checks after every correctness call: no thread or process left
// running, no profiler library loaded, torch's and the harness's functions
// unchanged, plain tensors out.
void WorkerSession::Impl::check_call(int round, Candidate& c, py::list& got) {
  try {
    c.invoke();
    timer->wait_idle();  // GPU work left running is refused here already
    got = c.outputs();
  } catch (const CallError& e) {
    throw Finish{Status::RuntimeError,
                 fmt::format("round {}: the solution failed: {}", round, e.what())};
  }
  check_threads("after a call");
  check_processes("after a call");
  check_libraries("during a call");
  check_torch("during a call");
  const std::string lazy = runtime.attr("lazy_outputs")(got).cast<std::string>();
  if (!lazy.empty())
    throw Finish{Status::RewardHack,
                 fmt::format("the outputs are not plain tensors (correctness round {}: {}); "
                             "tensor subclasses can defer or fake work",
                             round + 1, lazy)};
}

void WorkerSession::Impl::record_correctness(size_t index, py::object& w, Candidate& c,
                                             WorkloadOutcome& o) {
  double inputs_ms = 0, solution_ms = 0, record_ms = 0;
  Stopwatch phase;
  for (int round = 0; round < plan.rounds; ++round) {
    progress(index, "correctness", round);
    Stopwatch isw;
    py::list inputs = make_inputs(w, plan.workloads.at(index), round);
    py::list outs;
    try {
      outs = w.attr("alloc_outputs")().cast<py::list>();
    } catch (py::error_already_set& e) {
      if (auto why = skip_reason(e, false)) throw Finish{Status::RuntimeError, *why, true};
      throw;
    }
    // What the call was given: the judge tells "not these inputs" from "changed".
    py::object before = record_mod.attr("digests")(inputs);
    inputs_ms += isw.ms();
    Stopwatch sw;
    py::list got;
    c.bind(inputs, outs);
    check_call(round, c, got);
    solution_ms += sw.ms();
    Stopwatch rsw;
    const std::string file = fmt::format("r{}.rec", round);
    std::string sha;
    try {
      sha = record_mod.attr("write_call")((rec_dir / file).string(), got, inputs, before)
                .cast<std::string>();
    } catch (py::error_already_set& e) {
      throw Finish{Status::RuntimeError, fmt::format("could not record correctness round {}: {}",
                                                     round + 1, detail::python_error_text(e))};
    }
    rec.rounds.push_back({round, -1, -1, file, sha});
    record_ms += rsw.ms();
  }
  o.phases_ms["inputs_ms"] = inputs_ms;
  o.phases_ms["solution_ms"] = solution_ms;
  o.phases_ms["record_ms"] = record_ms;
  o.phases_ms["correctness_ms"] = phase.ms();
}

void WorkerSession::Impl::record_timing(size_t index, const json& spec, py::object& w,
                                        Candidate& c, WorkloadOutcome& o) {
  progress(index, "timing");
  in_timing = true;
  Stopwatch setup;
  py::list input_sets, ref_sets;
  const int sets = timing_sets(spec, w, input_sets, ref_sets, /*with_reference=*/false);
  // No reference outputs here: DPS outputs are poisoned without one (bool: 0xFF bytes).
  py::object pool = w.attr("arg_pool")(input_sets, py::none(), max_calls(plan.timing),
                                       c.destination_passing(), true);
  o.phases_ms["timing_setup_ms"] = setup.ms();

  PooledRun run(c, pool, runtime, *values, plan.entry.kind != EntryKind::Native,
                [this] { check_threads_before_span(); });
  const TimingResult result = timed_calls(run, o);

  Stopwatch rsw;
  int k = 0;
  const std::vector<PooledRun::Saved> kept = run.saved();
  for (const auto& saved : kept) {
    const std::string file = fmt::format("s{}.rec", k++);
    std::string sha;
    try {
      sha = record_mod.attr("write_call")((rec_dir / file).string(), saved.outputs,
                                          saved.inputs_after, py::none())
                .cast<std::string>();
    } catch (py::error_already_set& e) {
      throw Finish{Status::RuntimeError, fmt::format("could not record {}: {}",
                                                     call_name(saved.call, saved.pool_call),
                                                     detail::python_error_text(e))};
    }
    rec.samples.push_back({-1, saved.call, saved.pool_call, file, sha});
  }
  rec.timed = true;
  o.phases_ms["record_samples_ms"] = rsw.ms();
  o.extra["verification"] = {{"recorded_calls", kept.size()}, {"input_sets", sets}};
  o.timing = result;
}

void WorkerSession::Impl::attach_record(WorkloadOutcome& o, bool failed) {
  CallRecord r = rec;
  if (failed) {
    r.failed_stage = in_timing ? "timing" : "round";
    r.failed_round = in_timing ? -1 : static_cast<int>(r.rounds.size());
    r.samples.clear();  // a failed timing loop recorded none worth judging
    if (in_timing) r.timed = false;
  }
  o.record = std::move(r);
}

// ---------------------------------------------------------------- judging
// The reference worker with a record (plan.reference_role): it never loaded the
// solution, and the solution's worker has exited. Its inputs are generated again
// (same seed and round; for timed calls the same fresh seed, from the parent),
// the reference runs here, and the recorded outputs (read as data, their SHA-256
// checked) are compared, as correctness() and timing() would have. The verdict
// is the first failure in the order the calls were made; when the solution's own
// evaluation failed at some stage, everything recorded before it is judged and a
// reference that cannot run at that stage still decides first (the parent keeps
// the solution's failure otherwise).

namespace {
Finish unreadable_record(const std::string& what, const std::string& why) {
  return Finish{Status::RuntimeError,
                fmt::format("the solution's worker left an unreadable record of {}: {}", what, why)};
}
}  // namespace

py::list WorkerSession::Impl::reference_outputs(py::object& w, const py::list& inputs,
                                                const std::string& what) {
  try {
    return w.attr("run_reference")(inputs).cast<py::list>();
  } catch (py::error_already_set& e) {
    if (auto why = skip_reason(e, true)) throw Finish{Status::RuntimeError, *why, true};
    throw Finish{Status::InvalidReference, what + detail::python_error_text(e)};
  }
}

py::dict WorkerSession::Impl::load_record(const fs::path& dir, const RecordedCall& c,
                                          const std::string& what) {
  py::dict got;
  try {
    got = record_mod.attr("read_call")((dir / c.file).string(), c.sha256, plan.device)
              .cast<py::dict>();
  } catch (py::error_already_set& e) {
    const std::string msg = py::str(e.value()).cast<std::string>();
    if (e.matches(record_mod.attr("RecordChanged")))
      throw Finish{Status::RewardHack,
                   fmt::format("the record of {} is not what the solution's worker wrote ({}): "
                               "it was changed after the call",
                               what, msg)};
    if (e.matches(record_mod.attr("RecordError"))) throw unreadable_record(what, msg);
    throw;
  }
  const auto devices = got["devices"].cast<std::vector<std::string>>();
  for (size_t i = 0; i < devices.size(); ++i)
    if (devices[i] != plan.device)
      throw Finish{Status::RuntimeError,
                   fmt::format("{}: output {} is on {}; the evaluation runs on {}", what, i,
                               devices[i], plan.device)};
  return got;
}

py::tuple WorkerSession::Impl::judge_inputs(py::object& w, const py::list& inputs, py::dict& got,
                                            const py::object& before, const std::string& what) {
  try {
    return w.attr("judge_inputs")(inputs, got["inputs_after"], before).cast<py::tuple>();
  } catch (py::error_already_set& e) {
    if (!e.matches(record_mod.attr("RecordError"))) throw;
    throw unreadable_record(what, py::str(e.value()).cast<std::string>());
  }
}

void WorkerSession::Impl::judge(size_t index, const json& spec, py::object& w,
                                const CallRecord& r, WorkloadOutcome& o) {
  const fs::path dir = r.dir;
  double inputs_ms = 0, reference_ms = 0, check_ms = 0;
  Stopwatch phase;
  Correctness acc;
  for (const RecordedCall& c : r.rounds) {
    progress(index, "judging", c.round);
    const std::string what = fmt::format("correctness round {}", c.round + 1);
    Stopwatch isw;
    py::list inputs = make_inputs(w, spec, c.round);
    inputs_ms += isw.ms();
    Stopwatch rsw;
    py::list refs = reference_outputs(w, inputs, "the reference failed: ");
    reference_ms += rsw.ms();
    Stopwatch csw;
    py::dict got = load_record(dir, c, what);
    const py::tuple seen = judge_inputs(w, inputs, got, got["inputs_before"], what);
    const auto unreproduced = seen[0].cast<std::vector<std::string>>();
    if (!unreproduced.empty())
      throw Finish{Status::RuntimeError,
                   fmt::format("{}: the solution's worker was given other values of input '{}' "
                               "than the reference worker generates for that round (changed "
                               "before the call, or not reproducible here)",
                               what, unreproduced.front())};
    const auto changed = seen[1].cast<std::vector<std::string>>();
    if (!changed.empty()) {
      std::string names;
      for (const auto& n : changed) names += (names.empty() ? "" : ", ") + ("'" + n + "'");
      throw Finish{Status::RewardHack,
                   fmt::format("the solution changed its input {} in place in correctness round "
                               "{} (the reference leaves it unchanged)",
                               names, c.round + 1)};
    }
    json summary = from_py(w.attr("check")(got["outputs"], refs, true));
    check_ms += csw.ms();
    acc.max_absolute_error = std::max(acc.max_absolute_error,
                                      summary.value("max_absolute_error", 0.0));
    acc.max_relative_error = std::max(acc.max_relative_error,
                                      summary.value("max_relative_error", 0.0));
    acc.has_nan = acc.has_nan || summary.value("has_nan", false);
    acc.has_inf = acc.has_inf || summary.value("has_inf", false);
    const std::string st = summary.value("status", "OK");
    if (st != "OK") {
      auto status = parse_status(st).value_or(Status::IncorrectNumerical);
      if (status == Status::IncorrectNumerical) o.correctness = acc;
      throw Finish{status, fmt::format("round {} of {}: {}", c.round + 1, plan.rounds,
                                       summary.value("message", ""))};
    }
  }
  o.correctness = acc;
  o.phases_ms["inputs_ms"] = inputs_ms;
  o.phases_ms["reference_ms"] = reference_ms;
  o.phases_ms["check_ms"] = check_ms;
  o.phases_ms["judge_rounds_ms"] = phase.ms();

  if (r.failed_stage == "round") {
    // The reference ran before the solution's call in that round: one that cannot
    // run here, or fails, decides before the solution's own failure. Inputs that
    // cannot be generated failed the solution's worker the same way (its message
    // stands), unless that means the workload cannot run here (a skip).
    if (r.failed_round < 0 || r.failed_round >= plan.rounds) return;
    py::list inputs;
    try {
      inputs = make_inputs(w, spec, r.failed_round);
    } catch (const Finish& f) {
      if (f.skip) throw;
      return;
    }
    reference_outputs(w, inputs, "the reference failed: ");
    return;
  }
  if (r.failed_stage == "after" || (r.failed_stage.empty() && !r.timed)) return;

  py::list input_sets, ref_sets;
  Stopwatch ssw;
  const int sets = timing_sets(spec, w, input_sets, ref_sets);
  o.phases_ms["timing_sets_ms"] = ssw.ms();
  if (r.failed_stage == "timing") return;

  progress(index, "judging");
  Stopwatch vsw;
  py::object call_values = w.attr("call_values")(input_sets);
  SampledCalls verdict;
  for (const RecordedCall& c : r.samples) {
    const std::string what = call_name(c.call, c.pool_call);
    py::list pristine;
    try {
      pristine = call_values
                     .attr("pristine")(c.pool_call, value_seed(plan.value_secret, uuid_of(spec),
                                                                ValueKind::Call, c.pool_call))
                     .cast<py::list>();
    } catch (py::error_already_set& e) {
      throw Finish{Status::RuntimeError,
                   "generating a timed call's inputs failed: " + detail::python_error_text(e)};
    }
    py::list refs = reference_outputs(w, pristine, "the reference failed on a timed call's inputs: ");
    py::dict got = load_record(dir, c, what);
    if (verdict.input_change.empty()) {
      const py::tuple seen = judge_inputs(w, pristine, got, py::none(), what);
      const auto names = seen[1].cast<std::vector<std::string>>();
      if (!names.empty()) verdict.changed_input(what, names.front());
    }
    json summary = from_py(w.attr("check")(got["outputs"], refs, true));
    if (summary.value("status", "OK") != "OK") verdict.wrong_output(what, summary.value("message", ""));
  }
  verdict.finish(o, r.samples.size(), sets, w, call_values, vsw.ms());
  if (plan.time_reference) time_reference(index, w, input_sets, ref_sets, o);
}

}  // namespace solbench::harness
