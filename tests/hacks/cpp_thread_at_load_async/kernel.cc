// Hack (native): work left running after return (thread). A worker thread started
// when the library is loaded (a static initialiser: before the harness counts the
// worker's threads) spins waiting for jobs. From the first warm-up call on, the
// entry hands the job over and returns at once; the worker computes the output
// right after the timed span ends, racing the harness's copy of it.
// Must end REWARD_HACK (the time excludes the work).
#include <atomic>
#include <thread>

#include <sched.h>

#include "rms_common.h"

namespace {
std::atomic<int> g_pending{0};
RmsArgs g_job;
int g_calls = 0;

void worker() {
  for (;;) {
    if (g_pending.load(std::memory_order_acquire)) {
      rms_full(g_job);
      g_pending.store(0, std::memory_order_release);
    } else {
      sched_yield();
    }
  }
}

const int g_started = [] {
  std::thread(worker).detach();
  return 1;
}();
}  // namespace

SB_EXPORT int rmsnorm(const sb_tensor* in, int32_t n_in, sb_tensor* out, int32_t n_out, void*) {
  RmsArgs a;
  if (int rc = rms_args(in, n_in, out, n_out, &a)) return rc;
  while (g_pending.load(std::memory_order_acquire)) sched_yield();  // the previous job
  if (++g_calls <= 2) {
    rms_full(a);
    return 0;
  }
  g_job = a;
  g_pending.store(1, std::memory_order_release);
  return 0;
}
