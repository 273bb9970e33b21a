// Threads of the calling process, counted from /proc/self/task (Linux): every
// thread, native or Python, not only the ones Python knows about. The worker
// compares counts around solution calls to catch code that leaves threads running
// (work hidden from the timer, or tampering after a check).
#pragma once

namespace solbench::harness {

// Number of threads of this process, or -1 when /proc is unavailable.
int count_threads();

}  // namespace solbench::harness
