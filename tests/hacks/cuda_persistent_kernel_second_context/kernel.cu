// Hack (CUDA, native binding; gpu_only): work left running after the call returned,
// in a CUDA context of its own, which the primary context's synchronise does not
// wait for. The first call makes a context with the driver API (reached through
// the runtime's driver entry point: nothing links libcuda), starts a persistent
// kernel there on a stream of that context and returns; the kernel never ends.
// Every call copies its rows into that context (peer copies on a stream of the
// other context), hands the job over through mapped host memory, spins until the
// kernel reports it done and copies the result back: nothing is queued on the
// stream the harness gave, so CUDA events on it read ~0, and the compute itself is
// outside every timer's records. Must end REWARD_HACK, in the first correctness
// round already: the harness waits for every context CUPTI saw the process create
// (device_idle.h).
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <solbench/kernel.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>

namespace {

constexpr int kHidden = 4096;
constexpr int kThreads = kHidden / 8;
constexpr int kBlocks = 16;

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
  __syncthreads();
  const float inv = rsqrtf(total / kHidden + eps);
  uint4 out;
  __nv_bfloat16* ob = reinterpret_cast<__nv_bfloat16*>(&out);
#pragma unroll
  for (int i = 0; i < 8; ++i) ob[i] = __float2bfloat16(xf[i] * inv * __bfloat162float(wb[i]));
  y[row * kThreads + threadIdx.x] = out;
}

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
    __threadfence_system();
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

// The driver functions, through the runtime's entry point.
// `version`: the CUDA version whose form of the function to get (CUDA 13 gave
// cuCtxGetDevice and cuCtxSynchronize a context argument under the same name).
template <typename Fn>
Fn driver(const char* name, int version = CUDART_VERSION) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult status{};
  if (cudaGetDriverEntryPointByVersion(name, &fn, version, cudaEnableDefault, &status) !=
          cudaSuccess ||
      status != cudaDriverEntryPointSuccess)
    return nullptr;
  return reinterpret_cast<Fn>(fn);
}

struct Driver {
  decltype(&::cuCtxGetCurrent) get_current =
      driver<decltype(&::cuCtxGetCurrent)>("cuCtxGetCurrent");
  decltype(&::cuCtxGetDevice) get_device = driver<decltype(&::cuCtxGetDevice)>("cuCtxGetDevice", 12000);
  decltype(&::cuCtxCreate) create = driver<decltype(&::cuCtxCreate)>("cuCtxCreate");
  decltype(&::cuCtxPushCurrent) push = driver<decltype(&::cuCtxPushCurrent)>("cuCtxPushCurrent");
  decltype(&::cuCtxPopCurrent) pop = driver<decltype(&::cuCtxPopCurrent)>("cuCtxPopCurrent");
  decltype(&::cuStreamCreate) stream_create = driver<decltype(&::cuStreamCreate)>("cuStreamCreate");
  decltype(&::cuStreamSynchronize) stream_sync =
      driver<decltype(&::cuStreamSynchronize)>("cuStreamSynchronize");
  decltype(&::cuMemAlloc) alloc = driver<decltype(&::cuMemAlloc)>("cuMemAlloc");
  decltype(&::cuMemFree) free = driver<decltype(&::cuMemFree)>("cuMemFree");
  decltype(&::cuMemHostAlloc) host_alloc = driver<decltype(&::cuMemHostAlloc)>("cuMemHostAlloc");
  decltype(&::cuMemHostGetDevicePointer) host_device_ptr =
      driver<decltype(&::cuMemHostGetDevicePointer)>("cuMemHostGetDevicePointer");
  decltype(&::cuMemcpyPeerAsync) copy = driver<decltype(&::cuMemcpyPeerAsync)>("cuMemcpyPeerAsync");
  bool ok() const {
    return get_current && get_device && create && push && pop && stream_create && stream_sync &&
           alloc && free && host_alloc && host_device_ptr && copy;
  }
};

