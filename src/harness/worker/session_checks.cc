// What the solution's behaviour is checked for, beside its outputs: threads and
// processes left running, profiler libraries loaded, torch's and the harness's
// functions replaced, hooks installed, inputs changed in place, lazy outputs.
// Each check throws Finish (REWARD_HACK) with what it found.
#include <algorithm>
#include <chrono>
#include <thread>

#include <fmt/format.h>

#include "harness/checks/threads.h"
#include "harness/worker/session_state.h"

namespace solbench::harness {

namespace py = pybind11;

// Threads that appeared since the solution was loaded are the solution's unless
// shown to be a runtime's: a Python thread whose creator (recorded when it
// started, runtime.thread_origins) is torch's or Triton's code, or a thread Python
// did not start that carries a GPU runtime's name (threads.h runtime_thread_name).
//
// A thread the solution joined before returning can still be listed for a moment:
// pthread_join returns once the thread has cleared its id, before the kernel has
// taken its task away (seen on a loaded 2-core CI machine). Where nothing is timed
// on what follows (`settle`: after a correctness call, after the timed loop), the
// list is read again for up to kExitingThreadGrace before a thread is blamed; before
// a timed call's span (check_threads_before_span) it is not: a thread alive there
// could work on values that exist.
void WorkerSession::Impl::check_threads(const char* when, bool settle) {
  if (!thread_baseline_taken) return;
  constexpr auto kExitingThreadGrace = std::chrono::milliseconds(100);
  std::vector<ThreadInfo> now;
  std::vector<std::string> unexplained;
  py::dict origins;
  bool have_origins = false;
  const auto look = [&] {
    now = list_threads();
    unexplained.clear();
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
  };
  look();
  const auto give_up = std::chrono::steady_clock::now() + kExitingThreadGrace;
  while (settle && !unexplained.empty() && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    look();
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
void WorkerSession::Impl::check_threads_before_span() {
  if (!thread_baseline_taken) return;
  for (int tid : thread_ids())
    if (!threads_explained.count(tid)) {
      check_threads("while a timed call's inputs were prepared", /*settle=*/false);
      return;
    }
}

// Profiler and management libraries the solution's own code loaded through
// ctypes (guard.py records them; a kernel never needs CUPTI or NVML).
void WorkerSession::Impl::check_libraries(const char* when) {
  const std::string loaded = runtime.attr("violations")().cast<std::string>();
  if (!loaded.empty())
    throw Finish{Status::RewardHack, fmt::format("the solution {} ({})", loaded, when)};
}

// A torch function replaced since the solution was loaded: the reference, which
// runs in this worker, would run the replacement.
void WorkerSession::Impl::check_torch(const char* when) {
  if (torch_fingerprint.is_none()) return;
  const std::string changed =
      runtime.attr("torch_changes")(torch_fingerprint).cast<std::string>();
  if (!changed.empty())
    throw Finish{Status::RewardHack,
                 fmt::format("the solution replaced torch functions {} (the reference runs "
                             "them): {}",
                             when, changed)};
}

// What the solution installed in the interpreter (hooks.py): code that runs
// between the harness's steps, where a call's values exist before its span.
void WorkerSession::Impl::check_hooks(const char* when) {
  if (const std::string why = hooks_installed(when); !why.empty())
    throw Finish{Status::RewardHack, why};
}

// "" or what the solution installed since hook_baseline, said with `when`.
std::string WorkerSession::Impl::hooks_installed(const char* when) {
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
void WorkerSession::Impl::check_processes(const char* when) {
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

// Inputs are read-only unless the reference itself writes them (workload.py
// Workload.changed_inputs): computing the right answer and then scribbling on an
// input is a reward hack, named with the input.
Finish WorkerSession::Impl::inputs_changed(const std::vector<std::string>& names,
                                           const std::string& when) {
  std::string list;
  for (const auto& n : names) list += (list.empty() ? "" : ", ") + ("'" + n + "'");
  return Finish{Status::RewardHack,
                fmt::format("the solution changed its input {} in place {} (the reference "
                            "leaves it unchanged)",
                            list, when)};
}

void WorkerSession::Impl::check_inputs(py::object& w, const py::handle& inputs,
                                       const py::handle& before, const std::string& when) {
  const auto changed = w.attr("changed_inputs")(inputs, before).cast<std::vector<std::string>>();
  if (!changed.empty()) throw inputs_changed(changed, when);
}

void WorkerSession::Impl::after_call(int round, const py::list& got,
                                     const std::function<void()>& inputs_check) {
  // Each kind's host time, summed over the workload's calls (check_ms, written to
  // the phases as checks_<kind>_ms): what the checks after a call cost, by kind.
  const auto timed = [this](const char* kind, const auto& check) {
    Stopwatch sw;
    check();
    check_ms[kind] = check_ms.value(kind, 0.0) + sw.ms();
  };
  timed("threads", [&] { check_threads("after a call"); });
  timed("processes", [&] { check_processes("after a call"); });
  if (inputs_check) timed("inputs", inputs_check);
  timed("libraries", [&] { check_libraries("during a call"); });
  timed("torch", [&] { check_torch("during a call"); });
  timed("hooks", [&] { check_hooks("during a call"); });
  std::string lazy;
  timed("outputs", [&] { lazy = runtime.attr("lazy_outputs")(got).cast<std::string>(); });
  if (!lazy.empty())
    throw Finish{Status::RewardHack,
                 fmt::format("the outputs are not plain tensors (correctness round {}: {}); "
                             "tensor subclasses can defer or fake work",
                             round + 1, lazy)};
}

void WorkerSession::Impl::after_timed_calls(const std::string& lazy) {
  check_threads("after the timed calls");
  check_processes("after the timed calls");
  check_libraries("during the timed calls");
  check_torch("during the timed calls");
  check_hooks("during the timed calls");
  if (!lazy.empty())
    throw Finish{Status::RewardHack,
                 "the outputs are not plain tensors (timed " + lazy +
                     "); tensor subclasses can defer or fake work"};
}

}  // namespace solbench::harness
