// Solutions for a run: the solution files found under --solutions, and the
// evaluations (problem, solution) they give, matched by the solution's
// `definition` field to the problems' definition names.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/diagnostics.h"
#include "core/json.h"
#include "core/solution.h"

namespace solbench {
struct Definition;
}

namespace solbench::runset {

struct SolutionFile {
  std::filesystem::path file;
  Solution solution;
  std::string hash;  // store::SolutionRecord::from(solution).hash(): the resume key
};

struct SolutionScan {
  std::vector<SolutionFile> solutions;        // sorted by (definition, name, file)
  Diagnostics errors;                         // solution files that do not load
  std::vector<std::filesystem::path> ignored;  // JSON files that are not solutions
};

// Every *.json file below `dir` (recursively, following symlinks, skipping
// hidden folders). A file is taken as a solution when it is a JSON object with a
// "definition" key and a "spec" or "sources" key; it must then load as one
// (errors name the file and field). Other JSON files (definitions, metadata)
// are ignored. Throws InputError when `dir` is not a folder.
SolutionScan scan_solutions(const std::filesystem::path& dir);

// What the store records for the definition's own reference evaluated as the
// solution (`--reference`), exactly as `eval --reference --db` records it: named
// "<definition>/reference", its content {"solbench_reference_of": definition}, so
// that editing the definition (its reference) is a new solution.
struct ReferenceSolution {
  std::string name;
  json content;
  std::string hash;
};
ReferenceSolution reference_solution(const Definition& d);

// One evaluation of a run: a problem and one of its solutions.
struct Task {
  size_t problem = 0;                 // index into the run's problems
  std::optional<size_t> solution;     // index into SolutionScan::solutions; nullopt: the reference
  // A part of the pair's workloads (positions in the problem's selection), when the
  // run cut a long evaluation for several devices (split_for_slots); empty: all.
  std::vector<size_t> part;
  std::string part_label;             // "1/2" of such a part; "" when whole
};

struct Matching {
  std::vector<Task> tasks;                 // by problem, then solution (the reference last)
  std::vector<size_t> unmatched_solutions;  // solutions no problem defines
};

// `definitions[i]` is problem i's definition name ("" for a problem that did not
// load: it gets no task). Each solution goes to every problem of its definition.
Matching match_solutions(const std::vector<std::string>& definitions,
                         const std::vector<SolutionFile>& solutions, bool reference);

}  // namespace solbench::runset
