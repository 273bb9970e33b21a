// Every bundled problem, traced through the embedded Python: finite positive
// T_SOL and no uncosted operators on H100 SXM; and the byte refinements on
// small traced references. Skips where torch is missing.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "bridge/python.h"
#include "core/problem.h"
#include "sol/analysis.h"
#include "sol_test_util.h"

namespace solbench::sol {
namespace {

TEST(BundledProblems, FinitePositiveSolWithoutUncostedOps) {
  if (!bridge::python_available() || bridge::torch_version().empty())
    GTEST_SKIP() << "embedded Python with torch is not available";
  setenv("SOLBENCH_CACHE_DIR", (std::filesystem::temp_directory_path() / "solbench-sol-test").c_str(), 1);
  HardwareModel h = testing::model("h100_sxm");
  auto dirs = find_problem_dirs(std::string(SOLBENCH_SOURCE_DIR) + "/problems");
  ASSERT_GE(dirs.size(), 8u);
  AnalysisOptions opt;
  opt.use_cache = false;
  for (auto& d : dirs) {
    Diagnostics diags;
    Problem p = load_problem(problem_paths(d), diags);
    ASSERT_TRUE(diags.empty()) << diags.str();
    // The smallest and the largest workload of each problem.
    for (size_t i : {size_t(0), p.workloads.size() - 1}) {
      json r = analyse_workload(p, i, h, opt);
      ASSERT_EQ(r["status"], "ok") << d << " " << r.dump().substr(0, 800);
      double t = r["time_us"]["sol"].get<double>();
      EXPECT_TRUE(std::isfinite(t) && t > 0) << d << " T_SOL " << t;
      EXPECT_TRUE(r["uncosted"].empty()) << d << " uncosted " << r["uncosted"].dump();
    }
  }
}

// A one-workload problem in a temporary folder: inputs/outputs as definition
// JSON, axes of the single workload.
Problem temp_problem(const std::string& name, const json& inputs, const json& outputs,
                     const std::string& reference, const json& axes) {
  std::string tmpl = (std::filesystem::temp_directory_path() / ("solbench-sol-" + name + "-XXXXXX")).string();
  std::filesystem::path dir = ::mkdtemp(tmpl.data());
  json ax = json::object();
  for (auto& [k, v] : axes.items()) ax[k] = {{"type", "var"}};
  json def = {{"name", name}, {"op_type", "test"}, {"axes", ax}, {"inputs", inputs},
              {"outputs", outputs}, {"reference", reference}};
  std::ofstream(dir / "definition.json") << def.dump(1);
  json in_src = json::object();
  for (auto& [k, v] : inputs.items()) in_src[k] = {{"type", "random"}};
  std::ofstream(dir / "workload.jsonl")
      << json{{"uuid", name + "-0"}, {"axes", axes}, {"inputs", in_src},
              {"tolerance", {{"max_atol", 0.01}, {"max_rtol", 0.01}}}}
             .dump()
      << "\n";
  Diagnostics diags;
  Problem p = load_problem(problem_paths(dir), diags);
  EXPECT_TRUE(diags.empty()) << diags.str();
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);  // the problem is in memory now
  return p;
}

TEST(TracedBytes, KvCacheUpdatedInPlaceCountsTheWrittenSlot) {
  if (!bridge::python_available() || bridge::torch_version().empty())
    GTEST_SKIP() << "embedded Python with torch is not available";
  // cache[2,4,1024,64] fp32 = 2,097,152 B; new[2,4,1,64] = 2,048 B written
  // into position 7 and the cache returned. Boundary: 2,097,152 (read) + 2,048
  // + 2,097,152 (written) = 4,196,352 B. In place a kernel reads new and writes
  // the slot: 2,048 + 2,048 = 4,096 B -> 0.512 ns on B200 (8 TB/s).
  json shape_c = {"b", "h", "s", "d"}, shape_n = {"b", "h", "one", "d"};
  Problem p = temp_problem(
      "kv_inplace", {{"cache", {{"shape", shape_c}, {"dtype", "float32"}}}, {"new", {{"shape", shape_n}, {"dtype", "float32"}}}},
      {{"cache_out", {{"shape", shape_c}, {"dtype", "float32"}}}},
      "import torch\n\ndef run(cache, new):\n    cache[:, :, 7:8] = new\n    return cache\n",
      {{"b", 2}, {"h", 4}, {"s", 1024}, {"d", 64}, {"one", 1}});
  AnalysisOptions opt;
  opt.use_cache = false;
  json r = analyse_workload(p, 0, testing::model("b200"), opt);
  ASSERT_EQ(r["status"], "ok") << r.dump().substr(0, 800);
  EXPECT_TRUE(r["uncosted"].empty()) << r["uncosted"].dump();
  EXPECT_NEAR(r["bytes"]["boundary_mb"].get<double>(), 4.196352, 1e-9);
  EXPECT_NEAR(r["bytes"]["min_mb"].get<double>(), 0.004096, 1e-9);
  // The written slot (2,048 B) can stay in the L2: DRAM moves the 2,048 B read.
  EXPECT_NEAR(r["bytes"]["l2_deferred_mb"].get<double>(), 0.002048, 1e-9);
  EXPECT_NEAR(r["time_us"]["sol"].get<double>(), 0.000256, 1e-9);
}

TEST(TracedBytes, BroadcastViewOutputCountsDistinctElements) {
  if (!bridge::python_available() || bridge::torch_version().empty())
    GTEST_SKIP() << "embedded Python with torch is not available";
  // out[256,4096] fp32 = (b[4096] * 2).expand(256, 4096): 4,096 distinct values.
  // x[256,4096] only lends its shape (no operator reads it: 0 B). Minimum
  // bytes: b 16,384 + out 16,384 = 32,768 B -> 4.096 ns on B200; boundary
  // 4,194,304 (x) + 16,384 + 4,194,304 = 8,404,992 B.
  Problem p = temp_problem(
      "bcast_out", {{"x", {{"shape", {"n", "d"}}, {"dtype", "float32"}}}, {"b", {{"shape", {"d"}}, {"dtype", "float32"}}}},
      {{"y", {{"shape", {"n", "d"}}, {"dtype", "float32"}}}},
      "import torch\n\ndef run(x, b):\n    return (b * 2).expand(x.shape[0], -1)\n", {{"n", 256}, {"d", 4096}});
  AnalysisOptions opt;
  opt.use_cache = false;
  json r = analyse_workload(p, 0, testing::model("b200"), opt);
  ASSERT_EQ(r["status"], "ok") << r.dump().substr(0, 800);
  EXPECT_NEAR(r["bytes"]["boundary_mb"].get<double>(), 8.404992, 1e-9);
  EXPECT_NEAR(r["bytes"]["min_out_mb"].get<double>(), 0.016384, 1e-9);
  EXPECT_NEAR(r["bytes"]["min_mb"].get<double>(), 0.032768, 1e-9);
  // The 16,384 B written fit in the L2: 16,384 B through DRAM -> 2.048 ns.
  EXPECT_NEAR(r["time_us"]["sol"].get<double>(), 0.002048, 1e-9);
}

}  // namespace
}  // namespace solbench::sol
