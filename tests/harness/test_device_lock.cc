// The GPU timing lock (harness/timing/device_lock.h): one holder at a time across
// processes, a read-only open is enough, and a missing file never blocks.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

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

}  // namespace
}  // namespace solbench::harness
