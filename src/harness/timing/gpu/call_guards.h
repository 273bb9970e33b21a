// CallGuards: what every GPU timer does between calls besides timing them, in one
// place: the bounded waits for the device (device_idle.h: work left running is a
// reward hack) and, before the L2 flush, the persisting-L2 reset (l2_flush.h), with
// their cost and findings for details() and the trace.
#pragma once

#include <cuda_runtime_api.h>

#include "core/json.h"
#include "harness/timing/gpu/device_idle.h"
#include "harness/timing/gpu/gpu_timer_options.h"
#include "harness/timing/gpu/l2_flush.h"

namespace solbench::gpu {

class CallGuards {
 public:
  CallGuards(int device, const GpuTimerOptions& options);

  // In prepare(), before the flush: waits for the device (the previous call's work,
  // the harness's own input fills on `stream`), then undoes persisting-L2 state
  // when the L2 is flushed.
  void before_flush(cudaStream_t stream) {
    wait_before(stream);
    reset_l2(stream);
  }
  // Its two steps, apart (CuptiTimer times each).
  void wait_before(cudaStream_t stream);
  void reset_l2(cudaStream_t stream);
  // After a call (elapsed_ms, wait_idle): waits for its work on `stream`, then for
  // the rest of the device. `after` completes the report's "... busy N s after".
  void after_call(cudaStream_t stream, const char* after);

  void details(json& j) const;
  json take_findings() { return l2_.take_findings(); }
  const IdleBounds& bounds() const { return bounds_; }

 private:
  void wait(cudaStream_t stream, const char* after);

  DeviceIdleGuard& guard_;
  IdleBounds bounds_;
  bool reset_l2_;
  PersistingL2Reset l2_;
  IdleWaitStats stats_;
};

}  // namespace solbench::gpu
