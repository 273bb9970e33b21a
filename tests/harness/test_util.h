// Small helpers shared by the harness tests.
#pragma once

#include <chrono>

#include "harness/process.h"

namespace solbench::harness {

// RunOptions with a timeout (and a log bound), without designated initialisers
// (which warn about the members left out).
inline RunOptions with_timeout(std::chrono::duration<double> t, size_t log_limit = 64 << 10) {
  RunOptions o;
  o.timeout = t;
  o.log_limit_bytes = log_limit;
  return o;
}

}  // namespace solbench::harness
