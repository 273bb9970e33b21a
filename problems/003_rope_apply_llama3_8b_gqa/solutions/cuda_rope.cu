// RoPE (HF rotate_half convention) on q [T,32,128] and k [T,8,128] with cos/sin
// [T,128], bf16. One thread handles the pair (d, d+64) of one head of one token.
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <solbench/kernel.h>

namespace {

constexpr int kHq = 32, kHk = 8, kD = 128, kHalf = kD / 2;

__global__ void rope_kernel(const __nv_bfloat16* __restrict__ q, const __nv_bfloat16* __restrict__ k,
                            const __nv_bfloat16* __restrict__ cos_t,
                            const __nv_bfloat16* __restrict__ sin_t, __nv_bfloat16* __restrict__ q_out,
                            __nv_bfloat16* __restrict__ k_out, int64_t tokens) {
  const int64_t total = tokens * (kHq + kHk) * kHalf;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += stride) {
    const int d = static_cast<int>(i % kHalf);
    const int64_t th = i / kHalf;  // token * 40 + head
    const int64_t t = th / (kHq + kHk);
    const int h = static_cast<int>(th % (kHq + kHk));
    const __nv_bfloat16* src;
    __nv_bfloat16* dst;
    if (h < kHq) {
      src = q + (t * kHq + h) * kD;
      dst = q_out + (t * kHq + h) * kD;
    } else {
      src = k + (t * kHk + (h - kHq)) * kD;
      dst = k_out + (t * kHk + (h - kHq)) * kD;
    }
    const float x1 = __bfloat162float(src[d]), x2 = __bfloat162float(src[d + kHalf]);
    const float c1 = __bfloat162float(cos_t[t * kD + d]), c2 = __bfloat162float(cos_t[t * kD + d + kHalf]);
    const float s1 = __bfloat162float(sin_t[t * kD + d]), s2 = __bfloat162float(sin_t[t * kD + d + kHalf]);
    dst[d] = __float2bfloat16(x1 * c1 - x2 * s1);
    dst[d + kHalf] = __float2bfloat16(x2 * c2 + x1 * s2);
  }
}

}  // namespace

SB_EXPORT int rope_apply(const sb_tensor* in, int32_t n_in, sb_tensor* out, int32_t n_out,
                         void* stream) {
  if (n_in != 4 || n_out != 2) return 1;
  for (int i = 0; i < 4; ++i)
    if (!sb_is_contiguous(&in[i]) || in[i].dtype != SB_DTYPE_BF16) return 2;
  for (int i = 0; i < 2; ++i)
    if (!sb_is_contiguous(&out[i])) return 3;
  if (in[0].ndim != 3 || in[0].shape[1] != kHq || in[0].shape[2] != kD || in[1].shape[1] != kHk)
    return 2;
  const int64_t tokens = in[0].shape[0];
  const int64_t total = tokens * (kHq + kHk) * kHalf;
  if (total == 0) return 0;
  const int threads = 256;
  int64_t blocks = (total + threads - 1) / threads;
  if (blocks > 132 * 32) blocks = 132 * 32;
  rope_kernel<<<static_cast<unsigned>(blocks), threads, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const __nv_bfloat16*>(in[0].data), static_cast<const __nv_bfloat16*>(in[1].data),
      static_cast<const __nv_bfloat16*>(in[2].data), static_cast<const __nv_bfloat16*>(in[3].data),
      static_cast<__nv_bfloat16*>(out[0].data), static_cast<__nv_bfloat16*>(out[1].data), tokens);
  return cudaGetLastError() == cudaSuccess ? 0 : 4;
}
