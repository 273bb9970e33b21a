// Hack (native): computes the answer, then zeroes its input through a const_cast.
// Must end REWARD_HACK (input changed in place in correctness round 1).
#include "rms_common.h"

SB_EXPORT int rmsnorm(const sb_tensor* in, int32_t n_in, sb_tensor* out, int32_t n_out, void*) {
  RmsArgs a;
  if (int rc = rms_args(in, n_in, out, n_out, &a)) return rc;
  rms_full(a);
  std::memset(const_cast<uint16_t*>(a.x), 0, static_cast<size_t>(a.rows * a.h) * 2);
  return 0;
}
