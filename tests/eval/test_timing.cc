// The measurement loop's statistics and stopping rule, with fake timers (no clock
// noise): the numbers below are computed by hand in the comments.
#include <gtest/gtest.h>

#include <dlfcn.h>
#include <errno.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "harness/timing/stopping.h"
#include "harness/timing/timer.h"
#include "harness/timing/timing.h"
#include "harness/timing/timing_stats.h"
#include "harness/worker/code_seal.h"

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

// Host time by step: a Measurable that sleeps in prepare() and a timer that keeps
// steps of its own; the loop adds both to its result, named after their owners.
class SleepyPrepare final : public Measurable {
 public:
  void prepare(int) override {
    const int64_t t0 = monotonic_ns();
    ::usleep(2000);
    steps.add("fill", t0);
  }
  void run() override {}
  json take_steps() override { return steps.take(); }
  StepTimes steps;
};

class SteppedTimer final : public Timer {
 public:
  std::string name() const override { return "stepped"; }
  void prepare() override { steps.add("flush", monotonic_ns()); }
  void begin() override {}
  void end() override {}
  double elapsed_ms() override { return 1.0; }
  json take_steps() override { return steps.take(); }
  StepTimes steps;
};

TEST(Measure, EveryStepsHostTimeIsAddedUpByName) {
  SteppedTimer t;
  SleepyPrepare m;
  TimingOptions o;
  o.warmup = 2;
  o.min_iterations = 5;
  const TimingResult res = measure(t, m, o);
  ASSERT_EQ(res.stats.count, 5);
  // Seven calls of at least 2 ms each in prepare(), warm-up included.
  EXPECT_GE(res.steps.prepare_ms, 14.0);
  EXPECT_LT(res.steps.timer_prepare_ms, res.steps.prepare_ms);
  ASSERT_TRUE(res.steps.detail.contains("prepare_fill"));
  EXPECT_GE(res.steps.detail["prepare_fill"].get<double>(), 14.0);
  EXPECT_LE(res.steps.detail["prepare_fill"].get<double>(), res.steps.prepare_ms);
  EXPECT_TRUE(res.steps.detail.contains("timer_flush"));
  const json j = res.steps.to_json();
  for (const char* k : {"prepare_ms", "timer_prepare_ms", "call_ms", "read_ms", "finish_ms",
                        "prepare_fill_ms", "timer_flush_ms"})
    EXPECT_TRUE(j.contains(k)) << k << " in " << j.dump();
  // Taken: the next loop starts from nothing.
  EXPECT_TRUE(m.take_steps().empty());
  EXPECT_TRUE(t.take_steps().empty());
}

TEST(Timer, ForEachDevice) {
  EXPECT_EQ(make_timer(Device::cpu())->name(), "cpu-monotonic");
  // Device texts are parsed once, before a timer is made (tests/core/test_device.cc).
  EXPECT_THROW(make_timer(Device::parse("tpu:0")), std::runtime_error);
}

// What the worker does before loading a solution (worker/code_seal.h): once sealed,
// the code the CPU timer runs (clock_gettime in libc, here) cannot be made writable
// again, so native code cannot patch the timer (tests/hacks/cpp_patch_steady_clock);
// the timer still measures. In a child process: seals are permanent.
TEST(Timer, SealedCodeCannotBeMadeWritableAndTheTimerStillMeasures) {
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const SealReport r = seal_loaded_code();
    if (!r.available) ::_exit(77);
    if (r.ranges == 0 || r.failed != 0) ::_exit(10);
    void* fn = ::dlsym(RTLD_DEFAULT, "clock_gettime");
    if (fn == nullptr) ::_exit(11);
    const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
    void* start = reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(fn) & ~(page - 1));
    if (::mprotect(start, page, PROT_READ | PROT_WRITE | PROT_EXEC) == 0) ::_exit(12);
    if (errno != EPERM) ::_exit(13);
    // Its neighbour, an unsealed fresh mapping, can still be made executable (JITs).
    void* jit = ::mmap(nullptr, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (jit == MAP_FAILED || ::mprotect(jit, page, PROT_READ | PROT_EXEC) != 0) ::_exit(14);
    CpuTimer t;
    t.begin();
    const timespec nap{0, 2000000};
    ::nanosleep(&nap, nullptr);
    t.end();
    ::_exit(t.elapsed_ms() >= 1.9 && t.elapsed_ms() < 1000 ? 0 : 15);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  if (WEXITSTATUS(status) == 77) GTEST_SKIP() << "mseal is not available on this kernel";
  EXPECT_EQ(WEXITSTATUS(status), 0) << "10: nothing sealed, 11: no clock_gettime, 12: libc "
                                       "code made writable, 13: wrong errno, 14: a new mapping "
                                       "refused, 15: the timer was wrong";
}

}  // namespace
}  // namespace solbench::harness
