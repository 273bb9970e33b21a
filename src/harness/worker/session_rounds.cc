// One workload in the worker (session_state.h): its outcome whatever happens, the
// correctness round loop and the verification of sampled timed calls that every
// role's verdict (session_roles.cc) runs, and the steps they share: inputs, the
// reference, the solution's call, the comparison of outputs.
#include <algorithm>

#include <fmt/format.h>

#include "harness/timing/gpu/gpu_errors.h"  // WorkLeftRunning
#include "harness/worker/session_state.h"

namespace solbench::harness {

namespace py = pybind11;
using detail::CallError;

namespace detail {

py::object to_py(const json& j) { return py::module_::import("json").attr("loads")(j.dump()); }

json from_py(const py::handle& o) {
  return json::parse(
      py::module_::import("solbench_py.runtime").attr("json_text")(o).cast<std::string>());
}


std::string call_name(int call, int pool_call) {
  return call >= 0 ? fmt::format("timed call {}", call + 1)
                   : fmt::format("warm-up call {}", pool_call + 1);
}

PhaseTimes::PhaseTimes(std::initializer_list<const char*> keys) {
  for (const char* k : keys) ms_.emplace_back(k, 0.0);
}

void PhaseTimes::add(const char* key, double ms) {
  for (auto& [k, v] : ms_)
    if (k == key) {
      v += ms;
      return;
    }
  ms_.emplace_back(key, ms);
}

void PhaseTimes::write(json& phases) const {
  for (const auto& [k, v] : ms_) phases[k] = v;
}

int RoleVerdict::round_count(const WorkloadRun&) const { return s_.plan.rounds; }

namespace {

bool mentions_gpu(const std::string& text) {
  for (const char* k : {"CUDA", "cuda", "NVIDIA", "nvidia", "triton", "Triton"})
    if (text.find(k) != std::string::npos) return true;
  return false;
}

// The verdict on the sampled timed calls: the first changed input and the first
// wrong output, each named by its call.
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

// The workload ended early with a status (or a skip).
void finish_early(WorkloadOutcome& o, const Finish& f, RoleVerdict& v) {
  if (!f.skip) v.failed(o);
  o.skipped = f.skip;
  if (f.skip) {
    o.skip_reason = f.message;
    o.status = Status::RuntimeError;  // not reported as a trace; see skipped
  } else {
    o.status = f.status;
    o.log = f.message;
  }
  if (o.status != Status::Passed && o.status != Status::IncorrectNumerical) o.correctness.reset();
  o.timing.reset();
  o.reference_timing.reset();
}

}  // namespace

}  // namespace detail

using detail::from_py;
using detail::RoleVerdict;
using detail::WorkloadRun;

std::optional<std::string> reference_unavailable_here(const std::string& error_text,
                                                      const Device& device,
                                                      const std::vector<std::string>& input_dtypes) {
  const std::string first = error_text.substr(0, error_text.find('\n')).substr(0, 200);
  if (!device.is_cpu()) {
    // e.g. NVFP4 references (torch._scaled_mm on FP4) on a Hopper GPU: cuBLASLt has
    // no kernel for them there.
    if (error_text.find("CUBLAS_STATUS_NOT_SUPPORTED") == std::string::npos) return std::nullopt;
    const bool fp4 = std::any_of(input_dtypes.begin(), input_dtypes.end(),
                                 [](const std::string& d) { return d.rfind("float4", 0) == 0; });
    return std::string("the reference needs a GPU feature this one lacks (cuBLAS: not supported") +
           (fp4 ? "; FP4 GEMMs need compute capability 10.0 or newer" : "") + "): " + first;
  }
  if (detail::mentions_gpu(error_text)) return "the reference needs a GPU: " + first;
  // e.g. torch 1.13 has no CPU kernels for half-precision matmul.
  if (error_text.find("not implemented for") != std::string::npos)
    return "the reference needs an operator this torch lacks on the CPU: " + first;
  return std::nullopt;
}

WorkloadOutcome WorkerSession::Impl::evaluate(size_t index) {
  const json& spec = plan.workloads.at(index);
  WorkloadOutcome o;
  o.index = static_cast<int>(index);
  o.uuid = spec.value("uuid", "");
  o.status = Status::Passed;
  Stopwatch total;
  step_lock_wait_ms = 0;
  check_ms = json::object();
  const long looks_before = torch_full_looks();
  RoleVerdict& v = *verdict;
  v.begin(index);
  try {
    if (!reference_error.empty()) throw Finish{Status::InvalidReference, reference_error};
    WorkloadRun run{index, spec, workload_object(spec), o};
    v.evaluate(run);
  } catch (const gpu::WorkLeftRunning& e) {
    // GPU work a call left running (the timer's bounded wait gave up).
    detail::finish_early(o, Finish{Status::RewardHack, e.what()}, v);
  } catch (const Finish& f) {
    detail::finish_early(o, f, v);
  } catch (py::error_already_set& e) {
    o.status = Status::RuntimeError;
    o.log = "internal error in the worker: " + detail::python_error_text(e);
    if (auto oom = out_of_gpu_memory(e)) {
      o.skipped = true;
      o.skip_reason = *oom;
      o.log.clear();
    }
    o.correctness.reset();
    v.failed(o);
  } catch (const std::exception& e) {
    // Conversions of what the solution produced (pybind11 cast errors, ...).
    o.status = Status::RuntimeError;
    o.log = std::string("error in the worker: ") + e.what();
    o.correctness.reset();
    o.timing.reset();
    o.reference_timing.reset();
    v.failed(o);
  }
  v.finished(o);
  // A courtesy to the next workload (a failure here changes no result), and not a
  // small one: its gc.collect() walks every object torch made, 150-200 ms. After the
  // plan's last workload the worker's exit frees everything anyway.
  // (judge_ahead frees it itself, after the GPU's timing lock.)
  if (!judging_ahead && index + 1 < plan.workloads.size()) release_device_memory();
  // The round trips for the seeds of the values (values.h), all outside the spans.
  if (const double waited = values->take_wait_ms(); waited > 0) o.phases_ms["values_wait_ms"] = waited;
  // Its untimed steps' waits for timed loops on this GPU (its own or others').
  if (step_lock_wait_ms > 0) o.phases_ms["step_lock_wait_ms"] = step_lock_wait_ms;
  for (const auto& [kind, ms] : check_ms.items()) o.phases_ms["checks_" + kind + "_ms"] = ms;
  // How many of checks_torch's looks were full ones (identity.torch_changes): the
  // quick look answers only while nothing it read has changed.
  if (const long looks = torch_full_looks() - looks_before; looks > 0)
    o.phases_ms["checks_torch_full_looks"] = static_cast<double>(looks);
  o.phases_ms["total_ms"] = total.ms();
  return o;
}

WorkerSession::Impl::GpuStep::GpuStep(Impl& s)
    : s_(s), held_(s.plan.device.is_cuda() && s.timing_lock.is_open()) {
  if (held_) s_.step_lock_wait_ms += s_.timing_lock.acquire(LockMode::Shared);
}

WorkerSession::Impl::GpuStep::~GpuStep() {
  if (!held_) return;
  try {
    s_.synchronize_device();  // none of the step's kernels may outlive its hold
  } catch (...) {
    // It never throws; a destructor must not let anything out all the same.
  }
  s_.timing_lock.release(LockMode::Shared);
}

long WorkerSession::Impl::torch_full_looks() const {
  if (torch_fingerprint.is_none()) return 0;
  try {
    return py::module_::import("solbench_py.identity").attr("_FULL_LOOKS")[py::int_(0)].cast<long>();
  } catch (py::error_already_set&) {
    return 0;
  }
}

void WorkerSession::Impl::release_device_memory() {
  if (gpu::work_left_running()) return;  // it would hang
  try {
    runtime.attr("release_memory")(plan.device.str());
  } catch (py::error_already_set&) {
  }
}

void WorkerSession::Impl::synchronize_device() {
  if (!plan.device.is_cuda() || gpu::work_left_running()) return;  // it would hang
  try {
    runtime.attr("synchronize")(plan.device.str());
  } catch (py::error_already_set&) {
  }
}

py::object WorkerSession::Impl::workload_object(const json& spec) {
  return runtime.attr("Workload")(detail::to_py(spec), plan.device.str(), ref_run, custom_fn);
}

size_t WorkerSession::Impl::compile_ahead(const std::function<bool()>& stop,
                                          const std::function<void(bool)>& each) {
  size_t done = 0, tried = 0;
  if (!reference_error.empty()) return 0;  // every workload fails with it anyway
  for (size_t i = 0; i < plan.workloads.size() && !stop(); ++i) {
    WorkloadOutcome scratch;
    bool compiled = false;
    ++tried;
    try {
      WorkloadRun run{i, plan.workloads[i], workload_object(plan.workloads[i]), scratch};
      compiled = verdict->ahead(run);
    } catch (const std::exception&) {  // py::error_already_set too: the rounds meet it again
    }
    if (compiled) ++done;
    if (each) each(compiled);
  }
  // What the compiles (and those stopped on the way: their inputs) cached, back to
  // the GPU beside the solution's evaluation.
  if (tried > 0 && plan.device.is_cuda()) release_device_memory();
  return done;
}

py::list WorkerSession::Impl::inputs_of(py::object& w, const json& spec, int round) {
  return w.attr("make_inputs")(round, values->round_seed(uuid_of(spec), round)).cast<py::list>();
}

py::list WorkerSession::Impl::make_inputs(py::object& w, const json& spec, int round) {
  try {
    return inputs_of(w, spec, round);
  } catch (py::error_already_set& e) {
    if (auto why = skip_reason(e, true)) throw Finish{Status::RuntimeError, *why, true};
    throw Finish{Status::RuntimeError,
                 "could not generate the inputs: " + detail::python_error_text(e)};
  }
}

void WorkerSession::Impl::progress(size_t index, WorkloadPhase phase, int round) {
  // Judging ahead the parent reads nothing yet: a frame a minute could fill the
  // channel and block the worker while it holds the GPU's timing lock.
  if (judging_ahead) return;
  json f = make_frame(FrameType::Progress, {{"index", index}, {"phase", phase_name(phase)}});
  if (round >= 0) f["round"] = round;
  emit(f);
}

std::unique_ptr<detail::Candidate> WorkerSession::Impl::solution_candidate(
    const py::object& workload) {
  if (plan.entry.kind == EntryKind::Native)
    return detail::make_native_candidate(native.entry(), runtime, input_dtypes, stream);
  const bool dps = plan.entry.kind == EntryKind::Reference ? false : plan.entry.dps;
  return detail::make_python_candidate(solution_fn, dps, workload);
}

// The harness ran out of GPU memory (the workload is too large for what is free:
// with other evaluations on the GPU, perhaps only now).
std::optional<std::string> WorkerSession::Impl::out_of_gpu_memory(py::error_already_set& e) {
  const std::string text = py::str(e.value()).cast<std::string>();
  if (!e.matches(PyExc_Exception) ||
      (text.find("CUDA out of memory") == std::string::npos &&
       std::string(e.what()).find("OutOfMemoryError") == std::string::npos))
    return std::nullopt;
  return std::string(kOutOfGpuMemory) + ": " + text.substr(0, text.find('\n')).substr(0, 300);
}

// A solution's errors come as CallError, never here.
std::optional<std::string> WorkerSession::Impl::skip_reason(py::error_already_set& e,
                                                            bool from_reference) {
  if (auto oom = out_of_gpu_memory(e)) return oom;
  py::module_ inputs = py::module_::import("solbench_py.inputs");
  if (e.matches(inputs.attr("MissingBlob")))  // "safetensors blob missing: PATH"
    return py::str(e.value()).cast<std::string>();
  if (e.matches(inputs.attr("UnsupportedDtype"))) return py::str(e.value()).cast<std::string>();
  if (from_reference)
    return reference_unavailable_here(py::str(e.value()).cast<std::string>() + "\n" + e.what(),
                                      plan.device, input_dtypes);
  return std::nullopt;
}

Finish WorkerSession::Impl::reference_failure(py::error_already_set& e, const std::string& what) {
  if (auto why = skip_reason(e, true)) return Finish{Status::RuntimeError, *why, true};
  return Finish{Status::InvalidReference, what + detail::python_error_text(e)};
}

py::list WorkerSession::Impl::reference_outputs(py::object& w, const py::list& inputs,
                                                const std::string& what) {
  try {
    return w.attr("run_reference")(inputs).cast<py::list>();
  } catch (py::error_already_set& e) {
    throw reference_failure(e, what);
  }
}

py::list WorkerSession::Impl::alloc_outputs(py::object& w, const py::object& refs) {
  try {
    return w.attr("alloc_outputs")(refs).cast<py::list>();
  } catch (py::error_already_set& e) {
    if (auto why = skip_reason(e, false)) throw Finish{Status::RuntimeError, *why, true};
    throw;
  }
}

py::list WorkerSession::Impl::call_solution(int round, detail::Candidate& c,
                                            const py::list& inputs, const py::list& outs) {
  try {
    c.bind(inputs, outs);
    c.invoke();
    timer->wait_idle();  // GPU work left running is refused here already
    return c.outputs();
  } catch (const CallError& e) {
    throw Finish{Status::RuntimeError,
                 fmt::format("round {}: the solution failed: {}", round, e.what())};
  }
}

void WorkerSession::Impl::compare_outputs(WorkloadRun& run, int round, const py::handle& got,
                                          const py::list& refs) {
  const json summary = from_py(run.w.attr("check")(got, refs, true));
  Correctness& acc = run.acc;
  acc.max_absolute_error = std::max(acc.max_absolute_error, summary.value("max_absolute_error", 0.0));
  acc.max_relative_error = std::max(acc.max_relative_error, summary.value("max_relative_error", 0.0));
  acc.has_nan = acc.has_nan || summary.value("has_nan", false);
  acc.has_inf = acc.has_inf || summary.value("has_inf", false);
  const std::string st = summary.value("status", "OK");
  if (st == "OK") return;
  const Status status = parse_status(st).value_or(Status::IncorrectNumerical);
  if (status == Status::IncorrectNumerical) run.o.correctness = acc;
  throw Finish{status, fmt::format("round {} of {}: {}", round + 1, plan.rounds,
                                   summary.value("message", ""))};
}

void WorkerSession::Impl::run_rounds(WorkloadRun& run) {
  RoleVerdict& v = *verdict;
  detail::PhaseTimes times = v.round_phases();
  Stopwatch phase;
  const int rounds = v.round_count(run);
  for (int round = 0; round < rounds; ++round) {
    progress(run.index, v.round_phase(), round);
    const GpuStep step(*this);
    py::list inputs = times.time("inputs_ms", [&] {
      return times.time("inputs_made_ms", [&] { return make_inputs(run.w, run.spec, round); });
    });
    v.round(run, round, inputs, times);
  }
  times.write(run.o.phases_ms);
  run.o.phases_ms[v.rounds_key()] = phase.ms();
}

void WorkerSession::Impl::verify_sampled_calls(WorkloadRun& run, detail::SampledSource& src,
                                               int sets) {
  Stopwatch vsw;
  detail::SampledCalls verdict;
  // verify_ms's parts: the calls' inputs made again, the reference on them, what
  // the calls left (a Judge: their records read, the inputs' digests), the comparison.
  detail::PhaseTimes t{"verify_inputs_ms", "verify_reference_ms", "verify_observed_ms",
                       "verify_compare_ms"};
  for (size_t i = 0; i < src.size(); ++i) {
    const GpuStep step(*this);
    const std::string what = src.name(i);
    const py::list pristine = t.time("verify_inputs_ms", [&] { return src.pristine(i); });
    const py::list refs = t.time("verify_reference_ms", [&] {
      return reference_outputs(run.w, pristine, "the reference failed on a timed call's inputs: ");
    });
    const auto [outputs, changed] = t.time(
        "verify_observed_ms", [&] { return src.observed(i, pristine, verdict.input_change.empty()); });
    if (!changed.empty()) verdict.changed_input(what, changed);
    const json summary =
        t.time("verify_compare_ms", [&] { return from_py(run.w.attr("check")(outputs, refs, true)); });
    if (summary.value("status", "OK") != "OK") verdict.wrong_output(what, summary.value("message", ""));
  }
  if (src.size() > 0) t.write(run.o.phases_ms);
  verdict.finish(run.o, src.size(), sets, run.w, src.values(), vsw.ms());
}

}  // namespace solbench::harness
