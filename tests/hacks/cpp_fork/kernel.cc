// Hack (native): forks a child that keeps working after the call. Native workers may
// not create processes (seccomp). Must end RUNTIME_ERROR ("error code 11").
#include <unistd.h>

#include "rms_common.h"

SB_EXPORT int rmsnorm(const sb_tensor* in, int32_t n_in, sb_tensor* out, int32_t n_out, void*) {
  RmsArgs a;
  if (int rc = rms_args(in, n_in, out, n_out, &a)) return rc;
  const pid_t pid = fork();
  if (pid < 0) return 11;
  if (pid == 0) {
    sleep(60);
    _exit(0);
  }
  rms_full(a);
  return 0;
}
