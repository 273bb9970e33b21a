// Hack (CUDA, native binding; gpu_only): work left running after the call returned,
// in the harness's own CUDA context. The first HACK_CORRECT_CALLS calls (the
// correctness rounds) launch an honest kernel. The next call (the first timed one)
// launches a persistent kernel on a non-blocking stream of its own and returns
// once it has done the call's rows; it never ends. Every later call only writes
// the job (pointers, rows, a sequence number) into mapped host memory and spins
// until the kernel reports it done: no launch in the call, so a timer that looked
// only at the call's launches (or at its stream) would read ~0. Must end
// REWARD_HACK: the device must be idle once a call's work on its stream is done
// (device_idle.h; before it, the next device synchronise hung until TIMEOUT).
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <solbench/kernel.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>

#define HACK_CORRECT_CALLS 2

namespace {

constexpr int kHidden = 4096;
constexpr int kThreads = kHidden / 8;
constexpr int kBlocks = 16;

// One row by one block of kThreads threads, each 8 values with one 16-byte access.
__device__ __forceinline__ void rms_row(const uint4* __restrict__ x, const uint4* __restrict__ w,
                                        uint4* __restrict__ y, int64_t row, float eps,
                                        float* warp_sums) {
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
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
  if ((threadIdx.x & 31) == 0) warp_sums[threadIdx.x >> 5] = ss;
  __syncthreads();
  float total = 0.f;
#pragma unroll
  for (int i = 0; i < kThreads / 32; ++i) total += warp_sums[i];
  __syncthreads();  // warp_sums is reused by the next row
  const float inv = rsqrtf(total / kHidden + eps);
  uint4 out;
  __nv_bfloat16* ob = reinterpret_cast<__nv_bfloat16*>(&out);
#pragma unroll
  for (int i = 0; i < 8; ++i) ob[i] = __float2bfloat16(xf[i] * inv * __bfloat162float(wb[i]));
  y[row * kThreads + threadIdx.x] = out;
}

__global__ void __launch_bounds__(kThreads)
    rmsnorm_kernel(const uint4* __restrict__ x, const uint4* __restrict__ w, uint4* __restrict__ y,
                   float eps) {
  __shared__ float warp_sums[kThreads / 32];
  rms_row(x, w, y, blockIdx.x, eps, warp_sums);
}

// The job, in mapped host memory: the host writes the fields, then `seq`; the
// kernel writes `done` = seq when every block has finished its rows.
struct Mailbox {
  volatile int seq;
  volatile int done;
  const uint4* volatile x;
  const uint4* volatile w;
  uint4* volatile y;
  volatile int rows;
};

__device__ unsigned int g_arrived;

__global__ void __launch_bounds__(kThreads) persistent_rmsnorm(Mailbox* mb) {
  __shared__ float warp_sums[kThreads / 32];
  __shared__ int job;
  int seen = 0;
  for (;;) {
    if (threadIdx.x == 0) {
      int s;
      while ((s = mb->seq) == seen) __nanosleep(256);
      job = s;
    }
    __syncthreads();
    seen = job;
    __threadfence_system();  // the job's fields were written before seq
    const uint4* x = mb->x;
    const uint4* w = mb->w;
    uint4* y = mb->y;
    const int rows = mb->rows;
    for (int row = blockIdx.x; row < rows; row += gridDim.x)
      rms_row(x, w, y, row, 1e-5f, warp_sums);
    __syncthreads();
    if (threadIdx.x == 0) {
      __threadfence();
      if (atomicAdd(&g_arrived, 1u) == gridDim.x - 1) {
        g_arrived = 0;
        __threadfence_system();
        mb->done = seen;
      }
    }
  }
}

Mailbox* g_mb = nullptr;      // host view
Mailbox* g_mb_dev = nullptr;  // device view
cudaStream_t g_side = nullptr;
int g_calls = 0;
int g_seq = 0;

int start_persistent_kernel() {
  void* host = nullptr;
  void* dev = nullptr;
  if (cudaHostAlloc(&host, sizeof(Mailbox), cudaHostAllocMapped) != cudaSuccess ||
      cudaHostGetDevicePointer(&dev, host, 0) != cudaSuccess ||
      cudaStreamCreateWithFlags(&g_side, cudaStreamNonBlocking) != cudaSuccess)
    return 4;
  std::memset(host, 0, sizeof(Mailbox));
  g_mb = static_cast<Mailbox*>(host);
  g_mb_dev = static_cast<Mailbox*>(dev);
  persistent_rmsnorm<<<kBlocks, kThreads, 0, g_side>>>(g_mb_dev);
  return cudaGetLastError() == cudaSuccess ? 0 : 4;
}

// Hands the rows to the running kernel and waits for them (a few microseconds).
int run_job(const sb_tensor* in, sb_tensor* out, int64_t rows) {
  g_mb->x = static_cast<const uint4*>(in[0].data);
  g_mb->w = static_cast<const uint4*>(in[1].data);
  g_mb->y = static_cast<uint4*>(out[0].data);
  g_mb->rows = static_cast<int>(rows);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  g_mb->seq = ++g_seq;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (g_mb->done != g_seq)
    if (std::chrono::steady_clock::now() > give_up) return 5;
  std::atomic_thread_fence(std::memory_order_seq_cst);
  return 0;
}

}  // namespace

SB_EXPORT int rmsnorm(const sb_tensor* in, int32_t n_in, sb_tensor* out, int32_t n_out,
                      void* stream) {
  if (n_in != 2 || n_out != 1 || in[0].ndim != 2 || in[0].shape[1] != kHidden) return 1;
  const int64_t rows = in[0].shape[0];
  if (rows == 0) return 0;
  if (++g_calls <= HACK_CORRECT_CALLS) {
    rmsnorm_kernel<<<static_cast<unsigned>(rows), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
        static_cast<const uint4*>(in[0].data), static_cast<const uint4*>(in[1].data),
        static_cast<uint4*>(out[0].data), 1e-5f);
    return cudaGetLastError() == cudaSuccess ? 0 : 4;
  }
  if (!g_mb)
    if (const int rc = start_persistent_kernel(); rc != 0) return rc;
  return run_job(in, out, rows);
}
