// Ctrl-C (SIGINT), SIGTERM and SIGHUP in the solbench process that evaluates
// (`eval`, `run`, `baseline`, `sol`; main.cc installs the handling for those
// commands). Workers, the zygote and tracers are exec'd with default signals
// (process.cc) and never install it.
//
// The handler only writes the signal's number to a pipe (async-signal-safe); a
// thread reading it does the work, in one of two ways:
//   - by default the process ends: nothing more reaches stdout, every child process
//     group (Child registers each it starts) is SIGKILLed, every registered scratch
//     folder (staging.h: StagingDirs not kept, build folders) is removed, one line
//     goes to stderr ("solbench: interrupted by SIGINT; removed N scratch
//     folder(s)"), and the signal is raised again with its default action, so the
//     exit status is the signal's (a shell shows 128+N);
//   - while an InterruptStop lives (`run`), it sets the stop flag and the process
//     goes on: `run` stops starting evaluations, passes the signal to the running
//     ones, prints what it has and exits 128+N itself.
// A second signal ends the process at once (default action; the same signal again
// within a second counts as the first: senders that signal a process and its group
// deliver it twice); what it leaves, the next solbench start removes (staging.h,
// sweep_stale_scratch).
//
// An interrupted process records nothing more: the results store and the traces
// file check interrupted() (eval/evaluate.cc, eval/recorder.cc), so a worker killed
// by the interrupt is never recorded as a RUNTIME_ERROR.
#pragma once

#include <atomic>

namespace solbench::harness {

// Installs the handlers for SIGINT, SIGTERM and SIGHUP (once per process). A signal
// ignored when the process started (nohup, a background job) stays ignored.
void install_interrupt_handling();

// The signal that interrupted this process; 0 when none did.
int interrupt_signal();
inline bool interrupted() { return interrupt_signal() != 0; }

// While one lives, an interrupt sets `*stop` instead of ending the process.
class InterruptStop {
 public:
  explicit InterruptStop(std::atomic<bool>* stop);
  ~InterruptStop();
  InterruptStop(const InterruptStop&) = delete;  // one scope, one flag
  InterruptStop& operator=(const InterruptStop&) = delete;
};

// main() before it returns: when an interrupt is ending the process, waits for the
// interrupt's thread to end it (its cleanup, then its exit status), instead of
// exiting beside it with another status.
void await_interrupt_exit();

// The child process groups an interrupt kills (process.cc: every Child, from its
// start until it is reaped). A child tracked while the process is ending is killed
// at once.
void track_child_group(int pid);
void untrack_child_group(int pid);

}  // namespace solbench::harness
