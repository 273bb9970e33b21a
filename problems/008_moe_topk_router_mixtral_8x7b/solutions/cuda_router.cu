// MoE top-2 router (Mixtral 8x7B: hidden 4096, 8 experts): one block of 256
// threads per token computes the 8 logits (float32 accumulation), then one thread
// does softmax, top-2 (largest first) and the renormalisation.
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <solbench/kernel.h>

#include <math.h>

namespace {

constexpr int kE = 8, kThreads = 256, kTopK = 2;

__global__ void __launch_bounds__(kThreads)
    router_kernel(const __nv_bfloat16* __restrict__ hidden, const __nv_bfloat16* __restrict__ gate,
                  float* __restrict__ weights, int64_t* __restrict__ ids, int hidden_size) {
  const int64_t t = blockIdx.x;
  const __nv_bfloat16* hr = hidden + t * hidden_size;
  float acc[kE] = {};
  for (int d = threadIdx.x * 8; d < hidden_size; d += kThreads * 8) {
    const uint4 hv = *reinterpret_cast<const uint4*>(hr + d);
    const __nv_bfloat16* hb = reinterpret_cast<const __nv_bfloat16*>(&hv);
#pragma unroll
    for (int e = 0; e < kE; ++e) {
      const uint4 gv = *reinterpret_cast<const uint4*>(gate + int64_t(e) * hidden_size + d);
      const __nv_bfloat16* gb = reinterpret_cast<const __nv_bfloat16*>(&gv);
#pragma unroll
      for (int k = 0; k < 8; ++k) acc[e] += __bfloat162float(hb[k]) * __bfloat162float(gb[k]);
    }
  }
  __shared__ float part[kThreads / 32][kE];
#pragma unroll
  for (int e = 0; e < kE; ++e) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) acc[e] += __shfl_xor_sync(0xffffffffu, acc[e], o);
    if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5][e] = acc[e];
  }
  __syncthreads();
  if (threadIdx.x != 0) return;
  float logit[kE], mx = -INFINITY;
  for (int e = 0; e < kE; ++e) {
    float s = 0.f;
    for (int w = 0; w < kThreads / 32; ++w) s += part[w][e];
    logit[e] = s;
    mx = fmaxf(mx, s);
  }
  float prob[kE], sum = 0.f;
  for (int e = 0; e < kE; ++e) sum += (prob[e] = expf(logit[e] - mx));
  for (int e = 0; e < kE; ++e) prob[e] /= sum;
  int best[kTopK];
  bool taken[kE] = {};
  for (int k = 0; k < kTopK; ++k) {
    int arg = -1;
    for (int e = 0; e < kE; ++e)
      if (!taken[e] && (arg < 0 || prob[e] > prob[arg])) arg = e;
    taken[arg] = true;
    best[k] = arg;
  }
  float wsum = 0.f;
  for (int k = 0; k < kTopK; ++k) wsum += prob[best[k]];
  for (int k = 0; k < kTopK; ++k) {
    weights[t * kTopK + k] = prob[best[k]] / wsum;
    ids[t * kTopK + k] = best[k];
  }
}

}  // namespace

SB_EXPORT int moe_router(const sb_tensor* in, int32_t n_in, sb_tensor* out, int32_t n_out,
                         void* stream) {
  if (n_in != 2 || n_out != 2) return 1;
  if (in[0].dtype != SB_DTYPE_BF16 || in[1].dtype != SB_DTYPE_BF16) return 2;
  if (out[0].dtype != SB_DTYPE_F32 || out[1].dtype != SB_DTYPE_I64) return 2;
  if (in[1].shape[0] != kE || in[0].shape[1] != in[1].shape[1] || in[0].shape[1] % 8 != 0) return 2;
  for (int i = 0; i < 2; ++i)
    if (!sb_is_contiguous(&in[i]) || !sb_is_contiguous(&out[i])) return 3;
  const int64_t tokens = in[0].shape[0];
  if (tokens == 0) return 0;
  router_kernel<<<static_cast<unsigned>(tokens), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const __nv_bfloat16*>(in[0].data), static_cast<const __nv_bfloat16*>(in[1].data),
      static_cast<float*>(out[0].data), static_cast<int64_t*>(out[1].data),
      static_cast<int>(in[0].shape[1]));
  return cudaGetLastError() == cudaSuccess ? 0 : 4;
}
