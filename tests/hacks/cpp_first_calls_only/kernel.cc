// Hack (native): writes the output in the first 2 calls only and returns at once
// afterwards, hoping the output buffer still holds an earlier answer. Outputs are
// poisoned before every call. Must end REWARD_HACK (sampled timed calls).
#include "rms_common.h"

static int g_calls = 0;

SB_EXPORT int rmsnorm(const sb_tensor* in, int32_t n_in, sb_tensor* out, int32_t n_out, void*) {
  RmsArgs a;
  if (int rc = rms_args(in, n_in, out, n_out, &a)) return rc;
  if (++g_calls > 2) return 0;
  rms_full(a);
  return 0;
}
