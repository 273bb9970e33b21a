// SwiGLU: out = silu(gate) * up over [tokens, 14336], gate/up fused in one
// [tokens, 28672] bf16 input. Grid-stride over 8-element (16-byte) vectors.
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <solbench/kernel.h>

namespace {

constexpr int64_t kInter = 14336;
constexpr int64_t kVecPerRow = kInter / 8;

__global__ void swiglu_kernel(const uint4* __restrict__ gate_up, uint4* __restrict__ out,
                              int64_t n_vec) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n_vec; i += stride) {
    const int64_t row = i / kVecPerRow, col = i % kVecPerRow;
    const uint4 g = gate_up[row * 2 * kVecPerRow + col];
    const uint4 u = gate_up[row * 2 * kVecPerRow + kVecPerRow + col];
    const __nv_bfloat16* gb = reinterpret_cast<const __nv_bfloat16*>(&g);
    const __nv_bfloat16* ub = reinterpret_cast<const __nv_bfloat16*>(&u);
    uint4 o;
    __nv_bfloat16* ob = reinterpret_cast<__nv_bfloat16*>(&o);
#pragma unroll
    for (int k = 0; k < 8; ++k) {
      const float gf = __bfloat162float(gb[k]);
      const float silu = gf / (1.f + __expf(-gf));
      ob[k] = __float2bfloat16(silu * __bfloat162float(ub[k]));
    }
    out[i] = o;
  }
}

}  // namespace

SB_EXPORT int swiglu(const sb_tensor* in, int32_t n_in, sb_tensor* out, int32_t n_out,
                     void* stream) {
  if (n_in != 1 || n_out != 1) return 1;
  if (in[0].ndim != 2 || in[0].shape[1] != 2 * kInter || in[0].dtype != SB_DTYPE_BF16) return 2;
  if (!sb_is_contiguous(&in[0]) || !sb_is_contiguous(&out[0])) return 3;
  const int64_t n_vec = in[0].shape[0] * kVecPerRow;
  if (n_vec == 0) return 0;
  int dev = 0, sms = 132;
  cudaGetDevice(&dev);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  const int threads = 256;
  int64_t blocks = (n_vec + threads - 1) / threads;
  if (blocks > int64_t(sms) * 16) blocks = int64_t(sms) * 16;
  swiglu_kernel<<<static_cast<unsigned>(blocks), threads, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const uint4*>(in[0].data), static_cast<uint4*>(out[0].data), n_vec);
  return cudaGetLastError() == cudaSuccess ? 0 : 4;
}
