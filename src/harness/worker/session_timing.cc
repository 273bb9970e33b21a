// Timing in the worker (session_state.h): the timing input sets, the solution's
// timed pool run with the checks on what it left behind, and T_ref.
#include <algorithm>

#include <fmt/format.h>

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
  const uint64_t in_bytes = std::max<uint64_t>(1, detail::input_bytes(spec));
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
  t.pool = run.w.attr("arg_pool")(t.input_sets,
                                  with_reference ? py::object(t.ref_sets) : py::object(py::none()),
                                  max_calls(plan.timing), c.destination_passing(), true);
  run.o.phases_ms["timing_setup_ms"] = setup.ms();

  detail::PooledRun pooled(c, t.pool, runtime, *values, plan.entry.kind != EntryKind::Native,
                           [this] { check_threads_before_span(); });
  Stopwatch sw;
  try {
    t.result = locked_measure(pooled, run.o);
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

TimingResult WorkerSession::Impl::locked_measure(Measurable& m, WorkloadOutcome& o) {
  const double waited = timing_lock.acquire();
  o.phases_ms["timing_lock_wait_ms"] = o.phases_ms.value("timing_lock_wait_ms", 0.0) + waited;
  struct Release {
    DeviceLock& l;
    ~Release() { l.release(); }
  } release{timing_lock};
  return measure(*timer, m, plan.timing);
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
  progress(index, WorkloadPhase::ReferenceTiming);
  Stopwatch rsw;
  try {
    auto ref = detail::make_python_candidate(ref_run, false, w);
    // The same kind of arguments as the solution's: fresh values every call.
    py::object ref_pool = w.attr("arg_pool")(input_sets, ref_sets, max_calls(plan.timing), false,
                                             true);
    // Seeds nobody else needs, and no call kept: the reference is not judged.
    LocalValues own(0);
    detail::PooledRun ref_run_m(*ref, ref_pool, runtime, own, false);
    o.reference_timing = locked_measure(ref_run_m, o);
  } catch (const CallError& e) {
    o.log += std::string("timing the reference failed: ") + e.what() + "\n";
  }
  o.phases_ms["reference_timing_ms"] = rsw.ms();
}

}  // namespace solbench::harness
