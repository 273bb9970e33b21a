// GPU-module logic that needs no GPU: argument parsing, classification, summaries.
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <cstdlib>
#include <stdexcept>

#include "harness/timing/gpu/clock_lock.h"
#include "harness/timing/gpu/clocks.h"
#include "harness/timing/gpu/cuda_check.h"
#include "harness/timing/gpu/cupti_timer.h"
#include "harness/timing/gpu/device.h"
#include "harness/timing/gpu/gpu_errors.h"
#include "harness/timing/gpu/gpu_timer_factory.h"

namespace solbench::gpu {
namespace {

TEST(LockClocksArgs, ParsesSmAndOptionalMemory) {
  auto a = parse_lock_clocks("1410");
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->sm_mhz, 1410u);
  EXPECT_EQ(a->memory_mhz, 0u);
  auto b = parse_lock_clocks("1410:1593");
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->sm_mhz, 1410u);
  EXPECT_EQ(b->memory_mhz, 1593u);
}

TEST(LockClocksArgs, RejectsMalformed) {
  for (const char* bad : {"", "0", "-5", "abc", "1410:", ":1593", "1410:x", "14 10", "99999",
                          "1410:1593:1", "1e3"})
    EXPECT_FALSE(parse_lock_clocks(bad).has_value()) << "accepted '" << bad << "'";
}

TEST(LockClocks, FailureLeavesNothingToRestore) {
  // Without NVML rights (or a GPU) the lock is refused with a reason, and the
  // exit handlers' table holds no device afterwards: nothing would be "restored".
  const int before = detail::locked_device_count();
  std::string gpu_reason;
  if (gpu_available(&gpu_reason)) GTEST_SKIP() << "never lock clocks on a machine with a GPU";
  try {
    ClockLock lock(0, LockClocksRequest{1410, 0});
    ADD_FAILURE() << "locking clocks without a GPU succeeded";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("--lock-clocks"), std::string::npos) << e.what();
  }
  EXPECT_EQ(detail::locked_device_count(), before);
}

TEST(ClockReasons, DecodesKnownAndUnknownBits) {
  auto names = clock_event_reason_names(0x1 | 0x4 | 0x40 | (uint64_t{1} << 20));
  ASSERT_EQ(names.size(), 4u);
  EXPECT_EQ(names[0], "gpu_idle");
  EXPECT_EQ(names[1], "sw_power_cap");
  EXPECT_EQ(names[2], "hw_thermal_slowdown");
  EXPECT_EQ(names[3], "bit_20");
  ClockSample s;
  s.event_reasons = 0x1;
  EXPECT_FALSE(s.throttled());  // idle is not a slowdown
  s.event_reasons = 0x4;
  EXPECT_TRUE(s.throttled());
  s.sm_mhz = 1500;
  s.sm_max_mhz = 1980;
  EXPECT_NEAR(s.sm_fraction(), 1500.0 / 1980.0, 1e-12);
}

TEST(ClockSampleJson, ReportsClocksAndReasons) {
  ClockSample busy;
  busy.valid = true;
  busy.sm_mhz = 1200;
  busy.sm_max_mhz = 1980;
  busy.event_reasons_known = true;
  busy.event_reasons = 0x4;  // power cap on a busy chip
  auto j = to_json(busy);
  EXPECT_EQ(j["sm_mhz"], 1200);
  EXPECT_EQ(j["clock_event_reasons"][0], "sw_power_cap");
  EXPECT_LT(busy.sm_fraction(), 0.9);
}

TEST(Arch, GencodeUsesArchSpecificTargetsWhereTheyExist) {
  EXPECT_EQ(sm_arch_name(9, 0), "sm_90a");
  EXPECT_EQ(gencode_for(9, 0), "arch=compute_90a,code=sm_90a");
  EXPECT_EQ(gencode_for(10, 0), "arch=compute_100a,code=sm_100a");
  EXPECT_EQ(gencode_for(8, 0), "arch=compute_80,code=sm_80");
  EXPECT_EQ(sm_arch_name(8, 9), "sm_89");
}

