// CudaStream: owns one non-blocking CUDA stream.
#pragma once

#include <cuda_runtime_api.h>

#include <utility>

#include "harness/timing/gpu/cuda_check.h"

namespace solbench::gpu {

class CudaStream {
 public:
  // Non-blocking: the stream does not synchronise with the legacy default stream,
  // so work a solution puts there is not silently serialised with ours.
  CudaStream() { SB_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking)); }
  ~CudaStream() {
    if (stream_) (void)cudaStreamDestroy(stream_);
  }
  // Movable, not copyable (two owners would destroy the stream twice).
  CudaStream(const CudaStream&) = delete;
  CudaStream& operator=(const CudaStream&) = delete;
  CudaStream(CudaStream&& o) noexcept : stream_(std::exchange(o.stream_, nullptr)) {}
  CudaStream& operator=(CudaStream&& o) noexcept {
    if (this != &o) {
      if (stream_) (void)cudaStreamDestroy(stream_);
      stream_ = std::exchange(o.stream_, nullptr);
    }
    return *this;
  }

  cudaStream_t get() const { return stream_; }
  void synchronize() const { SB_CUDA_CHECK(cudaStreamSynchronize(stream_)); }

 private:
  cudaStream_t stream_ = nullptr;
};

}  // namespace solbench::gpu
