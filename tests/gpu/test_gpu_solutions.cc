// The bundled GPU solutions (problems/*/solutions/{cuda_,torch_gpu_}*.json and the
// validation solutions under tests/gpu/problems): each parses, names its problem's
// definition, embeds the current text of its source file, and — native CUDA ones —
// compiles with nvcc for Hopper (sm_90a) here, without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "core/definition.h"
#include "core/solution.h"
#include "harness/build/build.h"

namespace fs = std::filesystem;

namespace solbench {
namespace {

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

bool is_gpu_solution(const fs::path& p) {
  const std::string n = p.filename().string();
  return p.extension() == ".json" &&
         (n.rfind("cuda_", 0) == 0 || n.rfind("torch_gpu_", 0) == 0 || n.rfind("triton_", 0) == 0);
}

std::vector<fs::path> gpu_solutions() {
  std::vector<fs::path> out;
  for (const fs::path& root : {fs::path(SOLBENCH_SOURCE_DIR) / "problems",
                              fs::path(SOLBENCH_SOURCE_DIR) / "tests/gpu/problems"})
    for (const auto& problem : fs::directory_iterator(root))
      if (fs::is_directory(problem.path() / "solutions"))
        for (const auto& f : fs::directory_iterator(problem.path() / "solutions"))
          if (is_gpu_solution(f.path())) out.push_back(f.path());
  std::sort(out.begin(), out.end());
  return out;
}

TEST(GpuSolutions, EveryBundledProblemHasANativeCudaAndAPytorchSolution) {
  for (const auto& problem : fs::directory_iterator(fs::path(SOLBENCH_SOURCE_DIR) / "problems")) {
    if (!fs::exists(problem.path() / "definition.json")) continue;
    bool cuda = false, torch = false;
    for (const auto& s : gpu_solutions()) {
      if (s.parent_path().parent_path() != problem.path()) continue;
      cuda |= s.filename().string().rfind("cuda_", 0) == 0;
      torch |= s.filename().string().rfind("torch_gpu_", 0) == 0;
    }
    EXPECT_TRUE(cuda) << problem.path() << " has no cuda_*.json solution";
    EXPECT_TRUE(torch) << problem.path() << " has no torch_gpu_*.json solution";
  }
}

TEST(GpuSolutions, ParseMatchTheirDefinitionAndEmbedTheirSource) {
  const auto sols = gpu_solutions();
  ASSERT_GE(sols.size(), 20u);
  for (const fs::path& p : sols) {
    SCOPED_TRACE(p.string());
    Diagnostics d;
    Solution s = load_solution(p, d);
    ASSERT_TRUE(d.empty()) << d.str();
    Diagnostics dd;
    Definition def = load_definition(p.parent_path().parent_path() / "definition.json", dd);
    ASSERT_TRUE(dd.empty()) << dd.str();
    EXPECT_EQ(s.definition, def.name);
    ASSERT_EQ(s.sources.size(), 1u);
    // The source beside the JSON (or, for the shared GEMM, in problem 004) must be
    // what the JSON embeds: tests/gpu/make_gpu_solutions.py regenerates them.
    fs::path src = p.parent_path() / s.sources[0].path;
    if (!fs::exists(src))
      src = fs::path(SOLBENCH_SOURCE_DIR) /
            "problems/004_gemm_bf16_llama3_8b_qkv_proj/solutions" / s.sources[0].path;
    ASSERT_TRUE(fs::exists(src)) << src;
    EXPECT_EQ(slurp(src), s.sources[0].content)
        << "stale JSON: run python3 tests/gpu/make_gpu_solutions.py";
    if (s.spec.has_language(Language::CudaCpp)) {
      EXPECT_EQ(s.spec.binding, Binding::Native);
    } else if (p.filename().string().rfind("triton_", 0) == 0) {
      EXPECT_TRUE(s.spec.has_language(Language::Triton));
    } else {
      EXPECT_TRUE(s.spec.has_language(Language::Pytorch));
    }
  }
}

TEST(GpuSolutions, NativeCudaSolutionsCompileForHopper) {
  const fs::path cache = fs::path(SOLBENCH_TEST_BUILD_DIR) / "gpu_solution_build_cache";
  fs::create_directories(cache);
  for (const fs::path& p : gpu_solutions()) {
    Diagnostics d;
    Solution s = load_solution(p, d);
    if (!s.spec.has_language(Language::CudaCpp)) continue;
    SCOPED_TRACE(p.string());
    harness::BuildOptions o;
    o.cache_dir = cache;
    o.cuda_arch = "90a";
    o.timeout = std::chrono::seconds(300);
    harness::BuildResult r = harness::build_solution(s, o);
    if (r.status == harness::BuildStatus::Unsupported) GTEST_SKIP() << r.log;
    EXPECT_TRUE(r.ok()) << harness::build_status_name(r.status) << "\n" << r.log;
    EXPECT_TRUE(r.abi_symbol);
    EXPECT_EQ(r.entry_symbol, s.spec.entry_function);
  }
}

}  // namespace
}  // namespace solbench
