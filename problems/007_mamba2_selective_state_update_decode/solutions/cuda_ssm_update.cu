// Mamba-2 selective state update (one decode step): one warp per (sequence, head,
// channel) row of the float32 state; each lane owns 4 of the 128 state entries.
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <solbench/kernel.h>

#include <math.h>

namespace {

constexpr int kN = 128;  // d_state
constexpr int kRowsPerBlock = 8;

__global__ void ssm_update_kernel(const float* __restrict__ state, const __nv_bfloat16* __restrict__ x,
                                  const __nv_bfloat16* __restrict__ dt, const float* __restrict__ A,
                                  const __nv_bfloat16* __restrict__ Bm,
                                  const __nv_bfloat16* __restrict__ Cm, const float* __restrict__ D,
                                  const float* __restrict__ dt_bias, __nv_bfloat16* __restrict__ y,
                                  float* __restrict__ new_state, int64_t rows, int H, int P, int G) {
  const int lane = threadIdx.x & 31;
  const int64_t row = int64_t(blockIdx.x) * kRowsPerBlock + (threadIdx.x >> 5);
  if (row >= rows) return;
  const int p = static_cast<int>(row % P);
  const int64_t bh = row / P;
  const int h = static_cast<int>(bh % H);
  const int64_t b = bh / H;
  const int g = h / (H / G);

  const float dt_raw = __bfloat162float(dt[bh]) + dt_bias[h];
  const float dtf = dt_raw > 20.f ? dt_raw : log1pf(expf(dt_raw));  // softplus, threshold 20
  const float dA = expf(dtf * A[h]);
  const float xv = __bfloat162float(x[row]);
  const float dtx = dtf * xv;

  const float4 s = reinterpret_cast<const float4*>(state + row * kN)[lane];
  const __nv_bfloat16* Br = Bm + (b * G + g) * kN + lane * 4;
  const __nv_bfloat16* Cr = Cm + (b * G + g) * kN + lane * 4;
  float4 ns;
  ns.x = s.x * dA + dtx * __bfloat162float(Br[0]);
  ns.y = s.y * dA + dtx * __bfloat162float(Br[1]);
  ns.z = s.z * dA + dtx * __bfloat162float(Br[2]);
  ns.w = s.w * dA + dtx * __bfloat162float(Br[3]);
  reinterpret_cast<float4*>(new_state + row * kN)[lane] = ns;
  float acc = ns.x * __bfloat162float(Cr[0]) + ns.y * __bfloat162float(Cr[1]) +
              ns.z * __bfloat162float(Cr[2]) + ns.w * __bfloat162float(Cr[3]);
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
  if (lane == 0) y[row] = __float2bfloat16(acc + D[h] * xv);
}

}  // namespace

SB_EXPORT int ssm_update(const sb_tensor* in, int32_t n_in, sb_tensor* out, int32_t n_out,
                         void* stream) {
  if (n_in != 8 || n_out != 2) return 1;
  for (int i = 0; i < 8; ++i)
    if (!sb_is_contiguous(&in[i])) return 3;
  for (int i = 0; i < 2; ++i)
    if (!sb_is_contiguous(&out[i])) return 3;
  const sb_tensor& st = in[0];
  if (st.ndim != 4 || st.shape[3] != kN || st.dtype != SB_DTYPE_F32) return 2;
  const int64_t Bsz = st.shape[0];
  const int H = static_cast<int>(st.shape[1]), P = static_cast<int>(st.shape[2]);
  const int G = static_cast<int>(in[4].shape[1]);
  if (G <= 0 || H % G != 0) return 2;
  const int64_t rows = Bsz * H * P;
  if (rows == 0) return 0;
  const unsigned blocks = static_cast<unsigned>((rows + kRowsPerBlock - 1) / kRowsPerBlock);
  ssm_update_kernel<<<blocks, 32 * kRowsPerBlock, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const float*>(in[0].data), static_cast<const __nv_bfloat16*>(in[1].data),
      static_cast<const __nv_bfloat16*>(in[2].data), static_cast<const float*>(in[3].data),
      static_cast<const __nv_bfloat16*>(in[4].data), static_cast<const __nv_bfloat16*>(in[5].data),
      static_cast<const float*>(in[6].data), static_cast<const float*>(in[7].data),
      static_cast<__nv_bfloat16*>(out[0].data), static_cast<float*>(out[1].data), rows, H, P, G);
  return cudaGetLastError() == cudaSuccess ? 0 : 4;
}
