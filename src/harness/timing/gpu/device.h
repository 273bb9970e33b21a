// The CUDA devices of this machine: how many there are (zero, with the reason,
// where no driver or GPU exists), selecting one by ordinal, its properties, and
// the nvcc target flags for its compute capability.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/json.h"

namespace solbench::gpu {

struct DeviceCount {
  int count = 0;
  std::string reason;  // why count is 0 ("no CUDA driver", "no CUDA-capable device", ...)
};

// Never throws: a machine without a driver or a GPU answers count 0 and a reason.
DeviceCount device_count();

// Shorthand for tests and tools: true when at least one CUDA device is usable.
bool gpu_available(std::string* reason = nullptr);

struct DeviceInfo {
  int ordinal = -1;
  std::string name;          // "NVIDIA H100 80GB HBM3"
  std::string pci_bus_id;    // "0000:19:00.0", the key NVML finds the same GPU by
  std::string uuid;          // "GPU-xxxxxxxx-..." when the runtime reports it
  int cc_major = 0;
  int cc_minor = 0;
  int sm_count = 0;
  int64_t l2_bytes = 0;
  int64_t total_memory_bytes = 0;
  int64_t free_memory_bytes = 0;  // at query time
  int memory_bus_width_bits = 0;
  int sm_clock_max_khz = 0;       // peak SM clock the runtime reports
  int memory_clock_max_khz = 0;   // peak memory clock the runtime reports
  int max_shared_memory_per_block_optin = 0;
  int driver_version = 0;   // e.g. 13000
  int runtime_version = 0;

  // Datasheet-style peak DRAM bandwidth from the clocks (2 transfers per clock).
  double peak_dram_bytes_per_s() const;
  std::string compute_capability() const;  // "9.0"
};

// Properties of device `ordinal` (throws CudaError when it cannot be queried).
DeviceInfo query_device(int ordinal);

// What the parent process needs of CUDA device `ordinal` before any worker runs
// (the nvcc target, the timing lock's UUID): NVML's answer where CUDA's ordinal
// maps onto one NVML device without doubt (nvml_index_for_cuda_ordinal), else
// query_device's. NVML answers in milliseconds; the runtime's first call
// initialises the driver (cuInit: 0.3-0.4 s on an H100) in a process that
// otherwise never touches CUDA. Throws where neither can answer.
struct DeviceIdentity {
  int ordinal = -1;
  std::string name;
  std::string uuid;
  int cc_major = 0;
  int cc_minor = 0;
  std::string source;  // "nvml" or "cuda"
};
DeviceIdentity identify_device(int ordinal);
// The UUID of CUDA's device `ordinal` ("GPU-..."), "" where neither NVML nor CUDA
// can tell (no driver, no such device); never throws.
std::string device_uuid(int ordinal);

// NVML's view of one GPU, in NVML's order (PCI bus order).
struct NvmlDeviceEntry {
  std::string uuid;
  std::string name;
  bool mig = false;  // MIG mode on: CUDA enumerates its instances instead
};

// The NVML index of CUDA's device `ordinal` under CUDA_VISIBLE_DEVICES `visible`
// and CUDA_DEVICE_ORDER `order` (either null when unset), or nullopt where only
// CUDA can tell: CUDA's default order (fastest first) equals NVML's only when every
// GPU is the same model; MIG instances and entries NVML cannot place are CUDA's
// business. Visible entries are indices or (prefixes of) GPU UUIDs; CUDA stops at
// the first invalid one.
std::optional<int> nvml_index_for_cuda_ordinal(int ordinal,
                                               const std::vector<NvmlDeviceEntry>& devices,
                                               const char* visible, const char* order);

// Makes `ordinal` the calling thread's current device and creates its primary
// context now (so later timings do not pay for it). Throws on a bad ordinal.
void select_device(int ordinal);

// nvcc target for a compute capability: the architecture-specific `a` variant
// where one exists and solutions may want its instructions (9.0 -> 90a, 10.0 ->
// 100a), else the plain one. Returns "arch=compute_90a,code=sm_90a" (the value of
// `-gencode`), and `sm_arch_name` returns "sm_90a".
std::string gencode_for(int cc_major, int cc_minor);
std::string sm_arch_name(int cc_major, int cc_minor);

json to_json(const DeviceInfo& info);

}  // namespace solbench::gpu
