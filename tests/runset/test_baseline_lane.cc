// T_b ahead's lane with fake jobs: order and jobs at once, a claim that drops a
// job not started and waits for one that runs, busy_since, finish.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

#include "runset/baseline_lane.h"

namespace solbench::runset {
namespace {

using namespace std::chrono_literals;
using State = LaneOutcome::State;

std::vector<LaneJob> jobs_for(std::vector<size_t> problems) {
  std::vector<LaneJob> jobs;
  for (size_t p : problems) jobs.push_back({p, {"u" + std::to_string(p)}});
  return jobs;
}

// Jobs that record their order and the most at once, each taking `each`, and that
// can be held until released.
struct Recorder {
  std::mutex m;
  std::vector<size_t> started;
  int now = 0, most = 0;
  std::atomic<bool> hold{false};
  std::chrono::milliseconds each{30};
  BaselineLane::RunJob fn() {
    return [this](const LaneJob& j, size_t, const std::atomic<bool>& preempt) {
      {
        std::lock_guard l(m);
        started.push_back(j.problem);
        most = std::max(most, ++now);
      }
      std::this_thread::sleep_for(each);
      while (hold && !preempt) std::this_thread::sleep_for(5ms);
      {
        std::lock_guard l(m);
        --now;
      }
      LaneOutcome o;
      o.preempted = hold && preempt;
      if (!o.preempted) o.measured = j.uuids.size();
      return o;
    };
  }
  size_t count() {
    std::lock_guard l(m);
    return started.size();
  }
};

void wait_until(const std::function<bool()>& f) {
  for (int i = 0; i < 500 && !f(); ++i) std::this_thread::sleep_for(10ms);
  ASSERT_TRUE(f());
}

TEST(BaselineLane, RunsEveryJobInOrderAtMostSoManyAtOnce) {
  Recorder all;
  BaselineLane lane(jobs_for({3, 1, 4, 5, 9}), 2, all.fn());
  wait_until([&] { return all.count() == 5; });
  for (size_t p : {3, 1, 4, 5, 9}) EXPECT_GE(lane.claim(p), 0.0);  // each started: waited for
  lane.finish();
  EXPECT_EQ(all.started, (std::vector<size_t>{3, 1, 4, 5, 9}));
  EXPECT_EQ(all.most, 2);
  for (const auto& [job, out] : lane.outcomes()) {
    EXPECT_EQ(out.state, State::Done) << job.problem;
    EXPECT_EQ(out.measured, 1u);
    EXPECT_GE(out.seconds, 0.025);
  }
}

TEST(BaselineLane, AClaimDropsAJobNotStartedAndWaitsForOneThatRuns) {
  Recorder r;
  r.hold = true;
  BaselineLane lane(jobs_for({1, 2, 3}), 1, r.fn());
  wait_until([&] { return r.count() == 1; });  // job 1 runs (held), 2 and 3 wait
  EXPECT_LT(lane.claim(3), 0.05);  // not started: dropped, no wait
  std::thread release([&] {
    std::this_thread::sleep_for(150ms);
    r.hold = false;
  });
  const double waited = lane.claim(1);  // running: waited for
  release.join();
  EXPECT_GE(waited, 0.1);
  wait_until([&] { return r.count() == 2; });
  lane.finish();
  EXPECT_EQ(r.started, (std::vector<size_t>{1, 2}));  // 3 never ran
  const auto out = lane.outcomes();
  EXPECT_EQ(out[0].second.state, State::Done);
  EXPECT_GE(out[0].second.waited, 0.1);
  EXPECT_EQ(out[1].second.state, State::Done);
  EXPECT_EQ(out[2].second.state, State::Dropped);
  EXPECT_LT(lane.claim(7), 0.01);  // a problem without a job
}

TEST(BaselineLane, BusySinceTellsWhetherAJobRanSinceAMoment) {
  Recorder r;
  r.hold = true;
  const auto before = std::chrono::steady_clock::now();
  BaselineLane lane(jobs_for({1}), 1, r.fn());
  wait_until([&] { return r.count() == 1; });
  EXPECT_TRUE(lane.busy_since(std::chrono::steady_clock::now()));  // it runs now
  r.hold = false;
  EXPECT_GE(lane.claim(1), 0.0);
  const auto after = std::chrono::steady_clock::now();
  EXPECT_TRUE(lane.busy_since(before));
  EXPECT_FALSE(lane.busy_since(after));
  lane.finish();
}

TEST(BaselineLane, APauseStopsTheRunningJobsAndRunsThemAgainOnceResumed) {
  Recorder r;
  r.hold = true;
  BaselineLane lane(jobs_for({1, 2, 3}), 2, r.fn());
  wait_until([&] { return r.count() == 2; });
  const double waited = lane.pause();  // jobs 1 and 2 see `preempt` and stop
  EXPECT_LT(waited, 5.0);
  const auto at_pause = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(150ms);
  EXPECT_EQ(r.count(), 2u);  // nothing starts while paused
  EXPECT_FALSE(lane.busy_since(at_pause));
  for (size_t p : {1, 2}) EXPECT_EQ(lane.outcome(p)->state, State::Queued);
  r.hold = false;
  lane.resume();
  wait_until([&] { return r.count() == 5; });  // 1 and 2 again, then 3
  lane.finish();
  for (const auto& [job, out] : lane.outcomes()) {
    EXPECT_EQ(out.state, State::Done) << job.problem;
    EXPECT_EQ(out.measured, 1u) << job.problem;
    EXPECT_FALSE(out.preempted);
  }
}

TEST(BaselineLane, FinishEndsAPausedLane) {
  Recorder r;
  BaselineLane lane(jobs_for({1, 2}), 1, r.fn());
  lane.pause();
  lane.finish();  // returns: the threads see finishing while paused
  const auto out = lane.outcomes();
  EXPECT_EQ(out[1].second.state, State::Dropped);
}

TEST(BaselineLane, FinishDropsWhatHasNotStartedAndAStopStartsNothingMore) {
  Recorder r;
  r.hold = true;
  std::atomic<bool> stop{false};
  BaselineLane lane(jobs_for({1, 2, 3}), 1, r.fn(), &stop);
  wait_until([&] { return r.count() == 1; });
  stop = true;
  r.hold = false;
  lane.finish();
  EXPECT_EQ(r.count(), 1u);
  const auto out = lane.outcomes();
  EXPECT_EQ(out[0].second.state, State::Done);
  EXPECT_EQ(out[1].second.state, State::Dropped);
  EXPECT_EQ(out[2].second.state, State::Dropped);
}

TEST(BaselineLane, AJobThatThrowsIsDoneWithItsError) {
  BaselineLane lane(jobs_for({1}), 1, [](const LaneJob&, size_t, const std::atomic<bool>&) -> LaneOutcome {
    throw std::runtime_error("no child");
  });
  wait_until([&] { return lane.outcomes()[0].second.state == State::Done; });
  lane.finish();
  EXPECT_EQ(lane.outcomes()[0].second.state, State::Done);
  EXPECT_EQ(lane.outcomes()[0].second.error, "no child");
}

}  // namespace
}  // namespace solbench::runset
