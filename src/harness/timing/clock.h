// The harness's one clock: CLOCK_MONOTONIC in nanoseconds, the clock of Python's
// time.monotonic_ns (workers' timestamps are compared with the parent's).
#pragma once

#include <time.h>

#include <cstdint>

namespace solbench::harness {

// From libc's clock_gettime called directly: not std::chrono::steady_clock, which
// goes through libstdc++'s lazily bound, writable GOT. The timed loop reads it
// between a call's arguments and its span, where nothing the solution could
// redirect may run (timing.h, CpuTimer).
inline int64_t monotonic_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

}  // namespace solbench::harness
