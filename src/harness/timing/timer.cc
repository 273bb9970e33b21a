#include "harness/timing/timer.h"

#include <time.h>

#include <stdexcept>

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

int cuda_ordinal(const std::string& device) {
  if (device == "cuda") return 0;
  if (device.rfind("cuda:", 0) != 0 || device.size() == 5) return -1;
  int n = 0;
  for (size_t i = 5; i < device.size(); ++i) {
    if (device[i] < '0' || device[i] > '9' || n > 1000) return -1;
    n = n * 10 + (device[i] - '0');
  }
  return n;
}

std::unique_ptr<Timer> make_timer(const std::string& device, void* stream, const json& options) {
  if (device == "cpu") return std::make_unique<CpuTimer>();
  if (const int ordinal = cuda_ordinal(device); ordinal >= 0)
    return gpu::make_gpu_timer(ordinal, stream, options.is_object() ? options : json::object());
  throw std::runtime_error("no timer for device \"" + device + "\" (expected cpu or cuda:N)");
}

}  // namespace solbench::harness
