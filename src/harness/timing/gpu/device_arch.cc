// The CUDA-free half of device.h (names, targets, JSON), built in every build.
#include <fmt/format.h>

#include "harness/timing/gpu/device.h"

namespace solbench::gpu {

double DeviceInfo::peak_dram_bytes_per_s() const {
  return 2.0 * memory_clock_max_khz * 1e3 * (memory_bus_width_bits / 8.0);
}

std::string DeviceInfo::compute_capability() const {
  return fmt::format("{}.{}", cc_major, cc_minor);
}

std::string sm_arch_name(int cc_major, int cc_minor) {
  const int cc = cc_major * 10 + cc_minor;
  // The architecture-specific targets (wgmma, setmaxnreg on 9.0; tcgen05 on 10.x)
  // exist for the datacenter parts; their code runs only on that exact chip.
  if (cc == 90 || cc == 100 || cc == 103 || cc == 110 || cc == 120 || cc == 121)
    return fmt::format("sm_{}a", cc);
  return fmt::format("sm_{}", cc);
}

std::string gencode_for(int cc_major, int cc_minor) {
  const std::string sm = sm_arch_name(cc_major, cc_minor);  // "sm_90a"
  const std::string digits = sm.substr(3);                  // "90a"
  return fmt::format("arch=compute_{},code=sm_{}", digits, digits);
}

json to_json(const DeviceInfo& d) {
  return {
      {"ordinal", d.ordinal},
      {"name", d.name},
      {"pci_bus_id", d.pci_bus_id},
      {"uuid", d.uuid},
      {"compute_capability", d.compute_capability()},
      {"sm_count", d.sm_count},
      {"l2_bytes", d.l2_bytes},
      {"total_memory_bytes", d.total_memory_bytes},
      {"free_memory_bytes", d.free_memory_bytes},
      {"memory_bus_width_bits", d.memory_bus_width_bits},
      {"sm_clock_max_mhz", d.sm_clock_max_khz / 1000},
      {"memory_clock_max_mhz", d.memory_clock_max_khz / 1000},
      {"peak_dram_tb_per_s", d.peak_dram_bytes_per_s() / 1e12},
      {"driver_version", d.driver_version},
      {"runtime_version", d.runtime_version},
      {"gencode", gencode_for(d.cc_major, d.cc_minor)},
  };
}

}  // namespace solbench::gpu
