// A data set's problems: discovery in the public layout, the --category and
// --problem filters, and each problem's workloads for a run.
//
// Layouts (docs/run.md):
//   ROOT/CATEGORY/PROBLEM/definition.json   categories (the public data set)
//   ROOT/PROBLEM/definition.json            problems without categories (category "")
//   ROOT/definition.json                    a single problem (category "")
// A folder is a problem when it holds a definition.json; folders whose name
// starts with a dot are not searched.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/problem.h"
#include "score/selection.h"

namespace solbench::runset {

struct ProblemDir {
  std::string category;  // "" without a category level
  std::string name;      // the folder's name
  std::filesystem::path dir;
  // "category/name", or "name" without a category level.
  std::string label() const { return category.empty() ? name : category + "/" + name; }
};

enum class Layout { Categories, Problems, SingleProblem };
std::string_view layout_name(Layout l);  // "categories", "problems", "problem"

struct DataSet {
  std::filesystem::path root;
  Layout layout = Layout::Problems;
  std::vector<ProblemDir> problems;  // sorted by (category, name)
  std::vector<std::string> categories() const;  // sorted, without ""
};

// Throws InputError (naming the folder) when `root` is not a folder or holds no
// problem at any of the three layouts' places.
DataSet discover(const std::filesystem::path& root);

struct ProblemFilter {
  std::vector<std::string> categories;  // exact names; empty: all
  std::vector<std::string> globs;       // fnmatch patterns on the problem folder's name; empty: all
  bool empty() const { return categories.empty() && globs.empty(); }
};

// The problems that pass the filter, in the data set's order. Throws InputError
// for a category the data set lacks (listing those it has) and when nothing matches.
std::vector<ProblemDir> select_problems(const DataSet& ds, const ProblemFilter& f);

// One problem loaded for a run: its definition and workloads, and which of them
// the run evaluates (score::select_workloads, the rule of eval and baseline; of
// `selection.wanted` only the uuids that are this problem's: a problem with none
// of them is `unwanted`, and the run leaves it out).
struct LoadedProblem {
  ProblemDir where;
  std::optional<Problem> problem;  // nullopt when invalid
  std::string error;               // every diagnostic, one per line, when invalid
  std::vector<size_t> selected;    // indices into problem->workloads
  std::vector<std::string> uuids;  // their uuids, same order
  bool unwanted = false;           // --workload named none of its workloads
};
LoadedProblem load_for_run(const ProblemDir& where, const score::WorkloadSelection& selection);

}  // namespace solbench::runset
