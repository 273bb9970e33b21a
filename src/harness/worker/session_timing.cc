// Timing in the worker (session_state.h): the timing input sets, the solution's
// timed pool run with the checks on what it left behind, and T_ref.
#include <algorithm>

#include <fmt/format.h>

#include "harness/timing/gpu/call_profile.h"
#include "harness/timing/gpu/gpu_errors.h"  // WorkLeftRunning
#include "harness/timing/kernel_profile.h"
#include "harness/worker/session_state.h"

namespace solbench::harness {

namespace py = pybind11;
using detail::CallError;

// Fresh input sets (round indices after the correctness rounds) and their
// reference outputs; at least two so values change between consecutive calls.
// The solution's and the reference's timing use the same sets (same seed), also
// when they run in different workers.
int WorkerSession::Impl::timing_sets(const json& spec, py::object& w, py::list& input_sets,
                                     py::list& ref_sets, bool with_reference) {
  const uint64_t in_bytes = std::max<uint64_t>(1, workload_input_bytes(spec));
  const GpuStep step(*this);
  int sets = std::max(2, plan.input_sets);
  while (sets > 2 && in_bytes * static_cast<uint64_t>(sets) > (512ull << 20)) --sets;
  for (int k = 0; k < sets; ++k) {
    try {
      py::object in = inputs_of(w, spec, plan.rounds + k);
      input_sets.append(in);
      if (with_reference) ref_sets.append(w.attr("run_reference")(in));
    } catch (py::error_already_set& e) {
      // A Judge has run no correctness round that would have said so.
      if (auto why = skip_reason(e, true)) throw Finish{Status::RuntimeError, *why, true};
      throw Finish{Status::InvalidReference,
                   "preparing the timing inputs failed: " + detail::python_error_text(e)};
    }
  }
  return sets;
}

detail::TimedRun WorkerSession::Impl::timed_pool_run(detail::WorkloadRun& run,
                                                     bool with_reference) {
  progress(run.index, WorkloadPhase::Timing);
  detail::TimedRun t;
  Stopwatch setup;
  t.sets = timing_sets(run.spec, run.w, t.input_sets, t.ref_sets, with_reference);
  // Fresh values in every timed call (runtime.ArgPool), from a seed the parent hands
  // out as the call starts: no two calls see the same values of a refreshable input.
  // Without a reference, DPS outputs are poisoned without one (bool: 0xFF bytes).
  detail::Candidate& c = *run.candidate;
  {
    const GpuStep step(*this);
    t.pool = run.w.attr("arg_pool")(t.input_sets,
                                    with_reference ? py::object(t.ref_sets) : py::object(py::none()),
                                    max_calls(plan.timing), c.destination_passing(), true);
  }
  run.o.phases_ms["timing_setup_ms"] = setup.ms();

  detail::PooledRun pooled(c, t.pool, runtime, *values, plan.entry.kind != EntryKind::Native,
                           [this] { check_threads_before_span(); });
  Stopwatch sw;
  try {
    t.result = locked_measure(pooled, run.o, "timing");
  } catch (const CallError& e) {
    throw Finish{Status::RuntimeError, std::string("the solution failed during timing: ") + e.what()};
  }
  pooled.end();
  // What the GPU timer undid (a persisting-L2 set-aside), for the trace.
  if (json f = timer->take_findings(); !f.is_null()) run.o.extra["gpu_timer"] = std::move(f);
  run.o.phases_ms["timing_ms"] = sw.ms();
  after_timed_calls(pooled.lazy());
  t.kept = pooled.saved();
  return t;
}

TimingResult WorkerSession::Impl::locked_measure(Measurable& m, WorkloadOutcome& o,
                                                 const std::string& phase) {
  const DeviceLockHold hold(timing_lock);
  o.phases_ms["timing_lock_wait_ms"] =
      o.phases_ms.value("timing_lock_wait_ms", 0.0) + hold.waited_ms();
  TimingResult r = measure(*timer, m, plan.timing);
  const json steps = r.steps.to_json();
  for (auto it = steps.begin(); it != steps.end(); ++it) o.phases_ms[phase + "_" + it.key()] = *it;
  return r;
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
  if (reference_is_known(index, o)) return;  // the parent has it (RunnerOptions::known_reference)
  progress(index, WorkloadPhase::ReferenceTiming);
  Stopwatch rsw;
  std::unique_ptr<detail::Candidate> ref;
  try {
    ref = detail::make_python_candidate(ref_run, false, w);
    // The same kind of arguments as the solution's: fresh values every call.
    py::object ref_pool;
    {
      const GpuStep step(*this);
      ref_pool = w.attr("arg_pool")(input_sets, ref_sets, max_calls(plan.timing), false, true);
    }
    // Seeds nobody else needs, and no call kept: the reference is not judged.
    LocalValues own(0);
    detail::PooledRun ref_run_m(*ref, ref_pool, runtime, own, false);
    o.reference_timing = locked_measure(ref_run_m, o, "reference_timing");
  } catch (const CallError& e) {
    o.log += std::string("timing the reference failed: ") + e.what() + "\n";
  }
  o.phases_ms["reference_timing_ms"] = rsw.ms();
  // `--profile`: the reference's call as the solution's (profile_pass), after its
  // own timed loop and in the worker that timed it, so both stand side by side.
  if (plan.profile && o.reference_timing && ref)
    o.reference_profile = profile_call(index, w, *ref, input_sets,
                                       o.reference_timing->stats.median_ms, o, false);
}

}  // namespace solbench::harness

