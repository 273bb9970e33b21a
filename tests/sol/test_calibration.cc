// Measured hardware models (sol/calibration.h, `solbench hw calibrate`): the
// model file's round trip, T_attainable's roofline on measured ceilings (by hand),
// the cache keyed by GPU UUID and host, and the command end to end on the CPU
// (the GPU part runs in .devrun/calibrate.sh).
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/diagnostics.h"
#include "core/json.h"
#include "sol/calibration.h"
#include "sol/hardware.h"
#include "sol/sol_test_util.h"
#include "sol/sol_cli_util.h"
#include "test_support.h"

namespace solbench::sol {
namespace {

namespace fs = std::filesystem;
using solbench::testing::TempDir;

// An H100's calibration as `hw calibrate` would build it, with round numbers.
MeasuredCeilings h100_ceilings(const HardwareModel& ds, const std::string& uuid) {
  MeasuredCeilings c;
  c.kind = "gpu";
  c.key = uuid;
  c.display_name = "NVIDIA H100 80GB HBM3";
  c.architecture = "hopper";
  c.datasheet = &ds;
  c.units = 132;
  c.clock_mhz = 1980;
  c.l2_mb = 50;
  c.memory_gb = 85;
  c.dram_gbs = 3000;
  c.tensor_tflops = {{"bf16", 700}, {"fp8", 1300}};
  c.cuda_core_tflops = {{"fp32", 60}};
  c.sfu_tops = 4;
  c.launch_us = 2.5;
  c.provenance = {{"date", "2026-11-26T00:00:00Z"}, {"driver", "580.00"}};
  return c;
}

TEST(Calibration, ModelFileRoundTripKeepsMeasuredAndCopiedNumbersApart) {
  TempDir t;
  const HardwareModel ds = testing::model("h100_sxm");
  const HardwareModel m = write_calibration(h100_ceilings(ds, "GPU-AbC-123"), t.path());
  EXPECT_EQ(m.name, "gpu_gpu-abc-123");
  EXPECT_EQ(m.file, t.path() / "gpu_gpu-abc-123.json");
  EXPECT_TRUE(m.measured());
  EXPECT_FALSE(ds.measured());
  EXPECT_EQ(m.datasheet, "h100_sxm");
  EXPECT_EQ(m.calibration["driver"], "580.00");
  EXPECT_EQ(m.calibration["key"], "GPU-AbC-123");
  EXPECT_EQ(m.sm_count, 132);
  EXPECT_DOUBLE_EQ(m.dram_bandwidth_gbs, 3000);
  EXPECT_DOUBLE_EQ(m.launch_us, 2.5);
  EXPECT_DOUBLE_EQ(m.tensor_tflops.at("bf16"), 700);
  EXPECT_DOUBLE_EQ(m.tensor_tflops.at("fp8"), 1300);
  // Not measured: the datasheet's number, with its URL.
  EXPECT_DOUBLE_EQ(m.tensor_tflops.at("fp64"), ds.tensor_tflops.at("fp64"));
  EXPECT_EQ(m.field_sources.at("tensor_tflops.fp64"), ds.field_sources.at("tensor_tflops.fp64"));
  EXPECT_EQ(m.field_sources.at("tensor_tflops.bf16").rfind("measured:", 0), 0u);
  // SFU ops per clock per SM are stored so that sfu_ops() gives back the rate.
  EXPECT_NEAR(m.sfu_ops(), 4e12, 1e3);
  // The bundled models are not measured and have no launch.
  EXPECT_DOUBLE_EQ(ds.launch_us, 0);
}

TEST(Calibration, MeasuredSourcesAreRefusedInADatasheetModel) {
  TempDir t;
  const HardwareModel ds = testing::model("h100_sxm");
  json j = calibration_json(h100_ceilings(ds, "GPU-1"));
  j.erase("calibration");
  const fs::path f = t.path() / (j["name"].get<std::string>() + ".json");
  std::ofstream(f) << j.dump();
  try {
    load_hardware(f);
    FAIL() << "a datasheet model with a measured: source loaded";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("http"), std::string::npos) << e.what();
  }
}

TEST(Calibration, AttainableIsTheRooflineOnMeasuredCeilingsPlusOneLaunch) {
  TempDir t;
  const HardwareModel ds = testing::model("h100_sxm");
  const HardwareModel m = write_calibration(h100_ceilings(ds, "GPU-1"), t.path());
  // 1.4 TFLOP of BF16 at 700 TFLOP/s: 2 ms; 3 GB at 3000 GB/s: 1 ms; plus 2.5 us.
  Bound b;
  b.work.tensor_flops[size_t(MathClass::BF16)] = 1.4e12;
  b.dram_bytes = 3e9;
  EXPECT_NEAR(attainable_seconds(b, m), 2e-3 + 2.5e-6, 1e-12);
  // Memory-bound: 6 GB -> 2 ms; 0.7 TFLOP -> 1 ms.
  b.work.tensor_flops[size_t(MathClass::BF16)] = 0.7e12;
  b.dram_bytes = 6e9;
  EXPECT_NEAR(attainable_seconds(b, m), 2e-3 + 2.5e-6, 1e-12);
  // FP32 CUDA-core work at the measured 60 TFLOP/s: 1.2 TFLOP -> 20 ms.
  b.work.cuda_flops[size_t(MathClass::FP32)] = 1.2e12;
  EXPECT_NEAR(attainable_seconds(b, m), 20e-3 + 2.5e-6, 1e-12);
  // The datasheet's own roofline of the same work is faster (the bound).
  const Bound sol = roofline(b.work, 0, b.dram_bytes, 0, ds, 0);
  EXPECT_LT(sol.t_sol, attainable_seconds(b, m));

  // From an analysis result (what eval has): the same numbers in its units.
  const json r = {{"status", "ok"},
                  {"work", {{"tensor_tflop", {{"bf16", 1.4}}}, {"cuda_tflop", json::object()},
                            {"sfu_gop", 0}, {"int_gop", 0}, {"unfused_mb", 0}}},
                  {"bytes", {{"dram_mb", 3000}}}};
  EXPECT_NEAR(*attainable_from_analysis(r, m), 2e-3 + 2.5e-6, 1e-12);
  EXPECT_FALSE(attainable_from_analysis({{"status", "error"}}, m));
}

TEST(Calibration, CacheIsKeyedByGpuUuidAndByHost) {
  TempDir t;
  const HardwareModel ds = testing::model("h100_sxm");
  MeasuredCeilings a = h100_ceilings(ds, "GPU-aaaa"), b = h100_ceilings(ds, "GPU-bbbb");
  b.dram_gbs = 2500;
  write_calibration(a, t.path());
  write_calibration(b, t.path());
  ASSERT_TRUE(find_gpu_calibration("GPU-aaaa", t.path()));
  ASSERT_TRUE(find_gpu_calibration("GPU-bbbb", t.path()));
  EXPECT_DOUBLE_EQ(find_gpu_calibration("GPU-aaaa", t.path())->dram_bandwidth_gbs, 3000);
  EXPECT_DOUBLE_EQ(find_gpu_calibration("GPU-bbbb", t.path())->dram_bandwidth_gbs, 2500);
  EXPECT_FALSE(find_gpu_calibration("GPU-cccc", t.path()));
  EXPECT_FALSE(find_gpu_calibration("", t.path()));
  EXPECT_FALSE(find_cpu_calibration("somehost", t.path()));
  // A file that does not parse is skipped, not fatal.
  std::ofstream(t.path() / "gpu_broken.json") << "{";
  EXPECT_EQ(load_calibrations(t.path()).size(), 2u);
}

// ---- the command --------------------------------------------------------------

using solbench::sol::testing::CliRun;
using solbench::sol::testing::solbench;

TEST(HwCalibrate, CpuEndToEndWritesACachedModelThatListAndShowName) {
  TempDir t;
  // No calibration yet: --arch cpu says how to make one (a usage error).
  const CliRun none = solbench("hw show cpu", t.path());
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_HAS(none.err, "hw calibrate --device cpu");

  const CliRun r = solbench("hw calibrate --device cpu --quick --json", t.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_FALSE(j["cached"].get<bool>());
  EXPECT_EQ(j["calibration"]["kind"], "cpu");
  // Plausible for any machine this runs on: 0.1 GB/s to 10 TB/s, 0.1 GFLOP/s to
  // 100 TFLOP/s, FP64 not faster than FP32.
  const double gbs = j["dram_bandwidth_gbs"], fp32 = j["cuda_core_tflops"]["fp32"],
               fp64 = j["cuda_core_tflops"]["fp64"];
  EXPECT_GT(gbs, 0.1);
  EXPECT_LT(gbs, 1e4);
  EXPECT_GT(fp32, 1e-4);
  EXPECT_LT(fp32, 100);
  EXPECT_GT(fp64, 0);
  EXPECT_LE(fp64, fp32 * 1.2);
  EXPECT_GE(j["sm_count"].get<int>(), 1);
  const std::string name = j["name"];
  EXPECT_EQ(name.rfind("cpu_", 0), 0u);
  EXPECT_TRUE(fs::exists(t.path() / "cache" / "hardware" / (name + ".json")));

  // The second call reuses it; --force measures again.
  const CliRun again = solbench("hw calibrate --device cpu --quick --json", t.path());
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_TRUE(json::parse(again.out)["cached"].get<bool>());
  EXPECT_EQ(json::parse(again.out)["calibration"]["date"], j["calibration"]["date"]);
  const CliRun forced = solbench("hw calibrate --device cpu --quick --force --json", t.path());
  ASSERT_EQ(forced.exit_code, 0) << forced.err;
  EXPECT_FALSE(json::parse(forced.out)["cached"].get<bool>());

  const CliRun list = solbench("hw list", t.path());
  ASSERT_EQ(list.exit_code, 0) << list.err;
  EXPECT_HAS(list.out, "measured (solbench hw calibrate)");
  EXPECT_HAS(list.out, name);
  EXPECT_HAS(list.out, "h100_sxm");  // the bundled ones still there
  const CliRun show = solbench("hw show cpu", t.path());
  ASSERT_EQ(show.exit_code, 0) << show.err;
  EXPECT_HAS(show.out, "measured");
  EXPECT_HAS(show.out, "dram_bandwidth_gbs");
  EXPECT_HAS(show.out, "cuda_core_tflops.fp32");
}

TEST(HwCalibrate, ShowPutsTheDatasheetBesideAGpuCalibration) {
  TempDir t;
  const HardwareModel ds = testing::model("h100_sxm");
  const HardwareModel m = write_calibration(h100_ceilings(ds, "GPU-1"), t.path() / "cache" / "hardware");
  for (const std::string& which : {std::string("h100_sxm"), m.name}) {
    const CliRun r = solbench("hw show " + which, t.path());
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_HAS(r.out, "h100_sxm");
    EXPECT_HAS(r.out, "measured");
    // bf16 measured 700 of the datasheet's 989.4: ratio 0.71; DRAM 3000 of 3350: 0.90.
    EXPECT_HAS(r.out, "0.71");
    EXPECT_HAS(r.out, "0.90");
    EXPECT_HAS(r.out, "launch_us");
  }
  const CliRun j = solbench("hw show h100_sxm --json", t.path());
  ASSERT_EQ(j.exit_code, 0) << j.err;
  EXPECT_EQ(json::parse(j.out)["measured"]["name"], m.name);
}

TEST(HwCalibrate, ListShowsAFullGpuUuidNameIn100Columns) {
  TempDir t;
  const HardwareModel ds = testing::model("h100_sxm");
  const HardwareModel m = write_calibration(
      h100_ceilings(ds, "GPU-12345678-1234-1234-1234-123456789abc"), t.path() / "cache" / "hardware");
  EXPECT_EQ(m.name, "gpu_gpu-12345678-1234-1234-1234-123456789abc");
  const CliRun r = solbench("hw list", t.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_HAS(r.out, m.name + " ");  // whole, not cut
  EXPECT_HAS(r.out, "2026-11-26");
  EXPECT_HAS(r.out, "2.50us");
  size_t start = 0;
  for (size_t nl; (nl = r.out.find('\n', start)) != std::string::npos; start = nl + 1)
    EXPECT_LE(nl - start, 100u) << r.out.substr(start, nl - start);
  // --arch takes the name or the UUID.
  EXPECT_EQ(solbench("hw show GPU-12345678-1234-1234-1234-123456789abc", t.path()).exit_code, 0);
}

TEST(HwCalibrate, AGpuWithoutOneSaysSoAndNamesTheCpu) {
  if (detect_gpu_name()) GTEST_SKIP() << "a GPU is present";
  TempDir t;
  const CliRun r = solbench("hw calibrate --device cuda:0", t.path());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_HAS(r.err, "hw calibrate --device cuda:0: no such GPU here");
  EXPECT_HAS(r.err, "--device cpu");
  EXPECT_FALSE(fs::exists(t.path() / "cache" / "hardware"));
}

}  // namespace
}  // namespace solbench::sol
