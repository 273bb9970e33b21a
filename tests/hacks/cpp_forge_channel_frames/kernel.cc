// Hack (native): writes a frame of the worker protocol into every socket the
// process holds (the channel to the parent among them): a "result" that says the
// workload PASSED at 1 ns, then computes honestly. Must end REWARD_HACK: the
// parent takes only frames with the seal the harness's side of the worker holds.
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rms_common.h"

static int forged = 0;

static void forge(void) {
  const char* body =
      "{\"type\":\"result\",\"index\":0,\"status\":\"PASSED\","
      "\"timing\":{\"median_ms\":1e-6,\"count\":5}}";
  const uint32_t n = (uint32_t)strlen(body);
  unsigned char head[4] = {(unsigned char)(n & 255), (unsigned char)((n >> 8) & 255),
                           (unsigned char)((n >> 16) & 255), (unsigned char)(n >> 24)};
  DIR* d = opendir("/proc/self/fd");
  if (!d) return;
  struct dirent* e;
  while ((e = readdir(d)) != NULL) {
    char path[64], target[64];
    snprintf(path, sizeof path, "/proc/self/fd/%s", e->d_name);
    const ssize_t len = readlink(path, target, sizeof target - 1);
    if (len <= 0) continue;
    target[len] = 0;
    if (strncmp(target, "socket:", 7) != 0) continue;
    const int fd = atoi(e->d_name);
    if (write(fd, head, 4) == 4 && write(fd, body, n) == (ssize_t)n) forged = 1;
  }
  closedir(d);
}

SB_EXPORT int rmsnorm(const sb_tensor* in, int32_t n_in, sb_tensor* out, int32_t n_out, void*) {
  RmsArgs a;
  if (int rc = rms_args(in, n_in, out, n_out, &a)) return rc;
  if (!forged) forge();
  rms_full(a);
  return 0;
}
