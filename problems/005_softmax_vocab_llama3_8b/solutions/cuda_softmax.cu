// Softmax over a 128256-entry vocabulary row, bf16 in, float32 out. One block of
// 1024 threads per row: an online (max, sum) pass with 16-byte loads, a block
// reduction of the (max, sum) pairs, then a pass writing exp(x - max) / sum.
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <solbench/kernel.h>

#include <math.h>

namespace {

constexpr int kThreads = 1024;

__device__ __forceinline__ void combine(float& m, float& s, float m2, float s2) {
  const float mn = fmaxf(m, m2);
  s = (m == -INFINITY ? 0.f : s * __expf(m - mn)) + (m2 == -INFINITY ? 0.f : s2 * __expf(m2 - mn));
  m = mn;
}

__global__ void __launch_bounds__(kThreads) softmax_kernel(const __nv_bfloat16* __restrict__ x,
                                                         float* __restrict__ y, int64_t cols) {
  const __nv_bfloat16* xr = x + blockIdx.x * cols;
  float* yr = y + blockIdx.x * cols;
  const int64_t n_vec = cols / 8;  // cols % 8 == 0 and rows 16-byte aligned (checked on host)
  const uint4* xv = reinterpret_cast<const uint4*>(xr);
  float m = -INFINITY, s = 0.f;
  for (int64_t i = threadIdx.x; i < n_vec; i += kThreads) {
    const uint4 v = xv[i];
    const __nv_bfloat16* b = reinterpret_cast<const __nv_bfloat16*>(&v);
    float f[8], lm = -INFINITY;
#pragma unroll
    for (int k = 0; k < 8; ++k) {
      f[k] = __bfloat162float(b[k]);
      lm = fmaxf(lm, f[k]);
    }
    float ls = 0.f;
#pragma unroll
    for (int k = 0; k < 8; ++k) ls += __expf(f[k] - lm);
    combine(m, s, lm, ls);
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const float m2 = __shfl_xor_sync(0xffffffffu, m, o);
    const float s2 = __shfl_xor_sync(0xffffffffu, s, o);
    combine(m, s, m2, s2);
  }
  __shared__ float sm[kThreads / 32], ss[kThreads / 32];
  if ((threadIdx.x & 31) == 0) {
    sm[threadIdx.x >> 5] = m;
    ss[threadIdx.x >> 5] = s;
  }
  __syncthreads();
  m = sm[0];
  s = ss[0];
  for (int i = 1; i < kThreads / 32; ++i) combine(m, s, sm[i], ss[i]);
  const float inv = 1.f / s;
  float4* yv = reinterpret_cast<float4*>(yr);
  for (int64_t i = threadIdx.x; i < n_vec; i += kThreads) {
    const uint4 v = xv[i];
    const __nv_bfloat16* b = reinterpret_cast<const __nv_bfloat16*>(&v);
    float4 o0, o1;
    o0.x = __expf(__bfloat162float(b[0]) - m) * inv;
    o0.y = __expf(__bfloat162float(b[1]) - m) * inv;
    o0.z = __expf(__bfloat162float(b[2]) - m) * inv;
    o0.w = __expf(__bfloat162float(b[3]) - m) * inv;
    o1.x = __expf(__bfloat162float(b[4]) - m) * inv;
    o1.y = __expf(__bfloat162float(b[5]) - m) * inv;
    o1.z = __expf(__bfloat162float(b[6]) - m) * inv;
    o1.w = __expf(__bfloat162float(b[7]) - m) * inv;
    yv[2 * i] = o0;
    yv[2 * i + 1] = o1;
  }
}

}  // namespace

SB_EXPORT int softmax_vocab(const sb_tensor* in, int32_t n_in, sb_tensor* out, int32_t n_out,
                            void* stream) {
  if (n_in != 1 || n_out != 1) return 1;
  if (in[0].ndim != 2 || in[0].dtype != SB_DTYPE_BF16 || out[0].dtype != SB_DTYPE_F32) return 2;
  if (!sb_is_contiguous(&in[0]) || !sb_is_contiguous(&out[0])) return 3;
  const int64_t rows = in[0].shape[0], cols = in[0].shape[1];
  if (cols % 8 != 0) return 2;
  if (rows == 0) return 0;
  softmax_kernel<<<static_cast<unsigned>(rows), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const __nv_bfloat16*>(in[0].data), static_cast<float*>(out[0].data), cols);
  return cudaGetLastError() == cudaSuccess ? 0 : 4;
}
