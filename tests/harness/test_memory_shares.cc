// Shares of a GPU's memory held by T_b's workers for their GPU work
// (harness/timing/memory_shares.h): files beside the timing lock, held by flock, so
// other processes' holds count and a dead holder's shares come back.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "harness/timing/memory_shares.h"
#include "test_support.h"

namespace solbench::harness {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

std::string make_shares(const testing::TempDir& tmp, size_t units) {
  const fs::path lock = tmp.path() / "gpu.lock";
  std::ofstream(lock).flush();
  return prepare_memory_shares(lock.string(), units);
}

TEST(MemoryShares, PreparedBesideTheLockAndSizedByTheFootprint) {
  testing::TempDir tmp;
  const std::string prefix = make_shares(tmp, 4);
  ASSERT_EQ(prefix, (tmp.path() / "gpu.lock.mem").string());
  for (const char* f : {"gpu.lock.mem-0", "gpu.lock.mem-3", "gpu.lock.mem-queue"})
    EXPECT_TRUE(fs::exists(tmp.path() / f)) << f;
  EXPECT_FALSE(fs::exists(tmp.path() / "gpu.lock.mem-4"));
  EXPECT_EQ(prepare_memory_shares("", 4), "");  // no lock (the CPU): no shares
  EXPECT_EQ(prepare_memory_shares((tmp.path() / "gpu.lock").string(), 0), "");
  // 60 % of an 80 GB GPU in GiB; eight times a workload's bytes, whole
  // shares, at least one (the public L2/056's 3379 MiB workload: its 27 GB peak).
  EXPECT_EQ(memory_share_count(80'000'000'000ull), 44u);
  EXPECT_EQ(memory_share_count(0), 0u);
  EXPECT_EQ(memory_shares_for(0), 1u);
  EXPECT_EQ(memory_shares_for(128ull << 20), 1u);
  EXPECT_EQ(memory_shares_for(129ull << 20), 2u);
  EXPECT_EQ(memory_shares_for(3379ull << 20), 27u);
  // While compiling: its inputs and a context (a CUDA context, cuBLAS's, Inductor's).
  EXPECT_EQ(memory_shares_while_compiling(0), 1u);
  EXPECT_EQ(memory_shares_while_compiling(1), 2u);
  EXPECT_EQ(memory_shares_while_compiling(3379ull << 20), 5u);
  // Shares that cannot be opened never wait.
  MemoryShares none("", 4);
  EXPECT_FALSE(none.is_open());
  EXPECT_EQ(none.acquire(3), 0.0);
  EXPECT_EQ(none.held(), 0u);
  MemoryShares missing((tmp.path() / "nothing.mem").string(), 4);
  EXPECT_FALSE(missing.is_open());
}

// Another process's holds count, and its shares come back when it dies.
TEST(MemoryShares, AnotherProcesssSharesAreWaitedForAndComeBackWhenItDies) {
  testing::TempDir tmp;
  const std::string prefix = make_shares(tmp, 4);
  for (size_t k = 0; k < 4; ++k)  // the worker's view: read-only
    fs::permissions(prefix + "-" + std::to_string(k), fs::perms::owner_read);
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    MemoryShares s(prefix, 4);
    s.acquire(3);
    char c = s.held() == 3 ? 1 : 0;
    if (::write(ready[1], &c, 1) != 1) ::_exit(2);
    std::this_thread::sleep_for(400ms);  // a workload's GPU work
    ::_exit(0);                           // dies holding them
  }
  char c = 0;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  ASSERT_EQ(c, 1);
  MemoryShares mine(prefix, 4);
  ASSERT_TRUE(mine.is_open());
  EXPECT_EQ(mine.units(), 4u);
  // One is free: taken at once.
  EXPECT_LT(mine.acquire(1), 100.0);
  EXPECT_EQ(mine.held(), 1u);
  // Two more: only once the other process is gone.
  const auto t0 = std::chrono::steady_clock::now();
  const double waited = mine.acquire(3);
  const double elapsed =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(mine.held(), 3u);
  EXPECT_GT(elapsed, 250);
  EXPECT_NEAR(waited, elapsed, 50);
  // More than there are: all of them.
  mine.acquire(10);
  EXPECT_EQ(mine.held(), 4u);
  mine.release();
  EXPECT_EQ(mine.held(), 0u);
  int st = 0;
  ::waitpid(child, &st, 0);
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  ::close(ready[0]);
  ::close(ready[1]);
}

// The first in the queue gets the next shares given back: a request asked after it
// waits behind it even where shares are free, so a large request is not passed over
// by small ones that come after it.
TEST(MemoryShares, ARequestWaitsBehindTheOneInTheQueue) {
  testing::TempDir tmp;
  const std::string prefix = make_shares(tmp, 4);
  // A request in the queue, as another process's (its flock on the queue file).
  const int queue = ::open((prefix + "-queue").c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(queue, 0);
  ASSERT_EQ(::flock(queue, LOCK_EX), 0);
  MemoryShares small(prefix, 4);
  std::atomic<bool> got{false};
  std::thread t([&] {
    small.acquire(1);
    got = true;
  });
  std::this_thread::sleep_for(200ms);
  EXPECT_FALSE(got.load());  // four shares free, and still behind the one in the queue
  ::flock(queue, LOCK_UN);
  t.join();
  EXPECT_TRUE(got.load());
  EXPECT_EQ(small.held(), 1u);
  ::close(queue);

  // In turn: the large request waits for three shares to come back, holding the free
  // one; the small one asked after it gets one only once the large one has had all four.
  MemoryShares first(prefix, 4), large(prefix, 4);
  small.release();
  first.acquire(3);
  std::atomic<int> order{0}, large_at{0}, small_at{0};
  std::thread tl([&] {
    large.acquire(4);
    large_at = ++order;
    std::this_thread::sleep_for(100ms);
    large.release();
  });
  std::this_thread::sleep_for(100ms);
  std::thread ts([&] {
    small.acquire(1);
    small_at = ++order;
    small.release();
  });
  std::this_thread::sleep_for(150ms);
  EXPECT_EQ(order.load(), 0);
  first.release();
  tl.join();
  ts.join();
  EXPECT_EQ(large_at.load(), 1);
  EXPECT_EQ(small_at.load(), 2);
}

}  // namespace
}  // namespace solbench::harness
