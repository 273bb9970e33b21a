// Runs every case of the malformed-input corpus (tests/data/invalid/<case>/):
// validation must fail, and every line of the case's expect.txt must occur in
// the diagnostics, so each message keeps its file, line and JSON path.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/problem.h"
#include "core/solution.h"
#include "core/trace.h"

namespace solbench {
namespace {

namespace fs = std::filesystem;

const fs::path kCorpus = fs::path(SOLBENCH_SOURCE_DIR) / "tests/data/invalid";

std::vector<std::string> case_names() {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(kCorpus, ec))
    if (e.is_directory()) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

// Validates whatever the case folder holds, the way `solbench validate` would.
Diagnostics validate_case(const fs::path& dir) {
  Diagnostics diags;
  const bool has_def = fs::exists(dir / "definition.json");
  const bool has_wl = fs::exists(dir / "workload.jsonl");
  if (has_def && has_wl) {
    load_problem(problem_paths(dir), diags);
  } else if (has_def) {
    load_definition(dir / "definition.json", diags);
  } else if (has_wl) {
    load_workloads(dir / "workload.jsonl", diags);
  }
  if (fs::exists(dir / "solution.json")) load_solution(dir / "solution.json", diags);
  if (fs::exists(dir / "trace.jsonl")) load_traces(dir / "trace.jsonl", diags);
  return diags;
}

std::vector<std::string> expected_fragments(const fs::path& dir) {
  std::vector<std::string> out;
  std::ifstream in(dir / "expect.txt");
  for (std::string line; std::getline(in, line);) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    if (!line.empty()) out.push_back(line);
  }
  return out;
}

TEST(InvalidCorpus, HasEnoughCases) { EXPECT_GE(case_names().size(), 45u); }

class InvalidCase : public ::testing::TestWithParam<std::string> {};

TEST_P(InvalidCase, FailsWithExpectedMessages) {
  const fs::path dir = kCorpus / GetParam();
  auto fragments = expected_fragments(dir);
  ASSERT_FALSE(fragments.empty()) << "no expect.txt in " << dir;
  Diagnostics diags = validate_case(dir);
  ASSERT_FALSE(diags.empty()) << "validation passed for " << dir;
  const std::string text = diags.str();
  for (const auto& f : fragments)
    EXPECT_NE(text.find(f), std::string::npos) << "expected: " << f << "\nin:\n" << text;
}

INSTANTIATE_TEST_SUITE_P(Corpus, InvalidCase, ::testing::ValuesIn(case_names()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string name = info.param;
                           for (char& c : name)
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return name;
                         });

}  // namespace
}  // namespace solbench
