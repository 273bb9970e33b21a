#include "harness/timing/device_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <utility>

#include "core/settings.h"
#include "harness/timing/gpu/device.h"

namespace solbench::harness {
namespace fs = std::filesystem;

namespace {

// The machine's lock folder: one for every cache folder, so that evaluations
// with different caches (users, tests, agents) share the GPU all the same.
// Sticky and open to all, like /tmp; a worker only needs to read its files.
fs::path lock_dir() {
  std::error_code ec;
  const fs::path dir = settings().lock_dir;
  if (!fs::exists(dir, ec) && fs::create_directories(dir, ec))
    fs::permissions(dir, fs::perms::all | fs::perms::sticky_bit, ec);
  return dir;
}

// A GPU's name in lock files: its UUID, the ordinal where it cannot be read.
// (No driver here: the worker will say so; the ordinal names the lock.)
std::string gpu_key(int ordinal) {
  const std::string uuid = gpu::device_uuid(ordinal);
  return uuid.empty() ? "cuda-" + std::to_string(ordinal) : uuid;
}

// The gate beside a lock file (device_lock.h).
std::string gate_path(const std::string& lock) { return lock + ".gate"; }

int open_lock_file(const fs::path& p, bool create) {
  return ::open(p.c_str(), O_RDONLY | O_CLOEXEC | (create ? O_CREAT : 0), 0644);
}

// flock(2) retried when a signal interrupts it; true once held (with LOCK_NB: false
// when another holder has it).
bool lock_fd(int fd, int op) {
  int r;
  while ((r = ::flock(fd, op)) != 0 && errno == EINTR) {
  }
  return r == 0;
}

}  // namespace

std::string gpu_timing_lock_path(const Device& device) {
  if (!device.is_cuda()) return "";
  // By UUID: cuda:0 of one process may be cuda:1 of another (CUDA_VISIBLE_DEVICES).
  const fs::path p = lock_dir() / (gpu_key(device.ordinal()) + ".lock");
  std::error_code ec;
  if (!fs::exists(p, ec)) std::ofstream(p).flush();
  if (const fs::path g = gate_path(p.string()); !fs::exists(g, ec)) std::ofstream(g).flush();
  return fs::exists(p, ec) ? p.string() : "";
}

GpuClaim GpuClaim::least_busy(const std::vector<std::string>& keys) {
  if (keys.empty()) throw std::runtime_error("cuda:any: no CUDA device here");
  const fs::path dir = lock_dir();
  const auto slot = [&](size_t gpu, int k) {
    return dir / (keys[gpu] + ".eval-" + std::to_string(k));
  };
  // One chooser at a time (a blocking lock, held for milliseconds).
  const int chooser = open_lock_file(dir / "gpu-claim.lock", true);
  if (chooser >= 0) lock_fd(chooser, LOCK_EX);
  // Slot files are made in order, so the first missing one ends a GPU's list.
  size_t best = 0;
  int fewest = -1;
  for (size_t g = 0; g < keys.size(); ++g) {
    int busy = 0;
    for (int k = 0;; ++k) {
      const int fd = open_lock_file(slot(g, k), false);
      if (fd < 0) break;
      if (!lock_fd(fd, LOCK_SH | LOCK_NB)) ++busy;  // an exclusive holder: a claim in flight
      ::close(fd);
    }
    if (fewest < 0 || busy < fewest) {
      fewest = busy;
      best = g;
    }
  }
  GpuClaim c;
  for (int k = 0; k < 4096 && c.fd_ < 0; ++k) {
    const int fd = open_lock_file(slot(best, k), true);
    if (fd < 0) break;
    if (lock_fd(fd, LOCK_EX | LOCK_NB))
      c.fd_ = fd;
    else
      ::close(fd);
  }
  if (chooser >= 0) ::close(chooser);
  if (c.fd_ < 0)
    throw std::runtime_error("cuda:any: cannot make a slot file in " + dir.string() +
                             " (SOLBENCH_LOCK_DIR)");
  c.ordinal_ = static_cast<int>(best);
  return c;
}

GpuClaim GpuClaim::least_busy_gpu() {
  const gpu::DeviceCount n = gpu::device_count();
  if (n.count == 0) throw std::runtime_error("cuda:any: no CUDA device here (" + n.reason + ")");
  std::vector<std::string> keys;
  for (int i = 0; i < n.count; ++i) keys.push_back(gpu_key(i));
  return least_busy(keys);
}

GpuClaim::~GpuClaim() {
  if (fd_ >= 0) ::close(fd_);
}

GpuClaim::GpuClaim(GpuClaim&& o) noexcept
    : ordinal_(std::exchange(o.ordinal_, -1)), fd_(std::exchange(o.fd_, -1)) {}

GpuClaim& GpuClaim::operator=(GpuClaim&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    ordinal_ = std::exchange(o.ordinal_, -1);
    fd_ = std::exchange(o.fd_, -1);
  }
  return *this;
}