struct Mine {
  Driver d;
  CUcontext primary = nullptr, ctx = nullptr;
  CUstream work = nullptr, copies = nullptr;
  Mailbox* mb = nullptr;
  CUdeviceptr mb_dev = 0, x = 0, w = 0, y = 0;
  int64_t capacity_rows = 0;
  int seq = 0;
};
Mine* g = nullptr;

int start() {
  auto* m = new Mine();
  Driver& d = m->d;
  CUdevice dev = 0;
  if (!d.ok() || d.get_current(&m->primary) != CUDA_SUCCESS || !m->primary ||
      d.get_device(&dev) != CUDA_SUCCESS || d.create(&m->ctx, nullptr, 0, dev) != CUDA_SUCCESS)
    return 20;
  // The new context is current now: everything below lives in it.
  void* host = nullptr;
  if (d.stream_create(&m->work, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS ||
      d.stream_create(&m->copies, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS ||
      d.host_alloc(&host, sizeof(Mailbox), CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE) !=
          CUDA_SUCCESS ||
      d.host_device_ptr(&m->mb_dev, host, 0) != CUDA_SUCCESS ||
      d.alloc(&m->w, kHidden * 2) != CUDA_SUCCESS)
    return 21;
  std::memset(host, 0, sizeof(Mailbox));
  m->mb = static_cast<Mailbox*>(host);
  persistent_rmsnorm<<<kBlocks, kThreads, 0, reinterpret_cast<cudaStream_t>(m->work)>>>(
      reinterpret_cast<Mailbox*>(m->mb_dev));
  const bool launched = cudaGetLastError() == cudaSuccess;
  CUcontext popped = nullptr;
  d.pop(&popped);  // back to the harness's context
  if (!launched) return 22;
  g = m;
  return 0;
}

int run(const sb_tensor* in, sb_tensor* out, int64_t rows) {
  Mine& m = *g;
  Driver& d = m.d;
  const size_t bytes = static_cast<size_t>(rows) * kHidden * 2;
  if (d.push(m.ctx) != CUDA_SUCCESS) return 23;
  int rc = 0;
  if (rows > m.capacity_rows) {
    if (m.x) d.free(m.x);
    if (m.y) d.free(m.y);
    if (d.alloc(&m.x, bytes) != CUDA_SUCCESS || d.alloc(&m.y, bytes) != CUDA_SUCCESS) rc = 24;
    m.capacity_rows = rows;
  }
  const auto src = [](const sb_tensor& t) { return reinterpret_cast<CUdeviceptr>(t.data); };
  if (rc == 0 &&
      (d.copy(m.x, m.ctx, src(in[0]), m.primary, bytes, m.copies) != CUDA_SUCCESS ||
       d.copy(m.w, m.ctx, src(in[1]), m.primary, kHidden * 2, m.copies) != CUDA_SUCCESS ||
       d.stream_sync(m.copies) != CUDA_SUCCESS))
    rc = 25;
  if (rc == 0) {
    m.mb->x = reinterpret_cast<const uint4*>(m.x);
    m.mb->w = reinterpret_cast<const uint4*>(m.w);
    m.mb->y = reinterpret_cast<uint4*>(m.y);
    m.mb->rows = static_cast<int>(rows);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    m.mb->seq = ++m.seq;
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (m.mb->done != m.seq && rc == 0)
      if (std::chrono::steady_clock::now() > give_up) rc = 26;
  }
  if (rc == 0 && (d.copy(src(out[0]), m.primary, m.y, m.ctx, bytes, m.copies) != CUDA_SUCCESS ||
                  d.stream_sync(m.copies) != CUDA_SUCCESS))
    rc = 27;
  CUcontext popped = nullptr;
  d.pop(&popped);
  return rc;
}

}  // namespace

SB_EXPORT int rmsnorm(const sb_tensor* in, int32_t n_in, sb_tensor* out, int32_t n_out,
                      void* stream) {
  (void)stream;  // nothing goes on the harness's stream
  if (n_in != 2 || n_out != 1 || in[0].ndim != 2 || in[0].shape[1] != kHidden) return 1;
  const int64_t rows = in[0].shape[0];
  if (rows == 0) return 0;
  if (!g)
    if (const int rc = start(); rc != 0) return rc;
  return run(in, out, rows);
}
