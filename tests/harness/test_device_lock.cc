// The GPU timing lock (harness/timing/device_lock.h): one holder at a time across
// processes, a read-only open is enough, and a missing file never blocks.
#include <gtest/gtest.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "core/settings.h"
#include "harness/evaluate.h"
#include "harness/timing/device_lock.h"
#include "test_support.h"

namespace solbench::harness {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

TEST(DeviceLock, TwoProcessesNeverHoldItAtOnce) {
  testing::TempDir tmp;
  const fs::path file = tmp.path() / "gpu.lock";
  std::ofstream(file).flush();
  fs::permissions(file, fs::perms::owner_read);  // the worker's view: read-only
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    DeviceLock l(file.string());
    l.acquire();
    char c = 1;
    if (::write(ready[1], &c, 1) != 1) ::_exit(2);
    std::this_thread::sleep_for(std::chrono::milliseconds(400));  // a timed loop
    l.release();
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    ::_exit(0);
  }
  char c;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);  // the other process holds it now
  DeviceLock mine(file.string());
  ASSERT_TRUE(mine.is_open());
  const auto t0 = Clock::now();
  const double waited = mine.acquire();
  const double elapsed = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  // It waited for the other loop to end (about 400 ms), and says so.
  EXPECT_GT(elapsed, 250);
  EXPECT_NEAR(waited, elapsed, 50);
  mine.release();
  // While the other process holds it, a try is refused at once; once it is free,
  // taken.
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  DeviceLock other(file.string());
  ASSERT_TRUE(other.try_acquire());
  EXPECT_FALSE(mine.try_acquire());
  other.release();
  EXPECT_TRUE(mine.try_acquire());
  mine.release();
  int st = 0;
  ::waitpid(child, &st, 0);
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  ::close(ready[0]);
  ::close(ready[1]);
}

// Holds nest (a caller holding it across steps that take it themselves): only the
// last release frees the lock.
TEST(DeviceLock, HoldsNestAndOnlyTheOutermostReleaseFreesIt) {
  testing::TempDir tmp;
  const fs::path file = tmp.path() / "gpu.lock";
  std::ofstream(file).flush();
  DeviceLock mine(file.string()), other(file.string());  // two open files: two holders
  ASSERT_TRUE(mine.is_open());
  EXPECT_LT(mine.acquire(), 50);  // nobody held it
  EXPECT_TRUE(mine.held());
  EXPECT_EQ(mine.acquire(), 0);  // nested: no wait
  EXPECT_TRUE(mine.try_acquire());
  mine.release();
  mine.release();
  EXPECT_TRUE(mine.held());
  EXPECT_FALSE(other.try_acquire());  // still held by the outer hold
  mine.release();
  EXPECT_FALSE(mine.held());
  mine.release();  // one too many: nothing happens
  EXPECT_TRUE(other.try_acquire());
  EXPECT_FALSE(mine.try_acquire());
  other.release();
  // A scoped hold inside an outer one: the lock stays held after it.
  ASSERT_LT(mine.acquire(), 50);
  {
    const DeviceLockHold inner(mine);
    EXPECT_EQ(inner.waited_ms(), 0);
  }
  EXPECT_FALSE(other.try_acquire());
  mine.release();
  {
    const DeviceLockHold alone(mine);
    EXPECT_FALSE(other.try_acquire());
  }
  EXPECT_TRUE(other.try_acquire());
  other.release();
}

