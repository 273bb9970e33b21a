#include "harness/timing/device_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <utility>

#include "core/settings.h"
#include "harness/timing/gpu/device.h"

namespace solbench::harness {
namespace fs = std::filesystem;

std::string gpu_timing_lock_path(const Device& device) {
  if (!device.is_cuda()) return "";
  const int ordinal = device.ordinal();
  // By UUID: cuda:0 of one process may be cuda:1 of another (CUDA_VISIBLE_DEVICES).
  std::string key = "cuda-" + std::to_string(ordinal);
  try {
    const std::string uuid = gpu::identify_device(ordinal).uuid;
    if (!uuid.empty()) key = uuid;
  } catch (const std::exception&) {
    // No driver here: the worker will say so; the ordinal names the lock.
  }
  // One folder for the machine, not per cache folder: evaluations with different
  // caches (users, tests, agents) share the GPU all the same. Sticky and open to
  // all, like /tmp; a worker only needs to read its file.
  std::error_code ec;
  const fs::path dir = settings().lock_dir;
  if (!fs::exists(dir, ec) && fs::create_directories(dir, ec))
    fs::permissions(dir, fs::perms::all | fs::perms::sticky_bit, ec);
  const fs::path p = dir / (key + ".lock");
  if (!fs::exists(p, ec)) std::ofstream(p).flush();
  return fs::exists(p, ec) ? p.string() : "";
}

DeviceLock::DeviceLock(const std::string& path) {
  if (!path.empty()) fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
}

DeviceLock::~DeviceLock() {
  if (fd_ >= 0) ::close(fd_);  // closing drops a held flock
}

DeviceLock::DeviceLock(DeviceLock&& o) noexcept
    : fd_(std::exchange(o.fd_, -1)), held_(std::exchange(o.held_, false)) {}

DeviceLock& DeviceLock::operator=(DeviceLock&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(o.fd_, -1);
    held_ = std::exchange(o.held_, false);
  }
  return *this;
}

double DeviceLock::acquire() {
  if (fd_ < 0 || held_) return 0;
  const auto t0 = std::chrono::steady_clock::now();
  while (::flock(fd_, LOCK_EX) != 0 && errno == EINTR) {
  }
  held_ = true;
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

bool DeviceLock::try_acquire() {
  if (fd_ < 0 || held_) return true;
  int r;
  while ((r = ::flock(fd_, LOCK_EX | LOCK_NB)) != 0 && errno == EINTR) {
  }
  held_ = r == 0;
  return held_;
}

void DeviceLock::release() {
  if (fd_ < 0 || !held_) return;
  ::flock(fd_, LOCK_UN);
  held_ = false;
}

}  // namespace solbench::harness
