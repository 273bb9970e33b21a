#include "harness/gpu/event_timer.h"

#include <atomic>

#include "harness/gpu/cuda_check.h"
#include "harness/gpu/device.h"
#include "harness/gpu/gpu_kernels.h"

namespace solbench::gpu {

namespace {
volatile int32_t* flags_of(PinnedBuffer& b) { return static_cast<volatile int32_t*>(b.host()); }
}  // namespace

EventTimer::EventTimer(int device, cudaStream_t stream, GpuTimerOptions options,
                       std::string fallback_reason)
    : device_(device), stream_(stream), options_(std::move(options)),
      fallback_reason_(std::move(fallback_reason)) {
  if (options_.flush_l2 && !options_.l2_flush)
    options_.l2_flush = std::make_shared<L2Flush>(query_device(device_).l2_bytes, options_.l2_mode);
  if (options_.block_launch && kernels_available()) {
    block_flags_ = std::make_unique<PinnedBuffer>(2 * sizeof(int32_t));
  } else {
    options_.block_launch = false;
  }
}

void EventTimer::prepare() {
  if (options_.l2_flush && options_.flush_l2) options_.l2_flush->flush(stream_);
  SB_CUDA_CHECK(cudaStreamSynchronize(stream_));
  blocked_ = false;
  if (options_.block_launch) {
    volatile int32_t* f = flags_of(*block_flags_);
    f[0] = 0;
    f[1] = 0;
    std::atomic_thread_fence(std::memory_order_seq_cst);
    auto* dev = static_cast<int32_t*>(block_flags_->device());
    launch_blocking(dev, dev + 1, static_cast<uint64_t>(options_.block_timeout_s * 1e9), stream_);
    blocked_ = true;
  }
}

void EventTimer::begin() { start_.record(stream_); }

void EventTimer::end() {
  stop_.record(stream_);
  if (blocked_) {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    flags_of(*block_flags_)[0] = 1;  // releases the blocking kernel: the queued work runs
  }
}

double EventTimer::elapsed_ms() {
  stop_.synchronize();
  last_ms_ = CudaEvent::elapsed_ms(start_, stop_);
  block_timed_out_ = blocked_ && flags_of(*block_flags_)[1] != 0;
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
  j["block_launch"] = options_.block_launch;
  if (block_timed_out_)
    j["block_timed_out"] = true;  // the call waited on its own stream: the time is wrong
  j["events_ms"] = last_ms_;
  return j;
}

}  // namespace solbench::gpu
