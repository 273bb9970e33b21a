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

using Parts = std::vector<std::vector<size_t>>;

TEST(Scheduler, OneTaskLongerThanTheRestIsCutForSeveralSlots) {
  // Task 1 costs 12 of 16: more than a slot's share (8) on two slots, so it is cut
  // in two of about 6 each; the others stay whole. Positions, not costs.
  const auto s = split_for_slots({{1, 1}, {3, 3, 3, 3}, {2}}, 2);
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0], (Parts{{0, 1}}));
  EXPECT_EQ(s[1], (Parts{{0, 1}, {2, 3}}));
  EXPECT_EQ(s[2], (Parts{{0}}));
  // A heavy first workload gets a part of its own.
  EXPECT_EQ(split_for_slots({{10, 1, 1, 1}, {1}}, 2)[0], (Parts{{0}, {1, 2, 3}}));
  // Four slots, a task of 14 of 16: ceil(14 / 4) = 4 parts, one workload at least each.
  EXPECT_EQ(split_for_slots({{2, 2, 2, 2, 2, 2, 2}, {2}}, 4)[0],
            (Parts{{0, 1}, {2, 3}, {4, 5}, {6}}));
  // No more parts than workloads.
  EXPECT_EQ(split_for_slots({{9, 9}, {1}}, 8)[0], (Parts{{0}, {1}}));
}

TEST(Scheduler, NothingIsCutOnOneSlotOrWhenNoTaskExceedsAShare) {
  EXPECT_EQ(split_for_slots({{5, 5, 5}, {1}}, 1)[0], (Parts{{0, 1, 2}}));
  const auto even = split_for_slots({{2, 2}, {2, 2}, {1, 3}}, 2);
  for (const auto& p : even) EXPECT_EQ(p.size(), 1u);
  EXPECT_EQ(split_for_slots({{7}, {1}}, 2)[0], (Parts{{0}}));  // one workload cannot be cut
  EXPECT_TRUE(split_for_slots({}, 2).empty());
  EXPECT_EQ(split_for_slots({{0, 0}}, 2)[0], (Parts{{0, 1}}));  // no cost known: whole
}

// --jobs-per-gpu: an evaluation runs alone where its largest workload's values, times
// the copies its processes hold, pass what may sit beside other evaluations; the
// total of its workloads does not count, nor does a task without workloads.
TEST(Scheduler, OnlyTasksWithAWorkloadTooLargeToShareAGpuRunAlone) {
  const double gib = double(1ull << 30);
  const auto alone = runs_alone({{1 * gib, 1 * gib, 1 * gib},  // 3 GiB in all, 8 GiB each
                                 {0.5 * gib, 2.5 * gib},      // one of 20 GiB
                                 {2 * gib},                   // 16 GiB: not over
                                 {}},
                                8, 16 * gib);
  EXPECT_EQ(alone, (std::vector<bool>{false, true, false, false}));
  EXPECT_EQ(runs_alone({{2 * gib}}, 9, 16 * gib), std::vector<bool>{true});
}

// T_b ahead: of the next `window` tasks, the first ready one goes first; with none
// ready, the first in order; each task once.
TEST(Scheduler, AReadyTaskWithinTheWindowGoesBeforeOneThatWouldWait) {
  const auto order_with = [](size_t window, std::function<bool(size_t)> ready) {
    std::vector<size_t> order;
    const ScheduleResult res = run_on_slots(
        1, 6, [&](size_t t, size_t) { order.push_back(t); }, nullptr, ready, window);
    EXPECT_EQ(res.started, 6u);
    return order;
  };
  const auto even = [](size_t t) { return t % 2 == 0; };
  EXPECT_EQ(order_with(2, even), (std::vector<size_t>{0, 2, 1, 4, 3, 5}));
  EXPECT_EQ(order_with(1, even), (std::vector<size_t>{0, 1, 2, 3, 4, 5}));  // a window of one
  EXPECT_EQ(order_with(3, [](size_t) { return false; }), (std::vector<size_t>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(order_with(6, [](size_t t) { return t == 5; }), (std::vector<size_t>{5, 0, 1, 2, 3, 4}));
}

}  // namespace
}  // namespace solbench::runset
