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

}  // namespace solbench::gpu
