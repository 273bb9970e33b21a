#include "harness/timing/timer.h"

#include <time.h>

#include "harness/timing/gpu/gpu_timer_factory.h"

namespace solbench::harness {

json CpuTimer::details() const {
  json j = json::object();
  j["clock"] = "clock_gettime(CLOCK_MONOTONIC)";
  timespec res{};
  if (clock_getres(CLOCK_MONOTONIC, &res) == 0)
    j["resolution_ns"] = static_cast<int64_t>(res.tv_sec) * 1000000000 + res.tv_nsec;
  return j;
}

std::unique_ptr<Timer> make_timer(const Device& device, void* stream, const json& options) {
  if (device.is_cpu()) return std::make_unique<CpuTimer>();
  return gpu::make_gpu_timer(device.ordinal(), stream, options.is_object() ? options : json::object());
}

}  // namespace solbench::harness
