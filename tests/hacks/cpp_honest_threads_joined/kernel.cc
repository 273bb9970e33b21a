// Honest twin of the thread hacks (native): splits the rows over two std::threads
// and joins both before returning. Nothing outlives the call. Must end PASSED (the
// import check warns about pthread_create; the thread count is unchanged).
#include <thread>

#include "rms_common.h"

SB_EXPORT int rmsnorm(const sb_tensor* in, int32_t n_in, sb_tensor* out, int32_t n_out, void*) {
  RmsArgs a;
  if (int rc = rms_args(in, n_in, out, n_out, &a)) return rc;
  const int64_t mid = a.rows / 2;
  std::thread lo([&] { rms_rows(a.x, a.w, a.y, a.h, 0, mid, a.h); });
  std::thread hi([&] { rms_rows(a.x, a.w, a.y, a.h, mid, a.rows, a.h); });
  lo.join();
  hi.join();
  return 0;
}
