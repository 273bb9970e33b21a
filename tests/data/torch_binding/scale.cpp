// A torch-binding extension as users write it for torch.utils.cpp_extension: the
// module is PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) and, where the CUDA toolkit is
// present (the test then defines SB_TEST_CUDA_HEADER), a .cpp source includes a
// CUDA runtime header, which needs the toolkit's include folder.
#include <torch/extension.h>
#ifdef SB_TEST_CUDA_HEADER
#include <cuda_runtime_api.h>
#endif

#define SB_STR2(x) #x
#define SB_STR(x) SB_STR2(x)

torch::Tensor scale(const torch::Tensor& x, double a) { return x * a; }

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("scale", &scale, "x * a");
  m.attr("extension_name") = SB_STR(TORCH_EXTENSION_NAME);
#ifdef SB_TEST_CUDA_HEADER
  m.attr("cudart_version") = CUDART_VERSION;
#else
  m.attr("cudart_version") = 0;
#endif
}
