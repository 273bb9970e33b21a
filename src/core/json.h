// JSON type used across solbench (insertion-ordered: the order of `inputs`
// and `outputs` is the argument order) and small helpers to read files.
#pragma once

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "core/diagnostics.h"

namespace solbench {

using json = nlohmann::ordered_json;

// Reads a whole file; throws InputError naming the file when it cannot.
std::string read_text_file(const std::filesystem::path& path);

// Parses a JSON document; throws InputError with file, line and column on a syntax error.
json parse_json_text(const std::string& text, const std::string& file, int line = 0);
json load_json_file(const std::filesystem::path& path);

// Writes `text` atomically (temp file + rename), creating parent folders.
void write_text_file(const std::filesystem::path& path, const std::string& text);

}  // namespace solbench
