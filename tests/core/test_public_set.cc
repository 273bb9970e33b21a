// Every problem of the public SOL-ExecBench subset (beside the checkout) and
// every problem bundled in problems/ must validate, and must survive a write
// and re-read unchanged.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "core/problem.h"

namespace solbench {
namespace {

namespace fs = std::filesystem;

struct SetResult {
  size_t problems = 0;
  size_t workloads = 0;
};

SetResult validate_all(const std::vector<fs::path>& dirs) {
  SetResult r;
  for (const auto& dir : dirs) {
    Diagnostics diags;
    Problem p = load_problem(problem_paths(dir), diags);
    EXPECT_TRUE(diags.empty()) << dir.string() << ":\n" << diags.str();
    // Clean under `validate --strict` too: no workload names an input its
    // definition lacks (such entries would only be warned about and dropped).
    EXPECT_TRUE(diags.warnings().empty()) << dir.string() << ": expected no warnings:\n"
                                          << diags.str();
    for (size_t i = 0; i < p.resolved.size(); ++i)
      EXPECT_TRUE(p.resolved[i]) << dir.string() << " workload " << p.workloads[i].uuid;
    // Round trip: write and re-read the definition and every workload.
    Diagnostics again;
    EXPECT_EQ(parse_definition(to_json(p.definition), "written", again), p.definition) << dir;
    for (const auto& w : p.workloads)
      EXPECT_EQ(parse_workload(to_json(w), "written", 1, again), w) << dir << " " << w.uuid;
    EXPECT_TRUE(again.empty()) << again.str();
    ++r.problems;
    r.workloads += p.workloads.size();
  }
  return r;
}

TEST(PublicSet, EveryProblemValidates) {
  const fs::path root = SOLBENCH_PUBLIC_DIR;
  if (!fs::is_directory(root)) GTEST_SKIP() << "public set not found at " << root;
  auto dirs = find_problem_dirs(root);
  ASSERT_GE(dirs.size(), 90u) << "expected the 94 public problems under " << root;
  SetResult r = validate_all(dirs);
  std::printf("public set: %zu problems, %zu workloads\n", r.problems, r.workloads);
}

TEST(BundledProblems, EveryProblemValidates) {
  const fs::path root = fs::path(SOLBENCH_SOURCE_DIR) / "problems";
  auto dirs = fs::is_directory(root) ? find_problem_dirs(root) : std::vector<fs::path>{};
  if (dirs.empty()) GTEST_SKIP() << "no problems under " << root;
  SetResult r = validate_all(dirs);
  std::printf("bundled problems: %zu problems, %zu workloads\n", r.problems, r.workloads);
}

}  // namespace
}  // namespace solbench
