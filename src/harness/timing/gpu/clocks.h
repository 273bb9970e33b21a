// GPU clocks through NVML (opened at run time): SM and memory clocks, their
// maxima, the clock event ("throttle") reasons, temperature and power, sampled
// before and after a measurement so the trace says what the chip ran at.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/json.h"

namespace solbench::gpu {

struct ClockSample {
  bool valid = false;
  std::string error;  // why !valid (no NVML, device not found, ...)
  int64_t unix_ms = 0;
  unsigned sm_mhz = 0;
  unsigned sm_max_mhz = 0;
  unsigned memory_mhz = 0;
  unsigned memory_max_mhz = 0;
  unsigned graphics_mhz = 0;
  uint64_t event_reasons = 0;  // nvmlClocksEventReason* bits; 0 where unsupported
  bool event_reasons_known = false;
  int temperature_c = -1;
  double power_w = -1;
  double power_limit_w = -1;

  // Names of the set event-reason bits ("gpu_idle", "sw_power_cap", ...).
  std::vector<std::string> reason_names() const;
  // Reasons that slow a busy chip down (everything but gpu_idle / settings).
  bool throttled() const;
  // SM clock as a fraction of its maximum (0 when unknown).
  double sm_fraction() const;
};

// Decodes nvmlClocksEventReason bits into names, unknown bits as "bit_N".
std::vector<std::string> clock_event_reason_names(uint64_t bits);

// Samples the GPU with PCI bus id `pci_bus_id` ("0000:19:00.0"); never throws.
ClockSample sample_clocks(const std::string& pci_bus_id);
// Same, for a CUDA ordinal (looks its bus id up through the runtime).
ClockSample sample_clocks(int cuda_ordinal);

json to_json(const ClockSample& s);

// Samples before and after a measurement and judges them: warns when the SM clock
// of a busy chip was under `min_fraction` (default 90%) of its maximum, or when a
// slowdown reason (power cap, thermal, hardware slowdown) was active.
class ClockWatch {
 public:
  explicit ClockWatch(int cuda_ordinal, double min_fraction = 0.9);
  void before();
  void after();
  const ClockSample& before_sample() const { return before_; }
  const ClockSample& after_sample() const { return after_; }
  // Human-readable warnings ("SM clock 1410 MHz is 71% of its 1980 MHz maximum").
  std::vector<std::string> warnings() const;
  // {"before": {...}, "after": {...}, "warnings": [...]}
  json to_json() const;

 private:
  std::string bus_id_;
  double min_fraction_;
  ClockSample before_, after_;
};

// RAII: samples `watch` when constructed and again when destroyed, so every exit
// path of a measurement (exceptions included) records its after-sample.
class ClockGuard {
 public:
  explicit ClockGuard(ClockWatch& watch) : watch_(watch) { watch_.before(); }
  ~ClockGuard() { watch_.after(); }
  // Not copyable or movable: exactly one after-sample per guarded span.
  ClockGuard(const ClockGuard&) = delete;
  ClockGuard& operator=(const ClockGuard&) = delete;

 private:
  ClockWatch& watch_;
};

}  // namespace solbench::gpu
