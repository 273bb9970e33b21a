// Honest twin (native C++): the row-wise RMSNorm of rms_common.h. Must end PASSED.
#include "rms_common.h"

SB_EXPORT int rmsnorm(const sb_tensor* in, int32_t n_in, sb_tensor* out, int32_t n_out, void*) {
  RmsArgs a;
  if (int rc = rms_args(in, n_in, out, n_out, &a)) return rc;
  rms_full(a);
  return 0;
}
