// DeviceIdleGuard: a call's GPU work must be finished when the call is (issue #25
// item 5b). A kernel a solution leaves running after its call returned (a
// persistent kernel on a stream of its own, or in a CUDA context of its own that
// the primary context's synchronise does not wait for) could do the next calls'
// work while they only signal it, outside every timed span.
//
// The GPU timers wait for the device through this guard instead of synchronising
// directly: first for the measured stream (the call's own work, however long,
// within `stream_s`), then for the whole device and every context CUPTI saw the
// process create, within `idle_s` more. A synchronise that has not returned by
// then is never waited for again: the wait reports the work as left running,
// naming the unfinished kernel launches CUPTI saw (name, context, timed span), and
// the process must end (its exit ends the work). The synchronisations run on the
// guard's own thread (BoundedWaiter), started with the first timer, before any
// solution code is loaded.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/json.h"
#include "harness/timing/gpu/bounded_wait.h"

namespace solbench::gpu {

struct IdleBounds {
  // The work the call queued on the measured stream: a kernel may legitimately
  // run this long (beyond it the workload would time out anyway).
  double stream_s = 60;
  // Everything else, after the stream's work has finished: honest work on other
  // streams (a library's, a solution's own stream it did not join) ends within
  // microseconds to milliseconds of it.
  double idle_s = 2;
};

class DeviceIdleGuard {
 public:
  // The guard of CUDA device `device`, made (and its thread started) on first use.
  static DeviceIdleGuard& for_device(int device);
  // The guard of `device` if one was made, else null.
  static DeviceIdleGuard* existing(int device);

  struct Check {
    bool idle = true;
    std::string message;              // why not (the reward-hack report)
    cudaError_t error = cudaSuccess;  // what the stream or device synchronise returned
    const char* error_call = "";
    double stream_ms = 0;  // waited for the measured stream
    double tail_ms = 0;    // waited for the rest after it
  };
  // Waits for `stream` (nullopt: no stream; a null cudaStream_t is the legacy
  // default stream) and then the rest, within `b`. `after` completes "... was still
  // busy N s after <after>". Once a wait gave up, answers at once with its report.
  Check check(std::optional<cudaStream_t> stream, const IdleBounds& b, const std::string& after);
  // check(), throwing WorkLeftRunning (gpu_errors.h) when work was left running and
  // CudaError when a synchronise failed.
  Check wait(std::optional<cudaStream_t> stream, const IdleBounds& b, const std::string& after);

  // The bounds the timers of this device use (poll_cuda_error waits with them).
  const IdleBounds& bounds() const { return bounds_; }
  void set_bounds(const IdleBounds& b) { bounds_ = b; }

 private:
  explicit DeviceIdleGuard(int device);
  std::string left_running(const BoundedWaiter::Result& r, const std::vector<std::string>& where,
                           const IdleBounds& b, const std::string& after) const;

  int device_;
  IdleBounds bounds_;
  BoundedWaiter waiter_;
};

// What a timer's waits cost and found, for its details(): "idle_wait".
struct IdleWaitStats {
  uint64_t waits = 0;
  double total_us = 0;     // host time in the waits (the device's own work included)
  double max_tail_ms = 0;  // longest wait for other work after the stream's had finished
  void add(const DeviceIdleGuard::Check& c, double us);
  void details(json& j, const IdleBounds& b) const;
};

}  // namespace solbench::gpu
