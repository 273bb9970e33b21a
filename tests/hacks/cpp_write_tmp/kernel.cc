// Hack (native): leaves a file in /tmp and one in the problem folder (@PROBLEM_DIR@
// is replaced by the test). Landlock refuses both; the entry returns 5 when a file
// cannot be created. Must end RUNTIME_ERROR ("error code 5"), both files absent.
#include <cstdio>
#include <initializer_list>

#include "rms_common.h"

SB_EXPORT int rmsnorm(const sb_tensor* in, int32_t n_in, sb_tensor* out, int32_t n_out, void*) {
  RmsArgs a;
  if (int rc = rms_args(in, n_in, out, n_out, &a)) return rc;
  for (const char* path : {"/tmp/solbench-hack-@RUN_ID@-native.txt", "@PROBLEM_DIR@/planted.txt"}) {
    std::FILE* f = std::fopen(path, "w");
    if (!f) return 5;
    std::fputs("planted by a solution", f);
    std::fclose(f);
  }
  rms_full(a);
  return 0;
}
