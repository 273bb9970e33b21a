// SOL-ExecBench's published B200 numbers (sol_ms, baseline_latency_ms) from a
// public problem's metadata.json, for side-by-side comparisons.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/json.h"
#include "core/problem.h"
#include "sol/hardware.h"

namespace solbench::score {

struct Published {
  std::optional<double> sol_ms;
  std::optional<double> baseline_ms;
  json to_json() const;  // {arch: "B200", sol_ms, baseline_latency_ms, source}
};

// SOL-ExecBench's published B200 numbers for each workload of `problem` (aligned
// with problem.workloads) from <problem_dir>/metadata.json; empty when the file is
// absent. An entry is matched by its index and must have the workload's axes
// (else it is left out and `note` says so). Throws InputError for a malformed file.
std::vector<std::optional<Published>> published_b200(const Problem& problem,
                                                     const std::filesystem::path& problem_dir,
                                                     std::string* note = nullptr);

// True when `model` is the B200 (the published numbers' hardware).
bool is_b200(const sol::HardwareModel& model);

}  // namespace solbench::score
