#include "harness/timing/gpu/l2_flush.h"

#include <algorithm>

#include "harness/timing/gpu/cuda_check.h"
#include "harness/timing/gpu/gpu_kernels.h"

namespace solbench::gpu {

namespace {
// At least 2 x L2, rounded up to whole 16-byte vectors; a device that reports no
// L2 still gets a buffer large enough to matter (64 MiB).
size_t flush_bytes(int64_t l2_bytes) {
  const int64_t base = l2_bytes > 0 ? 2 * l2_bytes : (int64_t{64} << 20);
  return static_cast<size_t>((base + 15) / 16 * 16);
}
}  // namespace

L2Flush::L2Flush(int64_t l2_bytes, L2FlushMode mode)
    : buffer_(flush_bytes(l2_bytes)),
      mode_(mode == L2FlushMode::WriteThenRead && !kernels_available() ? L2FlushMode::Write
                                                                       : mode) {}

void L2Flush::flush(cudaStream_t stream) {
  // A different byte every time: a write of the value already there could be
  // elided by a clever memory system, and it costs nothing to avoid the question.
  value_ = static_cast<uint8_t>(value_ * 37u + 11u);
  SB_CUDA_CHECK(cudaMemsetAsync(buffer_.get(), value_, buffer_.bytes(), stream));
  if (mode_ == L2FlushMode::WriteThenRead) launch_l2_read(buffer_.get(), buffer_.bytes(), stream);
  ++count_;
}

const char* to_string(L2FlushMode mode) {
  switch (mode) {
    case L2FlushMode::Write: return "write";
    case L2FlushMode::WriteThenRead: return "write-then-read";
  }
  return "?";
}

}  // namespace solbench::gpu
