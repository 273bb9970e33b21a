// The problem folders given with --problems, found by definition name: where
// the report takes each workload's work and bytes from, and the category of
// the data set's layout (ROOT/CATEGORY/PROBLEM).
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/problem.h"
#include "runset/dataset.h"

namespace solbench::report {

struct IndexedProblem {
  runset::ProblemDir where;
  Problem problem;
  std::vector<std::string> errors;  // what load_problem found wrong (the rest is still used)
  // Index of the workload with this uuid in problem.workloads; nullopt if none.
  std::optional<size_t> workload(const std::string& uuid) const;
};

class ProblemIndex {
 public:
  // Discovers every root (runset::discover: a problem, a folder of problems or
  // a data set with categories); throws InputError for a root that holds none.
  explicit ProblemIndex(const std::vector<std::filesystem::path>& roots);

  // The problem whose definition is named `definition`: first the folder of
  // that name, else every folder's definition.json is read (once). nullptr
  // when no folder has it.
  const IndexedProblem* find(const std::string& definition);

  bool empty() const { return dirs_.empty(); }

 private:
  const IndexedProblem* load(const runset::ProblemDir& where);
  std::vector<runset::ProblemDir> dirs_;
  std::map<std::filesystem::path, std::unique_ptr<IndexedProblem>> loaded_;
  std::optional<std::map<std::string, size_t>> by_definition_;  // name -> index in dirs_
};

}  // namespace solbench::report
