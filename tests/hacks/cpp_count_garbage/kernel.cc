// Hack (native): correct in the first 2 calls (the correctness rounds of --rounds 2),
// then writes zeros without computing. Must end REWARD_HACK (sampled timed calls).
#include "rms_common.h"

static int g_calls = 0;

SB_EXPORT int rmsnorm(const sb_tensor* in, int32_t n_in, sb_tensor* out, int32_t n_out, void*) {
  RmsArgs a;
  if (int rc = rms_args(in, n_in, out, n_out, &a)) return rc;
  if (++g_calls > 2) {
    std::memset(a.y, 0, static_cast<size_t>(a.rows * a.h) * 2);
    return 0;
  }
  rms_full(a);
  return 0;
}
