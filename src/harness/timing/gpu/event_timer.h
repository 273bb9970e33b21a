// EventTimer: CUDA events recorded on the measured stream around the call. The
// cross-check for CuptiTimer and the fallback where CUPTI is unavailable. It only
// sees work ordered on the measured stream: work a call puts on a stream of its
// own and does not join back is NOT timed (details() says so).
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <string>

#include "harness/timing/gpu/call_guards.h"
#include "harness/timing/gpu/cuda_event.h"
#include "harness/timing/gpu/gpu_timer_options.h"
#include "harness/timing/gpu/launch_gate.h"
#include "harness/timing/timer.h"

namespace solbench::gpu {

class EventTimer final : public harness::Timer {
 public:
  // `fallback_reason`: why CUPTI is not used (empty when events were chosen).
  EventTimer(int device, cudaStream_t stream, GpuTimerOptions options = {},
             std::string fallback_reason = {});

  std::string name() const override { return "cuda-events"; }
  void prepare() override;
  void begin() override;
  void end() override;
  // Waits for the device (bounded, device_idle.h), then reads the events.
  double elapsed_ms() override;
  void wait_idle() override;
  json details() const override;
  json take_findings() override { return guards_.take_findings(); }

 private:
  int device_;
  cudaStream_t stream_;
  GpuTimerOptions options_;
  CallGuards guards_;
  std::string fallback_reason_;
  CudaEvent start_, stop_;
  LaunchGate gate_;
  double last_ms_ = 0;
};

}  // namespace solbench::gpu
