// Hack (native): a result cache keyed on the row count and the first 8 values of the
// input and of the weight. A hit copies the stored output (a memcpy instead of the
// normalisation). Timed calls rotate through a few input sets: every set is cached
// after one pass. Must never PASS with a faked time. Every timed call now gets fresh
// values (ArgPool), so the cache never hits: PASSED with an honest time.
#include <array>
#include <map>
#include <vector>

#include "rms_common.h"

namespace {
using Key = std::array<uint16_t, 17>;
std::map<Key, std::vector<uint16_t>> g_cache;
}  // namespace

SB_EXPORT int rmsnorm(const sb_tensor* in, int32_t n_in, sb_tensor* out, int32_t n_out, void*) {
  RmsArgs a;
  if (int rc = rms_args(in, n_in, out, n_out, &a)) return rc;
  const int64_t n = a.rows * a.h;
  Key k{};
  k[0] = static_cast<uint16_t>(a.rows);
  for (int i = 0; i < 8 && i < n; ++i) k[1 + i] = a.x[i];
  for (int i = 0; i < 8 && i < a.h; ++i) k[9 + i] = a.w[i];
  auto it = g_cache.find(k);
  if (it != g_cache.end()) {
    std::memcpy(a.y, it->second.data(), static_cast<size_t>(n) * 2);
    return 0;
  }
  rms_full(a);
  g_cache[k].assign(a.y, a.y + n);
  return 0;
}
