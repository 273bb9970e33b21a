#include "harness/timing/gpu/device.h"

#include <cuda_runtime_api.h>

#include <fmt/format.h>

#include "core/settings.h"
#include "harness/timing/gpu/cuda_check.h"
#include "harness/timing/gpu/nvml_library.h"

namespace solbench::gpu {

DeviceCount device_count() {
  DeviceCount out;
  int n = 0;
  cudaError_t err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    switch (err) {
      case cudaErrorNoDevice: out.reason = "no CUDA-capable device is present"; break;
      case cudaErrorInsufficientDriver:
        out.reason = "the CUDA driver is missing or older than the runtime";
        break;
      default:
        out.reason = fmt::format("cudaGetDeviceCount failed: {} ({})", error_name(err),
                                 cudaGetErrorString(err));
    }
    return out;
  }
  out.count = n;
  if (n == 0) out.reason = "no CUDA-capable device is present";
  return out;
}

bool gpu_available(std::string* reason) {
  DeviceCount c = device_count();
  if (reason) *reason = c.reason;
  return c.count > 0;
}

DeviceInfo query_device(int ordinal) {
  DeviceInfo d;
  d.ordinal = ordinal;
  cudaDeviceProp prop{};
  SB_CUDA_CHECK(cudaGetDeviceProperties(&prop, ordinal));
  d.name = prop.name;
  d.cc_major = prop.major;
  d.cc_minor = prop.minor;
  d.sm_count = prop.multiProcessorCount;
  d.l2_bytes = prop.l2CacheSize;
  d.total_memory_bytes = static_cast<int64_t>(prop.totalGlobalMem);
  d.memory_bus_width_bits = prop.memoryBusWidth;
  d.max_shared_memory_per_block_optin = static_cast<int>(prop.sharedMemPerBlockOptin);
  // CUDA 13 dropped the clock fields from cudaDeviceProp; the attributes remain.
  SB_CUDA_CHECK(cudaDeviceGetAttribute(&d.sm_clock_max_khz, cudaDevAttrClockRate, ordinal));
  SB_CUDA_CHECK(
      cudaDeviceGetAttribute(&d.memory_clock_max_khz, cudaDevAttrMemoryClockRate, ordinal));

  char bus[32] = {};
  SB_CUDA_CHECK(cudaDeviceGetPCIBusId(bus, sizeof bus, ordinal));
  d.pci_bus_id = bus;

  const auto* u = reinterpret_cast<const unsigned char*>(prop.uuid.bytes);
  d.uuid = fmt::format(
      "GPU-{:02x}{:02x}{:02x}{:02x}-{:02x}{:02x}-{:02x}{:02x}-{:02x}{:02x}-"
      "{:02x}{:02x}{:02x}{:02x}{:02x}{:02x}",
      u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13],
      u[14], u[15]);

  SB_CUDA_CHECK(cudaDriverGetVersion(&d.driver_version));
  SB_CUDA_CHECK(cudaRuntimeGetVersion(&d.runtime_version));

  int current = 0;
  SB_CUDA_CHECK(cudaGetDevice(&current));
  if (current == ordinal) {
    size_t free_b = 0, total_b = 0;
    SB_CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
    d.free_memory_bytes = static_cast<int64_t>(free_b);
  }
  return d;
}

namespace {

std::optional<DeviceIdentity> identify_with_nvml(int ordinal) {
  using namespace detail;
  NvmlLibrary& nv = NvmlLibrary::get();
  if (!nv.ok() || !nv.DeviceGetCount || !nv.DeviceGetHandleByIndex || !nv.DeviceGetUUID ||
      !nv.DeviceGetName || !nv.DeviceGetCudaComputeCapability)
    return std::nullopt;
  unsigned n = 0;
  if (nv.DeviceGetCount(&n) != NVML_SUCCESS || n == 0) return std::nullopt;
  std::vector<NvmlDeviceEntry> devices;
  std::vector<nvmlDevice_t> handles;
  for (unsigned i = 0; i < n; ++i) {
    nvmlDevice_t h = nullptr;
    if (nv.DeviceGetHandleByIndex(i, &h) != NVML_SUCCESS) return std::nullopt;
    char uuid[96] = {}, name[96] = {};  // NVML_DEVICE_UUID_V2_BUFFER_SIZE, _NAME_V2_
    if (nv.DeviceGetUUID(h, uuid, sizeof uuid) != NVML_SUCCESS ||
        nv.DeviceGetName(h, name, sizeof name) != NVML_SUCCESS)
      return std::nullopt;
    NvmlDeviceEntry e{uuid, name, false};
    unsigned current = 0, pending = 0;
    if (nv.DeviceGetMigMode && nv.DeviceGetMigMode(h, &current, &pending) == NVML_SUCCESS)
      e.mig = current != 0;
    devices.push_back(std::move(e));
    handles.push_back(h);
  }
  const Settings& s = settings();
  auto text = [](const std::optional<std::string>& v) { return v ? v->c_str() : nullptr; };
  const std::optional<int> index = nvml_index_for_cuda_ordinal(
      ordinal, devices, text(s.cuda_visible_devices), text(s.cuda_device_order));
  if (!index) return std::nullopt;
  DeviceIdentity id;
  id.ordinal = ordinal;
  id.uuid = devices[static_cast<size_t>(*index)].uuid;
  id.name = devices[static_cast<size_t>(*index)].name;
  if (nv.DeviceGetCudaComputeCapability(handles[static_cast<size_t>(*index)], &id.cc_major,
                                        &id.cc_minor) != NVML_SUCCESS)
    return std::nullopt;
  id.source = "nvml";
  return id;
}

}  // namespace

std::string device_uuid(int ordinal) {
  try {
    return identify_device(ordinal).uuid;
  } catch (const std::exception&) {
    return "";
  }
}

DeviceIdentity identify_device(int ordinal) {
  if (auto id = identify_with_nvml(ordinal)) return *id;
  const DeviceInfo d = query_device(ordinal);
  return DeviceIdentity{ordinal, d.name, d.uuid, d.cc_major, d.cc_minor, "cuda"};
}

void select_device(int ordinal) {
  DeviceCount c = device_count();
  if (ordinal < 0 || ordinal >= c.count) {
    throw std::runtime_error(fmt::format("CUDA device {} does not exist ({} device(s){}{})",
                                         ordinal, c.count, c.reason.empty() ? "" : ": ",
                                         c.reason));
  }
  SB_CUDA_CHECK(cudaSetDevice(ordinal));
  SB_CUDA_CHECK(cudaFree(nullptr));  // creates the primary context now
}

}  // namespace solbench::gpu
