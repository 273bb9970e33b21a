// Options shared by the GPU timers (CuptiTimer, EventTimer).
#pragma once

#include <memory>

#include "harness/gpu/l2_flush.h"

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
  // EventTimer: hold the stream with a blocking kernel while the call's launches
  // are queued (nvbench's method), so events time the work, not launch latency.
  // A call that synchronises inside would wait for the kernel's timeout.
  bool block_launch = false;
  double block_timeout_s = 5.0;
};

}  // namespace solbench::gpu