DeviceLock::DeviceLock(const std::string& path) {
  if (path.empty()) return;
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ >= 0) gate_ = ::open(gate_path(path).c_str(), O_RDONLY | O_CLOEXEC);
}

DeviceLock::~DeviceLock() {
  if (fd_ >= 0) ::close(fd_);  // closing drops a held flock
  if (gate_ >= 0) ::close(gate_);
}

DeviceLock::DeviceLock(DeviceLock&& o) noexcept
    : fd_(std::exchange(o.fd_, -1)),
      gate_(std::exchange(o.gate_, -1)),
      shared_(std::exchange(o.shared_, 0)),
      exclusive_(std::exchange(o.exclusive_, 0)),
      applied_(std::exchange(o.applied_, 0)) {}

DeviceLock& DeviceLock::operator=(DeviceLock&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    if (gate_ >= 0) ::close(gate_);
    fd_ = std::exchange(o.fd_, -1);
    gate_ = std::exchange(o.gate_, -1);
    shared_ = std::exchange(o.shared_, 0);
    exclusive_ = std::exchange(o.exclusive_, 0);
    applied_ = std::exchange(o.applied_, 0);
  }
  return *this;
}

double DeviceLock::acquire(LockMode mode) {
  if (fd_ < 0) return 0;
  const bool exclusive = mode == LockMode::Exclusive;
  if (exclusive ? exclusive_ > 0 : held()) {
    ++(exclusive ? exclusive_ : shared_);
    return 0;
  }
  const auto t0 = std::chrono::steady_clock::now();
  if (applied_ != 0) {  // shared, upgrading: let it go before the gate (see the header)
    ::flock(fd_, LOCK_UN);
    applied_ = 0;
  }
  const int op = exclusive ? LOCK_EX : LOCK_SH;
  if (gate_ >= 0) lock_fd(gate_, LOCK_EX);
  lock_fd(fd_, op);
  if (gate_ >= 0) ::flock(gate_, LOCK_UN);
  applied_ = op;
  ++(exclusive ? exclusive_ : shared_);
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

bool DeviceLock::try_acquire(LockMode mode) {
  if (fd_ < 0) return true;
  if (exclusive_ > 0) {
    ++exclusive_;
    return true;
  }
  if (mode == LockMode::Shared) {
    if (shared_ > 0) {
      ++shared_;
      return true;
    }
    // A waiting timed loop holds the gate: no new step goes before it.
    if (gate_ >= 0 && !lock_fd(gate_, LOCK_EX | LOCK_NB)) return false;
    const bool got = lock_fd(fd_, LOCK_SH | LOCK_NB);
    if (gate_ >= 0) ::flock(gate_, LOCK_UN);
    if (!got) return false;
    applied_ = LOCK_SH;
    shared_ = 1;
    return true;
  }
  if (shared_ > 0 || !lock_fd(fd_, LOCK_EX | LOCK_NB)) return false;
  applied_ = LOCK_EX;
  exclusive_ = 1;
  return true;
}

void DeviceLock::release(LockMode mode) {
  int& holds = mode == LockMode::Exclusive ? exclusive_ : shared_;
  if (fd_ < 0 || holds == 0) return;
  --holds;
  settle();
}

void DeviceLock::settle() {
  const int want = exclusive_ > 0 ? LOCK_EX : shared_ > 0 ? LOCK_SH : 0;
  if (want == applied_) return;
  if (want == 0)
    ::flock(fd_, LOCK_UN);
  else
    lock_fd(fd_, want);  // only ever exclusive -> shared here
  applied_ = want;
}

}  // namespace solbench::harness
