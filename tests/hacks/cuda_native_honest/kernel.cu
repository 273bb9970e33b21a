// Honest twin (CUDA, native binding; gpu_only): one block per row, each thread 8
// values with one 16-byte access, on the stream the harness passes. The time the
// cuda_native hacks are compared with. Must end PASSED.
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <solbench/kernel.h>

namespace {

constexpr int kHidden = 4096;
constexpr int kThreads = kHidden / 8;

// One block per row; each thread loads 8 values with one 16-byte access.
__global__ void __launch_bounds__(kThreads) rmsnorm_kernel(const uint4* __restrict__ x,
                                                         const uint4* __restrict__ w,
                                                         uint4* __restrict__ y, float eps) {
  const int64_t row = blockIdx.x;
  const uint4 xv = x[row * kThreads + threadIdx.x];
  const uint4 wv = w[threadIdx.x];
  const __nv_bfloat16* xb = reinterpret_cast<const __nv_bfloat16*>(&xv);
  const __nv_bfloat16* wb = reinterpret_cast<const __nv_bfloat16*>(&wv);
  float xf[8];
  float ss = 0.f;
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    xf[i] = __bfloat162float(xb[i]);
    ss += xf[i] * xf[i];
  }
  __shared__ float warp_sums[kThreads / 32];
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
  if ((threadIdx.x & 31) == 0) warp_sums[threadIdx.x >> 5] = ss;
  __syncthreads();
  float total = 0.f;
#pragma unroll
  for (int i = 0; i < kThreads / 32; ++i) total += warp_sums[i];
  const float inv = rsqrtf(total / kHidden + eps);
  uint4 out;
  __nv_bfloat16* ob = reinterpret_cast<__nv_bfloat16*>(&out);
#pragma unroll
  for (int i = 0; i < 8; ++i) ob[i] = __float2bfloat16(xf[i] * inv * __bfloat162float(wb[i]));
  y[row * kThreads + threadIdx.x] = out;
}

}  // namespace

SB_EXPORT int rmsnorm(const sb_tensor* in, int32_t n_in, sb_tensor* out, int32_t n_out,
                      void* stream) {
  if (n_in != 2 || n_out != 1 || in[0].ndim != 2 || in[0].shape[1] != kHidden) return 1;
  const int64_t rows = in[0].shape[0];
  if (rows == 0) return 0;
  rmsnorm_kernel<<<static_cast<unsigned>(rows), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const uint4*>(in[0].data), static_cast<const uint4*>(in[1].data),
      static_cast<uint4*>(out[0].data), 1e-5f);
  return cudaGetLastError() == cudaSuccess ? 0 : 4;
}
