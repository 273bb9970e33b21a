// `eval --profile`'s GPU side (harness/timing/gpu/call_profile.h) on a CUDA device,
// skipped cleanly without one: the traced call keeps each kernel with its grid, block
// and duration; the counted call reads the DRAM bytes a copy must move; `eval
// --profile` through the binary profiles the reference's call beside the solution's.
// Tests whose name has "Profiler" take ctest's counters lock (CMakeLists.txt) and run
// in a process of their own, as the range profiler allows one session per context.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include <cuda_runtime_api.h>

#include "gpu_test_util.h"
#include "test_support.h"
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

TEST_F(GpuProfile, ProfilerPmSamplingCountsWhatACopyWritesWhileItRuns) {
  // PM sampling (sample_call_dram) counts the bytes while the copy runs: all of its
  // reads, and its writes but those still in the L2 when it ends (at most the L2's
  // size), which kernel replay counts too, written back after the kernel.
  CudaStream s;
  const size_t bytes = 256u << 20;
  DeviceBuffer a(bytes), b(bytes);
  const auto copy = [&] { launch_copy(b.get(), a.get(), bytes, s.get()); };
  std::string why;
  const auto replay = count_call(0, s.get(), json::object(), copy, &why);
  if (!replay && why.find("INSUFFICIENT_PRIVILEGES") != std::string::npos) GTEST_SKIP() << why;
  ASSERT_TRUE(replay) << why;
  const auto sampled = sample_call_dram(0, s.get(), json::object(), 0.1, copy, &why);
  ASSERT_TRUE(sampled) << why;
  cudaDeviceProp prop{};
  ASSERT_EQ(cudaGetDeviceProperties(&prop, 0), cudaSuccess);
  const double l2 = double(prop.l2CacheSize);
  EXPECT_NEAR(sampled->read_bytes, double(bytes), 0.05 * double(bytes));
  EXPECT_LE(sampled->write_bytes, 1.02 * double(bytes));
  EXPECT_GE(sampled->write_bytes, double(bytes) - 1.05 * l2);
  EXPECT_GT(sampled->samples, 20u);  // a copy of 512 MiB takes more than 100 us
  EXPECT_DOUBLE_EQ(sampled->interval_ns, 1000.0);
  const double replay_writes = replay->kernels.at(0).values.at("dram__bytes_write.sum");
  EXPECT_LE(sampled->write_bytes, replay_writes * 1.02)
      << "sampled " << sampled->write_bytes << " replay " << replay_writes;
}

// `eval --profile` on the bundled CUDA RMSNorm (batch 8192, 64 MiB in and out): the
// reference's call is profiled where T_ref is timed (the reference worker; with
// SOLBENCH_REFERENCE_WORKER=0 the solution's worker), and the trace has it under
// solbench_profile.reference beside the solution's, with its own position and part
// of the verdict line. The eval's workers read counters: "Profiler" in the name.
TEST_F(GpuProfile, ProfilerOnEvalProfilesTheReferenceBesideTheSolution) {
  namespace fs = std::filesystem;
  solbench::testing::TempDir dir;
  const fs::path problem = fs::path(SOLBENCH_SOURCE_DIR) / "problems/001_rmsnorm_llama3_8b_h4096";
  const auto eval = [&](const std::string& env) {
    const fs::path out = dir.path() / "out.json";
    const std::string cmd =
        env + " SOLBENCH_CACHE_DIR='" + (dir.path() / "cache").string() + "' '" + SOLBENCH_BINARY +
        "' eval '" + problem.string() + "' --solution '" +
        (problem / "solutions/cuda_rmsnorm.json").string() +
        "' -w 87d2b9db --rounds 1 --time-budget-ms 100 --device cuda:0 --no-db --no-baseline "
        "--profile --json >'" + out.string() + "'";
    const int status = std::system(cmd.c_str());
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << cmd;
    return json::parse(solbench::testing::read(out), nullptr, false);
  };
  for (const std::string env : {"SOLBENCH_REFERENCE_WORKER=1", "SOLBENCH_REFERENCE_WORKER=0"}) {
    SCOPED_TRACE(env);
    const json doc = eval(env);
    ASSERT_TRUE(doc.is_object());
    const json& ev = doc["results"][0]["evaluation"];
    ASSERT_EQ(ev["status"], "PASSED") << ev.dump().substr(0, 2000);
    const json& p = ev["solbench_profile"];
    ASSERT_TRUE(p.value("available", false)) << p.dump().substr(0, 2000);
    ASSERT_TRUE(p.contains("reference")) << p.dump().substr(0, 2000);
    const json& r = p["reference"];
    ASSERT_TRUE(r.value("available", false)) << r.dump().substr(0, 2000);
    // Torch's eager RMSNorm: its own kernels, none of the solution's.
    EXPECT_GE(r["kernel_count"].get<int>(), 1) << r.dump().substr(0, 2000);
    for (const json& a : r["activities"])
      EXPECT_EQ(a.value("name", "").find("rmsnorm_kernel"), std::string::npos) << a.dump();
    bool solution_kernel = false;
    for (const json& a : p["activities"])
      solution_kernel |= a.value("name", "").find("rmsnorm_kernel") != std::string::npos;
    EXPECT_TRUE(solution_kernel) << p["activities"].dump();
    // Its position is over T_ref.
    const double t_ref_us = ev["performance"]["reference_latency_ms"].get<double>() * 1e3;
    ASSERT_TRUE(r.contains("roofline")) << r.dump().substr(0, 2000);
    EXPECT_NEAR(r["roofline"]["t_k_us"].get<double>(), t_ref_us, 1e-6 * t_ref_us);
    const std::string verdict = p["verdict"].get<std::string>();
    EXPECT_NE(verdict.find("; reference: "), std::string::npos) << verdict;
    EXPECT_EQ(verdict.find("reference: no profile"), std::string::npos) << verdict;
    EXPECT_TRUE(ev["solbench_phases_ms"].contains("reference_profile_ms"));
    if (r["counters"].value("allowed", false)) {
      // The reference reads the 64 MiB input at least once.
      EXPECT_GT(r["counters"]["total"]["dram_read_bytes"].get<double>(), 0.9 * 64 * 1024 * 1024)
          << r["counters"].dump().substr(0, 2000);
      EXPECT_TRUE(r["roofline"]["bytes_over_bound"].is_number()) << r["roofline"].dump();
      EXPECT_NE(verdict.find("the minimum bytes"), std::string::npos) << verdict;
    } else {
      std::cout << "counters not allowed: " << r["counters"].dump() << "\n";
    }
    std::cout << env << ": " << verdict << "\n";
  }
}

}  // namespace
}  // namespace solbench::gpu
