// Tests that need a CUDA device (skipped cleanly without one): the CUPTI timer
// against events on a kernel of known duration, side-stream work, the L2 flush,
// NVML clocks, sticky error classification.
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "gpu_test_util.h"
#include "harness/timing/gpu/clocks.h"
#include "harness/timing/gpu/cuda_check.h"
#include "harness/timing/gpu/cuda_stream.h"
#include "harness/timing/gpu/cupti_timer.h"
#include "harness/timing/gpu/device.h"
#include "harness/timing/gpu/device_buffer.h"
#include "harness/timing/gpu/event_timer.h"
#include "harness/timing/gpu/gpu_errors.h"
#include "harness/timing/gpu/gpu_kernels.h"
#include "harness/timing/gpu/gpu_timer_factory.h"
#include "harness/timing/gpu/pinned_buffer.h"
#include "harness/timing/gpu/profiler_timer.h"

namespace solbench::gpu {
namespace {

template <typename Fn>
double median_ms(harness::Timer& t, int reps, Fn&& call) {
  std::vector<double> v;
  for (int i = 0; i < reps; ++i) {
    t.prepare();
    t.begin();
    call();
    t.end();
    v.push_back(t.elapsed_ms());
  }
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

class GpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SB_REQUIRE_GPU();
    select_device(0);
  }
};

TEST_F(GpuTest, FactoryPrefersCuptiAndHonoursEvents) {
  CudaStream s;
  auto t = make_gpu_timer(0, s.get(), json::object());
  EXPECT_EQ(t->name(), "cupti") << t->details().dump();
  auto e = make_gpu_timer(0, s.get(), json{{"timer", "events"}});
  EXPECT_EQ(e->name(), "cuda-events");
  EXPECT_EQ(e->details()["l2_flush"], "write-then-read");
}

TEST_F(GpuTest, CuptiTimesAKernelOfKnownDurationAndEventsBoundIt) {
  CudaStream s;
  CuptiTimer t(0, s.get());
  constexpr uint64_t kNs = 200'000;  // 200 us of spinning on the global timer
  const double ms = median_ms(t, 15, [&] { launch_spin(kNs, s.get()); });
  EXPECT_NEAR(ms, 0.2, 0.2 * 0.05) << t.details().dump();
  EXPECT_EQ(t.last_span().kernels, 1u);
  // The events' span brackets the kernel on the same stream, so it can only be longer.
  EXPECT_GE(t.last_events_ms(), t.last_span().span_ms * 0.99) << t.details().dump();
}

TEST_F(GpuTest, CuptiCountsMemcpyAndMemset) {
  CudaStream s;
  DeviceBuffer a(64 << 20), b(64 << 20);
  CuptiTimer t(0, s.get());
  t.prepare();
  t.begin();
  SB_CUDA_CHECK(cudaMemsetAsync(a.get(), 1, a.bytes(), s.get()));
  SB_CUDA_CHECK(cudaMemcpyAsync(b.get(), a.get(), a.bytes(), cudaMemcpyDeviceToDevice, s.get()));
  t.end();
  const double ms = t.elapsed_ms();
  EXPECT_EQ(t.last_span().memsets, 1u) << t.details().dump();
  EXPECT_EQ(t.last_span().memcpys, 1u) << t.details().dump();
  EXPECT_GT(ms, 0.0);
}

TEST_F(GpuTest, SideStreamWorkIsCountedByCuptiNotByEvents) {
  CudaStream measured, side;
  CuptiTimer t(0, measured.get());
  // The "solution": 20 us on the given stream, 500 us on its own stream, no join.
  const double ms = median_ms(t, 9, [&] {
    launch_spin(20'000, measured.get());
    launch_spin(500'000, side.get());
  });
  EXPECT_GE(ms, 0.5 * 0.97) << t.details().dump();
  EXPECT_EQ(t.last_span().streams, 2u);
  // Events on the measured stream (launch latency hidden by the blocking kernel)
  // see only the 20 us kernel: the side stream's 500 us escape them.
  GpuTimerOptions o;
  o.block_launch = true;
  EventTimer ev(0, measured.get(), o);
  const double ev_ms = median_ms(ev, 9, [&] {
    launch_spin(20'000, measured.get());
    launch_spin(500'000, side.get());
  });
  EXPECT_LT(ev_ms, 0.25) << ev.details().dump();
}

TEST_F(GpuTest, LaunchesInsideTheWindowAreAllRecorded) {
  // CUPTI's API callbacks run on every launch inside a span: host overhead there
  // becomes gaps in the span of launch-bound calls (a torch reference of many
  // small operators), so it must stay small.
  CudaStream s;
  CuptiTimer t(0, s.get());
  constexpr int kLaunches = 200;
  t.prepare();
  const auto h0 = std::chrono::steady_clock::now();
  t.begin();
  for (int i = 0; i < kLaunches; ++i) launch_spin(1000, s.get());
  t.end();
  const double host_us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - h0).count();
  const double span_ms = t.elapsed_ms();
  EXPECT_EQ(t.last_span().kernels, static_cast<size_t>(kLaunches));
  RecordProperty("host_us_per_launch", std::to_string(host_us / kLaunches));
  RecordProperty("span_us_per_launch", std::to_string(span_ms * 1e3 / kLaunches));
  std::printf("host %.2f us/launch, GPU span %.2f us/launch\n", host_us / kLaunches,
              span_ms * 1e3 / kLaunches);
  // The per-launch cost is a measurement (reported by scripts/gpu_validate.sh),
  // not a unit-test target: it depends on the host's load.
  EXPECT_GT(span_ms, 0.0);
}

TEST_F(GpuTest, LaunchGateKeepsTheHostLaunchPathOutOfTheSpan) {
  // A call of 100 launches of a 1 us kernel whose host side takes 20 us between
  // launches (a Python reference; CUPTI's own tracing costs 3-35 us per launch on
  // the H100): without the gate the GPU waits for the host between kernels, with
  // it they run back to back once the gate opens.
  CudaStream s;
  auto span_per_launch_us = [&](bool gated) {
    GpuTimerOptions o;
    o.block_launch = gated;
    CuptiTimer t(0, s.get(), o);
    const double ms = median_ms(t, 5, [&] {
      for (int i = 0; i < 100; ++i) {
        launch_spin(1000, s.get());
        const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(20);
        while (std::chrono::steady_clock::now() < until) {
        }
      }
    });
    EXPECT_EQ(t.last_span().kernels, 100u);
    EXPECT_EQ(t.details()["block_launch"], gated);
    return ms * 10.0;  // ms / 100 launches, in us
  };
  const double open = span_per_launch_us(false), gated = span_per_launch_us(true);
  std::printf("span per 1 us launch: %.2f us without the gate, %.2f us with it\n", open, gated);
  EXPECT_GE(open, 19.0);  // the host's 20 us between launches shows without the gate
  EXPECT_GE(gated, 0.9);  // the kernels themselves still take 1 us each
  EXPECT_LT(gated, 0.5 * open) << "gate " << gated << " us, no gate " << open << " us";
}

TEST_F(GpuTest, ACallThatWaitsForItsStreamOpensTheGateByTimeout) {
  CudaStream s;
  GpuTimerOptions o;
  o.block_timeout_s = 0.05;
  int calls = 0;
  int sync_until = 1;  // the call waits for its stream on its first `sync_until` calls
  auto call = [&] {
    launch_spin(10'000, s.get());
    if (calls++ < sync_until) SB_CUDA_CHECK(cudaStreamSynchronize(s.get()));  // waits for the gate
  };
  double ms = 0;
  auto host_s = [&](CuptiTimer& t) {
    const auto h0 = std::chrono::steady_clock::now();
    t.prepare();
    t.begin();
    call();
    t.end();
    ms = t.elapsed_ms();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - h0).count();
  };
  {  // waits once (a handle made on the first call): forgiven, the gate stays
    CuptiTimer t(0, s.get(), o);
    EXPECT_GE(host_s(t), 0.045);
    EXPECT_EQ(t.details()["block_timed_out"], true) << t.details().dump();
    EXPECT_LT(host_s(t), 0.04);
    const json d = t.details();
    EXPECT_EQ(d["block_timeouts"], 1u) << d.dump();
    EXPECT_FALSE(d.contains("block_gave_up")) << d.dump();
    EXPECT_NEAR(ms, 0.01, 0.005);  // the gated span is the 10 us kernel
  }
  {  // waits every time: two timeouts, then the gate stays open
    calls = 0;
    sync_until = 1000;
    CuptiTimer t(0, s.get(), o);
    EXPECT_GE(host_s(t), 0.045);
    EXPECT_GE(host_s(t), 0.045);
    EXPECT_LT(host_s(t), 0.04) << "the gate must stay open after two timeouts in a row";
    const json d = t.details();
    EXPECT_EQ(d["block_timeouts"], 2u) << d.dump();
    EXPECT_EQ(d["block_gave_up"], true) << d.dump();
    EXPECT_FALSE(d.contains("block_timed_out"));
    EXPECT_NEAR(ms, 0.01, 0.005);
  }
}

TEST_F(GpuTest, WorkFromAnotherThreadInsideTheSpanIsCounted) {
  CudaStream measured, side;
  CuptiTimer t(0, measured.get());
  t.prepare();
  t.begin();
  launch_spin(10'000, measured.get());
  std::thread th([&] { launch_spin(300'000, side.get()); });
  th.join();
  t.end();
  EXPECT_GE(t.elapsed_ms(), 0.3 * 0.97) << t.details().dump();
}

TEST_F(GpuTest, WorkBeforeTheSpanIsNotCounted) {
  CudaStream s;
  GpuTimerOptions o;
  o.flush_l2 = false;
  CuptiTimer t(0, s.get(), o);
  t.prepare();
  launch_spin(300'000, s.get());  // queued before begin(): not the call's work
  t.begin();
  launch_spin(20'000, s.get());
  t.end();
  const double ms = t.elapsed_ms();
  EXPECT_LT(ms, 0.1) << t.details().dump();
  EXPECT_EQ(t.last_span().kernels, 1u);
}

TEST_F(GpuTest, L2FlushMakesTheNextReadSlower) {
  const DeviceInfo info = query_device(0);
  ASSERT_GT(info.l2_bytes, 0);
  // A buffer that fits in a quarter of the L2: without a flush it is re-read from L2.
  const size_t bytes = static_cast<size_t>(info.l2_bytes / 4) / 16 * 16;
  DeviceBuffer buf(bytes);
  SB_CUDA_CHECK(cudaMemset(buf.get(), 3, bytes));
  CudaStream s;
  GpuTimerOptions warm_opt;
  warm_opt.flush_l2 = false;
  CuptiTimer warm(0, s.get(), warm_opt);
  CuptiTimer cold(0, s.get());  // flushes: write-then-read of 2 x L2
  auto read = [&] { launch_l2_read(buf.get(), bytes, s.get()); };
  const double t_warm = median_ms(warm, 21, read);
  const double t_cold = median_ms(cold, 21, read);
  EXPECT_GT(t_cold, 1.3 * t_warm) << "warm " << t_warm << " ms, cold " << t_cold << " ms";
}

TEST_F(GpuTest, EventTimerWithBlockingKernelTimesTheWork) {
  CudaStream s;
  GpuTimerOptions o;
  o.block_launch = true;
  EventTimer t(0, s.get(), o);
  const double ms = median_ms(t, 9, [&] { launch_spin(100'000, s.get()); });
  EXPECT_NEAR(ms, 0.1, 0.01) << t.details().dump();
  EXPECT_FALSE(t.details().contains("block_timed_out"));
}

// The profiler timer, or a skip where this machine denies hardware counters.
std::unique_ptr<ProfilerTimer> profiler_timer_or_skip(cudaStream_t s, std::string* skip) {
  try {
    return std::make_unique<ProfilerTimer>(0, s);
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    if (what.find("INSUFFICIENT_PRIVILEGES") == std::string::npos) throw;
    *skip = what;
    return nullptr;
  }
}

TEST_F(GpuTest, ProfilerTimesEachKernelOnEveryStream) {
  CudaStream measured, side;
  std::string skip;
  auto t = profiler_timer_or_skip(measured.get(), &skip);
  if (!t) GTEST_SKIP() << skip;
  // 100 us on the measured stream and 200 us on a side stream: the profiler
  // serialises them and sums the two kernels' durations.
  const double ms = median_ms(*t, 9, [&] {
    launch_spin(100'000, measured.get());
    launch_spin(200'000, side.get());
  });
  ASSERT_EQ(t->last_kernel_ns().size(), 2u) << t->details().dump();
  EXPECT_NEAR(t->last_kernel_ns()[0] / 1e6, 0.1, 0.1 * 0.05) << t->details().dump();
  EXPECT_NEAR(ms, 0.3, 0.3 * 0.05) << t->details().dump();
  EXPECT_FALSE(t->details().contains("spans_over_capacity"));
  // The factory hands out the same timer by name.
  EXPECT_EQ(make_gpu_timer(0, measured.get(), json{{"timer", "profiler"}})->name(), "cupti-profiler");
}

TEST_F(GpuTest, ProfilerTimesACallWithoutKernelsByEvents) {
  CudaStream s;
  std::string skip;
  auto t = profiler_timer_or_skip(s.get(), &skip);
  if (!t) GTEST_SKIP() << skip;
  // A host-to-device copy runs on a copy engine: no kernel for the profiler.
  PinnedBuffer host(64 << 20);
  DeviceBuffer dev(64 << 20);
  t->prepare();
  t->begin();
  SB_CUDA_CHECK(cudaMemcpyAsync(dev.get(), host.host(), host.bytes(), cudaMemcpyHostToDevice, s.get()));
  t->end();
  const double ms = t->elapsed_ms();
  EXPECT_TRUE(t->last_kernel_ns().empty());
  EXPECT_GT(ms, 0.0);
  EXPECT_EQ(t->details()["iterations_without_kernels"], 1u) << t->details().dump();
}

TEST_F(GpuTest, ProfilerRefusesACallWithMoreKernelsThanASpanHolds) {
  CudaStream s;
  std::string skip;
  auto t = profiler_timer_or_skip(s.get(), &skip);
  if (!t) GTEST_SKIP() << skip;
  t->prepare();
  t->begin();
  for (int i = 0; i < 2100; ++i) launch_spin(0, s.get());  // more than the 2048 ranges
  t->end();
  try {
    (void)t->elapsed_ms();
    FAIL() << "a span with dropped kernels was timed: " << t->details().dump();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("2048 or more kernels"), std::string::npos) << e.what();
  }
  EXPECT_GT(t->details().value("spans_over_capacity", 0u), 0u) << t->details().dump();
}

TEST_F(GpuTest, NvmlReadsClocksOfThisDevice) {
  ClockSample s = sample_clocks(0);
  if (!s.valid && s.error.find("NVML not available") != std::string::npos)
    GTEST_SKIP() << s.error;
  ASSERT_TRUE(s.valid) << s.error;
  EXPECT_GT(s.sm_max_mhz, 500u);
  EXPECT_GT(s.sm_mhz, 0u);
  EXPECT_LE(s.sm_mhz, s.sm_max_mhz + 50);
  EXPECT_GT(s.memory_mhz, 0u);
  ClockWatch w(0);
  {
    ClockGuard g(w);
    CudaStream st;
    launch_spin(50'000'000, st.get());  // 50 ms of load between the samples
    st.synchronize();
  }
  json j = w.to_json();
  EXPECT_TRUE(j["before"]["valid"].get<bool>());
  EXPECT_TRUE(j["after"]["valid"].get<bool>());
  EXPECT_TRUE(j["warnings"].is_array());
}

TEST_F(GpuTest, NonStickyErrorIsClearedAndReported) {
  void* p = nullptr;
  // 1 PiB cannot be allocated: cudaErrorMemoryAllocation, recoverable.
  cudaError_t e = cudaMalloc(&p, size_t{1} << 50);
  ASSERT_EQ(e, cudaErrorMemoryAllocation);
  CudaErrorStatus st = poll_cuda_error(false);
  EXPECT_FALSE(st.ok);
  EXPECT_FALSE(st.sticky);
  EXPECT_EQ(st.name, "cudaErrorMemoryAllocation");
  EXPECT_TRUE(poll_cuda_error(true).ok) << "a recoverable error must be cleared";
  DeviceBuffer still_works(1 << 20);
  EXPECT_NE(still_works.get(), nullptr);
}

// The sticky error corrupts the context: run it in a child process (gtest's
// death-test child re-executes this binary, so the child's CUDA state is fresh).
TEST_F(GpuTest, IllegalAddressIsSticky) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        select_device(0);
        CudaStream s;
        launch_illegal_address(s.get());
        CudaErrorStatus st = poll_cuda_error(true);
        const bool ok = !st.ok && st.sticky && st.name == "cudaErrorIllegalAddress" &&
                        !poll_cuda_error(false).ok;  // still there: it is sticky
        std::_Exit(ok ? 42 : 1);
      },
      ::testing::ExitedWithCode(42), "");
}

}  // namespace
}  // namespace solbench::gpu
