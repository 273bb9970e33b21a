// One GPU, several evaluations: the timed loops take turns.
//
// Every worker timing on a GPU holds that GPU's lock (an exclusive flock on a file
// named after the device's UUID, in one folder for the machine) for the length of each timed
// loop, so two evaluations on one GPU (`solbench run --jobs-per-gpu N`, agents
// evaluating in parallel) never time at the same moment. Everything else overlaps:
// worker starts, builds, compilation (torch.compile in the baseline), correctness
// rounds. What the lock does not exclude is another evaluation's untimed GPU work
// running during a timed loop (its correctness rounds, an autotuner); with one
// evaluation per GPU (the default) there is none.
#pragma once

#include <string>
#include <vector>

#include "core/device.h"

namespace solbench::harness {

// The lock file for `device` (a GPU; "" for the CPU), created when missing:
// $SOLBENCH_LOCK_DIR (default /tmp/solbench-locks, shared by every user of the
// machine)/<GPU UUID>.lock (by ordinal where the UUID cannot be read).
// The parent names it in the plan; the sandboxed worker only reads it.
std::string gpu_timing_lock_path(const Device& device);

class DeviceLock {
 public:
  DeviceLock() = default;
  // Opens `path` read-only (a flock needs no write access); "" or a file that
  // cannot be opened: a lock that never waits (is_open() false).
  explicit DeviceLock(const std::string& path);
  ~DeviceLock();
  DeviceLock(const DeviceLock&) = delete;
  DeviceLock& operator=(const DeviceLock&) = delete;
  DeviceLock(DeviceLock&& o) noexcept;
  DeviceLock& operator=(DeviceLock&& o) noexcept;

  bool is_open() const { return fd_ >= 0; }
  // Blocks until this process holds the lock; returns the milliseconds waited.
  // Holds nest: acquiring a lock this object holds already counts one hold more
  // (and waits for nothing), and only the release of the outermost hold frees it,
  // so that a caller may hold it across steps that take and release it themselves
  // (the baseline's workload around its timed loop, session_roles.cc).
  double acquire();
  // Takes the lock only if nobody holds it now; true when held (always for a lock
  // that is not open). Nests as acquire() does.
  bool try_acquire();
  void release();
  bool held() const { return holds_ > 0; }
  // The open file's descriptor (-1: not open), for code in this process that must
  // take the lock while this object does not hold it (baseline.precompile): a flock
  // through the same descriptor is the same lock, never a second one waiting on it.
  int fd() const { return fd_; }

 private:
  int fd_ = -1;
  int holds_ = 0;
};

// Holds a DeviceLock from construction to destruction (acquire(), then release()).
class DeviceLockHold {
 public:
  explicit DeviceLockHold(DeviceLock& lock) : lock_(lock), waited_ms_(lock.acquire()) {}
  ~DeviceLockHold() { lock_.release(); }
  DeviceLockHold(const DeviceLockHold&) = delete;
  DeviceLockHold& operator=(const DeviceLockHold&) = delete;
  // What acquire() waited, in milliseconds.
  double waited_ms() const { return waited_ms_; }

 private:
  DeviceLock& lock_;
  double waited_ms_;
};

// `--device cuda:any`: the GPU with the fewest evaluations in flight on the
// machine, and one of its slots held until this object goes. Every claim holds
// an flock on a slot file (<lock dir>/<key>.eval-<k>, the first slot free) for
// its length, so claims from other threads, processes and users count; a claim
// file's lock dies with its process. Choosing and claiming are one step under
// <lock dir>/gpu-claim.lock, so two claims at once do not pick the same GPU.
class GpuClaim {
 public:
  GpuClaim() = default;
  // `keys` name the GPUs by ordinal (their UUIDs); picks the one with the fewest
  // held slots, the lowest ordinal among equals. Throws std::runtime_error for
  // no keys or a lock folder where no slot file can be made.
  static GpuClaim least_busy(const std::vector<std::string>& keys);
  // The same over this machine's CUDA devices; throws where there are none.
  static GpuClaim least_busy_gpu();
  ~GpuClaim();
  GpuClaim(const GpuClaim&) = delete;
  GpuClaim& operator=(const GpuClaim&) = delete;
  GpuClaim(GpuClaim&& o) noexcept;
  GpuClaim& operator=(GpuClaim&& o) noexcept;

  int ordinal() const { return ordinal_; }

 private:
  int ordinal_ = -1;
  int fd_ = -1;
};

}  // namespace solbench::harness
