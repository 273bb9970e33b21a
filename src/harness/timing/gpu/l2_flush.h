// L2Flush: owns one device buffer of twice the L2 size; flush() evicts whatever a
// measured call left in the L2 (its inputs and outputs) so that the next timed
// call starts cold, as it would in a model where other layers ran in between.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "core/json.h"
#include "harness/timing/gpu/device_buffer.h"

namespace solbench::gpu {

enum class L2FlushMode {
  // cudaMemsetAsync over the buffer with a value that changes every flush
  // (SOL-ExecBench and nvbench flush this way). The L2 is left full of dirty lines
  // of the flush buffer, which the measured kernel must write back as it evicts.
  Write,
  // Write as above, then read the whole buffer: the dirty lines are written back
  // during the flush and the L2 is left holding clean, unrelated lines, like the
  // hardware flush `ncu --cache-control all` uses. The default.
  WriteThenRead,
};

class L2Flush {
 public:
  // A buffer of 2 x l2_bytes on the current device (throws CudaError when the
  // allocation fails). WriteThenRead needs this build's device kernels and falls
  // back to Write without them (mode() says which one is used).
  explicit L2Flush(int64_t l2_bytes, L2FlushMode mode = L2FlushMode::WriteThenRead);

  // Not copyable or movable: it owns one device buffer, and timers hold a
  // reference to it for their whole life.
  L2Flush(const L2Flush&) = delete;
  L2Flush& operator=(const L2Flush&) = delete;
  L2Flush(L2Flush&&) = delete;
  L2Flush& operator=(L2Flush&&) = delete;

  // Enqueues the flush on `stream` (asynchronous; the caller synchronises).
  void flush(cudaStream_t stream);

  size_t bytes() const { return buffer_.bytes(); }
  L2FlushMode mode() const { return mode_; }
  uint64_t count() const { return count_; }

 private:
  DeviceBuffer buffer_;
  L2FlushMode mode_;
  uint8_t value_ = 0;
  uint64_t count_ = 0;
};

const char* to_string(L2FlushMode mode);

// What a solution can do so that data stays in the L2 across the flush, undone
// before every flush (issue #25 item 5a). Lines marked persisting by an access-
// policy window (on a stream, a launch or a graph node) are not evicted by the
// flush's normal accesses while the persisting set-aside holds them. apply():
//  - a persisting set-aside a solution raised (cudaLimitPersistingL2CacheSize > 0;
//    the harness never raises it) goes back to 0;
//  - an access-policy window on the measured stream (the harness's stream, on which
//    its own input fills and the flush run) is removed;
//  - every persisting line is made normal (cudaCtxResetPersistingL2Cache).
// The flush then evicts everything, so a solution's data kept persisting across
// calls is inert: it is reset, not refused (a solution may use the set-aside within
// one call, raising it in the call; docs/gpu-timing.md). What was found is counted.
class PersistingL2Reset {
 public:
  // Reads whether `device` has a persisting set-aside (compute capability 8.0+).
  explicit PersistingL2Reset(int device);
  // Outside the measured span, with the device idle, before the flush.
  void apply(cudaStream_t stream);
  bool supported() const { return supported_; }
  // "persisting_l2": resets made, what they found, their host time.
  void details(json& j) const;
  // What was found since the last take ({"limit_resets", "max_limit_bytes",
  // "window_resets"}), or null when nothing.
  json take_findings();

 private:
  bool supported_ = false;
  uint64_t initial_limit_ = 0;  // the set-aside before the solution was loaded, until reset
  uint64_t before_solution_ = 0;
  uint64_t applied_ = 0;
  uint64_t limit_resets_ = 0, window_resets_ = 0;
  uint64_t max_limit_ = 0;
  double total_us_ = 0, max_us_ = 0;
  uint64_t new_limit_resets_ = 0, new_window_resets_ = 0, new_max_limit_ = 0;
};

}  // namespace solbench::gpu
