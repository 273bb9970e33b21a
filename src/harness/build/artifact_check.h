// What the build reads back from the shared object it made (its dynamic symbol
// table): the import check and the native entry's export.
//
//   inspect_artifact     BuildResult::abi_symbol (exports sb_abi_version) and
//                        import_violations (ImportPolicy::defaults(), advisory);
//                        also on cache hits
//   entry_export_error   the native entry must be callable by name: C linkage,
//                        default visibility
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "harness/build/build.h"

namespace solbench::harness::build_internal {

// Fills result.abi_symbol and result.import_violations from result.so_path.
void inspect_artifact(BuildResult& result);

// Why `entry` cannot be looked up in `so` (not exported, or unreadable), or nullopt.
std::optional<std::string> entry_export_error(const std::filesystem::path& so, const std::string& entry);

}  // namespace solbench::harness::build_internal
