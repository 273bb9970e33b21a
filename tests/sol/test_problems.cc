// Every bundled problem, traced through the embedded Python: finite positive
// T_SOL and no uncosted operators on H100 SXM. Skips where torch is missing.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>

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

}  // namespace
}  // namespace solbench::sol
