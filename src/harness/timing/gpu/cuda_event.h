// CudaEvent: owns one CUDA event with timing enabled.
#pragma once

#include <cuda_runtime_api.h>

#include <utility>

#include "harness/timing/gpu/cuda_check.h"

namespace solbench::gpu {

class CudaEvent {
 public:
  // Blocking-sync: waiting on it sleeps the host thread instead of spinning a core
  // that the measured program or a neighbouring worker may need.
  CudaEvent() { SB_CUDA_CHECK(cudaEventCreateWithFlags(&event_, cudaEventBlockingSync)); }
  ~CudaEvent() {
    if (event_) (void)cudaEventDestroy(event_);
  }
  // Movable, not copyable (two owners would destroy the event twice).
  CudaEvent(const CudaEvent&) = delete;
  CudaEvent& operator=(const CudaEvent&) = delete;
  CudaEvent(CudaEvent&& o) noexcept : event_(std::exchange(o.event_, nullptr)) {}
  CudaEvent& operator=(CudaEvent&& o) noexcept {
    if (this != &o) {
      if (event_) (void)cudaEventDestroy(event_);
      event_ = std::exchange(o.event_, nullptr);
    }
    return *this;
  }

  cudaEvent_t get() const { return event_; }
  void record(cudaStream_t stream) { SB_CUDA_CHECK(cudaEventRecord(event_, stream)); }
  void synchronize() const { SB_CUDA_CHECK(cudaEventSynchronize(event_)); }

  // Milliseconds from `start` to `end` (both recorded and complete).
  static float elapsed_ms(const CudaEvent& start, const CudaEvent& end) {
    float ms = 0.f;
    SB_CUDA_CHECK(cudaEventElapsedTime(&ms, start.event_, end.event_));
    return ms;
  }

 private:
  cudaEvent_t event_ = nullptr;
};

}  // namespace solbench::gpu
