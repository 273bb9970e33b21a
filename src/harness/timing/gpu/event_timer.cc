#include "harness/timing/gpu/event_timer.h"

#include "harness/timing/gpu/cuda_check.h"

namespace solbench::gpu {

EventTimer::EventTimer(int device, cudaStream_t stream, GpuTimerOptions options,
                       std::string fallback_reason)
    : device_(device), stream_(stream), options_(std::move(options)),
      guards_(device_, options_),
      fallback_reason_(std::move(fallback_reason)),
      gate_(options_.block_launch, options_.block_timeout_s) {
  prepare_l2_flush(options_, device_);
}

void EventTimer::prepare() {
  // Without CUPTI only the device's primary context is waited for (device_idle.h).
  guards_.before_flush(stream_);
  flush_l2(options_, stream_);
  SB_CUDA_CHECK(cudaStreamSynchronize(stream_));
  gate_.close(stream_);
}

void EventTimer::begin() { start_.record(stream_); }

void EventTimer::end() {
  stop_.record(stream_);
  gate_.open();
}

double EventTimer::elapsed_ms() {
  guards_.after_call(stream_, "the timed call's work on the given stream had finished");
  stop_.synchronize();
  last_ms_ = CudaEvent::elapsed_ms(start_, stop_);
  gate_.settle();
  return last_ms_;
}

void EventTimer::wait_idle() {
  guards_.after_call(stream_, "the call's work on the given stream had finished");
}

json EventTimer::details() const {
  json j = json::object();
  j["timer"] = name();
  j["scope"] = "work ordered on the measured stream only; work on other streams is not timed";
  if (!fallback_reason_.empty()) j["fallback_reason"] = fallback_reason_;
  l2_flush_details(options_, j);
  gate_details(gate_, j);
  guards_.details(j);
  j["events_ms"] = last_ms_;
  return j;
}

}  // namespace solbench::gpu
