// Validation (issue #5 item 6e): the same copy, launched on a stream of the
// solution's own and NOT joined back to the harness's stream before returning.
// A timer that only records events on the given stream sees almost nothing; the
// CUPTI timer must report the copy's full duration.
#include <cuda_runtime.h>
#include <solbench/kernel.h>

namespace {
__global__ void copy_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t n) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) y[i] = x[i];
}
}  // namespace

SB_EXPORT int copy_f32_side_stream(const sb_tensor* in, int32_t n_in, sb_tensor* out,
                                   int32_t n_out, void*) {
  if (n_in != 1 || n_out != 1 || !sb_is_contiguous(&in[0]) || !sb_is_contiguous(&out[0])) return 1;
  static cudaStream_t side = nullptr;
  if (!side && cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking) != cudaSuccess) return 5;
  const int64_t n = sb_numel(&in[0]);
  if (n == 0) return 0;
  int64_t blocks = (n + 255) / 256;
  if (blocks > 132 * 8) blocks = 132 * 8;
  copy_kernel<<<static_cast<unsigned>(blocks), 256, 0, side>>>(
      static_cast<const float*>(in[0].data), static_cast<float*>(out[0].data), n);
  return cudaGetLastError() == cudaSuccess ? 0 : 4;
}
