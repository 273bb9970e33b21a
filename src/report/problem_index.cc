#include "report/problem_index.h"

#include "core/definition.h"
#include "core/diagnostics.h"

namespace solbench::report {

namespace fs = std::filesystem;

std::optional<size_t> IndexedProblem::workload(const std::string& uuid) const {
  for (size_t i = 0; i < problem.workloads.size(); ++i)
    if (problem.workloads[i].uuid == uuid) return i;
  return std::nullopt;
}

ProblemIndex::ProblemIndex(const std::vector<fs::path>& roots) {
  for (const auto& root : roots) {
    const runset::DataSet ds = runset::discover(root);
    dirs_.insert(dirs_.end(), ds.problems.begin(), ds.problems.end());
  }
}

const IndexedProblem* ProblemIndex::load(const runset::ProblemDir& where) {
  auto& slot = loaded_[where.dir];
  if (!slot) {
    Diagnostics diags;
    auto ip = std::make_unique<IndexedProblem>();
    ip->where = where;
    ip->problem = load_problem(problem_paths(where.dir), diags);
    for (const auto& d : diags.items()) ip->errors.push_back(d.str());
    slot = std::move(ip);
  }
  return slot.get();
}

const IndexedProblem* ProblemIndex::find(const std::string& definition) {
  for (const auto& d : dirs_)
    if (d.name == definition) {
      const IndexedProblem* p = load(d);
      if (p->problem.definition.name == definition) return p;
    }
  if (!by_definition_) {
    by_definition_.emplace();
    for (size_t i = 0; i < dirs_.size(); ++i) {
      Diagnostics diags;  // only the name is needed here; load() reports the rest
      const Definition def = load_definition(problem_paths(dirs_[i].dir).definition, diags);
      if (!def.name.empty()) by_definition_->emplace(def.name, i);
    }
  }
  const auto it = by_definition_->find(definition);
  return it == by_definition_->end() ? nullptr : load(dirs_[it->second]);
}

}  // namespace solbench::report
