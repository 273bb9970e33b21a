// Built instead of gpu_kernels.cu when CMake found no CUDA compiler.
#include <stdexcept>

#include "harness/timing/gpu/fingerprint.h"
#include "harness/timing/gpu/gpu_kernels.h"

namespace solbench::gpu {
namespace {
[[noreturn]] void unavailable() {
  throw std::runtime_error("solbench was built without a CUDA compiler: no device kernels");
}
}  // namespace

bool kernels_available() { return false; }
bool can_fingerprint() { return false; }
void fingerprint(uintptr_t, size_t, uintptr_t, uintptr_t) { unavailable(); }
void launch_l2_read(const void*, size_t, cudaStream_t) { unavailable(); }
void launch_copy(void*, const void*, size_t, cudaStream_t) { unavailable(); }
void launch_spin(uint64_t, cudaStream_t) { unavailable(); }
void launch_blocking(const volatile int32_t*, int32_t*, uint64_t, cudaStream_t) { unavailable(); }
void launch_illegal_address(cudaStream_t) { unavailable(); }
void launch_scale(const float*, float*, int64_t, uint64_t*, cudaStream_t) { unavailable(); }
uint64_t global_timer_step_ns(cudaStream_t) { unavailable(); }
void launch_calib_read(const void*, size_t, unsigned, cudaStream_t) { unavailable(); }
void launch_calib_fma(int, unsigned, cudaStream_t) { unavailable(); }
void launch_calib_sfu(int, unsigned, cudaStream_t) { unavailable(); }
void launch_calib_empty(cudaStream_t) { unavailable(); }
void launch_calib_fill(void*, size_t, const char*, cudaStream_t) { unavailable(); }

}  // namespace solbench::gpu
