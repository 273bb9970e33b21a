// Hack (native): the same TCP socket through an inline `syscall` instruction: no
// libc import, so the import check sees nothing. The kernel's seccomp filter still
// refuses it. Must end RUNTIME_ERROR ("error code 6").
#include <sys/socket.h>
#include <sys/syscall.h>

#include "rms_common.h"

static long raw_syscall3(long n, long a0, long a1, long a2) {
  long ret;
  __asm__ volatile("syscall" : "=a"(ret) : "a"(n), "D"(a0), "S"(a1), "d"(a2) : "rcx", "r11", "memory");
  return ret;
}

SB_EXPORT int rmsnorm(const sb_tensor* in, int32_t n_in, sb_tensor* out, int32_t n_out, void*) {
  RmsArgs a;
  if (int rc = rms_args(in, n_in, out, n_out, &a)) return rc;
  const long fd = raw_syscall3(SYS_socket, AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 6;
  raw_syscall3(SYS_close, fd, 0, 0);
  rms_full(a);
  return 0;
}