TEST(CudaErrors, StickyClassification) {
  EXPECT_TRUE(is_sticky(cudaErrorIllegalAddress));
  EXPECT_TRUE(is_sticky(cudaErrorLaunchFailure));
  EXPECT_TRUE(is_sticky(cudaErrorMisalignedAddress));
  EXPECT_TRUE(is_sticky(cudaErrorAssert));
  EXPECT_FALSE(is_sticky(cudaErrorMemoryAllocation));
  EXPECT_FALSE(is_sticky(cudaErrorInvalidValue));
  EXPECT_FALSE(is_sticky(cudaErrorInvalidConfiguration));
  EXPECT_TRUE(is_sticky_cuda_error(static_cast<int>(cudaErrorIllegalAddress)));
  EXPECT_FALSE(is_sticky_cuda_error(static_cast<int>(cudaErrorNotReady)));
  EXPECT_EQ(error_name(cudaErrorIllegalAddress), "cudaErrorIllegalAddress");
}

TEST(CudaErrors, CheckThrowsWithCallSiteAndName) {
  try {
    SB_CUDA_CHECK(cudaErrorInvalidValue);
    FAIL() << "no throw";
  } catch (const CudaError& e) {
    EXPECT_FALSE(e.is_sticky());
    EXPECT_EQ(e.error_name(), "cudaErrorInvalidValue");
    EXPECT_NE(std::string(e.what()).find("test_gpu_pure.cc"), std::string::npos) << e.what();
  }
}

TEST(CudaErrors, PollWithoutDeviceIsNotSticky) {
  std::string why;
  if (gpu_available(&why)) GTEST_SKIP() << "a GPU is present (covered by the GPU tests)";
  CudaErrorStatus s = poll_cuda_error(true);
  EXPECT_FALSE(s.ok);
  EXPECT_FALSE(s.sticky) << s.name;
  EXPECT_FALSE(s.name.empty());
}

TEST(GpuTimerFactory, RejectsBadOptionsBeforeTouchingTheDevice) {
  EXPECT_THROW(make_gpu_timer(0, nullptr, json{{"timer", "magic"}}), std::invalid_argument);
  EXPECT_THROW(make_gpu_timer(0, nullptr, json{{"flush_l2", "yes"}}), std::invalid_argument);
  EXPECT_THROW(make_gpu_timer(0, nullptr, json{{"l2_flush_mode", "zero"}}),
               std::invalid_argument);
  try {
    make_gpu_timer(0, nullptr, json{{"flsh_l2", true}});
    FAIL() << "unknown key accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("flsh_l2"), std::string::npos);
  }
}

TEST(GpuTimerFactory, NoDeviceIsARuntimeError) {
  std::string why;
  if (gpu_available(&why)) GTEST_SKIP() << "a GPU is present";
  EXPECT_THROW(make_gpu_timer(0, nullptr, json::object()), std::runtime_error);
  EXPECT_THROW(make_gpu_timer(0, nullptr, json{{"timer", "profiler"}}), std::runtime_error);
}

TEST(GpuTimerFactory, EnvironmentTimerMustBeAKnownOne) {
  ::setenv("SOLBENCH_GPU_TIMER", "ncu", 1);
  try {
    make_gpu_timer(0, nullptr, json::object());
    ::unsetenv("SOLBENCH_GPU_TIMER");
    FAIL() << "SOLBENCH_GPU_TIMER=ncu accepted";
  } catch (const std::invalid_argument& e) {
    ::unsetenv("SOLBENCH_GPU_TIMER");
    EXPECT_NE(std::string(e.what()).find("profiler"), std::string::npos) << e.what();
  }
}

detail::GpuActivity act(uint64_t s, uint64_t e, uint32_t stream, const char* name,
                        detail::GpuActivity::Kind k = detail::GpuActivity::Kind::Kernel) {
  detail::GpuActivity a;
  a.kind = k;
  a.start_ns = s;
  a.end_ns = e;
  a.stream_id = stream;
  a.name = name;
  return a;
}

