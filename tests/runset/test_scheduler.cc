// The slot scheduler with a fake task function: every task runs exactly once,
// a slot never runs two tasks at a time, the slots run in parallel and share
// the work dynamically, a stop request starts nothing more, and an exception
// stops the dispatch and comes back to the caller.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "runset/scheduler.h"

namespace solbench::runset {
namespace {

using Clock = std::chrono::steady_clock;

struct Span {
  size_t task, slot;
  Clock::time_point begin, end;
};

struct Recorder {
  std::mutex m;
  std::vector<Span> spans;
  std::atomic<int> running{0};
  std::atomic<int> max_running{0};
  void run(size_t task, size_t slot, std::chrono::milliseconds d) {
    const int now = ++running;
    int prev = max_running.load();
    while (now > prev && !max_running.compare_exchange_weak(prev, now)) {
    }
    const auto b = Clock::now();
    std::this_thread::sleep_for(d);
    const auto e = Clock::now();
    --running;
    std::lock_guard lock(m);
    spans.push_back({task, slot, b, e});
  }
};

TEST(Scheduler, EveryTaskOnceNoOverlapPerSlotThreeInParallel) {
  Recorder r;
  const size_t n = 15;
  // Uneven lengths: slots must take tasks as they free up.
  auto d = [](size_t task) { return std::chrono::milliseconds(task % 3 == 0 ? 60 : 20); };
  const auto t0 = Clock::now();
  const ScheduleResult res =
      run_on_slots(3, n, [&](size_t task, size_t slot) { r.run(task, slot, d(task)); });
  const double wall = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  EXPECT_EQ(res.started, n);
  EXPECT_FALSE(res.stopped);

  ASSERT_EQ(r.spans.size(), n);
  std::vector<int> seen(n, 0);
  for (const Span& s : r.spans) {
    ASSERT_LT(s.task, n);
    ASSERT_LT(s.slot, 3u);
    ++seen[s.task];
  }
  for (size_t k = 0; k < n; ++k) EXPECT_EQ(seen[k], 1) << "task " << k;

  // No two tasks of one slot overlap in time.
  for (const Span& a : r.spans)
    for (const Span& b : r.spans) {
      if (&a == &b || a.slot != b.slot) continue;
      EXPECT_TRUE(a.end <= b.begin || b.end <= a.begin)
          << "tasks " << a.task << " and " << b.task << " overlap on slot " << a.slot;
    }

  // All three slots worked, at once, and the run took well under the serial time.
  std::vector<int> per_slot(3, 0);
  for (const Span& s : r.spans) ++per_slot[s.slot];
  for (int c : per_slot) EXPECT_GT(c, 0);
  EXPECT_EQ(r.max_running.load(), 3);
  double serial = 0;
  for (size_t k = 0; k < n; ++k) serial += static_cast<double>(d(k).count());
  EXPECT_LT(wall, serial * 0.7) << "wall " << wall << " ms, serial " << serial << " ms";
}

TEST(Scheduler, TasksStartInOrder) {
  std::mutex m;
  std::vector<size_t> order;
  run_on_slots(2, 8, [&](size_t task, size_t) {
    {
      std::lock_guard lock(m);
      order.push_back(task);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  });
  ASSERT_EQ(order.size(), 8u);
  // Handed out in order: task k starts no later than one slot-round after k-1.
  for (size_t k = 0; k < order.size(); ++k) EXPECT_LE(order[k], k + 1) << k;
}

TEST(Scheduler, MoreSlotsThanTasks) {
  Recorder r;
  EXPECT_EQ(run_on_slots(8, 2, [&](size_t t, size_t s) { r.run(t, s, std::chrono::milliseconds(5)); })
                .started,
            2u);
  EXPECT_EQ(r.spans.size(), 2u);
  EXPECT_EQ(run_on_slots(3, 0, [&](size_t, size_t) { FAIL(); }).started, 0u);
}

TEST(Scheduler, StopStartsNothingMore) {
  std::atomic<bool> stop{false};
  std::atomic<int> ran{0};
  const ScheduleResult res = run_on_slots(
      2, 20,
      [&](size_t task, size_t) {
        ++ran;
        if (task == 3) stop = true;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      },
      &stop);
  EXPECT_TRUE(res.stopped);
  EXPECT_EQ(static_cast<size_t>(ran.load()), res.started);
  EXPECT_GE(res.started, 4u);
  EXPECT_LE(res.started, 6u);  // at most the other slot's task in flight besides
}

TEST(Scheduler, AnExceptionStopsDispatchAndIsRethrown) {
  std::atomic<int> ran{0};
  EXPECT_THROW(run_on_slots(3, 50,
                            [&](size_t task, size_t) {
                              ++ran;
                              std::this_thread::sleep_for(std::chrono::milliseconds(5));
                              if (task == 2) throw std::runtime_error("task 2 failed");
                            }),
               std::runtime_error);
  EXPECT_LT(ran.load(), 10);
}

TEST(Scheduler, CostliestFirstKeepsTiesInOrder) {
  EXPECT_EQ(costliest_first({1, 5, 3, 5, 0}), (std::vector<size_t>{1, 3, 2, 0, 4}));
  EXPECT_TRUE(costliest_first({}).empty());
  // Two slots, tasks of 10, 10, 10, 40: in order the 40 starts third and ends at
  // 50; costliest first it starts at once and the three others end by 40.
  const std::vector<double> t = {10, 10, 10, 40};
  auto makespan = [&](const std::vector<size_t>& order) {
    double slot[2] = {0, 0};
    for (size_t k : order) *std::min_element(slot, slot + 2) += t[k];
    return std::max(slot[0], slot[1]);
  };
  EXPECT_EQ(makespan({0, 1, 2, 3}), 50);
  EXPECT_EQ(makespan(costliest_first(t)), 40);
}

}  // namespace
}  // namespace solbench::runset
