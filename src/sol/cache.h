// The on-disk cache of SOL results and operator graphs: one JSON file per
// content hash under $SOLBENCH_CACHE_DIR (default ~/.cache/solbench)/sol/.
#pragma once

#include <filesystem>
#include <initializer_list>
#include <optional>
#include <string>

#include "core/json.h"

namespace solbench::sol {

std::filesystem::path cache_dir();

// 128-bit FNV-1a based hex digest of the parts (length-prefixed, so part
// boundaries matter). Not cryptographic: it names cache files only.
std::string content_hash(std::initializer_list<std::string> parts);

// nullopt when absent or unreadable (a corrupt entry is a miss, not an error).
std::optional<json> cache_get(const std::string& kind, const std::string& key);
// Written atomically (temporary file + rename); failures are ignored.
void cache_put(const std::string& kind, const std::string& key, const json& value);

}  // namespace solbench::sol
