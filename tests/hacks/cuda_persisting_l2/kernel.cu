// Hack (CUDA, native binding; gpu_only): keeps the inputs in the L2 across the
// harness's flush. Each call raises the persisting L2 set-aside
// (cudaLimitPersistingL2CacheSize, to the device's maximum) and puts a persisting
// access-policy window over every hidden_states address it has seen on the stream
// it is given: the harness fills the next call's inputs on that stream, so the
// fill would leave them as persisting lines, which the flush's normal accesses
// cannot evict, and the timed call would read them from the L2. Must end PASSED with
// an honest time (inert): before every flush the timer sets the set-aside back to
// 0, removes the stream's window and makes every persisting line normal
// (l2_flush.h PersistingL2Reset; the trace's solbench_checks.gpu_timer counts it).
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <solbench/kernel.h>

#include <algorithm>
#include <cstdint>

namespace {

constexpr int kHidden = 4096;
constexpr int kThreads = kHidden / 8;

// One block per row; each thread loads 8 values with one 16-byte access.
__global__ void __launch_bounds__(kThreads)
    rmsnorm_kernel(const uint4* __restrict__ x, const uint4* __restrict__ w, uint4* __restrict__ y,
                   float eps) {
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

// The span of hidden_states addresses seen so far: the harness rotates a few
// input sets at fixed addresses, so one window over all of them covers the next.
uintptr_t g_lo = UINTPTR_MAX, g_hi = 0;

void keep_in_l2(const void* x, size_t bytes, cudaStream_t stream) {
  int dev = 0, max_set_aside = 0, max_window = 0;
  if (cudaGetDevice(&dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&max_set_aside, cudaDevAttrMaxPersistingL2CacheSize, dev) !=
          cudaSuccess ||
      cudaDeviceGetAttribute(&max_window, cudaDevAttrMaxAccessPolicyWindowSize, dev) !=
          cudaSuccess ||
      max_set_aside <= 0 || max_window <= 0)
    return;
  size_t limit = 0;
  if (cudaDeviceGetLimit(&limit, cudaLimitPersistingL2CacheSize) == cudaSuccess &&
      limit < static_cast<size_t>(max_set_aside))
    (void)cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, static_cast<size_t>(max_set_aside));
  const auto p = reinterpret_cast<uintptr_t>(x);
  g_lo = std::min(g_lo, p);
  g_hi = std::max(g_hi, p + bytes);
  const size_t span = std::min<size_t>(g_hi - g_lo, static_cast<size_t>(max_window));
  cudaStreamAttrValue v{};
  v.accessPolicyWindow.base_ptr = reinterpret_cast<void*>(g_lo);
  v.accessPolicyWindow.num_bytes = span;
  v.accessPolicyWindow.hitRatio =
      std::min(1.0f, static_cast<float>(max_set_aside) / static_cast<float>(span));
  v.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;
  v.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;
  (void)cudaStreamSetAttribute(stream, cudaStreamAttributeAccessPolicyWindow, &v);
  (void)cudaGetLastError();  // a refused window is no reason to fail the call
}

}  // namespace

SB_EXPORT int rmsnorm(const sb_tensor* in, int32_t n_in, sb_tensor* out, int32_t n_out,
                      void* stream) {
  if (n_in != 2 || n_out != 1 || in[0].ndim != 2 || in[0].shape[1] != kHidden) return 1;
  const int64_t rows = in[0].shape[0];
  if (rows == 0) return 0;
  auto s = static_cast<cudaStream_t>(stream);
  keep_in_l2(in[0].data, static_cast<size_t>(rows) * kHidden * 2, s);
  rmsnorm_kernel<<<static_cast<unsigned>(rows), kThreads, 0, s>>>(
      static_cast<const uint4*>(in[0].data), static_cast<const uint4*>(in[1].data),
      static_cast<uint4*>(out[0].data), 1e-5f);
  return cudaGetLastError() == cudaSuccess ? 0 : 4;
}
