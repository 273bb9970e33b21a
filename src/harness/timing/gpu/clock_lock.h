// ClockLock: `--lock-clocks MHZ` for users who have the rights. Locks the SM clock
// (and optionally the memory clock) of one GPU through NVML and restores the
// driver's defaults on every exit path: the destructor, exit() (atexit), and the
// fatal and termination signals (the handler restores, then lets the signal do
// what it would have done). SIGKILL and _exit() cannot be caught: after those,
// `nvidia-smi -rgc` restores the clocks.
//
// Nothing in solbench constructs one unless the user passed --lock-clocks; tests
// never do. Locking needs root (or the driver's permission for the user).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "core/json.h"

namespace solbench::gpu {

struct LockClocksRequest {
  unsigned sm_mhz = 0;
  unsigned memory_mhz = 0;  // 0: leave the memory clock alone
};

// Parses "1410" or "1410:1593" (SM[:memory] MHz); nullopt on anything else.
std::optional<LockClocksRequest> parse_lock_clocks(std::string_view text);

class ClockLock {
 public:
  // Throws std::runtime_error (with NVML's reason) when NVML is missing, the
  // device is not found or the driver refuses (no permission, not supported).
  ClockLock(int cuda_ordinal, LockClocksRequest request);
  ~ClockLock();

  // Not copyable or movable: exactly one owner restores the clocks, once.
  ClockLock(const ClockLock&) = delete;
  ClockLock& operator=(const ClockLock&) = delete;
  ClockLock(ClockLock&&) = delete;
  ClockLock& operator=(ClockLock&&) = delete;

  // Restores now (idempotent); the destructor calls it.
  void restore() noexcept;
  json to_json() const;

 private:
  int slot_ = -1;  // index in the process-wide table the exit handlers walk
  std::string bus_id_;
  LockClocksRequest request_;
};

namespace detail {
// Number of devices currently locked by this process (the exit handlers' table);
// for tests of the restore bookkeeping.
int locked_device_count();
}  // namespace detail

}  // namespace solbench::gpu
