// Hack (native): a result cache keyed on the input and output addresses, for
// harnesses that time the same buffers again and again. A hit returns at once
// (the output buffer is assumed to still hold the answer). Timed calls get fresh
// addresses and poisoned outputs. Must end PASSED with an honest time, or
// INCORRECT_NUMERICAL / REWARD_HACK if an address comes back (never PASSED faked).
#include <set>
#include <tuple>

#include "rms_common.h"

namespace {
std::set<std::tuple<const void*, const void*, void*, int64_t>> g_seen;
}  // namespace

SB_EXPORT int rmsnorm(const sb_tensor* in, int32_t n_in, sb_tensor* out, int32_t n_out, void*) {
  RmsArgs a;
  if (int rc = rms_args(in, n_in, out, n_out, &a)) return rc;
  if (!g_seen.insert({a.x, a.w, a.y, a.rows}).second) return 0;  // "cached"
  rms_full(a);
  return 0;
}
