// Discovery of the three layouts, the --category/--problem filters, the
// workloads a run takes (--max-workloads), the solution scan and the matching
// of solutions to problems by their definition field.
#include <gtest/gtest.h>

#include "core/diagnostics.h"
#include "runset/dataset.h"
#include "score/selection.h"
#include "runset/solutions.h"
#include "runset_test_util.h"

namespace solbench::runset {
namespace {

using namespace testing;

std::vector<std::string> labels(const std::vector<ProblemDir>& ps) {
  std::vector<std::string> out;
  for (const auto& p : ps) out.push_back(p.category + "|" + p.name);
  return out;
}

std::string input_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no InputError)";
}

TEST(Discover, CategoryLayoutSortedByCategoryThenName) {
  TempDir t;
  make_dataset(t.path(), {{"L2", kSoftmax}, {"L1", kSwiglu}, {"L1", kRms}});
  fs::create_directories(t.path() / ".hidden" / "x");  // not searched
  fs::create_directories(t.path() / "empty_category");
  const DataSet ds = discover(t.path());
  EXPECT_EQ(ds.layout, Layout::Categories);
  EXPECT_EQ(labels(ds.problems),
            (std::vector<std::string>{std::string("L1|") + kRms, std::string("L1|") + kSwiglu,
                                      std::string("L2|") + kSoftmax}));
  EXPECT_EQ(ds.categories(), (std::vector<std::string>{"L1", "L2"}));
}

TEST(Discover, FolderOfProblemsWithoutCategories) {
  TempDir t;
  make_dataset(t.path(), {{"", kSwiglu}, {"", kRms}});
  const DataSet ds = discover(t.path());
  EXPECT_EQ(ds.layout, Layout::Problems);
  EXPECT_EQ(labels(ds.problems),
            (std::vector<std::string>{std::string("|") + kRms, std::string("|") + kSwiglu}));
  EXPECT_TRUE(ds.categories().empty());
}

TEST(Discover, SingleProblemFolder) {
  const DataSet ds = discover(kProblems / kRms);
  EXPECT_EQ(ds.layout, Layout::SingleProblem);
  ASSERT_EQ(ds.problems.size(), 1u);
  EXPECT_EQ(ds.problems[0].name, kRms);
  EXPECT_EQ(ds.problems[0].category, "");
}

TEST(Discover, TheBundledProblemsFolderHasEight) {
  const DataSet ds = discover(kProblems);
  EXPECT_EQ(ds.layout, Layout::Problems);
  EXPECT_EQ(ds.problems.size(), 8u);
}

TEST(Discover, ErrorsNameTheFolder) {
  TempDir t;
  EXPECT_HAS(input_error([&] { discover(t.path() / "missing"); }), "missing: not a folder");
  fs::create_directories(t.path() / "a" / "b");
  EXPECT_HAS(input_error([&] { discover(t.path()); }), "no problem found");
}

TEST(Filter, CategoryAndGlob) {
  TempDir t;
  make_dataset(t.path(), {{"L1", kRms}, {"L1", kSwiglu}, {"L2", kSoftmax}});
  const DataSet ds = discover(t.path());
  EXPECT_EQ(select_problems(ds, {{"L2"}, {}}).size(), 1u);
  EXPECT_EQ(select_problems(ds, {{"L1", "L2"}, {}}).size(), 3u);
  auto g = select_problems(ds, {{}, {"00[15]_*"}});
  EXPECT_EQ(labels(g), (std::vector<std::string>{std::string("L1|") + kRms,
                                                  std::string("L2|") + kSoftmax}));
  EXPECT_EQ(select_problems(ds, {{"L1"}, {"*swiglu*"}}).size(), 1u);
  EXPECT_EQ(select_problems(ds, {{}, {"*swiglu*", "*softmax*"}}).size(), 2u);
}

TEST(Filter, UnknownCategoryListsTheKnownOnes) {
  TempDir t;
  make_dataset(t.path(), {{"L1", kRms}, {"L2", kSoftmax}});
  const DataSet ds = discover(t.path());
  const std::string e = input_error([&] { select_problems(ds, {{"L3"}, {}}); });
  EXPECT_HAS(e, "\"L3\": no such category");
  EXPECT_HAS(e, "L1, L2");
  EXPECT_HAS(input_error([&] { select_problems(ds, {{}, {"nope*"}}); }),
             "no problem matches the filters");
  const DataSet flat = discover(kProblems);
  EXPECT_HAS(input_error([&] { select_problems(flat, {{"L1"}, {}}); }), "has no categories");
}

TEST(LoadForRun, FirstNWorkloadsInFileOrder) {
  const LoadedProblem all = load_for_run({"", kRms, kProblems / kRms}, first_n(0));
  ASSERT_TRUE(all.problem) << all.error;
  EXPECT_EQ(all.selected.size(), all.problem->workloads.size());
  const LoadedProblem two = load_for_run({"", kRms, kProblems / kRms}, first_n(2));
  ASSERT_TRUE(two.problem);
  EXPECT_EQ(two.selected, (std::vector<size_t>{0, 1}));
  EXPECT_EQ(two.uuids[0], all.problem->workloads[0].uuid);
  EXPECT_EQ(two.uuids[1], all.problem->workloads[1].uuid);
}