// Untimed steps share the GPU with one another, never with a timed loop; a timed
// loop inside a step upgrades, and its end goes back to the step's shared hold.
TEST(DeviceLock, SharedHoldsOverlapOneAnotherButNotAnExclusiveOne) {
  testing::TempDir tmp;
  const fs::path file = tmp.path() / "gpu.lock";
  std::ofstream(file).flush();
  std::ofstream(file.string() + ".gate").flush();
  DeviceLock a(file.string()), b(file.string()), timed(file.string());
  EXPECT_LT(a.acquire(LockMode::Shared), 50);
  EXPECT_LT(b.acquire(LockMode::Shared), 50);  // a second step beside the first
  EXPECT_TRUE(a.held() && b.held());
  EXPECT_FALSE(a.held_exclusive());
  EXPECT_FALSE(timed.try_acquire());  // no timed loop beside them
  EXPECT_FALSE(a.try_acquire());      // nor an upgrade without waiting
  {
    DeviceLock warm(file.string());  // a warm-up step may join them without waiting
    EXPECT_TRUE(warm.try_acquire(LockMode::Shared));
    EXPECT_TRUE(warm.held() && !warm.held_exclusive());
    EXPECT_FALSE(timed.try_acquire());
    warm.release(LockMode::Shared);
    EXPECT_FALSE(warm.held());
  }
  EXPECT_EQ(a.acquire(LockMode::Shared), 0);  // nested
  a.release(LockMode::Shared);
  b.release(LockMode::Shared);
  EXPECT_FALSE(timed.try_acquire());  // a's step still runs
  // a's timed loop inside its step: once b is gone it holds the GPU alone.
  EXPECT_LT(a.acquire(LockMode::Exclusive), 50);
  EXPECT_TRUE(a.held_exclusive());
  EXPECT_EQ(a.acquire(LockMode::Shared), 0);  // a step inside the loop: nothing more
  a.release(LockMode::Shared);
  {
    DeviceLock probe(file.string());
    EXPECT_FALSE(probe.try_acquire());
    EXPECT_FALSE(probe.try_acquire(LockMode::Shared));  // nor a step beside a timed loop
  }
  a.release(LockMode::Exclusive);
  // Back to the step's shared hold: another step may join, no timed loop.
  EXPECT_TRUE(a.held());
  EXPECT_FALSE(a.held_exclusive());
  EXPECT_LT(b.acquire(LockMode::Shared), 50);
  EXPECT_FALSE(timed.try_acquire());
  b.release(LockMode::Shared);
  a.release(LockMode::Shared);
  EXPECT_FALSE(a.held());
  EXPECT_TRUE(timed.try_acquire());
  timed.release();
}

