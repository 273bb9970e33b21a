// L2Flush: owns one device buffer of twice the L2 size; flush() evicts whatever a
// measured call left in the L2 (its inputs and outputs) so that the next timed
// call starts cold, as it would in a model where other layers ran in between.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

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

}  // namespace solbench::gpu
