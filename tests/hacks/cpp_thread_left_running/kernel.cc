// Hack (native): starts a detached thread in the first call that keeps running.
// Must end REWARD_HACK (thread left running after a call).
#include <chrono>
#include <thread>

#include "rms_common.h"

static bool g_started = false;

SB_EXPORT int rmsnorm(const sb_tensor* in, int32_t n_in, sb_tensor* out, int32_t n_out, void*) {
  RmsArgs a;
  if (int rc = rms_args(in, n_in, out, n_out, &a)) return rc;
  if (!g_started) {
    g_started = true;
    std::thread([] {
      for (;;) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }).detach();
  }
  rms_full(a);
  return 0;
}
