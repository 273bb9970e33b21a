// Options shared by the GPU timers (CuptiTimer, EventTimer).
#pragma once

#include <cuda_runtime_api.h>

#include <memory>

#include "core/json.h"
#include "harness/timing/gpu/device_idle.h"
#include "harness/timing/gpu/l2_flush.h"

namespace solbench::gpu {

struct GpuTimerOptions {
  // Flush the L2 in prepare(), outside the measured span.
  bool flush_l2 = true;
  L2FlushMode l2_mode = L2FlushMode::WriteThenRead;
  // Share one flush buffer between timers of a device (2 x L2 each otherwise);
  // created by the timer when null.
  std::shared_ptr<L2Flush> l2_flush;
  // CuptiTimer: also time the span with CUDA events on the measured stream and
  // report them (details()["events_ms"]) as a cross-check.
  bool events_crosscheck = true;
  // Hold the measured stream with a blocking kernel while the call's launches are
  // queued (nvbench's method, launch_gate.h), so that the span holds the GPU's
  // work and not the host's launch path (CUPTI's per-launch cost included). A call
  // that synchronises inside waits for the timeout once; the gate then stays open.
  bool block_launch = true;
  double block_timeout_s = 0.25;
  // How long the device may stay busy after a call (device_idle.h): the call's work
  // on the measured stream, then everything else. Past them: WorkLeftRunning.
  IdleBounds idle;
  // Before each flush, undo persisting-L2 state a solution set (l2_flush.h). Off
  // only in tests that show what the reset prevents.
  bool reset_persisting_l2 = true;
};

// The L2 flush as every timer does it: the buffer made when flushing is asked for
// and none is shared; the flush queued on the measured stream; the trace's keys
// "l2_flush" (mode, or null when off) and "l2_flush_bytes".
void prepare_l2_flush(GpuTimerOptions& o, int device);
void flush_l2(const GpuTimerOptions& o, cudaStream_t stream);
void l2_flush_details(const GpuTimerOptions& o, json& j);

}  // namespace solbench::gpu
