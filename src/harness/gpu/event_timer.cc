#include "harness/gpu/event_timer.h"

#include "harness/gpu/cuda_check.h"
#include "harness/gpu/device.h"

namespace solbench::gpu {

EventTimer::EventTimer(int device, cudaStream_t stream, GpuTimerOptions options,
                       std::string fallback_reason)
    : device_(device), stream_(stream), options_(std::move(options)),
      fallback_reason_(std::move(fallback_reason)),
      gate_(options_.block_launch, options_.block_timeout_s) {
  if (options_.flush_l2 && !options_.l2_flush)
    options_.l2_flush = std::make_shared<L2Flush>(query_device(device_).l2_bytes, options_.l2_mode);
}

void EventTimer::prepare() {
  if (options_.l2_flush && options_.flush_l2) options_.l2_flush->flush(stream_);
  SB_CUDA_CHECK(cudaStreamSynchronize(stream_));
  gate_.close(stream_);
}

void EventTimer::begin() { start_.record(stream_); }

void EventTimer::end() {
  stop_.record(stream_);
  gate_.open();
}

double EventTimer::elapsed_ms() {
  stop_.synchronize();
  last_ms_ = CudaEvent::elapsed_ms(start_, stop_);
  gate_.settle();
  return last_ms_;
}

json EventTimer::details() const {
  json j = json::object();
  j["timer"] = name();
  j["scope"] = "work ordered on the measured stream only; work on other streams is not timed";
  if (!fallback_reason_.empty()) j["fallback_reason"] = fallback_reason_;
  j["l2_flush"] = options_.flush_l2 && options_.l2_flush
                      ? json(to_string(options_.l2_flush->mode()))
                      : json(nullptr);
  gate_details(gate_, j);
  j["events_ms"] = last_ms_;
  return j;
}

}  // namespace solbench::gpu