namespace solbench::harness {

namespace {
constexpr const char* kNoGpu =
    "no GPU: the profile reads CUDA kernels and their counters (evaluate with --device cuda:N)";
}

// Two calls more, after the timed loop and its checks, never inside it: their
// results change no verdict and no time. Values: the first timing input set (its
// seed was asked for already; the parent hands out no seed beyond the loop's, and
// a profile needs the workload's shapes, not unseen values). Outputs poisoned and
// fresh for each call. What the solution does in them is checked as after the timed
// calls (threads, processes, libraries, torch), and work it leaves running is
// refused as after any call.
void WorkerSession::Impl::profile_pass(detail::WorkloadRun& run, const detail::TimedRun& t) {
  if (!plan.profile) return;
  run.o.profile = profile_call(run.index, run.w, *run.candidate, t.input_sets,
                               t.result.stats.median_ms, run.o, true);
}

json WorkerSession::Impl::profile_call(size_t index, py::object& w, detail::Candidate& c,
                                       const py::list& input_sets, double median_ms,
                                       WorkloadOutcome& o, bool solution) {
  // The solution's phases keep their names; the reference's are its own, so that
  // a judged outcome keeps both (merge_judged).
  const std::string key = solution ? "profile" : "reference_profile";
  Stopwatch sw;
  json p;
  const std::optional<double> t_k = median_ms > 0 ? std::optional<double>(median_ms) : std::nullopt;
  if (!plan.device.is_cuda()) {
    p = {{"available", false}, {"reason", kNoGpu}};
  } else {
    progress(index, solution ? WorkloadPhase::Timing : WorkloadPhase::ReferenceTiming);
    // Under the GPU's timing lock: the replayed kernels must not run beside another
    // evaluation's timed loop on this GPU (nor theirs beside these counters).
    const DeviceLockHold hold(timing_lock);
    const py::list inputs = input_sets[0].cast<py::list>();
    const int device = plan.device.ordinal();
    auto call = [&] { c.invoke(); };
    // Fresh poisoned outputs (a return-style call, the reference's, makes its own);
    // a failure to make them (out of memory) costs the profile, never the workload,
    // which has its verdict already.
    auto outputs = [&] {
      if (!c.destination_passing()) return py::list();
      try {
        return alloc_outputs(w, py::none());
      } catch (const Finish& f) {
        throw std::runtime_error("the profile's outputs could not be made: " + f.message);
      } catch (py::error_already_set& e) {
        throw std::runtime_error("the profile's outputs could not be made: " +
                                 detail::python_error_text(e));
      }
    };
    try {
      c.bind(inputs, outputs());
      const CallTrace trace = gpu::trace_call(device, stream, plan.timer_options, call);
      c.release();
      p = kernel_breakdown(trace, t_k);
      p["available"] = true;
      if (timer->name() == "cupti-profiler") {
        // One range-profiler session per context, and the timer's holds it.
        p["counters"] = counters_not_allowed(
            "the profiler timer (--timer profiler) holds CUPTI's range profiler in this worker");
      } else {
        c.bind(inputs, outputs());
        std::string why;
        counters_read = true;
        std::optional<CallCounters> counters =
            gpu::count_call(device, stream, plan.timer_options, call, &why);
        c.release();
        if (counters) {
          // A third call, PM-sampled: DRAM bytes while it ran, as ncu counts them.
          c.bind(inputs, outputs());
          std::string not_sampled;
          counters->sampled = gpu::sample_call_dram(device, stream, plan.timer_options,
                                                    median_ms, call, &not_sampled);
          c.release();
          counters->sampled_why_not = not_sampled;
        }
        p["counters"] = counters ? counter_summary(*counters) : counters_not_allowed(why);
      }
    } catch (const CallError& e) {
      c.release();
      p = {{"available", false}, {"reason", std::string("the profiled call failed: ") + e.what()}};
    } catch (const gpu::WorkLeftRunning&) {
      throw;  // as from the timed loop (the reference's too: the GPU is not idle)
    } catch (const std::runtime_error& e) {
      c.release();
      p = {{"available", false}, {"reason", e.what()}};
    }
    if (hold.waited_ms() > 0) o.phases_ms[key + "_lock_wait_ms"] = hold.waited_ms();
    if (solution) after_timed_calls("");  // the reference is no suspect
  }
  // What --profile added to this workload's wall time (issue #30 item 5).
  p["added_wall_ms"] = sw.ms();
  o.phases_ms[key + "_ms"] = sw.ms();
  return p;
}

}  // namespace solbench::harness
