// A problem folder: definition.json + workload.jsonl (+ reference.py), loaded
// and validated as a unit, with every workload resolved.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/definition.h"
#include "core/diagnostics.h"
#include "core/resolve.h"
#include "core/workload.h"

namespace solbench {

struct ProblemPaths {
  std::filesystem::path definition;  // definition.json
  std::filesystem::path workloads;   // workload.jsonl
  // The folder that safetensors paths are relative to (the data set root);
  // defaults to the problem folder's grandparent when it has a category level.
  std::filesystem::path dataset_root;
};

// Paths of a problem folder; `definition`/`workloads` override the defaults.
ProblemPaths problem_paths(const std::filesystem::path& dir);

struct Problem {
  ProblemPaths paths;
  Definition definition;
  std::vector<Workload> workloads;                      // every line that parsed
  std::vector<std::optional<ResolvedWorkload>> resolved;  // aligned with workloads
};

// Loads and validates everything; all problems go to `diags`. The result holds
// what could be read (a bad workload does not hide the good ones). If a
// reference.py exists beside the definition it must equal `definition.reference`.
// Workload sources for inputs the definition lacks are warnings in `diags`
// (diags.warnings()) and are removed from the returned workloads, as
// SOL-ExecBench ignores them.
Problem load_problem(const ProblemPaths& paths, Diagnostics& diags);

// The first safetensors input of workloads[i] whose blob is not there, in the
// worker's words for it ("safetensors blob missing: PATH"); "" when every blob is
// present. Evaluation skips such a workload before anything starts for it.
std::string missing_blob(const Problem& problem, size_t i);

// True when `dir` holds a definition.json.
bool is_problem_dir(const std::filesystem::path& dir);
// Every problem folder at or below `root`, sorted.
std::vector<std::filesystem::path> find_problem_dirs(const std::filesystem::path& root);

}  // namespace solbench
