// The few device kernels the harness and its validation need, behind plain C++
// launchers (this header needs no CUDA compiler). Built from gpu_kernels.cu when
// CMake found nvcc; `kernels_available()` says whether they exist in this build.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace solbench::gpu {

// False when this build has no CUDA compiler: the launchers then throw.
bool kernels_available();

// Reads `bytes` (a multiple of 16) from 16-byte aligned `buf`, writing nothing
// (an impossible-value check keeps the loads alive). Used after the L2 flush's
// write so that the L2 holds only clean lines, as after a hardware flush.
void launch_l2_read(const void* buf, size_t bytes, cudaStream_t stream);

// dst[i] = src[i] for `bytes` bytes with 16-byte vector accesses (pointers
// 16-byte aligned; a tail that is not a multiple of 16 is copied bytewise).
void launch_copy(void* dst, const void* src, size_t bytes, cudaStream_t stream);

// One thread busy-waits on the global timer for `ns` nanoseconds: a kernel of
// known duration (timer validation, side-stream tests).
void launch_spin(uint64_t ns, cudaStream_t stream);

// Spins until *release becomes non-zero (host-mapped memory written by the host)
// or `timeout_ns` passes, in which case it sets *timed_out = 1. Holds a stream
// while the host queues the measured launches (nvbench's blocking kernel), so
// that CUDA events time the work and not the launch latency.
void launch_blocking(const volatile int32_t* release, int32_t* timed_out, uint64_t timeout_ns,
                     cudaStream_t stream);

// Writes through a wild device pointer: the kernel faults with
// cudaErrorIllegalAddress, a sticky error (self-tests and validation only; the
// process's CUDA context is unusable afterwards).
void launch_illegal_address(cudaStream_t stream);

// Timer probes (bench/timer_probe.cc). y = 2 x on float32, one element per thread
// in blocks of 256: the ~5 us validation kernel (tests/gpu/problems/scale_5us).
// With `stamps` (two uint64 on the device, preset to {UINT64_MAX, 0}) each block
// lowers stamps[0] to the global timer when it starts and, after a __threadfence()
// that makes its stores visible, raises stamps[1]: the kernel's own view of its
// span, independent of any profiler's bracketing.
void launch_scale(const float* x, float* y, int64_t n, uint64_t* stamps, cudaStream_t stream);

// The smallest non-zero step of %globaltimer one thread sees over many reads, in
// ns (the resolution of the stamps above). Synchronises `stream`.
uint64_t global_timer_step_ns(cudaStream_t stream);

// ---- hw calibrate (calibrate_gpu.cc) ----------------------------------------
// Each launcher queues one kernel on `stream` with `blocks` blocks of 256 threads.

// Reads `bytes` (a multiple of 64) with four independent 16-byte loads in flight
// per thread; writes nothing unless an impossible value turns up.
void launch_calib_read(const void* buf, size_t bytes, unsigned blocks, cudaStream_t stream);
// `iterations` rounds of 8 independent FP32 FMA chains per thread: 16 FLOP per
// thread per round.
void launch_calib_fma(int iterations, unsigned blocks, cudaStream_t stream);
// `iterations` rounds of 8 independent rsqrt.approx chains per thread (one SFU
// operation each, MUFU.RSQ).
void launch_calib_sfu(int iterations, unsigned blocks, cudaStream_t stream);
// An empty kernel, one thread: the shortest launch.
void launch_calib_empty(cudaStream_t stream);
// Fills `n` elements with values in [-1, 1) of the given type ("bf16", "fp16",
// "fp32", "fp8e4m3"): GEMM operands that are neither zero nor NaN.
void launch_calib_fill(void* p, size_t n, const char* type, cudaStream_t stream);

}  // namespace solbench::gpu
