// `eval --profile`'s GPU side (harness/timing/gpu/call_profile.h) on a CUDA device,
// skipped cleanly without one: the traced call keeps each kernel with its grid, block
// and duration; the counted call reads the DRAM bytes a copy must move. Tests whose
// name has "Profiler" take ctest's counters lock (CMakeLists.txt) and run in a
// process of their own, as the range profiler allows one session per context.
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include "gpu_test_util.h"
#include "harness/timing/gpu/call_profile.h"
#include "harness/timing/gpu/cuda_stream.h"
#include "harness/timing/gpu/device.h"
#include "harness/timing/gpu/device_buffer.h"
#include "harness/timing/gpu/gpu_kernels.h"
#include "harness/timing/kernel_profile.h"

namespace solbench::gpu {
namespace {

class GpuProfile : public ::testing::Test {
 protected:
  void SetUp() override {
    SB_REQUIRE_GPU();
    select_device(0);
    if (!kernels_available()) GTEST_SKIP() << "this build has no device kernels (no nvcc)";
  }
};

TEST_F(GpuProfile, TheTracedCallKeepsEachKernelWithGridBlockAndDuration) {
  CudaStream s;
  const size_t bytes = 64u << 20;
  DeviceBuffer a(bytes), b(bytes);
  const harness::CallTrace t = trace_call(0, s.get(), json::object(), [&] {
    launch_copy(b.get(), a.get(), bytes, s.get());
    launch_spin(50'000, s.get());
  });
  ASSERT_EQ(t.activities.size(), 2u);
  EXPECT_EQ(t.timer, "cupti");
  for (const auto& k : t.activities) {
    EXPECT_EQ(k.kind, "kernel");
    EXPECT_GT(k.grid[0], 0u);
    EXPECT_GT(k.block[0], 0u);
  }
  const json j = harness::kernel_breakdown(t, 0.1);
  EXPECT_EQ(j["kernel_count"], 2);
  // The spin is the later kernel: 50 us within 10% (the launch gate keeps the host out).
  EXPECT_NEAR(j["activities"][1]["duration_us"].get<double>(), 50.0, 5.0) << j.dump();
  EXPECT_GE(j["host_wall_us"].get<double>(), j["busy_us"].get<double>()) << j.dump();
  EXPECT_LT(j["gaps_us"].get<double>(), 20.0) << j.dump();
}

TEST_F(GpuProfile, RangeProfilerCountsTheBytesACopyMoves) {
  CudaStream s;
  const size_t bytes = 256u << 20;  // 5 x the H100's L2: DRAM traffic dominates
  DeviceBuffer a(bytes), b(bytes);
  std::string why;
  const auto c = count_call(0, s.get(), json::object(),
                            [&] { launch_copy(b.get(), a.get(), bytes, s.get()); }, &why);
  if (!c && why.find("INSUFFICIENT_PRIVILEGES") != std::string::npos) GTEST_SKIP() << why;
  ASSERT_TRUE(c) << why;
  ASSERT_EQ(c->kernels.size(), 1u);
  const json j = harness::counter_summary(*c);
  const json& k = j["kernels"][0];
  ASSERT_TRUE(k["dram_read_bytes"].is_number()) << j.dump();
  EXPECT_NEAR(k["dram_read_bytes"].get<double>(), double(bytes), 0.05 * double(bytes)) << j.dump();
  // Writes still in the L2 when the kernel ends are written back after it: up to the
  // L2's size fewer than the copy's bytes.
  EXPECT_GT(k["dram_write_bytes"].get<double>(), 0.7 * double(bytes)) << j.dump();
  EXPECT_LT(k["dram_write_bytes"].get<double>(), 1.05 * double(bytes)) << j.dump();
  EXPECT_GT(k["duration_ns"].get<double>(), 0.0);
  EXPECT_TRUE(k["fp32_flops"].is_null() || k["fp32_flops"].get<double>() < 1e6) << j.dump();
}

}  // namespace
}  // namespace solbench::gpu
