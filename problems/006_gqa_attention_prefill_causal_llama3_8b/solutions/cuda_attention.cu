// Causal GQA attention prefill (head_dim 128, bf16 in/out, float32 math): a tiled
// online-softmax kernel on CUDA cores. One block of 256 threads per (32-query
// tile, query head, sequence); key/value tiles of 32 rows stream through shared
// memory, tiles wholly above the diagonal are skipped. Thread (r, c): query row r
// of the tile, scores for keys c, c+8, c+16, c+24 and output dims c + 8 i.
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <solbench/kernel.h>

#include <math.h>

namespace {

constexpr int kD = 128, kBQ = 32, kBK = 32, kThreads = 256;
// Row strides in floats, padded against shared-memory bank conflicts.
constexpr int kQS = kD + 4, kKS = kD + 1, kVS = kD, kPS = kBK + 1;
constexpr size_t kSmemBytes = sizeof(float) * (kBQ * kQS + kBK * kKS + kBK * kVS + kBQ * kPS);

__global__ void __launch_bounds__(kThreads)
    attention_kernel(const __nv_bfloat16* __restrict__ q, const __nv_bfloat16* __restrict__ k,
                     const __nv_bfloat16* __restrict__ v, __nv_bfloat16* __restrict__ out, int S,
                     int Hq, int Hk, float scale) {
  extern __shared__ float smem[];
  float* Qs = smem;
  float* Ks = Qs + kBQ * kQS;
  float* Vs = Ks + kBK * kKS;
  float* Ps = Vs + kBK * kVS;
  const int b = blockIdx.z, h = blockIdx.y, q0 = blockIdx.x * kBQ;
  const int hk = h / (Hq / Hk);
  const int tid = threadIdx.x, r = tid / 8, c = tid % 8;

  for (int idx = tid; idx < kBQ * kD; idx += kThreads) {
    const int rr = idx / kD, d = idx % kD, s = q0 + rr;
    Qs[rr * kQS + d] =
        s < S ? __bfloat162float(q[((int64_t(b) * S + s) * Hq + h) * kD + d]) * scale : 0.f;
  }
  const int q_row = q0 + r;
  float m = -INFINITY, l = 0.f, o[kD / 8];
#pragma unroll
  for (int i = 0; i < kD / 8; ++i) o[i] = 0.f;

  const int kv_end = min(S, q0 + kBQ);
  for (int k0 = 0; k0 < kv_end; k0 += kBK) {
    __syncthreads();  // previous tile fully consumed
    for (int idx = tid; idx < kBK * kD; idx += kThreads) {
      const int j = idx / kD, d = idx % kD, s = k0 + j;
      const int64_t off = ((int64_t(b) * S + s) * Hk + hk) * kD + d;
      Ks[j * kKS + d] = s < S ? __bfloat162float(k[off]) : 0.f;
      Vs[j * kVS + d] = s < S ? __bfloat162float(v[off]) : 0.f;
    }
    __syncthreads();
    float sc[4];
#pragma unroll
    for (int jj = 0; jj < 4; ++jj) {
      const int j = c + 8 * jj;
      float acc = 0.f;
#pragma unroll 8
      for (int d = 0; d < kD; ++d) acc += Qs[r * kQS + d] * Ks[j * kKS + d];
      const int key = k0 + j;
      sc[jj] = (key <= q_row && key < S) ? acc : -INFINITY;
    }
    float mt = fmaxf(fmaxf(sc[0], sc[1]), fmaxf(sc[2], sc[3]));
#pragma unroll
    for (int off = 1; off < 8; off <<= 1) mt = fmaxf(mt, __shfl_xor_sync(0xffffffffu, mt, off));
    const float m_new = fmaxf(m, mt);
    const float alpha = m == -INFINITY ? 0.f : __expf(m - m_new);
    float ls = 0.f;
#pragma unroll
    for (int jj = 0; jj < 4; ++jj) {
      const float p = sc[jj] == -INFINITY ? 0.f : __expf(sc[jj] - m_new);
      Ps[r * kPS + c + 8 * jj] = p;
      ls += p;
    }
#pragma unroll
    for (int off = 1; off < 8; off <<= 1) ls += __shfl_xor_sync(0xffffffffu, ls, off);
    l = l * alpha + ls;
    m = m_new;
#pragma unroll
    for (int i = 0; i < kD / 8; ++i) o[i] *= alpha;
    __syncwarp();  // row r's P is written and read by the same 8 lanes of one warp
    for (int j = 0; j < kBK; ++j) {
      const float p = Ps[r * kPS + j];
#pragma unroll
      for (int i = 0; i < kD / 8; ++i) o[i] += p * Vs[j * kVS + c + 8 * i];
    }
    __syncwarp();
  }
  if (q_row < S) {
    const float inv = 1.f / l;
    __nv_bfloat16* dst = out + ((int64_t(b) * S + q_row) * Hq + h) * kD;
#pragma unroll
    for (int i = 0; i < kD / 8; ++i) dst[c + 8 * i] = __float2bfloat16(o[i] * inv);
  }
}

}  // namespace

SB_EXPORT int gqa_attention(const sb_tensor* in, int32_t n_in, sb_tensor* out, int32_t n_out,
                            void* stream) {
  if (n_in != 3 || n_out != 1) return 1;
  for (int i = 0; i < 3; ++i)
    if (in[i].ndim != 4 || in[i].dtype != SB_DTYPE_BF16 || !sb_is_contiguous(&in[i])) return 2;
  if (!sb_is_contiguous(&out[0])) return 3;
  const int B = static_cast<int>(in[0].shape[0]), S = static_cast<int>(in[0].shape[1]);
  const int Hq = static_cast<int>(in[0].shape[2]), Hk = static_cast<int>(in[1].shape[2]);
  if (in[0].shape[3] != kD || Hk == 0 || Hq % Hk != 0) return 2;
  if (B == 0 || S == 0) return 0;
  static bool configured = false;
  if (!configured) {
    if (cudaFuncSetAttribute(attention_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             static_cast<int>(kSmemBytes)) != cudaSuccess)
      return 5;
    configured = true;
  }
  const dim3 grid((S + kBQ - 1) / kBQ, Hq, B);
  attention_kernel<<<grid, kThreads, kSmemBytes, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const __nv_bfloat16*>(in[0].data), static_cast<const __nv_bfloat16*>(in[1].data),
      static_cast<const __nv_bfloat16*>(in[2].data), static_cast<__nv_bfloat16*>(out[0].data), S,
      Hq, Hk, 1.f / sqrtf(static_cast<float>(kD)));
  return cudaGetLastError() == cudaSuccess ? 0 : 4;
}
