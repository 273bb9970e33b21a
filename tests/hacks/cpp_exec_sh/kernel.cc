// Hack (native): replaces the worker with a shell (execv, no fork). The seccomp
// filter refuses execve for native workers. Must end RUNTIME_ERROR ("error code 7").
#include <unistd.h>

#include "rms_common.h"

SB_EXPORT int rmsnorm(const sb_tensor* in, int32_t n_in, sb_tensor* out, int32_t n_out, void*) {
  RmsArgs a;
  if (int rc = rms_args(in, n_in, out, n_out, &a)) return rc;
  char* const argv[] = {const_cast<char*>("/bin/sh"), const_cast<char*>("-c"),
                        const_cast<char*>("echo pwned"), nullptr};
  execv("/bin/sh", argv);
  return 7;  // still here: refused
}
