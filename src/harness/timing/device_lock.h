// One GPU, several evaluations: the timed loops take turns, and nothing else runs
// beside them.
//
// Each GPU has one lock (a flock on a file named after the device's UUID, in one
// folder for the machine). A timed loop holds it exclusively, so two evaluations on
// one GPU (`solbench run --jobs-per-gpu N`, agents evaluating in parallel) never time
// at the same moment. Every other step of a worker that runs kernels (a correctness
// round, a sampled call's check, making the timing inputs, writing a record) holds it
// shared, for that step only: such steps of different workers and evaluations overlap
// one another, but none runs beside a timed loop. What needs no GPU (worker starts,
// builds, torch.compile's code generation, reading records) holds nothing.
//
// Shared holders come and go all the time, and flock(2) would let a waiting exclusive
// request wait for ever behind them: every acquisition therefore passes a gate (a
// second file, `<lock>.gate`, held exclusively only while a request waits for the
// lock itself). A timed loop that waits holds the gate, so no new step starts before
// it; it waits at most for the steps already running.
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

// How a hold shares the GPU: Shared, an untimed step (others' untimed steps may run
// beside it); Exclusive, a timed loop (nothing else of anyone's).
enum class LockMode { Shared, Exclusive };

class DeviceLock {
 public:
  DeviceLock() = default;
  // Opens `path` and `path`.gate read-only (a flock needs no write access); "" or a
  // lock file that cannot be opened: a lock that never waits (is_open() false). A
  // missing gate only costs the fairness above.
  explicit DeviceLock(const std::string& path);
  ~DeviceLock();
  DeviceLock(const DeviceLock&) = delete;
  DeviceLock& operator=(const DeviceLock&) = delete;
  DeviceLock(DeviceLock&& o) noexcept;
  DeviceLock& operator=(DeviceLock&& o) noexcept;

  bool is_open() const { return fd_ >= 0; }
  // Blocks until this process holds the lock in `mode`; returns the milliseconds
  // waited. Holds nest: a shared request while any hold is held, or an exclusive one
  // while an exclusive hold is held, counts one hold more and waits for nothing; only
  // the release of the last hold frees the lock, so a caller may hold it across steps
  // that take and release it themselves. An exclusive request inside shared holds
  // lets the shared lock go first and waits (never waiting at the gate while holding
  // the lock: two such upgrades would wait for each other), and its release returns
  // to shared (flock converts in place; another holder may come between).
  double acquire(LockMode mode = LockMode::Exclusive);
  // Takes it exclusively only if nobody holds it now; true when held (always for a
  // lock that is not open). Nests as acquire() does; false while this process holds
  // it shared only (no upgrade without waiting). Shared: only if no timed loop holds
  // it or waits for it (the gate), beside any untimed steps.
  bool try_acquire(LockMode mode = LockMode::Exclusive);
  void release(LockMode mode = LockMode::Exclusive);
  bool held() const { return shared_ + exclusive_ > 0; }
  bool held_exclusive() const { return exclusive_ > 0; }

 private:
  // Brings the flock to what the holds ask for (none, shared, exclusive).
  void settle();
  int fd_ = -1;
  int gate_ = -1;
  int shared_ = 0, exclusive_ = 0;  // holds, by mode
  int applied_ = 0;                 // the flock this process has: 0, LOCK_SH or LOCK_EX
};

// Holds a DeviceLock from construction to destruction (acquire(mode), then release(mode)).
class DeviceLockHold {
 public:
  explicit DeviceLockHold(DeviceLock& lock, LockMode mode = LockMode::Exclusive)
      : lock_(lock), mode_(mode), waited_ms_(lock.acquire(mode)) {}
  ~DeviceLockHold() { lock_.release(mode_); }
  DeviceLockHold(const DeviceLockHold&) = delete;
  DeviceLockHold& operator=(const DeviceLockHold&) = delete;
  // What acquire() waited, in milliseconds.
  double waited_ms() const { return waited_ms_; }

 private:
  DeviceLock& lock_;
  LockMode mode_;
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
