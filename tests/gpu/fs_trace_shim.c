// Diagnosis shim (LD_PRELOAD): logs every failing file-system or socket call a
// process makes through libc, with its path and errno, to the file named by
// $FS_TRACE_LOG (opened at load time, so a sandbox applied later cannot stop it).
// Used to find what the CUDA driver touches under the worker's Landlock rules.
//   gcc -shared -fPIC -O1 -o fs_trace_shim.so tests/gpu/fs_trace_shim.c -ldl
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

static int log_fd = -1;

__attribute__((constructor)) static void open_log(void) {
  const char* p = getenv("FS_TRACE_LOG");
  if (p) log_fd = open(p, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
}

static void note(const char* call, const char* path, long arg, int err) {
  if (log_fd < 0) return;
  char buf[600];
  int n = snprintf(buf, sizeof buf, "[%d] %s(%s, 0x%lx) = -1 %s\n", (int)getpid(), call,
                   path ? path : "", arg, strerror(err));
  if (n > 0) (void)!write(log_fd, buf, (size_t)n);
}

#define NEXT(name) static __typeof__(name)* real; if (!real) real = dlsym(RTLD_NEXT, #name)

int open(const char* path, int flags, ...) {
  NEXT(open);
  va_list ap; va_start(ap, flags); mode_t m = va_arg(ap, int); va_end(ap);
  int r = real(path, flags, m);
  if (r < 0) { int e = errno; note("open", path, flags, e); errno = e; }
  return r;
}
int open64(const char* path, int flags, ...) {
  NEXT(open64);
  va_list ap; va_start(ap, flags); mode_t m = va_arg(ap, int); va_end(ap);
  int r = real(path, flags, m);
  if (r < 0) { int e = errno; note("open64", path, flags, e); errno = e; }
  return r;
}
int openat(int dir, const char* path, int flags, ...) {
  NEXT(openat);
  va_list ap; va_start(ap, flags); mode_t m = va_arg(ap, int); va_end(ap);
  int r = real(dir, path, flags, m);
  if (r < 0) { int e = errno; note("openat", path, flags, e); errno = e; }
  return r;
}
int openat64(int dir, const char* path, int flags, ...) {
  NEXT(openat64);
  va_list ap; va_start(ap, flags); mode_t m = va_arg(ap, int); va_end(ap);
  int r = real(dir, path, flags, m);
  if (r < 0) { int e = errno; note("openat64", path, flags, e); errno = e; }
  return r;
}
int mkdir(const char* path, mode_t mode) {
  NEXT(mkdir);
  int r = real(path, mode);
  if (r < 0) { int e = errno; note("mkdir", path, mode, e); errno = e; }
  return r;
}
int unlink(const char* path) {
  NEXT(unlink);
  int r = real(path);
  if (r < 0) { int e = errno; note("unlink", path, 0, e); errno = e; }
  return r;
}
static const char* sock_path(const struct sockaddr* a, socklen_t len, char* buf, size_t n) {
  if (!a || a->sa_family != AF_UNIX) return "(not unix)";
  const struct sockaddr_un* u = (const struct sockaddr_un*)a;
  if (len > sizeof(sa_family_t) && u->sun_path[0] == 0) {
    snprintf(buf, n, "@%s", u->sun_path + 1);
    return buf;
  }
  return u->sun_path;
}
int bind(int fd, const struct sockaddr* a, socklen_t len) {
  NEXT(bind);
  int r = real(fd, a, len);
  char b[120];
  if (r < 0) { int e = errno; note("bind", sock_path(a, len, b, sizeof b), fd, e); errno = e; }
  return r;
}
int connect(int fd, const struct sockaddr* a, socklen_t len) {
  NEXT(connect);
  int r = real(fd, a, len);
  char b[120];
  if (r < 0) { int e = errno; note("connect", sock_path(a, len, b, sizeof b), fd, e); errno = e; }
  return r;
}
// Fortified and stdio entry points: glibc's own callers bypass open()/openat().
int __open_2(const char* path, int flags) {
  NEXT(__open_2);
  int r = real(path, flags);
  if (r < 0) { int e = errno; note("__open_2", path, flags, e); errno = e; }
  return r;
}
int __open64_2(const char* path, int flags) {
  NEXT(__open64_2);
  int r = real(path, flags);
  if (r < 0) { int e = errno; note("__open64_2", path, flags, e); errno = e; }
  return r;
}
FILE* fopen(const char* path, const char* mode) {
  NEXT(fopen);
  FILE* f = real(path, mode);
  if (!f) { int e = errno; note("fopen", path, mode[0], e); errno = e; }
  return f;
}
FILE* fopen64(const char* path, const char* mode) {
  NEXT(fopen64);
  FILE* f = real(path, mode);
  if (!f) { int e = errno; note("fopen64", path, mode[0], e); errno = e; }
  return f;
}
int mknod(const char* path, mode_t mode, dev_t dev) {
  NEXT(mknod);
  int r = real(path, mode, dev);
  if (r < 0) { int e = errno; note("mknod", path, (long)dev, e); errno = e; }
  return r;
}
int shm_open(const char* name, int flags, mode_t mode) {
  NEXT(shm_open);
  int r = real(name, flags, mode);
  if (r < 0) { int e = errno; note("shm_open", name, flags, e); errno = e; }
  return r;
}
int mkstemp(char* tmpl) {
  NEXT(mkstemp);
  int r = real(tmpl);
  if (r < 0) { int e = errno; note("mkstemp", tmpl, 0, e); errno = e; }
  return r;
}
int rename(const char* a, const char* b) {
  NEXT(rename);
  int r = real(a, b);
  if (r < 0) { int e = errno; note("rename", a, 0, e); errno = e; }
  return r;
}
int execve(const char* path, char* const argv[], char* const envp[]) {
  NEXT(execve);
  int r = real(path, argv, envp);
  int e = errno; note("execve", path, 0, e); errno = e;
  return r;
}
