#include "harness/timing/gpu/nvml_library.h"

#include <dlfcn.h>

#include <fmt/format.h>

namespace solbench::gpu::detail {

NvmlLibrary& NvmlLibrary::get() {
  // Leaked on purpose: destroying it at exit would race the atexit handler that
  // restores locked clocks through it.
  static NvmlLibrary* lib = new NvmlLibrary();
  return *lib;
}

NvmlLibrary::NvmlLibrary() {
  handle_ = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!handle_) {
    const char* e = dlerror();
    error_ = fmt::format("NVML not available (libnvidia-ml.so.1: {})", e ? e : "not found");
    return;
  }
  auto sym = [&](const char* name) { return dlsym(handle_, name); };
  auto init = reinterpret_cast<nvmlReturn_t (*)()>(sym("nvmlInit_v2"));
  ErrorString_ = reinterpret_cast<const char* (*)(nvmlReturn_t)>(sym("nvmlErrorString"));
  DeviceGetHandleByPciBusId = reinterpret_cast<decltype(DeviceGetHandleByPciBusId)>(
      sym("nvmlDeviceGetHandleByPciBusId_v2"));
  DeviceGetClockInfo =
      reinterpret_cast<decltype(DeviceGetClockInfo)>(sym("nvmlDeviceGetClockInfo"));
  DeviceGetMaxClockInfo =
      reinterpret_cast<decltype(DeviceGetMaxClockInfo)>(sym("nvmlDeviceGetMaxClockInfo"));
  void* reasons = sym("nvmlDeviceGetCurrentClocksEventReasons");
  if (!reasons) reasons = sym("nvmlDeviceGetCurrentClocksThrottleReasons");
  DeviceGetClockEventReasons = reinterpret_cast<decltype(DeviceGetClockEventReasons)>(reasons);
  DeviceGetTemperature =
      reinterpret_cast<decltype(DeviceGetTemperature)>(sym("nvmlDeviceGetTemperature"));
  DeviceGetPowerUsage =
      reinterpret_cast<decltype(DeviceGetPowerUsage)>(sym("nvmlDeviceGetPowerUsage"));
  DeviceGetEnforcedPowerLimit = reinterpret_cast<decltype(DeviceGetEnforcedPowerLimit)>(
      sym("nvmlDeviceGetEnforcedPowerLimit"));
  DeviceSetGpuLockedClocks = reinterpret_cast<decltype(DeviceSetGpuLockedClocks)>(
      sym("nvmlDeviceSetGpuLockedClocks"));
  DeviceResetGpuLockedClocks = reinterpret_cast<decltype(DeviceResetGpuLockedClocks)>(
      sym("nvmlDeviceResetGpuLockedClocks"));
  DeviceSetMemoryLockedClocks = reinterpret_cast<decltype(DeviceSetMemoryLockedClocks)>(
      sym("nvmlDeviceSetMemoryLockedClocks"));
  DeviceResetMemoryLockedClocks = reinterpret_cast<decltype(DeviceResetMemoryLockedClocks)>(
      sym("nvmlDeviceResetMemoryLockedClocks"));
  SystemGetDriverVersion = reinterpret_cast<decltype(SystemGetDriverVersion)>(
      sym("nvmlSystemGetDriverVersion"));
  DeviceGetCount = reinterpret_cast<decltype(DeviceGetCount)>(sym("nvmlDeviceGetCount_v2"));
  DeviceGetHandleByIndex = reinterpret_cast<decltype(DeviceGetHandleByIndex)>(
      sym("nvmlDeviceGetHandleByIndex_v2"));
  DeviceGetUUID = reinterpret_cast<decltype(DeviceGetUUID)>(sym("nvmlDeviceGetUUID"));
  DeviceGetName = reinterpret_cast<decltype(DeviceGetName)>(sym("nvmlDeviceGetName"));
  DeviceGetCudaComputeCapability = reinterpret_cast<decltype(DeviceGetCudaComputeCapability)>(
      sym("nvmlDeviceGetCudaComputeCapability"));
  DeviceGetMigMode = reinterpret_cast<decltype(DeviceGetMigMode)>(sym("nvmlDeviceGetMigMode"));

  if (!init || !DeviceGetHandleByPciBusId || !DeviceGetClockInfo) {
    error_ = "NVML library lacks nvmlInit_v2/nvmlDeviceGetHandleByPciBusId_v2/nvmlDeviceGetClockInfo";
    return;
  }
  const nvmlReturn_t r = init();
  if (r != NVML_SUCCESS) {
    error_ = fmt::format("nvmlInit_v2 failed: {}", describe(r));
    return;
  }
  // nvmlShutdown is never called: NVML stays usable for exit-time clock restores.
  ok_ = true;
}

std::string NvmlLibrary::describe(nvmlReturn_t r) const {
  const char* s = ErrorString_ ? ErrorString_(r) : nullptr;
  return s ? fmt::format("{} ({})", s, r) : fmt::format("NVML error {}", r);
}

}  // namespace solbench::gpu::detail
