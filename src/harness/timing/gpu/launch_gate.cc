#include "harness/timing/gpu/launch_gate.h"

#include <atomic>

#include "harness/timing/gpu/gpu_kernels.h"

namespace solbench::gpu {

namespace {
volatile int32_t* flags_of(PinnedBuffer& b) { return static_cast<volatile int32_t*>(b.host()); }
}  // namespace

LaunchGate::LaunchGate(bool enabled, double timeout_s) : timeout_s_(timeout_s) {
  if (enabled && kernels_available()) flags_ = std::make_unique<PinnedBuffer>(2 * sizeof(int32_t));
}

void LaunchGate::close(cudaStream_t stream) {
  closed_ = false;
  if (!enabled()) return;
  volatile int32_t* f = flags_of(*flags_);
  f[0] = 0;
  f[1] = 0;
  std::atomic_thread_fence(std::memory_order_seq_cst);
  auto* dev = static_cast<int32_t*>(flags_->device());
  launch_blocking(dev, dev + 1, static_cast<uint64_t>(timeout_s_ * 1e9), stream);
  closed_ = true;
}

void LaunchGate::open() {
  if (!closed_) return;
  std::atomic_thread_fence(std::memory_order_seq_cst);
  flags_of(*flags_)[0] = 1;
}

void LaunchGate::settle() {
  last_timed_out_ = closed_ && flags_of(*flags_)[1] != 0;
  if (!closed_) return;
  closed_ = false;
  if (!last_timed_out_) {
    strikes_ = 0;
    return;
  }
  ++timeouts_;
  gave_up_ = ++strikes_ >= 2;
}

void gate_details(const LaunchGate& gate, json& j) {
  j["block_launch"] = gate.configured();
  if (gate.timeouts() > 0) j["block_timeouts"] = gate.timeouts();
  if (gate.gave_up()) j["block_gave_up"] = true;
  if (gate.last_timed_out()) j["block_timed_out"] = true;  // the call waited on its own stream
}

}  // namespace solbench::gpu
