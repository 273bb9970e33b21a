// CuptiTimer: the GPU time of a measured call from CUPTI activity records.
//
// Every kernel, memcpy and memset the call launched (through any stream, context
// or thread of the process) is collected; the iteration's time is the span from
// the first activity's start to the last activity's end. Work a solution leaves on
// a side stream without joining it back is therefore counted, not hidden. CUDA
// events recorded on the measured stream give a cross-check (details()).
//
// prepare() waits for the whole device (bounded: work a call left running is
// refused, device_idle.h), undoes persisting-L2 state and flushes the L2 (outside
// the span), drops records left over from earlier work and (block_launch, the
// default) closes the launch gate on the measured stream, which end() opens: the
// call's launches then run back to back, without the host's per-launch cost
// between them.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "harness/timing/gpu/call_guards.h"
#include "harness/timing/gpu/cuda_event.h"
#include "harness/timing/gpu/cupti_collector.h"
#include "harness/timing/gpu/gpu_timer_options.h"
#include "harness/timing/gpu/launch_gate.h"
#include "harness/timing/timer.h"

namespace solbench::gpu {

// What the last measured span contained.
struct SpanSummary {
  size_t activities = 0;
  size_t kernels = 0;
  size_t memcpys = 0;
  size_t memsets = 0;
  size_t streams = 0;          // distinct (context, stream) pairs
  double busy_ms = 0;          // union of activity intervals (gaps excluded)
  double span_ms = 0;          // first start .. last end
  std::vector<std::string> names;  // distinct activity names, first-seen order (at most 16)
};

// Summarises a set of activities (pure: unit-testable without a GPU).
SpanSummary summarize(const std::vector<detail::GpuActivity>& activities);

class CuptiTimer final : public harness::Timer {
 public:
  // Throws std::runtime_error (with the reason) when CUPTI cannot be used; the
  // factory then falls back to EventTimer.
  CuptiTimer(int device, cudaStream_t stream, GpuTimerOptions options = {});

  std::string name() const override { return "cupti"; }
  void prepare() override;
  void begin() override;
  void end() override;
  // Waits for the whole device (side streams and other contexts included, bounded:
  // throws WorkLeftRunning), then reads the records.
  double elapsed_ms() override;
  void wait_idle() override;
  void warm_up() override;
  json details() const override;
  json take_findings() override { return guards_.take_findings(); }
  json take_steps() override { return steps_.take(); }

  const SpanSummary& last_span() const { return last_; }
  // Keep the last span's records (the profile pass, call_profile.h); off in the
  // timed loop, which needs only the summary.
  void keep_activities(bool keep) { keep_activities_ = keep; }
  const std::vector<detail::GpuActivity>& last_activities() const { return last_activities_; }
  double last_events_ms() const { return last_events_ms_; }

 private:
  int device_;
  cudaStream_t stream_;
  GpuTimerOptions options_;
  CallGuards guards_;
  detail::CuptiCollector* collector_;
  CudaEvent start_, stop_;
  LaunchGate gate_;
  SpanSummary last_;
  double last_ms_ = 0;
  double last_events_ms_ = -1;
  uint64_t iterations_ = 0;
  uint64_t empty_iterations_ = 0;  // spans without any GPU activity (time = events)
  uint64_t dropped_records_ = 0;
  bool in_span_ = false;
  bool keep_activities_ = false;
  std::vector<detail::GpuActivity> last_activities_;
  detail::WindowCalls pending_calls_;  // the last span's API calls, read in elapsed_ms()
  harness::StepTimes steps_;
};

}  // namespace solbench::gpu
