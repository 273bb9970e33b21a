#include "harness/timing/gpu/clocks.h"

#include <cuda_runtime_api.h>

#include <chrono>

#include <fmt/format.h>

#include "harness/timing/gpu/nvml_library.h"

namespace solbench::gpu {

namespace {

using detail::NvmlLibrary;
using detail::nvmlDevice_t;
using detail::NVML_SUCCESS;

struct ReasonBit {
  uint64_t bit;
  const char* name;
  bool slows_busy_chip;  // a limit on a busy chip, not just a description of idleness
};

// nvmlClocksEventReason* values (nvml.h); stable across drivers.
constexpr ReasonBit kReasons[] = {
    {0x1, "gpu_idle", false},
    {0x2, "applications_clocks_setting", false},
    {0x4, "sw_power_cap", true},
    {0x8, "hw_slowdown", true},
    {0x10, "sync_boost", false},
    {0x20, "sw_thermal_slowdown", true},
    {0x40, "hw_thermal_slowdown", true},
    {0x80, "hw_power_brake_slowdown", true},
    {0x100, "display_clock_setting", false},
};

int64_t now_unix_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

std::vector<std::string> clock_event_reason_names(uint64_t bits) {
  std::vector<std::string> out;
  uint64_t known = 0;
  for (const ReasonBit& r : kReasons) {
    known |= r.bit;
    if (bits & r.bit) out.emplace_back(r.name);
  }
  for (int b = 0; b < 64; ++b)
    if ((bits & ~known) & (uint64_t{1} << b)) out.push_back(fmt::format("bit_{}", b));
  return out;
}

std::vector<std::string> ClockSample::reason_names() const {
  return clock_event_reason_names(event_reasons);
}

bool ClockSample::throttled() const {
  for (const ReasonBit& r : kReasons)
    if (r.slows_busy_chip && (event_reasons & r.bit)) return true;
  return false;
}

double ClockSample::sm_fraction() const {
  return sm_max_mhz > 0 ? static_cast<double>(sm_mhz) / sm_max_mhz : 0.0;
}

ClockSample sample_clocks(const std::string& pci_bus_id) {
  ClockSample s;
  s.unix_ms = now_unix_ms();
  NvmlLibrary& nvml = NvmlLibrary::get();
  if (!nvml.ok()) {
    s.error = nvml.error();
    return s;
  }
  nvmlDevice_t dev = nullptr;
  if (auto r = nvml.DeviceGetHandleByPciBusId(pci_bus_id.c_str(), &dev); r != NVML_SUCCESS) {
    s.error = fmt::format("NVML has no device at PCI bus id {}: {}", pci_bus_id, nvml.describe(r));
    return s;
  }
  if (auto r = nvml.DeviceGetClockInfo(dev, detail::NVML_CLOCK_SM, &s.sm_mhz); r != NVML_SUCCESS) {
    s.error = fmt::format("nvmlDeviceGetClockInfo(SM): {}", nvml.describe(r));
    return s;
  }
  // The rest is best effort: a value some GPU or driver lacks stays at its default.
  (void)nvml.DeviceGetClockInfo(dev, detail::NVML_CLOCK_MEM, &s.memory_mhz);
  (void)nvml.DeviceGetClockInfo(dev, detail::NVML_CLOCK_GRAPHICS, &s.graphics_mhz);
  if (nvml.DeviceGetMaxClockInfo) {
    (void)nvml.DeviceGetMaxClockInfo(dev, detail::NVML_CLOCK_SM, &s.sm_max_mhz);
    (void)nvml.DeviceGetMaxClockInfo(dev, detail::NVML_CLOCK_MEM, &s.memory_max_mhz);
  }
  if (nvml.DeviceGetClockEventReasons) {
    unsigned long long bits = 0;
    if (nvml.DeviceGetClockEventReasons(dev, &bits) == NVML_SUCCESS) {
      s.event_reasons = bits;
      s.event_reasons_known = true;
    }
  }
  unsigned v = 0;
  if (nvml.DeviceGetTemperature &&
      nvml.DeviceGetTemperature(dev, detail::NVML_TEMPERATURE_GPU, &v) == NVML_SUCCESS)
    s.temperature_c = static_cast<int>(v);
  if (nvml.DeviceGetPowerUsage && nvml.DeviceGetPowerUsage(dev, &v) == NVML_SUCCESS)
    s.power_w = v / 1000.0;
  if (nvml.DeviceGetEnforcedPowerLimit && nvml.DeviceGetEnforcedPowerLimit(dev, &v) == NVML_SUCCESS)
    s.power_limit_w = v / 1000.0;
  s.valid = true;
  return s;
}

ClockSample sample_clocks(int cuda_ordinal) {
  char bus[32] = {};
  if (cudaError_t e = cudaDeviceGetPCIBusId(bus, sizeof bus, cuda_ordinal); e != cudaSuccess) {
    (void)cudaGetLastError();
    ClockSample s;
    s.unix_ms = now_unix_ms();
    s.error = fmt::format("cudaDeviceGetPCIBusId({}) failed: {}", cuda_ordinal,
                          cudaGetErrorName(e));
    return s;
  }
  return sample_clocks(std::string(bus));
}

json to_json(const ClockSample& s) {
  json j = json::object();
  j["valid"] = s.valid;
  j["unix_ms"] = s.unix_ms;
  if (!s.valid) {
    j["error"] = s.error;
    return j;
  }
  j["sm_mhz"] = s.sm_mhz;
  j["sm_max_mhz"] = s.sm_max_mhz;
  j["memory_mhz"] = s.memory_mhz;
  j["memory_max_mhz"] = s.memory_max_mhz;
  j["graphics_mhz"] = s.graphics_mhz;
  if (s.event_reasons_known) {
    j["clock_event_reasons"] = s.reason_names();
    j["clock_event_bits"] = fmt::format("0x{:x}", s.event_reasons);
  } else {
    j["clock_event_reasons"] = nullptr;
  }
  if (s.temperature_c >= 0) j["temperature_c"] = s.temperature_c;
  if (s.power_w >= 0) j["power_w"] = s.power_w;
  if (s.power_limit_w >= 0) j["power_limit_w"] = s.power_limit_w;
  return j;
}

ClockWatch::ClockWatch(int cuda_ordinal, double min_fraction) : min_fraction_(min_fraction) {
  char bus[32] = {};
  if (cudaDeviceGetPCIBusId(bus, sizeof bus, cuda_ordinal) == cudaSuccess)
    bus_id_ = bus;
  else
    (void)cudaGetLastError();
}

void ClockWatch::before() { before_ = sample_clocks(bus_id_); }
void ClockWatch::after() { after_ = sample_clocks(bus_id_); }

std::vector<std::string> ClockWatch::warnings() const {
  std::vector<std::string> out;
  auto judge = [&](const ClockSample& s, const char* when) {
    if (!s.valid) return;
    // An idle chip runs slow by design: a low clock with only gpu_idle set (or
    // nothing known) at the before-sample is the chip waking up, not a throttle.
    const bool idle_only = s.event_reasons_known && (s.event_reasons & ~uint64_t{0x1}) == 0 &&
                           (s.event_reasons & 0x1);
    if (s.sm_max_mhz > 0 && s.sm_fraction() < min_fraction_ && !idle_only)
      out.push_back(fmt::format("{}: SM clock {} MHz is {:.0f}% of its {} MHz maximum{}", when,
                                s.sm_mhz, 100.0 * s.sm_fraction(), s.sm_max_mhz,
                                s.event_reasons_known
                                    ? fmt::format(" (reasons: {})",
                                                  fmt::join(s.reason_names(), ", "))
                                    : std::string()));
    if (s.throttled())
      out.push_back(fmt::format("{}: clocks limited by {}", when,
                                fmt::join(s.reason_names(), ", ")));
  };
  judge(before_, "before");
  judge(after_, "after");
  if (!before_.valid && !after_.valid && !before_.error.empty())
    out.push_back("clocks unknown: " + before_.error);
  return out;
}

json ClockWatch::to_json() const {
  json j = json::object();
  j["before"] = gpu::to_json(before_);
  j["after"] = gpu::to_json(after_);
  j["min_sm_fraction"] = min_fraction_;
  j["warnings"] = warnings();
  return j;
}

}  // namespace solbench::gpu
