#include "runset/dataset.h"

#include <fnmatch.h>

#include <algorithm>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "core/diagnostics.h"

namespace solbench::runset {

namespace fs = std::filesystem;

namespace {

// Sub-folders (symlinks to folders included), sorted, without hidden ones.
std::vector<fs::path> subfolders(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec), end;
       !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.empty() || name[0] == '.') continue;
    std::error_code ec2;
    if (fs::is_directory(it->path(), ec2)) out.push_back(it->path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

}  // namespace

std::string_view layout_name(Layout l) {
  switch (l) {
    case Layout::Categories: return "categories";
    case Layout::Problems: return "problems";
    case Layout::SingleProblem: return "problem";
  }
  return "?";
}

std::vector<std::string> DataSet::categories() const {
  std::set<std::string> s;
  for (const auto& p : problems)
    if (!p.category.empty()) s.insert(p.category);
  return {s.begin(), s.end()};
}

DataSet discover(const fs::path& root) {
  DataSet ds;
  ds.root = root;
  std::error_code ec;
  if (!fs::is_directory(root, ec))
    throw InputError(root.string(), 0, "",
                     "not a folder (expected a data set: CATEGORY/PROBLEM/definition.json, "
                     "PROBLEM/definition.json, or a problem folder)");
  if (is_problem_dir(root)) {
    fs::path abs = fs::absolute(root).lexically_normal();
    if (!abs.has_filename()) abs = abs.parent_path();
    ds.layout = Layout::SingleProblem;
    ds.problems.push_back({"", abs.filename().string(), root});
    return ds;
  }
  bool any_category = false;
  for (const fs::path& sub : subfolders(root)) {
    if (is_problem_dir(sub)) {
      ds.problems.push_back({"", sub.filename().string(), sub});
      continue;
    }
    for (const fs::path& p : subfolders(sub))
      if (is_problem_dir(p)) {
        ds.problems.push_back({sub.filename().string(), p.filename().string(), p});
        any_category = true;
      }
  }
  if (ds.problems.empty())
    throw InputError(root.string(), 0, "",
                     "no problem found (expected folders holding a definition.json, at "
                     "CATEGORY/PROBLEM/ or PROBLEM/ below the data set folder)");
  ds.layout = any_category ? Layout::Categories : Layout::Problems;
  std::stable_sort(ds.problems.begin(), ds.problems.end(),
                   [](const ProblemDir& a, const ProblemDir& b) {
                     return std::tie(a.category, a.name) < std::tie(b.category, b.name);
                   });
  return ds;
}

std::vector<ProblemDir> select_problems(const DataSet& ds, const ProblemFilter& f) {
  const std::vector<std::string> have = ds.categories();
  for (const auto& c : f.categories)
    if (std::find(have.begin(), have.end(), c) == have.end())
      throw InputError(
          "--category", 0, "",
          have.empty()
              ? fmt::format("\"{}\": the data set {} has no categories (its layout: {})", c,
                            ds.root.string(), layout_name(ds.layout))
              : fmt::format("\"{}\": no such category in {} (expected one of: {})", c,
                            ds.root.string(), joined(have)));
  std::vector<ProblemDir> out;
  for (const auto& p : ds.problems) {
    if (!f.categories.empty() &&
        std::find(f.categories.begin(), f.categories.end(), p.category) == f.categories.end())
      continue;
    if (!f.globs.empty() && std::none_of(f.globs.begin(), f.globs.end(), [&](const std::string& g) {
          return ::fnmatch(g.c_str(), p.name.c_str(), 0) == 0;
        }))
      continue;
    out.push_back(p);
  }
  if (out.empty())
    throw InputError(ds.root.string(), 0, "",
                     fmt::format("no problem matches the filters ({} problem(s) in the data set; "
                                 "--category {}; --problem {})",
                                 ds.problems.size(), f.categories.empty() ? "(any)" : joined(f.categories),
                                 f.globs.empty() ? "(any)" : joined(f.globs)));
  return out;
}

LoadedProblem load_for_run(const ProblemDir& where, const score::WorkloadSelection& selection) {
  LoadedProblem lp;
  lp.where = where;
  Diagnostics diags;
  Problem p = load_problem(problem_paths(where.dir), diags);
  if (!diags.empty()) {
    for (const auto& d : diags.items()) lp.error += (lp.error.empty() ? "" : "\n") + d.str();
    return lp;
  }
  score::WorkloadSelection here = selection;
  here.wanted = score::wanted_here(p, selection.wanted);
  if (!selection.wanted.empty() && here.wanted.empty()) {
    lp.unwanted = true;
    return lp;
  }
  lp.selected = score::select_workloads(p, here, diags);
  if (!diags.empty()) {  // an ambiguous uuid prefix
    for (const auto& d : diags.items()) lp.error += (lp.error.empty() ? "" : "\n") + d.str();
    lp.selected.clear();
    return lp;
  }
  for (size_t i : lp.selected) lp.uuids.push_back(p.workloads[i].uuid);
  if (lp.selected.empty()) {
    lp.error = fmt::format("{}: no workload can be evaluated (none resolved)",
                           problem_paths(where.dir).workloads.string());
    return lp;
  }
  lp.problem = std::move(p);
  return lp;
}

}  // namespace solbench::runset
