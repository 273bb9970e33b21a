// PinnedBuffer: owns one page-locked, device-mapped host allocation.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

#include "harness/timing/gpu/cuda_check.h"

namespace solbench::gpu {

class PinnedBuffer {
 public:
  explicit PinnedBuffer(size_t bytes) : bytes_(bytes) {
    SB_CUDA_CHECK(cudaHostAlloc(&host_, bytes_, cudaHostAllocMapped | cudaHostAllocPortable));
    SB_CUDA_CHECK(cudaHostGetDevicePointer(&device_, host_, 0));
  }
  ~PinnedBuffer() {
    if (host_) (void)cudaFreeHost(host_);
  }
  // Not copyable or movable: the device keeps addressing this allocation by the
  // pointer it was given (a blocking kernel may still be reading it).
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;

  void* host() const { return host_; }
  void* device() const { return device_; }
  size_t bytes() const { return bytes_; }

 private:
  void* host_ = nullptr;
  void* device_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace solbench::gpu
