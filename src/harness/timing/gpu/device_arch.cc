// The CUDA-free half of device.h (names, targets, JSON), built in every build.
#include <algorithm>
#include <cctype>

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

std::optional<int> nvml_index_for_cuda_ordinal(int ordinal,
                                               const std::vector<NvmlDeviceEntry>& devices,
                                               const char* visible, const char* order) {
  if (ordinal < 0 || devices.empty()) return std::nullopt;
  bool same_model = true;
  for (const NvmlDeviceEntry& d : devices) {
    if (d.mig || d.uuid.empty()) return std::nullopt;
    same_model = same_model && d.name == devices.front().name;
  }
  // Mixed models: CUDA's default order (fastest first) may not be the PCI order.
  if (!same_model && !(order && std::string(order) == "PCI_BUS_ID")) return std::nullopt;
  std::vector<int> shown;  // NVML indices in CUDA's order
  if (!visible) {
    for (size_t i = 0; i < devices.size(); ++i) shown.push_back(static_cast<int>(i));
  } else {
    const std::string list = visible;
    for (size_t pos = 0; pos <= list.size();) {
      size_t comma = list.find(',', pos);
      if (comma == std::string::npos) comma = list.size();
      std::string tok = list.substr(pos, comma - pos);
      pos = comma + 1;
      while (!tok.empty() && std::isspace(static_cast<unsigned char>(tok.front()))) tok.erase(0, 1);
      while (!tok.empty() && std::isspace(static_cast<unsigned char>(tok.back()))) tok.pop_back();
      int found = -1;
      if (!tok.empty() && std::all_of(tok.begin(), tok.end(),
                                      [](unsigned char c) { return std::isdigit(c); })) {
        if (tok.size() < 6 && std::stoi(tok) < static_cast<int>(devices.size())) found = std::stoi(tok);
      } else if (tok.rfind("GPU-", 0) == 0) {
        for (size_t i = 0; i < devices.size(); ++i)
          if (devices[i].uuid.rfind(tok, 0) == 0) {
            if (found >= 0) return std::nullopt;  // an ambiguous prefix
            found = static_cast<int>(i);
          }
      } else if (!tok.empty() && tok.rfind("MIG-", 0) == 0) {
        return std::nullopt;
      }
      if (found < 0) break;  // CUDA ignores this entry and every one after it
      if (std::find(shown.begin(), shown.end(), found) != shown.end()) return std::nullopt;
      shown.push_back(found);
    }
  }
  if (ordinal >= static_cast<int>(shown.size())) return std::nullopt;
  return shown[static_cast<size_t>(ordinal)];
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
