// What a solution brings into the build, made safe before anything runs: its
// sources written into the staging folder (write_sources: paths re-checked, no
// write through a symlink) and its compiler flags checked (unsafe_flag_reason:
// nothing that runs foreign programs or writes outside the staging folder).
// A refusal is a BuildStatus::Rejected build.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "core/solution.h"

namespace solbench::harness {

// Writes the solution's sources under `dir` (which must exist), re-validating every
// path and refusing to write through a symlink. Returns the reason on refusal.
std::optional<std::string> write_sources(const Solution& solution,
                                         const std::filesystem::path& dir);

// The reason a compiler flag is refused, or nullopt when it is allowed. `nvcc`
// selects the additional nvcc-only checks.
std::optional<std::string> unsafe_flag_reason(const std::string& flag, bool nvcc);

}  // namespace solbench::harness