// run's --workload and --smallest pick what eval's pick (one rule, score/selection.h).
TEST(LoadForRun, SelectsAsEvalDoes) {
  const LoadedProblem all = load_for_run({"", kRms, kProblems / kRms}, {});
  ASSERT_TRUE(all.problem) << all.error;
  Diagnostics d;
  const std::vector<size_t> smallest = score::select_workloads(*all.problem, smallest_n(3), d);
  ASSERT_TRUE(d.empty());
  EXPECT_EQ(load_for_run({"", kRms, kProblems / kRms}, smallest_n(3)).selected, smallest);

  const std::string third = all.problem->workloads[2].uuid;
  const LoadedProblem one =
      load_for_run({"", kRms, kProblems / kRms}, wanted({third.substr(0, 8), "deadbeef"}));
  ASSERT_TRUE(one.problem) << one.error;  // a uuid of another problem is not this one's error
  EXPECT_EQ(one.uuids, (std::vector<std::string>{third}));
  EXPECT_TRUE(load_for_run({"", kRms, kProblems / kRms}, wanted({"deadbeef"})).unwanted);
}

TEST(LoadForRun, AnInvalidProblemCarriesItsDiagnostics) {
  TempDir t;
  write(t.path() / "bad" / "definition.json", "{\"name\": 3}");
  write(t.path() / "bad" / "workload.jsonl", "");
  const LoadedProblem lp = load_for_run({"", "bad", t.path() / "bad"}, {});
  EXPECT_FALSE(lp.problem);
  EXPECT_HAS(lp.error, "definition.json");
}

TEST(Solutions, ScanTakesSolutionsIgnoresOtherJsonAndReportsBrokenOnes) {
  TempDir t;
  add_solution(t.path() / "a", kRms, "pytorch_simple");
  add_solution(t.path() / "a" / "deeper", kRms, "cpp_rowwise");
  add_solution(t.path() / "b", kSoftmax, "pytorch_simple");
  fs::copy_file(kProblems / kRms / "definition.json", t.path() / "definition.json");
  write(t.path() / "broken.json", "{\"definition\": \"x\", \"spec\": ");
  write(t.path() / "bad_solution.json", "{\"definition\": \"x\", \"spec\": {}}");
  write(t.path() / ".hidden" / "s.json", "{\"definition\": \"x\", \"spec\": {}}");
  const SolutionScan s = scan_solutions(t.path());
  ASSERT_EQ(s.solutions.size(), 3u);
  // Sorted by definition, then name.
  EXPECT_EQ(s.solutions[0].solution.definition, kRms);
  EXPECT_EQ(s.solutions[0].solution.name, "rmsnorm_cpp_rowwise");
  EXPECT_EQ(s.solutions[1].solution.name, "rmsnorm_llama3_8b_h4096_pytorch");
  EXPECT_EQ(s.solutions[2].solution.definition, kSoftmax);
  EXPECT_EQ(s.solutions[0].hash.size(), 64u);
  EXPECT_NE(s.solutions[0].hash, s.solutions[1].hash);
  ASSERT_EQ(s.ignored.size(), 1u);
  EXPECT_EQ(s.ignored[0].filename(), "definition.json");
  const std::string errors = s.errors.str();
  EXPECT_HAS(errors, "broken.json");
  EXPECT_HAS(errors, "bad_solution.json");
  EXPECT_EQ(errors.find(".hidden"), std::string::npos) << errors;
}

TEST(Solutions, MissingFolderIsAnError) {
  EXPECT_HAS(input_error([] { scan_solutions("/nonexistent/solutions"); }), "not a folder");
}

TEST(Matching, ByDefinitionSeveralPerProblemReferenceLast) {
  TempDir t;
  add_solution(t.path(), kRms, "pytorch_simple");
  add_solution(t.path(), kRms, "cpp_rowwise");
  add_solution(t.path(), kSoftmax, "pytorch_simple");
  add_solution(t.path(), kSwiglu, "pytorch_simple");
  const SolutionScan s = scan_solutions(t.path());
  // Problems: rmsnorm, an invalid one (""), softmax; swiglu is not among them.
  const Matching m = match_solutions({kRms, "", kSoftmax}, s.solutions, /*reference=*/true);
  std::vector<std::string> got;
  for (const Task& task : m.tasks)
    got.push_back(std::to_string(task.problem) + ":" +
                  (task.solution ? s.solutions[*task.solution].solution.name : "reference"));
  EXPECT_EQ(got, (std::vector<std::string>{"0:rmsnorm_cpp_rowwise",
                                           "0:rmsnorm_llama3_8b_h4096_pytorch", "0:reference",
                                           "2:softmax_vocab_llama3_8b_pytorch", "2:reference"}));
  ASSERT_EQ(m.unmatched_solutions.size(), 1u);
  EXPECT_EQ(s.solutions[m.unmatched_solutions[0]].solution.definition, kSwiglu);
}

TEST(Matching, ReferenceSolutionHashFollowsTheDefinition) {
  const LoadedProblem lp = load_for_run({"", kRms, kProblems / kRms}, first_n(1));
  ASSERT_TRUE(lp.problem);
  Definition d = lp.problem->definition;
  const ReferenceSolution a = reference_solution(d);
  EXPECT_EQ(a.name, std::string(kRms) + "/reference");
  EXPECT_EQ(a.hash, reference_solution(d).hash);
  d.reference += "\n# edited\n";
  EXPECT_NE(a.hash, reference_solution(d).hash);
}

}  // namespace
}  // namespace solbench::runset
