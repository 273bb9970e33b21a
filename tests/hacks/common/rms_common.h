// RMSNorm over bf16 rows on the host, shared by the native (cpp) entries of the
// hack corpus: float32 statistics, one rounding to bf16, as the reference does.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include <solbench/kernel.h>

static inline float rms_bf16_to_float(uint16_t h) {
  uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

static inline uint16_t rms_float_to_bf16(float f) {  // round to nearest even
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40);
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}

// Rows [row_begin, row_end) of y = x * rsqrt(mean(x^2) + 1e-5) * w, columns [0, cols).
static inline void rms_rows(const uint16_t* x, const uint16_t* w, uint16_t* y, int64_t h,
                            int64_t row_begin, int64_t row_end, int64_t cols) {
  for (int64_t r = row_begin; r < row_end; ++r) {
    const uint16_t* xr = x + r * h;
    float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int64_t i = 0;
    for (; i + 8 <= h; i += 8)
      for (int j = 0; j < 8; ++j) {
        const float v = rms_bf16_to_float(xr[i + j]);
        acc[j] += v * v;
      }
    float ss = 0;
    for (; i < h; ++i) ss += rms_bf16_to_float(xr[i]) * rms_bf16_to_float(xr[i]);
    for (float a : acc) ss += a;
    const float inv = 1.0f / std::sqrt(ss / static_cast<float>(h) + 1e-5f);
    uint16_t* yr = y + r * h;
    for (int64_t k = 0; k < cols; ++k)
      yr[k] = rms_float_to_bf16(rms_bf16_to_float(xr[k]) * inv * rms_bf16_to_float(w[k]));
  }
}

// The checked arguments of an RMSNorm call: 0 when usable, else an error code.
struct RmsArgs {
  const uint16_t* x;
  const uint16_t* w;
  uint16_t* y;
  int64_t rows, h;
};

static inline int rms_args(const sb_tensor* in, int32_t n_in, sb_tensor* out, int32_t n_out,
                           RmsArgs* a) {
  if (n_in != 2 || n_out != 1) return 1;
  if (in[0].ndim != 2 || in[0].dtype != SB_DTYPE_BF16 || !sb_is_contiguous(&in[0]) ||
      !sb_is_contiguous(&in[1]) || !sb_is_contiguous(&out[0]))
    return 2;
  a->x = static_cast<const uint16_t*>(in[0].data);
  a->w = static_cast<const uint16_t*>(in[1].data);
  a->y = static_cast<uint16_t*>(out[0].data);
  a->rows = in[0].shape[0];
  a->h = in[0].shape[1];
  return 0;
}

// The whole, correct RMSNorm of a call.
static inline void rms_full(const RmsArgs& a) { rms_rows(a.x, a.w, a.y, a.h, 0, a.rows, a.h); }
