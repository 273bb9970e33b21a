// Hack (native): signals the solbench parent. The parent is outside the worker's PID
// namespace (getppid() is 0: return 9) and the seccomp filter lets the worker signal
// only itself (return 8). Must end RUNTIME_ERROR ("error code 9" or "error code 8").
#include <signal.h>
#include <unistd.h>

#include "rms_common.h"

SB_EXPORT int rmsnorm(const sb_tensor* in, int32_t n_in, sb_tensor* out, int32_t n_out, void*) {
  RmsArgs a;
  if (int rc = rms_args(in, n_in, out, n_out, &a)) return rc;
  const pid_t parent = getppid();
  if (parent <= 0) return 9;
  if (kill(parent, SIGTERM) != 0) return 8;
  rms_full(a);
  return 0;
}
