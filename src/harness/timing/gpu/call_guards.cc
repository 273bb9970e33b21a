#include "harness/timing/gpu/call_guards.h"

#include <chrono>

namespace solbench::gpu {

CallGuards::CallGuards(int device, const GpuTimerOptions& options)
    : guard_(DeviceIdleGuard::for_device(device)),
      bounds_(options.idle),
      reset_l2_(options.flush_l2 && options.reset_persisting_l2),
      l2_(device) {
  guard_.set_bounds(bounds_);
}

void CallGuards::wait(cudaStream_t stream, const char* after) {
  const auto t0 = std::chrono::steady_clock::now();
  const DeviceIdleGuard::Check c = guard_.wait(stream, bounds_, after);
  stats_.add(
      c, std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
}

void CallGuards::wait_before(cudaStream_t stream) {
  wait(stream, "the harness's work on the given stream had finished, before a timed call");
}

void CallGuards::reset_l2(cudaStream_t stream) {
  if (reset_l2_) l2_.apply(stream);
}

void CallGuards::after_call(cudaStream_t stream, const char* after) { wait(stream, after); }

void CallGuards::details(json& j) const {
  stats_.details(j, bounds_);
  if (reset_l2_) l2_.details(j);
}

}  // namespace solbench::gpu
