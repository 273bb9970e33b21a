// out[M,N] = x[M,K] @ weight[N,K]^T in bf16 with float32 accumulation, through
// cuBLAS (cublasGemmEx) on the harness's stream. Row-major operands are read as
// column-major transposes: out^T[N,M] = weight[N,K] (op T of the K x N
// column-major view) times x^T[K,M].
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <solbench/kernel.h>

namespace {

// One handle per device, created on the first call (a warm-up call, not timed)
// and kept for the process: creating a handle allocates and synchronises.
cublasHandle_t handle_for(int device) {
  static cublasHandle_t handles[64] = {};
  if (device < 0 || device >= 64) return nullptr;
  if (!handles[device] && cublasCreate(&handles[device]) != CUBLAS_STATUS_SUCCESS)
    handles[device] = nullptr;
  return handles[device];
}

}  // namespace

SB_EXPORT int gemm_bf16(const sb_tensor* in, int32_t n_in, sb_tensor* out, int32_t n_out,
                        void* stream) {
  if (n_in != 2 || n_out != 1) return 1;
  const sb_tensor &x = in[0], &w = in[1], &y = out[0];
  if (x.ndim != 2 || w.ndim != 2 || y.ndim != 2) return 2;
  if (x.dtype != SB_DTYPE_BF16 || w.dtype != SB_DTYPE_BF16 || y.dtype != SB_DTYPE_BF16) return 2;
  if (!sb_is_contiguous(&x) || !sb_is_contiguous(&w) || !sb_is_contiguous(&y)) return 3;
  const int64_t M = x.shape[0], K = x.shape[1], N = w.shape[0];
  if (w.shape[1] != K || y.shape[0] != M || y.shape[1] != N) return 2;
  if (M == 0 || N == 0) return 0;
  cublasHandle_t h = handle_for(x.device);
  if (!h) return 5;
  if (cublasSetStream(h, static_cast<cudaStream_t>(stream)) != CUBLAS_STATUS_SUCCESS) return 6;
  const float alpha = 1.f, beta = 0.f;
  const cublasStatus_t st = cublasGemmEx(
      h, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(N), static_cast<int>(M), static_cast<int>(K),
      &alpha, w.data, CUDA_R_16BF, static_cast<int>(K), x.data, CUDA_R_16BF, static_cast<int>(K),
      &beta, y.data, CUDA_R_16BF, static_cast<int>(N), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  return st == CUBLAS_STATUS_SUCCESS ? 0 : 7;
}
