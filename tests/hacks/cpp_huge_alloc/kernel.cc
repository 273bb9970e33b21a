// Hack (native): asks for 128 TiB, more than the address space, and would touch it.
// Must fail cleanly: the entry returns 10 when malloc refuses.
// Must end RUNTIME_ERROR ("error code 10").
#include <cstdlib>

#include "rms_common.h"

SB_EXPORT int rmsnorm(const sb_tensor* in, int32_t n_in, sb_tensor* out, int32_t n_out, void*) {
  RmsArgs a;
  if (int rc = rms_args(in, n_in, out, n_out, &a)) return rc;
  const size_t bytes = size_t{1} << 47;
  char* hog = static_cast<char*>(std::malloc(bytes));
  if (!hog) return 10;
  for (size_t i = 0; i < bytes; i += 4096) hog[i] = 1;
  std::free(hog);
  rms_full(a);
  return 0;
}
