#include "harness/timing/memory_shares.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>
#include <utility>

#include "harness/protocol.h"  // kValuesFootprint

namespace solbench::harness {
namespace fs = std::filesystem;

namespace {

std::string unit_path(const std::string& prefix, size_t k) { return prefix + "-" + std::to_string(k); }
std::string queue_path(const std::string& prefix) { return prefix + "-queue"; }

bool flock_retry(int fd, int op) {
  int r;
  while ((r = ::flock(fd, op)) != 0 && errno == EINTR) {
  }
  return r == 0;
}

// How long a request in the queue sleeps between looks at the shares: shares come
// back after seconds of GPU work, so a few milliseconds cost nothing.
constexpr auto kPoll = std::chrono::milliseconds(5);

}  // namespace

size_t memory_share_count(uint64_t gpu_memory_bytes) {
  return static_cast<size_t>(double(gpu_memory_bytes) * kSharedMemoryFraction /
                             double(kMemoryShareBytes));
}

size_t memory_shares_for(uint64_t bytes) {
  const uint64_t need = bytes * kValuesFootprint;
  return static_cast<size_t>(std::max<uint64_t>(1, (need + kMemoryShareBytes - 1) / kMemoryShareBytes));
}

size_t memory_shares_while_compiling(uint64_t input_bytes) {
  return static_cast<size_t>((input_bytes + kCompileBytes + kMemoryShareBytes - 1) / kMemoryShareBytes);
}

std::string prepare_memory_shares(const std::string& timing_lock, size_t units) {
  if (timing_lock.empty() || units == 0) return "";
  const std::string prefix = timing_lock + ".mem";
  std::error_code ec;
  for (size_t k = 0; k <= units; ++k) {
    const std::string p = k == units ? queue_path(prefix) : unit_path(prefix, k);
    if (!fs::exists(p, ec)) std::ofstream(p).flush();
    if (!fs::exists(p, ec)) return "";
  }
  return prefix;
}

MemoryShares::MemoryShares(const std::string& prefix, size_t units) {
  if (prefix.empty() || units == 0) return;
  queue_ = ::open(queue_path(prefix).c_str(), O_RDONLY | O_CLOEXEC);
  if (queue_ < 0) return;
  for (size_t k = 0; k < units; ++k) {
    const int fd = ::open(unit_path(prefix, k).c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) break;  // the shares made so far
    units_.push_back(fd);
  }
}

MemoryShares::~MemoryShares() {
  for (int fd : units_) ::close(fd);  // closing drops a held flock
  if (queue_ >= 0) ::close(queue_);
}

MemoryShares::MemoryShares(MemoryShares&& o) noexcept
    : units_(std::move(o.units_)), held_(std::move(o.held_)), queue_(std::exchange(o.queue_, -1)) {
  o.units_.clear();
  o.held_.clear();
}

MemoryShares& MemoryShares::operator=(MemoryShares&& o) noexcept {
  if (this != &o) {
    for (int fd : units_) ::close(fd);
    if (queue_ >= 0) ::close(queue_);
    units_ = std::move(o.units_);
    held_ = std::move(o.held_);
    queue_ = std::exchange(o.queue_, -1);
    o.units_.clear();
    o.held_.clear();
  }
  return *this;
}

double MemoryShares::acquire(size_t n) {
  n = std::min(n, units_.size());
  if (!is_open() || held_.size() >= n) return 0;
  const auto t0 = std::chrono::steady_clock::now();
  flock_retry(queue_, LOCK_EX);  // first in the queue: the next shares given back are ours
  std::vector<char> mine(units_.size(), 0);
  for (size_t k : held_) mine[k] = 1;
  for (;;) {
    for (size_t k = 0; k < units_.size() && held_.size() < n; ++k)
      if (!mine[k] && flock_retry(units_[k], LOCK_EX | LOCK_NB)) {
        mine[k] = 1;
        held_.push_back(k);
      }
    if (held_.size() >= n) break;
    std::this_thread::sleep_for(kPoll);
  }
  ::flock(queue_, LOCK_UN);
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

void MemoryShares::release() {
  for (size_t k : held_) ::flock(units_[k], LOCK_UN);
  held_.clear();
}

}  // namespace solbench::harness
