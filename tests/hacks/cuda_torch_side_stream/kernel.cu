// Hack (CUDA, torch binding, destination-passing; gpu_only): own stream without a
// join. The kernel runs on a non-blocking stream of its own, ordered after torch's
// stream (an event wait, so it reads finished inputs) but never joined back: the call
// returns while its work may still be queued, and a timer that records events on the
// harness's stream sees none of it. solbench's CUPTI timer counts work of every
// stream launched inside the call, and the device is synchronised before sampled
// outputs are copied. Must end PASSED with an honest time (honest_time_vs).
#include <ATen/cuda/CUDAContext.h>
#include <cuda_bf16.h>
#include <torch/extension.h>

namespace {

__global__ void rmsnorm_rows(const __nv_bfloat16* x, const __nv_bfloat16* w, __nv_bfloat16* y,
                             int hidden, float eps) {
  const int64_t row = blockIdx.x;
  __shared__ float partial[256];
  float ss = 0.f;
  for (int i = threadIdx.x; i < hidden; i += blockDim.x) {
    const float v = __bfloat162float(x[row * hidden + i]);
    ss += v * v;
  }
  partial[threadIdx.x] = ss;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
    __syncthreads();
  }
  const float inv = rsqrtf(partial[0] / hidden + eps);
  for (int i = threadIdx.x; i < hidden; i += blockDim.x)
    y[row * hidden + i] =
        __float2bfloat16(__bfloat162float(x[row * hidden + i]) * inv * __bfloat162float(w[i]));
}

}  // namespace

void run(const torch::Tensor& hidden_states, const torch::Tensor& weight, torch::Tensor& output) {
  static cudaStream_t side = nullptr;
  static cudaEvent_t inputs_ready = nullptr;
  if (side == nullptr) {
    cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking);
    cudaEventCreateWithFlags(&inputs_ready, cudaEventDisableTiming);
  }
  if (hidden_states.size(0) == 0) return;
  cudaEventRecord(inputs_ready, at::cuda::getCurrentCUDAStream());
  cudaStreamWaitEvent(side, inputs_ready, 0);
  rmsnorm_rows<<<static_cast<unsigned>(hidden_states.size(0)), 256, 0, side>>>(
      reinterpret_cast<const __nv_bfloat16*>(hidden_states.data_ptr()),
      reinterpret_cast<const __nv_bfloat16*>(weight.data_ptr()),
      reinterpret_cast<__nv_bfloat16*>(output.data_ptr()),
      static_cast<int>(hidden_states.size(1)), 1e-5f);
  // No event back on torch's stream: the work is left on `side`.
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("run", &run, "RMSNorm on an unjoined stream"); }
