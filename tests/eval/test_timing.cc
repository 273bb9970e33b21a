// The measurement loop's statistics and stopping rule, with fake timers (no clock
// noise): the numbers below are computed by hand in the comments.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "harness/timing/stopping.h"
#include "harness/timing/timer.h"
#include "harness/timing/timing.h"
#include "harness/timing/timing_stats.h"

namespace solbench::harness {
namespace {

TEST(TimingStats, MedianMeanStddevOfKnownSample) {
  // {1,2,3,4,10}: median 3, mean 4, sample variance (9+4+1+0+36)/4 = 12.5.
  std::vector<double> v{10, 1, 3, 2, 4};
  TimingStats s = summarize(v);
  EXPECT_EQ(s.count, 5);
  EXPECT_DOUBLE_EQ(s.median_ms, 3);
  EXPECT_DOUBLE_EQ(s.mean_ms, 4);
  EXPECT_DOUBLE_EQ(s.min_ms, 1);
  EXPECT_DOUBLE_EQ(s.max_ms, 10);
  EXPECT_NEAR(s.stddev_ms, std::sqrt(12.5), 1e-12);
  // rse = sqrt(pi/2) * sqrt(12.5) / sqrt(5) / 3 = 1.2533 * 3.5355 / 2.2361 / 3 = 0.66054
  EXPECT_NEAR(s.rse, 0.66054, 1e-4);
}

TEST(TimingStats, EvenCountMedianAveragesTheMiddlePair) {
  std::vector<double> v{4, 1, 3, 2};
  EXPECT_DOUBLE_EQ(summarize(v).median_ms, 2.5);
  EXPECT_EQ(summarize(std::vector<double>{}).count, 0);
}

TEST(Stopping, ConstantSamplesConvergeAfterTheMinimum) {
  MedianRseCriterion c(0.02, 5);
  for (int i = 0; i < 4; ++i) {
    c.add(1.0);
    EXPECT_FALSE(c.converged()) << "converged before min_samples at " << i;
  }
  c.add(1.0);
  EXPECT_TRUE(c.converged());
}

TEST(Stopping, NoisySamplesDoNotConvergeQuickly) {
  // Alternating 1 and 3: stddev ~1, median ~2: rse = 1.25 / sqrt(n) / 2 < 0.02 needs n > 976.
  MedianRseCriterion c(0.02, 5);
  for (int i = 0; i < 100; ++i) c.add(i % 2 ? 3.0 : 1.0);
  EXPECT_FALSE(c.converged());
  EXPECT_GT(c.current_rse(), 0.05);
}

// A timer whose spans are scripted, and a Measurable that records its calls.
class ScriptedTimer final : public Timer {
 public:
  explicit ScriptedTimer(std::vector<double> spans) : spans_(std::move(spans)) {}
  std::string name() const override { return "scripted"; }
  void begin() override {}
  void end() override {}
  double elapsed_ms() override { return spans_[i_++ % spans_.size()]; }

 private:
  std::vector<double> spans_;
  size_t i_ = 0;
};

class Recorder final : public Measurable {
 public:
  void prepare(int index) override { prepared.push_back(index); }
  void run() override { ++runs; }
  void finish(int index, bool timed) override {
    if (timed) timed_indices.push_back(index);
  }
  std::vector<int> prepared, timed_indices;
  int runs = 0;
};

TEST(Measure, StopsWhenPreciseAndPreparesEveryCallWithANewIndex) {
  ScriptedTimer t({2.0});
  Recorder r;
  TimingOptions o;
  o.warmup = 3;
  o.min_iterations = 5;
  TimingResult res = measure(t, r, o);
  EXPECT_TRUE(res.converged);
  EXPECT_EQ(res.stop_reason, "converged");
  EXPECT_EQ(res.warmup_calls, 3);
  EXPECT_EQ(res.stats.count, 5);  // constant spans: precise at the minimum
  EXPECT_DOUBLE_EQ(res.stats.median_ms, 2.0);
  ASSERT_EQ(r.prepared.size(), 8u);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(r.prepared[i], i);  // distinct argument slots
  EXPECT_EQ(r.timed_indices.front(), 3);
}

TEST(Measure, NoisySpansStopAtTheIterationCap) {
  ScriptedTimer t({1.0, 3.0});
  Recorder r;
  TimingOptions o;
  o.warmup = 0;
  o.max_iterations = 50;
  o.budget_ms = 1e9;
  TimingResult res = measure(t, r, o);
  EXPECT_FALSE(res.converged);
  EXPECT_EQ(res.stop_reason, "max_iterations");
  EXPECT_EQ(res.stats.count, 50);
  EXPECT_EQ(r.runs, 50);
}

TEST(Timer, DeviceStrings) {
  EXPECT_EQ(make_timer("cpu")->name(), "cpu-monotonic");
  EXPECT_EQ(cuda_ordinal("cuda:3"), 3);
  EXPECT_EQ(cuda_ordinal("cuda"), 0);
  EXPECT_EQ(cuda_ordinal("cuda:"), -1);
  EXPECT_EQ(cuda_ordinal("tpu:0"), -1);
  EXPECT_THROW(make_timer("tpu:0"), std::runtime_error);
}

}  // namespace
}  // namespace solbench::harness
