// NvmlLibrary: libnvidia-ml.so.1 opened with dlopen at run time, so solbench
// starts (and falls back to "clocks unknown") where the driver ships no NVML.
// Declares the few NVML types and entry points solbench uses; their values are
// NVML's stable ABI (nvml.h).
#pragma once

#include <string>

namespace solbench::gpu::detail {

using nvmlReturn_t = int;
using nvmlDevice_t = struct nvmlDevice_st*;

constexpr nvmlReturn_t NVML_SUCCESS = 0;
constexpr nvmlReturn_t NVML_ERROR_NOT_SUPPORTED = 3;
constexpr nvmlReturn_t NVML_ERROR_NO_PERMISSION = 4;

// nvmlClockType_t
constexpr int NVML_CLOCK_GRAPHICS = 0;
constexpr int NVML_CLOCK_SM = 1;
constexpr int NVML_CLOCK_MEM = 2;
// nvmlTemperatureSensors_t
constexpr int NVML_TEMPERATURE_GPU = 0;

struct NvmlLibrary {
  // The process-wide instance, loaded and initialised on first use; never null.
  // ok() is false (and error() says why) when the library or nvmlInit failed.
  static NvmlLibrary& get();

  bool ok() const { return ok_; }
  const std::string& error() const { return error_; }
  // "NVML_ERROR_..." style text for a return code.
  std::string describe(nvmlReturn_t r) const;

  nvmlReturn_t (*DeviceGetHandleByPciBusId)(const char*, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*DeviceGetClockInfo)(nvmlDevice_t, int, unsigned*) = nullptr;
  nvmlReturn_t (*DeviceGetMaxClockInfo)(nvmlDevice_t, int, unsigned*) = nullptr;
  // nvmlDeviceGetCurrentClocksEventReasons (driver >= 535), else the older
  // nvmlDeviceGetCurrentClocksThrottleReasons: same signature and bits.
  nvmlReturn_t (*DeviceGetClockEventReasons)(nvmlDevice_t, unsigned long long*) = nullptr;
  nvmlReturn_t (*DeviceGetTemperature)(nvmlDevice_t, int, unsigned*) = nullptr;
  nvmlReturn_t (*DeviceGetPowerUsage)(nvmlDevice_t, unsigned*) = nullptr;       // mW
  nvmlReturn_t (*DeviceGetEnforcedPowerLimit)(nvmlDevice_t, unsigned*) = nullptr;  // mW
  nvmlReturn_t (*DeviceSetGpuLockedClocks)(nvmlDevice_t, unsigned, unsigned) = nullptr;
  nvmlReturn_t (*DeviceResetGpuLockedClocks)(nvmlDevice_t) = nullptr;
  nvmlReturn_t (*DeviceSetMemoryLockedClocks)(nvmlDevice_t, unsigned, unsigned) = nullptr;
  nvmlReturn_t (*DeviceResetMemoryLockedClocks)(nvmlDevice_t) = nullptr;
  nvmlReturn_t (*SystemGetDriverVersion)(char*, unsigned) = nullptr;
  // Enumeration and identity (device.h identify_device).
  nvmlReturn_t (*DeviceGetCount)(unsigned*) = nullptr;                    // _v2
  nvmlReturn_t (*DeviceGetHandleByIndex)(unsigned, nvmlDevice_t*) = nullptr;  // _v2
  nvmlReturn_t (*DeviceGetUUID)(nvmlDevice_t, char*, unsigned) = nullptr;
  nvmlReturn_t (*DeviceGetName)(nvmlDevice_t, char*, unsigned) = nullptr;
  nvmlReturn_t (*DeviceGetCudaComputeCapability)(nvmlDevice_t, int*, int*) = nullptr;
  nvmlReturn_t (*DeviceGetMigMode)(nvmlDevice_t, unsigned*, unsigned*) = nullptr;  // current, pending

 private:
  NvmlLibrary();
  ~NvmlLibrary() = default;  // never unloaded: signal and atexit handlers may still call it
  const char* (*ErrorString_)(nvmlReturn_t) = nullptr;
  void* handle_ = nullptr;
  bool ok_ = false;
  std::string error_;
};

}  // namespace solbench::gpu::detail
