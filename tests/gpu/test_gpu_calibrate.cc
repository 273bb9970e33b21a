// `hw calibrate`'s GPU micro-benchmarks (harness/timing/gpu/calibrate_gpu.h) in
// quick mode on a CUDA device, skipped cleanly without one: every ceiling is
// positive and none is above the device's own physical limits by more than a
// measuring error; the launch floor is short.
#include <gtest/gtest.h>

#include "gpu_test_util.h"
#include "harness/timing/gpu/calibrate_gpu.h"
#include "harness/timing/gpu/device.h"
#include "harness/timing/gpu/gpu_kernels.h"

namespace solbench::gpu {
namespace {

TEST(GpuCalibrate, QuickCeilingsArePositiveAndBelowThePhysicalLimits) {
  SB_REQUIRE_GPU();
  if (!kernels_available()) GTEST_SKIP() << "this build has no device kernels (no nvcc)";
  GpuCalibrationOptions o;
  o.quick = true;
  o.budget_s = 0.05;
  const GpuCeilings c = measure_gpu_ceilings(0, o);
  const DeviceInfo info = query_device(0);
  EXPECT_EQ(c.sm_count, info.sm_count);
  EXPECT_FALSE(c.uuid.empty());
  EXPECT_GT(c.dram_gbs, 10);
  // The memory clock's peak (2 transfers per clock x bus width), where known, with
  // 10% for the copy's L2 hits at the edges of a quick-mode buffer.
  if (info.peak_dram_bytes_per_s() > 0) {
    EXPECT_LT(c.dram_gbs * 1e9, 1.1 * info.peak_dram_bytes_per_s());
  }
  // FP32: at most 128 FMA lanes per SM per clock (2 FLOP each) at the maximum clock.
  EXPECT_GT(c.fp32_tflops, 0.1);
  if (info.sm_clock_max_khz > 0) {
    EXPECT_LT(c.fp32_tflops * 1e12, 1.05 * 256.0 * info.sm_count * info.sm_clock_max_khz * 1e3);
  }
  EXPECT_GT(c.sfu_tops, 0.01);
  EXPECT_LT(c.sfu_tops, c.fp32_tflops);  // 16 SFU results per clock against 256 FLOP
  EXPECT_GT(c.launch_us, 0);
  EXPECT_LT(c.launch_us, 100);
  // cuBLASLt present (the toolkit's): BF16 measured on compute capability 8.0 and up.
  if (info.cc_major >= 8 && !c.detail.contains("gemm_skipped")) {
    ASSERT_TRUE(c.tensor_tflops.count("bf16")) << c.detail.dump();
    EXPECT_GT(c.tensor_tflops.at("bf16"), c.fp32_tflops);  // tensor cores beat the FMA pipes
  }
  EXPECT_TRUE(c.clocks.contains("before")) << c.clocks.dump();
}

}  // namespace
}  // namespace solbench::gpu
