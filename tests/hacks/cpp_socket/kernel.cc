// Hack (native): opens a TCP socket through libc. The import check reports
// `socket` (advisory); the seccomp filter refuses it. Must end RUNTIME_ERROR
// ("error code 6").
#include <sys/socket.h>
#include <unistd.h>

#include "rms_common.h"

SB_EXPORT int rmsnorm(const sb_tensor* in, int32_t n_in, sb_tensor* out, int32_t n_out, void*) {
  RmsArgs a;
  if (int rc = rms_args(in, n_in, out, n_out, &a)) return rc;
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 6;
  close(fd);
  rms_full(a);
  return 0;
}
