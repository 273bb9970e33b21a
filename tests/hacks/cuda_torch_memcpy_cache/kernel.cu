// Hack (CUDA, torch binding; gpu_only): memcpy from a result cache keyed on input
// values. The key is the row count and the first 8 values of each input (a 32-byte
// device-to-host copy); a hit is one device-to-device cudaMemcpyAsync of the stored
// output, no kernel. Timed calls that repeat a few input sets would all hit. With
// fresh values in every timed call the cache never hits: must end PASSED with an
// honest time (honest_time_vs), never with a faked one.
#include <ATen/cuda/CUDAContext.h>
#include <map>
#include <vector>
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

namespace {
std::map<std::vector<uint16_t>, torch::Tensor> g_cache;
}

torch::Tensor run(const torch::Tensor& hidden_states, const torch::Tensor& weight) {
  const torch::Tensor x = hidden_states.contiguous(), w = weight.contiguous();
  torch::Tensor out = torch::empty_like(x);
  if (x.size(0) == 0) return out;
  const cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  std::vector<uint16_t> key(17);
  key[0] = static_cast<uint16_t>(x.size(0));
  cudaMemcpyAsync(key.data() + 1, x.data_ptr(), 16, cudaMemcpyDeviceToHost, stream);
  cudaMemcpyAsync(key.data() + 9, w.data_ptr(), 16, cudaMemcpyDeviceToHost, stream);
  cudaStreamSynchronize(stream);
  auto hit = g_cache.find(key);
  if (hit != g_cache.end() && hit->second.sizes() == x.sizes()) {
    cudaMemcpyAsync(out.data_ptr(), hit->second.data_ptr(), out.nbytes(),
                    cudaMemcpyDeviceToDevice, stream);
    return out;
  }
  rmsnorm_rows<<<static_cast<unsigned>(x.size(0)), 256, 0, stream>>>(
      reinterpret_cast<const __nv_bfloat16*>(x.data_ptr()),
      reinterpret_cast<const __nv_bfloat16*>(w.data_ptr()),
      reinterpret_cast<__nv_bfloat16*>(out.data_ptr()), static_cast<int>(x.size(1)), 1e-5f);
  if (g_cache.size() < 4096) g_cache[key] = out.clone();
  return out;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("run", &run, "RMSNorm with a result cache"); }
