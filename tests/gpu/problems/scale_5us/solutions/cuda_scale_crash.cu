// Validation (issue #5 item 6f): correct except on the 4096-element workload,
// where the kernel writes through a wild pointer (cudaErrorIllegalAddress, a
// sticky error). That workload must fail with RUNTIME_ERROR; the others PASSED.
#include <cuda_runtime.h>
#include <solbench/kernel.h>

#include <stdint.h>

namespace {
__global__ void scale_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t n) {
  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 2.f * x[i];
}
}  // namespace

SB_EXPORT int scale2_crash(const sb_tensor* in, int32_t n_in, sb_tensor* out, int32_t n_out,
                           void* stream) {
  if (n_in != 1 || n_out != 1) return 1;
  const int64_t n = sb_numel(&in[0]);
  float* y = static_cast<float*>(out[0].data);
  if (n == 4096) y = reinterpret_cast<float*>(uintptr_t{0xdead0000000});
  scale_kernel<<<static_cast<unsigned>((n + 255) / 256), 256, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const float*>(in[0].data), y, n);
  return cudaGetLastError() == cudaSuccess ? 0 : 4;
}
