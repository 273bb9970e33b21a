// Hack (native): writes only the first half of every row (half the stores).
// Must end INCORRECT_NUMERICAL (the unwritten half keeps its poison).
#include "rms_common.h"

SB_EXPORT int rmsnorm(const sb_tensor* in, int32_t n_in, sb_tensor* out, int32_t n_out, void*) {
  RmsArgs a;
  if (int rc = rms_args(in, n_in, out, n_out, &a)) return rc;
  rms_rows(a.x, a.w, a.y, a.h, 0, a.rows, a.h / 2);
  return 0;
}
