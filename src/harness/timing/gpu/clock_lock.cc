#include "harness/timing/gpu/clock_lock.h"

#include <cuda_runtime_api.h>
#include <signal.h>

#include <array>
#include <atomic>
#include <charconv>
#include <cstdlib>
#include <mutex>
#include <stdexcept>

#include <fmt/format.h>

#include "harness/timing/gpu/nvml_library.h"

namespace solbench::gpu {

namespace {

using detail::NvmlLibrary;
using detail::nvmlDevice_t;
using detail::NVML_SUCCESS;

// Process-wide table of locked devices, walked by the atexit and signal handlers.
// Fixed size and lock-free reads so that a signal handler can use it.
struct LockedSlot {
  std::atomic<nvmlDevice_t> device{nullptr};
  std::atomic<bool> memory_locked{false};
};
constexpr int kMaxSlots = 64;
std::array<LockedSlot, kMaxSlots> g_slots;
std::once_flag g_handlers_once;

constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGABRT,
                            SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGXCPU};
struct sigaction g_previous[sizeof(kSignals) / sizeof(kSignals[0])];

void restore_slot(LockedSlot& slot) noexcept {
  nvmlDevice_t dev = slot.device.exchange(nullptr);
  if (!dev) return;
  NvmlLibrary& nvml = NvmlLibrary::get();
  if (nvml.DeviceResetGpuLockedClocks) (void)nvml.DeviceResetGpuLockedClocks(dev);
  if (slot.memory_locked.exchange(false) && nvml.DeviceResetMemoryLockedClocks)
    (void)nvml.DeviceResetMemoryLockedClocks(dev);
}

void restore_all() noexcept {
  for (LockedSlot& s : g_slots) restore_slot(s);
}

// Restores the clocks, then hands the signal to whatever handled it before us
// (or the default action, re-raised so the exit status tells the truth).
void on_signal(int sig, siginfo_t* info, void* ctx) {
  restore_all();
  for (size_t i = 0; i < std::size(kSignals); ++i) {
    if (kSignals[i] != sig) continue;
    const struct sigaction& prev = g_previous[i];
    if (prev.sa_flags & SA_SIGINFO) {
      if (prev.sa_sigaction) {
        prev.sa_sigaction(sig, info, ctx);
        return;
      }
    } else if (prev.sa_handler != SIG_DFL && prev.sa_handler != SIG_IGN) {
      prev.sa_handler(sig);
      return;
    } else if (prev.sa_handler == SIG_IGN) {
      return;
    }
    break;
  }
  signal(sig, SIG_DFL);
  raise(sig);
}

void install_handlers() {
  std::atexit(restore_all);
  for (size_t i = 0; i < std::size(kSignals); ++i) {
    struct sigaction sa{};
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    sigaction(kSignals[i], &sa, &g_previous[i]);
  }
}

std::optional<unsigned> parse_mhz(std::string_view s) {
  unsigned v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || v == 0 || v > 10000) return std::nullopt;
  return v;
}

}  // namespace

std::optional<LockClocksRequest> parse_lock_clocks(std::string_view text) {
  LockClocksRequest req;
  const size_t colon = text.find(':');
  auto sm = parse_mhz(text.substr(0, colon));
  if (!sm) return std::nullopt;
  req.sm_mhz = *sm;
  if (colon != std::string_view::npos) {
    auto mem = parse_mhz(text.substr(colon + 1));
    if (!mem) return std::nullopt;
    req.memory_mhz = *mem;
  }
  return req;
}

ClockLock::ClockLock(int cuda_ordinal, LockClocksRequest request) : request_(request) {
  NvmlLibrary& nvml = NvmlLibrary::get();
  if (!nvml.ok()) throw std::runtime_error("--lock-clocks: " + nvml.error());
  if (!nvml.DeviceSetGpuLockedClocks || !nvml.DeviceResetGpuLockedClocks)
    throw std::runtime_error("--lock-clocks: this NVML cannot lock GPU clocks");
  char bus[32] = {};
  if (cudaError_t e = cudaDeviceGetPCIBusId(bus, sizeof bus, cuda_ordinal); e != cudaSuccess) {
    (void)cudaGetLastError();
    throw std::runtime_error(fmt::format("--lock-clocks: CUDA device {}: {}", cuda_ordinal,
                                         cudaGetErrorName(e)));
  }
  bus_id_ = bus;
  nvmlDevice_t dev = nullptr;
  if (auto r = nvml.DeviceGetHandleByPciBusId(bus, &dev); r != NVML_SUCCESS)
    throw std::runtime_error(fmt::format("--lock-clocks: NVML has no device {}: {}", bus_id_,
                                         nvml.describe(r)));

  std::call_once(g_handlers_once, install_handlers);
  for (int i = 0; i < kMaxSlots && slot_ < 0; ++i) {
    nvmlDevice_t expected = nullptr;
    if (g_slots[i].device.compare_exchange_strong(expected, dev)) slot_ = i;
  }
  if (slot_ < 0) throw std::runtime_error("--lock-clocks: too many locked devices");

  // Registered before the call: if the process dies between lock and return, the
  // handlers still reset (a reset of unlocked clocks is harmless).
  if (auto r = nvml.DeviceSetGpuLockedClocks(dev, request.sm_mhz, request.sm_mhz);
      r != NVML_SUCCESS) {
    g_slots[slot_].device.store(nullptr);
    slot_ = -1;
    throw std::runtime_error(fmt::format("--lock-clocks: nvmlDeviceSetGpuLockedClocks({} MHz): {}",
                                         request.sm_mhz, nvml.describe(r)));
  }
  if (request.memory_mhz > 0) {
    g_slots[slot_].memory_locked.store(true);
    detail::nvmlReturn_t r = nvml.DeviceSetMemoryLockedClocks
                         ? nvml.DeviceSetMemoryLockedClocks(dev, request.memory_mhz,
                                                            request.memory_mhz)
                         : detail::NVML_ERROR_NOT_SUPPORTED;
    if (r != NVML_SUCCESS) {
      restore();
      throw std::runtime_error(fmt::format(
          "--lock-clocks: nvmlDeviceSetMemoryLockedClocks({} MHz): {}", request.memory_mhz,
          nvml.describe(r)));
    }
  }
}

ClockLock::~ClockLock() { restore(); }

void ClockLock::restore() noexcept {
  if (slot_ < 0) return;
  restore_slot(g_slots[slot_]);
  slot_ = -1;
}

namespace detail {
int locked_device_count() {
  int n = 0;
  for (const LockedSlot& s : g_slots) n += s.device.load() != nullptr;
  return n;
}
}  // namespace detail

json ClockLock::to_json() const {
  json j = json::object();
  j["pci_bus_id"] = bus_id_;
  j["sm_mhz"] = request_.sm_mhz;
  if (request_.memory_mhz) j["memory_mhz"] = request_.memory_mhz;
  j["active"] = slot_ >= 0;
  return j;
}

}  // namespace solbench::gpu