TEST(SpanSummary, SpanIsFirstStartToLastEndAndBusyIsTheUnion) {
  using K = detail::GpuActivity::Kind;
  // [1000,3000) k1 s7; [2000,5000) k2 s9 (overlaps); gap; [8000,9000) memset s7.
  std::vector<detail::GpuActivity> acts = {act(1000, 3000, 7, "k1"), act(2000, 5000, 9, "k2"),
                                           act(8000, 9000, 7, "memset", K::Memset)};
  SpanSummary s = summarize(acts);
  EXPECT_EQ(s.activities, 3u);
  EXPECT_EQ(s.kernels, 2u);
  EXPECT_EQ(s.memsets, 1u);
  EXPECT_EQ(s.streams, 2u);
  EXPECT_DOUBLE_EQ(s.span_ms, 8000 / 1e6);
  EXPECT_DOUBLE_EQ(s.busy_ms, (4000 + 1000) / 1e6);
  ASSERT_EQ(s.names.size(), 3u);
  EXPECT_EQ(s.names[1], "k2");
  EXPECT_EQ(summarize({}).span_ms, 0.0);
}

}  // namespace
}  // namespace solbench::gpu

// ------------------------------------------------- CUDA ordinals onto NVML devices
namespace {
std::vector<solbench::gpu::NvmlDeviceEntry> four_h100() {
  std::vector<solbench::gpu::NvmlDeviceEntry> v;
  for (const char* u : {"GPU-aaaa1111", "GPU-bbbb2222", "GPU-cccc3333", "GPU-aaab4444"})
    v.push_back({u, "NVIDIA H100 80GB HBM3", false});
  return v;
}
}  // namespace

TEST(NvmlOrdinal, SameModelFollowsVisibleDevices) {
  using solbench::gpu::nvml_index_for_cuda_ordinal;
  const auto d = four_h100();
  EXPECT_EQ(nvml_index_for_cuda_ordinal(0, d, nullptr, nullptr), 0);
  EXPECT_EQ(nvml_index_for_cuda_ordinal(3, d, nullptr, nullptr), 3);
  EXPECT_FALSE(nvml_index_for_cuda_ordinal(4, d, nullptr, nullptr));  // no such device
  EXPECT_EQ(nvml_index_for_cuda_ordinal(0, d, "2,1", nullptr), 2);
  EXPECT_EQ(nvml_index_for_cuda_ordinal(1, d, " 2 , 1 ", nullptr), 1);
  EXPECT_EQ(nvml_index_for_cuda_ordinal(0, d, "GPU-bbbb", nullptr), 1);  // a UUID prefix
  EXPECT_FALSE(nvml_index_for_cuda_ordinal(0, d, "GPU-aaa", nullptr));   // ambiguous prefix
  // CUDA stops at the first invalid entry: "1,7,2" shows devices 1 only.
  EXPECT_EQ(nvml_index_for_cuda_ordinal(0, d, "1,7,2", nullptr), 1);
  EXPECT_FALSE(nvml_index_for_cuda_ordinal(1, d, "1,7,2", nullptr));
  EXPECT_FALSE(nvml_index_for_cuda_ordinal(0, d, "", nullptr));  // no device visible
  EXPECT_FALSE(nvml_index_for_cuda_ordinal(0, d, "MIG-1234", nullptr));
  EXPECT_FALSE(nvml_index_for_cuda_ordinal(0, d, "1,1", nullptr));  // CUDA's business
}

TEST(NvmlOrdinal, MixedModelsOrMigNeedCuda) {
  using solbench::gpu::nvml_index_for_cuda_ordinal;
  auto d = four_h100();
  d[2].name = "NVIDIA A100-SXM4-80GB";
  // Fastest first (CUDA's default) may put the H100s before the A100: only CUDA knows.
  EXPECT_FALSE(nvml_index_for_cuda_ordinal(0, d, nullptr, nullptr));
  EXPECT_FALSE(nvml_index_for_cuda_ordinal(0, d, nullptr, "FASTEST_FIRST"));
  EXPECT_EQ(nvml_index_for_cuda_ordinal(2, d, nullptr, "PCI_BUS_ID"), 2);
  auto m = four_h100();
  m[1].mig = true;
  EXPECT_FALSE(nvml_index_for_cuda_ordinal(0, m, nullptr, "PCI_BUS_ID"));
}
