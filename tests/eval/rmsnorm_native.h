// A native CPU RMSNorm solution (include/solbench/kernel.h ABI) for the bundled
// problem 001, with room for what a test wants to try first: the end-to-end eval
// tests build their crashing, hanging, cheating or probing variants from it.
#pragma once

#include <string>

#include "core/json.h"

namespace solbench::testing {

// The kernel: its entry runs `prelude` first (the names rows, h, x, w, y are in
// scope), then RMSNorm over `row_limit` rows, scaled by the weight when `use_weight`.
inline std::string rmsnorm_native_source(const std::string& prelude, bool use_weight = true,
                                         const std::string& row_limit = "rows") {
  return R"(#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <solbench/kernel.h>
static float f(uint16_t h) { uint32_t b = uint32_t(h) << 16; float x; std::memcpy(&x, &b, 4); return x; }
static uint16_t bf(float x) { uint32_t b; std::memcpy(&b, &x, 4); b += 0x7fffu + ((b >> 16) & 1u); return uint16_t(b >> 16); }
SB_EXPORT int entry(const sb_tensor* in, int32_t, sb_tensor* out, int32_t, void*) {
  const int64_t rows = in[0].shape[0], h = in[0].shape[1];
  const uint16_t* x = (const uint16_t*)in[0].data;
  const uint16_t* w = (const uint16_t*)in[1].data;
  uint16_t* y = (uint16_t*)out[0].data;
)" + prelude + R"(
  for (int64_t r = 0; r < )" + row_limit + R"(; ++r) {
    float ss = 0;
    for (int64_t i = 0; i < h; ++i) ss += f(x[r * h + i]) * f(x[r * h + i]);
    const float inv = 1.0f / std::sqrt(ss / h + 1e-5f);
    for (int64_t i = 0; i < h; ++i)
      y[r * h + i] = bf(f(x[r * h + i]) * inv * )" + (use_weight ? "f(w[i])" : "1.0f") + R"();
  }
  return 0;
}
)";
}

// The solution.json document around `code` (one C++ source at `path`).
inline json rmsnorm_native_solution(const std::string& name, const std::string& code,
                                    const std::string& path = "rms.cc") {
  return {{"name", name},
          {"definition", "001_rmsnorm_llama3_8b_h4096"},
          {"author", "test"},
          {"spec",
           {{"languages", {"cpp"}},
            {"target_hardware", {"cpu"}},
            {"entry_point", path + "::entry"},
            {"binding", "native"},
            {"destination_passing_style", true},
            {"compile_options", {{"cflags", {"-O2"}}, {"ld_flags", json::array()}}}}},
          {"sources", {{{"path", path}, {"content", code}}}}};
}

}  // namespace solbench::testing
