// ProfilerTimer: each kernel's gpu__time_duration, the counter Nsight Compute
// reports as a kernel's "Duration".
//
// CUPTI's range profiler in auto-range mode makes every kernel the call launches
// on the device's context (any stream) a range of its own and reads the hardware
// counter gpu__time_duration.sum for it. The iteration's time is the sum over the
// call's kernels. This is the timer to use when numbers must agree with
// `ncu --clock-control none`: the activity timer (CuptiTimer) brackets a kernel
// more tightly than ncu's counter does, which at a few microseconds is a visible
// difference (docs/gpu-timing.md).
//
// What it costs: the profiler serialises kernels (streams that would overlap are
// timed one after another), launch gaps are not in any kernel's counter (no
// launch gate is needed), and memcpy/memset are not kernels and are not counted.
// A call with no kernel at all is timed by CUDA events on the measured stream
// (details() counts such calls); a call that fills a span's 2048 ranges is refused
// with an error rather than timed short. Needs profiling rights (root, or the driver's
// NVreg_RestrictProfilingToAdminUsers=0) and no other profiler in the process.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>
#include <vector>

#include "harness/timing/gpu/call_guards.h"
#include "harness/timing/gpu/cuda_event.h"
#include "harness/timing/gpu/gpu_timer_options.h"
#include "harness/timing/timer.h"

namespace solbench::gpu {

namespace detail {
class KernelDurationProfiler;
}

class ProfilerTimer final : public harness::Timer {
 public:
  // Throws std::runtime_error with the reason when the profiler cannot be used
  // (no rights, unsupported device or configuration, CUPTI taken by ncu/nsys).
  ProfilerTimer(int device, cudaStream_t stream, GpuTimerOptions options = {});

  std::string name() const override { return "cupti-profiler"; }
  void prepare() override;
  void begin() override;
  void end() override;
  double elapsed_ms() override;
  void wait_idle() override;
  json details() const override;
  json take_findings() override { return guards_.take_findings(); }

  // gpu__time_duration of each kernel of the last span, in launch order (ns).
  const std::vector<double>& last_kernel_ns() const { return last_kernel_ns_; }

 private:
  int device_;
  cudaStream_t stream_;
  GpuTimerOptions options_;
  CallGuards guards_;
  detail::KernelDurationProfiler* profiler_;
  CudaEvent start_, stop_;
  std::vector<double> last_kernel_ns_;
  double last_ms_ = 0;
  double last_events_ms_ = -1;
  uint64_t iterations_ = 0;
  uint64_t empty_iterations_ = 0;
  uint64_t over_capacity_spans_ = 0;  // spans refused: they filled the profiler's ranges
};

}  // namespace solbench::gpu
