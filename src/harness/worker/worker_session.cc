// The worker session's life (worker_session.h): made for a plan's role, started
// (Python, the reference, the timer and the code seal, the baselines, the
// solution), warmed up, given work later; each workload then goes through
// session_rounds.cc with the role's verdict (session_roles.cc).
#include "harness/worker/worker_session.h"

#include <algorithm>
#include <filesystem>
#include <optional>

#include <fmt/format.h>

#include "bridge/python.h"
#include "harness/checks/threads.h"
#include "harness/timing/gpu/fingerprint.h"
#include "harness/worker/code_seal.h"
#include "harness/worker/session_state.h"

namespace solbench::harness {

namespace py = pybind11;
namespace fs = std::filesystem;
using detail::from_py;
using detail::to_py;

WorkerSession::WorkerSession(WorkerPlan plan, Emit emit, ParentValues::Ask ask)
    : impl_(std::make_unique<Impl>()) {
  impl_->plan = std::move(plan);
  impl_->emit = std::move(emit);
  // Only the Judge, which never loads solution code, holds the secret; every other
  // worker asks the parent for each seed when it needs it.
  if (impl_->plan.role == WorkerRole::Judge)
    impl_->values = std::make_unique<LocalValues>(impl_->plan.judge.value_secret);
  else if (ask)
    impl_->values = std::make_unique<ParentValues>(std::move(ask));
  else
    throw std::runtime_error("a worker that runs solution code draws its values from the parent");
  for (const auto& [name, spec] : impl_->plan.definition.at("inputs").items())
    impl_->input_dtypes.push_back(spec.at("dtype").get<std::string>());
  impl_->verdict = detail::make_role_verdict(*impl_);
}

WorkerSession::~WorkerSession() = default;

namespace {
// runtime.init's result, once per process (a spare starts it before its plan).
std::optional<std::pair<Device, json>> g_runtime_started;
// A spare's fingerprint of torch (take_torch_baseline_ahead); never freed: it is a
// Python object, and the interpreter may be gone when statics are destroyed.
py::object* g_torch_ahead = nullptr;

// record.py's device fingerprints through our kernel (gpu/fingerprint.h), in
// every worker on a GPU before any solution code runs; the Recorder and the
// Judge are both workers, so both compute them the same way.
void install_device_fingerprint(const Device& device) {
  if (!device.is_cuda() || !gpu::can_fingerprint()) return;
  py::module_::import("solbench_py.record").attr("_native_sums") =
      py::cpp_function([](uintptr_t data, size_t bytes, uintptr_t sums, uintptr_t stream) {
        gpu::fingerprint(data, bytes, sums, stream);
      });
}
}  // namespace

json WorkerSession::start_runtime(const Device& device,
                                  const std::function<void()>& before_kernels,
                                  const std::function<void()>& after_kernels) {
  if (g_runtime_started && g_runtime_started->first == device) return g_runtime_started->second;
  bridge::ensure_interpreter();
  try {
    py::module_ runtime = py::module_::import("solbench_py.runtime");
    json env = from_py(runtime.attr("init")(device.str(), py::arg("kernels") = false));
    install_device_fingerprint(device);
    before_kernels();
    runtime.attr("warm_kernels")(device.str());
    after_kernels();
    g_runtime_started.emplace(device, env);
    return env;
  } catch (py::error_already_set& e) {
    throw std::runtime_error("starting the runtime on " + device.str() + ": " +
                             detail::python_error_text(e));
  }
}

int WorkerSession::warm_spare(const json& warm, const Device& device) {
  if (!warm.is_object() || !warm.contains("workload")) return 0;
  // Inputs too large to make twice: the matrix products' first calls only.
  const bool values = workload_input_bytes(warm["workload"]) <= detail::kWarmUpInputLimit;
  try {
    return py::module_::import("solbench_py.runtime")
        .attr("warm_spare")(to_py(warm), device.str(), values)
        .cast<int>();
  } catch (const std::exception&) {
    return 0;  // the evaluation meets (and reports) whatever failed here
  }
}

bool WorkerSession::warm_triton(const Device& device, bool launch) {
  try {
    return py::module_::import("solbench_py.triton_warm")
        .attr(launch ? "launch" : "compile_ahead")(device.str())
        .cast<bool>();
  } catch (const std::exception&) {
    return false;
  }
}

json WorkerSession::start() {
  Impl& s = *impl_;
  json phases = json::object();
  json env = s.start_python(phases);
  Stopwatch ref_sw;
  s.load_reference();
  phases["reference_load_ms"] = ref_sw.ms();
  s.seal_and_take_baselines(env, phases);
  if (s.plan.role == WorkerRole::Judge) {
    // A Judge loads no solution code at all: T_ref is measured where nothing the
    // solution did at import or in its calls can reach it.
    env["timer"] = s.timer->name();
    env["timer_details"] = s.timer->details();
    env["role"] = "reference";
    return json{{"env", env}, {"phases_ms", phases}};
  }
  Stopwatch sol_sw;
  s.load_solution(env);
  phases["solution_load_ms"] = sol_sw.ms();
  Stopwatch check_sw;
  s.check_after_load();
  phases["check_after_load_ms"] = check_sw.ms();
  env["timer"] = s.timer->name();
  if (!s.static_findings.empty()) env["static_findings"] = s.static_findings;
  env["timer_details"] = s.timer->details();
  return json{{"env", env}, {"phases_ms", phases}};
}

// Python and torch's runtime on the plan's device (done already in a spare).
json WorkerSession::Impl::start_python(json& phases) {
  Stopwatch sw;
  const bool prepared = g_runtime_started && g_runtime_started->first == plan.device;
  bridge::ensure_interpreter();
  runtime = py::module_::import("solbench_py.runtime");
  record_mod = py::module_::import("solbench_py.record");
  if (!prepared) install_device_fingerprint(plan.device);
  json env = prepared ? g_runtime_started->second : from_py(runtime.attr("init")(plan.device.str()));
  if (plan.role == WorkerRole::Recorder) {
    // The records' folder exists before any solution code runs (a solution cannot
    // have planted it); a subfolder per workload is made the same way.
    fs::create_directory(fs::current_path() / "judge");
    env["role"] = "recording for the reference worker";
  }
  phases["python_init_ms"] = sw.ms();
  return env;
}

// The definition's reference (and its custom inputs entry point); a reference that
// cannot be loaded fails every workload with INVALID_REFERENCE.
void WorkerSession::Impl::load_reference() {
  const std::string ref_source = plan.definition.value("reference", "");
  try {
    py::object mod = runtime.attr("load_reference")(
        ref_source, (fs::current_path() / "_reference.py").string());
    ref_run = runtime.attr("reference_function")(mod, "run");
    const json& entry = plan.definition.contains("custom_inputs_entrypoint")
                            ? plan.definition["custom_inputs_entrypoint"]
                            : json(nullptr);
    if (entry.is_string() && !entry.get<std::string>().empty())
      custom_fn = runtime.attr("reference_function")(mod, entry.get<std::string>());
  } catch (py::error_already_set& e) {
    reference_error = "the reference could not be loaded: " + detail::python_error_text(e);
  }
}

// Before any solution code: the timer (the GPU timer loads CUPTI), then the seal
// over all code loaded so far, then the baselines the solution is judged against
// (threads, torch's functions, the interpreter's hooks).
void WorkerSession::Impl::seal_and_take_baselines(json& env, json& phases) {
  // On a GPU the native entry launches on torch's current stream, and the timer
  // measures that stream's work (the GPU timer also sees other streams).
  Stopwatch sw;
  stream = reinterpret_cast<void*>(runtime.attr("current_stream")(plan.device.str()).cast<uintptr_t>());
  timer = make_timer(plan.device, stream, plan.timer_options);
  phases["timer_make_ms"] = sw.ms();
  timing_lock = DeviceLock(plan.timing_lock);
  memory_shares = MemoryShares(plan.memory_shares, static_cast<size_t>(std::max(0, plan.memory_share_units)));
  {
    // Its first call's costs here, where a spare or a worker ahead pays them before
    // anyone waits, not in the first timed loop (held exclusively). A GPU step:
    // the L2 flush must not run beside another process's timed loop.
    Stopwatch wsw;
    const GpuStep step(*this);
    timer->warm_up();
    phases["timer_warm_up_ms"] = wsw.ms();
  }
  Stopwatch seal_sw;
  const SealReport seal = seal_loaded_code();
  phases["code_seal_ms"] = seal_sw.ms();
  env["code_seal"] = {{"available", seal.available}, {"objects", seal.objects},
                      {"ranges", seal.ranges}, {"failed", seal.failed}};
  if (!seal.error.empty()) env["code_seal"]["error"] = seal.error;
  // The baseline's worker and the Judge (EntryKind::Reference) run no solution
  // code: torch.compile may start what it likes there.
  if (plan.entry.kind == EntryKind::Reference) return;
  Stopwatch base_sw;
  for (const ThreadInfo& t : list_threads()) thread_baseline.push_back(t.tid);
  threads_explained.insert(thread_baseline.begin(), thread_baseline.end());
  thread_baseline_taken = true;
  // A spare's, where the quick look finds all it read as it was (the reference's
  // load imported or replaced nothing of torch's); a fresh one otherwise, as a
  // worker that was no spare takes.
  if (g_torch_ahead && !g_torch_ahead->is_none() &&
      runtime.attr("unchanged_since")(*g_torch_ahead).cast<bool>()) {
    torch_fingerprint = *g_torch_ahead;
    phases["torch_fingerprint_by_spare"] = 1;
  } else {
    torch_fingerprint = runtime.attr("torch_fingerprint")();
  }
  if (g_torch_ahead) *g_torch_ahead = py::none();  // one plan's
  phases["torch_fingerprint_ms"] = base_sw.ms();
  hook_baseline = py::module_::import("solbench_py.hooks").attr("state")();
  phases["baselines_ms"] = base_sw.ms();
}

namespace {

// A Python-family solution: refused here first if its languages cannot run on the
// device, or if the static look at its sources finds what a kernel never needs.
py::object load_python_solution(WorkerSession::Impl& s) {
  const EntryPoint& e = s.plan.entry;
  const json why = from_py(s.runtime.attr("cannot_run_here")(to_py(e.languages), s.plan.device.str()));
  if (why.is_string()) throw LoadError(why.get<std::string>(), /*skip=*/true);
  // The static look comes before a line of the solution runs.
  const json findings = from_py(
      py::module_::import("solbench_py.static_check").attr("check_sources")(to_py(e.sources)));
  std::string denied;
  for (const auto& f : findings)
    if (f.value("severity", "") == "deny")
      denied += fmt::format("{}{}:{}: {} ({})", denied.empty() ? "" : "; ", f.value("file", ""),
                            f.value("line", 0), f.value("message", ""), f.value("rule", ""));
  s.static_findings = findings;
  if (!denied.empty())
    throw LoadError("the solution's sources do what a kernel never needs: " + denied,
                    /*skip=*/false, /*reward_hack=*/true);
  const fs::path root = fs::current_path() / "solution";
  fs::create_directories(root);
  return s.runtime.attr("load_solution")(root.string(), to_py(e.sources), e.entry_file, e.symbol);
}

// The reference as the solution: a second, separate module object, so that the
// "solution" shares nothing with the reference it is compared against; as the
// baseline, under torch.compile where it exists.
void load_reference_as_solution(WorkerSession::Impl& s, json& env) {
  py::object mod = s.runtime.attr("load_reference")(
      s.plan.definition.value("reference", ""),
      (fs::current_path() / "_reference_as_solution.py").string());
  s.solution_fn = s.runtime.attr("reference_function")(mod, "run");
  if (s.plan.role != WorkerRole::Baseline) return;
  if (s.plan.device.is_cuda() && s.timing_lock.is_open()) {
    // Lent to baseline.py: the compiled graphs' first executions and Inductor's
    // benchmarks take it exclusively (session_roles.cc, Baseline).
    DeviceLock* lock = &s.timing_lock;
    py::object ns = py::module_::import("types").attr("SimpleNamespace")(
        py::arg("take") = py::cpp_function([lock] {
          const py::gil_scoped_release waiting;  // flock may wait for seconds
          return lock->acquire(LockMode::Exclusive);
        }),
        py::arg("give") = py::cpp_function([lock] { lock->release(LockMode::Exclusive); }));
    py::module_::import("solbench_py.baseline").attr("use_gpu_lock")(ns);
  }
  py::tuple t = s.runtime.attr("compiled_reference")(s.solution_fn);
  s.solution_fn = t[0];
  s.baseline_method = t[1].cast<std::string>();
  s.baseline_reason = t[2].cast<std::string>();
  env["baseline"] = {{"method", s.baseline_method}, {"reason", s.baseline_reason}};
}

}  // namespace

void WorkerSession::Impl::load_solution(json& env) {
  try {
    switch (plan.entry.kind) {
      case EntryKind::Native:
        native = NativeLibrary::open(plan.entry.library, plan.entry.symbol);
        break;
      case EntryKind::Python:
        solution_fn = load_python_solution(*this);
        break;
      case EntryKind::TorchExtension:
        solution_fn = runtime.attr("load_extension")(plan.entry.library, plan.entry.module_name,
                                                     plan.entry.symbol);
        break;
      case EntryKind::Reference:
        load_reference_as_solution(*this, env);
        break;
    }
  } catch (py::error_already_set& e) {
    // A language runtime that is not installed here is not the solution's fault.
    const json missing =
        from_py(runtime.attr("missing_runtime")(to_py(plan.entry.languages), e.value()));
    if (missing.is_string()) throw LoadError(missing.get<std::string>(), /*skip=*/true);
    throw LoadError("the solution could not be loaded: " + detail::python_error_text(e));
  } catch (const LoadError&) {
    throw;  // keeps its skip flag
  } catch (const std::runtime_error& e) {
    throw LoadError(e.what());
  }
}

// What the solution's import changed: torch's functions, the interpreter's hooks,
// profiler libraries; each a reward hack.
void WorkerSession::Impl::check_after_load() {
  if (!torch_fingerprint.is_none()) {
    const std::string changed = runtime.attr("torch_changes")(torch_fingerprint).cast<std::string>();
    if (!changed.empty())
      throw LoadError("the solution replaced torch functions when it was loaded (the "
                      "reference runs them): " + changed,
                      /*skip=*/false, /*reward_hack=*/true);
  }
  if (hook_baseline.is_none()) return;
  if (const std::string why = hooks_installed("when it was loaded"); !why.empty())
    throw LoadError(why, /*skip=*/false, /*reward_hack=*/true);
  const std::string seen = runtime.attr("violations")().cast<std::string>();
  if (!seen.empty())
    throw LoadError("the solution " + seen + " when it was loaded", /*skip=*/false,
                    /*reward_hack=*/true);
}

int WorkerSession::warm_up(const json& spec, const std::function<bool()>& may_run,
                           const std::function<void()>& done) {
  Impl& s = *impl_;
  if (!s.reference_error.empty() || !spec.is_object()) return 0;
  // On a GPU a Judge warms up beside the solution's evaluation on the workload it
  // will judge next, so the rule of everything beside an evaluation applies (that of
  // a streamed Judge, runner_judged.cc): drawing even a GiB of inputs there takes
  // milliseconds, while a reference's first cuBLAS call cold took 0.25 s of a warm
  // call's judging (gemma3_swiglu's 302 MB of weights, docs/speed.md session 48).
  if (s.plan.device.is_cuda() ? !fits_beside_evaluation(spec)
                              : workload_input_bytes(spec) > detail::kWarmUpInputLimit)
    return 0;
  int steps = 0;
  try {
    py::object w = s.runtime.attr("Workload")(to_py(spec), s.plan.device.str(), s.ref_run, s.custom_fn);
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
    s.runtime.attr("release_memory")(s.plan.device.str());
  } catch (const std::exception&) {
  }
  return steps;
}

void WorkerSession::set_timing_gate(std::function<void()> gate) {
  impl_->timing_gate = std::move(gate);
}

void WorkerSession::set_reference_known(const json& go) {
  const auto it = go.find("reference_known");
  if (it == go.end() || !it->is_array()) return;
  for (const json& i : *it)
    if (i.is_number_unsigned()) impl_->reference_known.insert(i.get<size_t>());
}

size_t WorkerSession::add_work(std::vector<json> workloads,
                               std::vector<std::optional<CallRecord>> records) {
  Impl& s = *impl_;
  const size_t first = s.plan.workloads.size();
  records.resize(workloads.size());  // none: T_ref only
  s.plan.judge.records.resize(first);
  for (auto& w : workloads) s.plan.workloads.push_back(std::move(w));
  for (auto& r : records) s.plan.judge.records.push_back(std::move(r));
  return first;
}

double WorkerSession::take_torch_baseline_ahead() {
  Stopwatch sw;
  try {
    py::module_ runtime = py::module_::import("solbench_py.runtime");
    py::object fp = runtime.attr("torch_fingerprint")();
    if (!runtime.attr("torch_changes")(fp).cast<std::string>().empty()) return sw.ms();
    if (!g_torch_ahead) g_torch_ahead = new py::object();
    *g_torch_ahead = std::move(fp);
  } catch (const std::exception&) {
    // The worker takes its own, as without a spare.
  }
  return sw.ms();
}

WorkloadOutcome WorkerSession::judge_ahead(size_t index) {
  Impl& s = *impl_;
  // Each step of its judging holds the GPU's timing lock shared (GpuStep), so the
  // Recorder's timed loops wait for one step at most and none runs beside them.
  s.judging_ahead = true;
  WorkloadOutcome o = s.evaluate(index);
  s.judging_ahead = false;
  o.phases_ms["judge_lock_wait_ms"] = o.phases_ms.value("step_lock_wait_ms", 0.0);
  // What it cached, back for the Recorder's next workload.
  if (s.plan.device.is_cuda()) s.release_device_memory();
  return o;
}

void WorkerSession::expect_rest(size_t index, std::function<std::optional<CallRecord>()> read) {
  impl_->rest_owed = index;
  impl_->read_rest = std::move(read);
  impl_->rest_withdrawn = false;
}

bool WorkerSession::Impl::take_rest(size_t index) {
  if (rest_owed != index) return true;
  rest_owed.reset();
  std::optional<CallRecord> rest = read_rest();
  read_rest = nullptr;
  if (!rest) {
    rest_withdrawn = true;
    return false;
  }
  CallRecord& r = *plan.judge.records.at(index);
  if (rest->rounds != r.rounds)  // the parent compares them too
    throw Finish{Status::RuntimeError,
                 "the solution's worker reported other correctness rounds than it recorded first"};
  r = std::move(*rest);
  return true;
}

bool WorkerSession::settle_rest(size_t index) {
  Impl& s = *impl_;
  try {
    s.take_rest(index);  // where a failed round ended the judging before it
  } catch (const Finish&) {
    // That round's failure is the verdict.
  }
  if (!s.rest_withdrawn) return true;
  s.rest_withdrawn = false;
  s.reference_owed.erase(index);
  if (index + 1 == s.plan.workloads.size()) {
    s.plan.workloads.pop_back();
    s.plan.judge.records.pop_back();
  }
  return false;
}

WorkloadOutcome WorkerSession::time_owed_reference(size_t index, WorkloadOutcome o) {
  Impl& s = *impl_;
  if (s.reference_owed.erase(index) == 0) return o;
  if (s.reference_is_known(index, o)) return o;  // before the timing sets: nothing to time
  Stopwatch sw;
  const json& spec = s.plan.workloads.at(index);
  const bool recorded = index < s.plan.judge.records.size() && s.plan.judge.records[index];
  try {
    py::object w = s.workload_object(spec);
    py::list input_sets, ref_sets;
    s.timing_sets(spec, w, input_sets, ref_sets);  // the same values as when judged
    s.time_reference(index, w, input_sets, ref_sets, o);
  } catch (const Finish& f) {
    o.log += "timing the reference failed: " + f.message + "\n";
  } catch (py::error_already_set& e) {
    o.log += "timing the reference failed: " + detail::python_error_text(e) + "\n";
  }
  if (!recorded && !o.reference_timing && o.status == Status::Passed) {
    o.status = Status::RuntimeError;  // T_ref was its whole job (reference_only)
    if (o.log.empty()) o.log = "the reference was not timed";
  }
  o.phases_ms["total_ms"] = o.phases_ms.value("total_ms", 0.0) + sw.ms();
  return o;
}

WorkloadOutcome WorkerSession::evaluate(size_t index) { return impl_->evaluate(index); }

size_t WorkerSession::compile_ahead(const std::function<bool()>& stop,
                                    const std::function<void(bool)>& done) {
  return impl_->compile_ahead(stop, done);
}

bool WorkerSession::processes_left() const { return impl_->processes_left; }
bool WorkerSession::counters_read() const { return impl_->counters_read; }

}  // namespace solbench::harness