// flock alone lets shared holders that come and go keep a waiting exclusive request
// out for ever; the gate makes new steps wait behind it.
TEST(DeviceLock, AWaitingTimedLoopGoesBeforeStepsThatComeAfterIt) {
  testing::TempDir tmp;
  const fs::path file = tmp.path() / "gpu.lock";
  std::ofstream(file).flush();
  std::ofstream(file.string() + ".gate").flush();
  DeviceLock step(file.string());
  ASSERT_LT(step.acquire(LockMode::Shared), 50);
  int ready[2], done[2];
  ASSERT_EQ(::pipe(ready), 0);
  ASSERT_EQ(::pipe(done), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {  // a timed loop of another process
    DeviceLock l(file.string());
    char c = 1;
    if (::write(ready[1], &c, 1) != 1) ::_exit(2);
    l.acquire(LockMode::Exclusive);
    const auto t = Clock::now().time_since_epoch().count();
    if (::write(done[1], &t, sizeof t) != sizeof t) ::_exit(2);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    l.release(LockMode::Exclusive);
    ::_exit(0);
  }
  char c;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // it waits at the lock now
  {
    DeviceLock warm(file.string());  // a warm-up step does not try before it either
    EXPECT_FALSE(warm.try_acquire(LockMode::Shared));
  }
  // A second step that starts now must wait for the timed loop, not slip in beside
  // the first; without the gate it would be granted at once.
  DeviceLock later(file.string());
  std::thread t([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    step.release(LockMode::Shared);  // the first step ends
  });
  const double waited = later.acquire(LockMode::Shared);
  const auto got = Clock::now().time_since_epoch().count();
  later.release(LockMode::Shared);
  t.join();
  decltype(Clock::now().time_since_epoch().count()) timed_at = 0;
  ASSERT_EQ(::read(done[0], &timed_at, sizeof timed_at), static_cast<ssize_t>(sizeof timed_at));
  EXPECT_GT(got, timed_at);  // after the timed loop began
  EXPECT_GT(waited, 350);    // the first step's 200 ms and the loop's 300 ms
  int st = 0;
  ::waitpid(child, &st, 0);
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  for (int fd : {ready[0], ready[1], done[0], done[1]}) ::close(fd);
}

TEST(DeviceLock, NoFileMeansNoWaiting) {
  DeviceLock none("");
  EXPECT_FALSE(none.is_open());
  EXPECT_EQ(none.acquire(), 0);
  DeviceLock missing("/nonexistent/solbench.lock");
  EXPECT_FALSE(missing.is_open());
  EXPECT_EQ(missing.acquire(), 0);
  EXPECT_TRUE(missing.try_acquire());
  EXPECT_EQ(gpu_timing_lock_path(Device::cpu()), "");
}

TEST(GpuClaim, EachClaimGoesToTheGpuWithFewestInFlightAndReleasesOnDestruction) {
  testing::TempDir tmp;
  Settings s = settings();
  s.lock_dir = tmp.path() / "locks";
  ScopedSettings scoped(s);
  const std::vector<std::string> gpus = {"GPU-aaaa", "GPU-bbbb"};
  GpuClaim a = GpuClaim::least_busy(gpus);
  EXPECT_EQ(a.ordinal(), 0);  // all free: the lowest ordinal
  GpuClaim b = GpuClaim::least_busy(gpus);
  EXPECT_EQ(b.ordinal(), 1);
  GpuClaim c = GpuClaim::least_busy(gpus);
  EXPECT_EQ(c.ordinal(), 0);
  {
    GpuClaim d = GpuClaim::least_busy(gpus);
    EXPECT_EQ(d.ordinal(), 1);
  }
  // d is gone: GPU 1 has one claim, GPU 0 two.
  GpuClaim e = GpuClaim::least_busy(gpus);
  EXPECT_EQ(e.ordinal(), 1);
  // Claims of another process count as much as this one's.
  a = GpuClaim();
  c = GpuClaim();
  int ready[2], done[2];
  ASSERT_EQ(::pipe(ready), 0);
  ASSERT_EQ(::pipe(done), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    std::vector<GpuClaim> held;
    for (int i = 0; i < 3; ++i) held.push_back(GpuClaim::least_busy(gpus));
    char x = 1;
    if (::write(ready[1], &x, 1) != 1 || ::read(done[0], &x, 1) != 1) ::_exit(2);
    ::_exit(0);
  }
  char x;
  ASSERT_EQ(::read(ready[0], &x, 1), 1);
  // GPU 1 holds b and e (here), GPU 0 none: the child's three all went to GPU 0
  // (0 < 2, 1 < 2, then 2 = 2 and the lowest ordinal), 3 against 2.
  GpuClaim f = GpuClaim::least_busy(gpus);
  EXPECT_EQ(f.ordinal(), 1);
  ASSERT_EQ(::write(done[1], &x, 1), 1);
  int st = 0;
  ::waitpid(child, &st, 0);
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  // The child's claims died with it: GPU 0 has none, GPU 1 b, e and f.
  GpuClaim g = GpuClaim::least_busy(gpus);
  EXPECT_EQ(g.ordinal(), 0);
  for (int fd : {ready[0], ready[1], done[0], done[1]}) ::close(fd);
  EXPECT_THROW(GpuClaim::least_busy({}), std::runtime_error);
}

TEST(WorkerGpu, AGpuWorkerSeesOnlyItsGpuAsCudaZeroAndACpuWorkerNone) {
  const WorkerGpu cpu = worker_gpu(Device::cpu());
  EXPECT_EQ(cpu.visible, "");
  EXPECT_TRUE(cpu.device.is_cpu());
  // Without NVML (this test's machine may have none) the GPU is named by
  // CUDA_VISIBLE_DEVICES's entry for it, else by its ordinal.
  Settings s = settings();
  s.cuda_visible_devices = "3, 5";
  ScopedSettings scoped(s);
  const WorkerGpu one = worker_gpu(Device::cuda(1));
  EXPECT_EQ(one.device, Device::cuda(0));
  if (one.visible.rfind("GPU-", 0) != 0 && one.visible.rfind("MIG-", 0) != 0) {
    EXPECT_EQ(one.visible, "5");
  }
  Settings unset = settings();
  unset.cuda_visible_devices.reset();
  ScopedSettings scoped2(unset);
  const WorkerGpu two = worker_gpu(Device::cuda(2));
  EXPECT_EQ(two.device, Device::cuda(0));
  if (two.visible.rfind("GPU-", 0) != 0) {
    EXPECT_EQ(two.visible, "2");
  }
}

}  // namespace
}  // namespace solbench::harness
