#include "runset/solutions.h"

#include <algorithm>
#include <tuple>

#include <fmt/format.h>

#include "core/definition.h"
#include "eval/evaluate.h"
#include "store/store.h"

namespace solbench::runset {

namespace fs = std::filesystem;

namespace {

std::vector<fs::path> json_files(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  const auto opts = fs::directory_options::skip_permission_denied |
                    fs::directory_options::follow_directory_symlink;
  fs::recursive_directory_iterator it(dir, opts, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    std::error_code ec2;
    if (it->is_directory(ec2)) {
      if (!name.empty() && name[0] == '.') it.disable_recursion_pending();
      continue;
    }
    if (it->path().extension() == ".json" && it->is_regular_file(ec2)) out.push_back(it->path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

SolutionScan scan_solutions(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw InputError("--solutions", 0, "",
                     fmt::format("{}: not a folder (expected a folder of solution JSON files)",
                                 dir.string()));
  SolutionScan scan;
  for (const fs::path& f : json_files(dir)) {
    json j;
    try {
      j = load_json_file(f);  // a syntax error names the file, line and column
    } catch (const InputError& e) {
      scan.errors.append(e.diagnostics());
      continue;
    }
    if (!j.is_object() || !j.contains("definition") ||
        !(j.contains("spec") || j.contains("sources"))) {
      scan.ignored.push_back(f);
      continue;
    }
    Diagnostics d;
    Solution s = parse_solution(j, f.string(), d);
    if (!d.empty()) {
      scan.errors.append(d);
      continue;
    }
    const std::string hash = store::SolutionRecord::from(s).hash();
    scan.solutions.push_back({f, std::move(s), hash});
  }
  std::stable_sort(scan.solutions.begin(), scan.solutions.end(),
                   [](const SolutionFile& a, const SolutionFile& b) {
                     return std::tie(a.solution.definition, a.solution.name, a.file) <
                            std::tie(b.solution.definition, b.solution.name, b.file);
                   });
  return scan;
}

ReferenceSolution reference_solution(const Definition& d) {
  // The identity eval gives `--reference` (eval/evaluate.h): one definition.
  const store::SolutionRecord rec = eval::reference_solution_record(d);
  ReferenceSolution r;
  r.name = rec.name;
  r.content = rec.content;
  r.hash = store::content_hash(r.content);
  return r;
}

Matching match_solutions(const std::vector<std::string>& definitions,
                         const std::vector<SolutionFile>& solutions, bool reference) {
  Matching m;
  std::vector<bool> used(solutions.size(), false);
  for (size_t p = 0; p < definitions.size(); ++p) {
    if (definitions[p].empty()) continue;
    for (size_t s = 0; s < solutions.size(); ++s)
      if (solutions[s].solution.definition == definitions[p]) {
        m.tasks.push_back({p, s, {}, {}});
        used[s] = true;
      }
    if (reference) m.tasks.push_back({p, std::nullopt, {}, {}});
  }
  for (size_t s = 0; s < solutions.size(); ++s)
    if (!used[s]) m.unmatched_solutions.push_back(s);
  return m;
}

}  // namespace solbench::runset
