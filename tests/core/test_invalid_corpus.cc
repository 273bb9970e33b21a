// Runs every case of the malformed-input corpus (tests/data/invalid/<case>/):
// validation must fail, and every line of the case's expect.txt must occur in
// the diagnostics, so each message keeps its file, line and JSON path.
// Cases are validated as `solbench validate --strict` does (warnings are
// errors); a few cases are only warnings by default (kWarningCases).
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
#include "core_test_util.h"

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

// Cases that are mistakes, but that SOL-ExecBench tolerates: by default they
// give warnings only (the entry is ignored), and errors with --strict.
const std::vector<std::string> kWarningCases = {
    "wl_source_for_output",  // a source for the output tensor
    "wl_unknown_input",      // a source for an input the definition lacks
};

bool is_warning_case(const std::string& name) {
  return std::find(kWarningCases.begin(), kWarningCases.end(), name) != kWarningCases.end();
}

// Validates whatever the case folder holds, the way `solbench validate` would
// (with --strict when `strict`).
Diagnostics validate_case(const fs::path& dir, bool strict = true) {
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
  if (strict) diags.promote_warnings();
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

// Without --strict every case still fails, except the warning cases, which pass
// with a warning that holds the expected text.
TEST_P(InvalidCase, DefaultModeFailsUnlessAWarningCase) {
  const fs::path dir = kCorpus / GetParam();
  Diagnostics diags = validate_case(dir, /*strict=*/false);
  if (!is_warning_case(GetParam())) {
    EXPECT_FALSE(diags.empty()) << "validation without --strict passed for " << dir
                                << " (only the warning cases may)";
    return;
  }
  EXPECT_TRUE(diags.empty()) << dir << ": expected warnings only, got errors:\n" << diags.str();
  ASSERT_FALSE(diags.warnings().empty()) << dir << ": expected a warning";
  std::string warnings;
  for (const auto& w : diags.warnings()) warnings += w.str() + "\n";
  for (const auto& f : expected_fragments(dir)) EXPECT_HAS(warnings, f);
}

TEST(InvalidCorpus, WarningCasesExist) {
  const auto names = case_names();
  for (const auto& c : kWarningCases)
    EXPECT_NE(std::find(names.begin(), names.end(), c), names.end())
        << "warning case " << c << " is not in " << kCorpus;
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
