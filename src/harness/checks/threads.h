// Threads and child processes of the calling process, read from /proc (Linux):
// every thread, native or Python, not only the ones Python knows about, and every
// live descendant process. The worker compares them around solution calls to catch
// code that leaves work running (hidden from the timer, or tampering after a check).
#pragma once

#include <string>
#include <vector>

namespace solbench::harness {

// Number of threads of this process, or -1 when /proc is unavailable.
int count_threads();

struct ThreadInfo {
  int tid = 0;
  std::string name;  // comm ("" when the thread ended while being read)
};

// Every thread of this process (/proc/self/task), in no particular order.
std::vector<ThreadInfo> list_threads();
// Their ids only (no per-thread reads): cheap enough for every timed call.
std::vector<int> thread_ids();

// Whether a thread name is one the GPU runtimes give the threads they start (CUDA's
// "cuda-EvtHandlr", "cuda0000...", torch's "pt_...", LLVM's "llvm-worker-N" in
// Triton's compiler): such threads may appear after the solution is loaded. A name is
// not proof of origin (a thread can rename itself); it is accepted only for threads
// that Python did not start.
bool runtime_thread_name(const std::string& name);

struct ProcessInfo {
  int pid = 0;        // as /proc shows it
  std::string name;   // comm
  std::string command_line;  // argv joined by spaces (bounded)
  std::string describe() const;  // "1234 (sleep: sleep 100)"
};

// Live descendants of this process (children, theirs, ...), zombies left out,
// found through /proc/<pid>/task/<tid>/children. Empty when there are none or
// /proc cannot tell.
std::vector<ProcessInfo> live_descendants();

}  // namespace solbench::harness
