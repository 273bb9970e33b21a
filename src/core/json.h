// JSON type used across solbench (insertion-ordered: the order of `inputs`
// and `outputs` is the argument order) and small helpers to read files.
#pragma once

#include <filesystem>
#include <functional>
#include <initializer_list>
#include <optional>
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

// Reads a JSON Lines file and calls `record(json, line)` for each non-blank line
// (1-based line numbers). A line that is not JSON, or whose callback throws
// InputError, adds its diagnostics and the next line is read: one bad line does not
// hide the others. A file that cannot be read adds one diagnostic.
void for_each_jsonl_record(const std::filesystem::path& path, Diagnostics& diags,
                           const std::function<void(const json&, int)>& record);

// A value, or null where there is none.
template <class T>
json or_null(const std::optional<T>& v) {
  return v ? json(*v) : json(nullptr);
}
// A string, or null where it is empty.
inline json or_null(const std::string& s) { return s.empty() ? json(nullptr) : json(s); }

// The number at `path` (object keys, outermost first), or nullopt where a key is
// missing or the value is not a number.
std::optional<double> number_at(const json& j, std::initializer_list<const char*> path);
// The sum of an object's numeric values (0 for anything else): a rate or count map
// such as an analysis's work by tensor-core class.
double sum_numbers(const json& obj);

// Writes `text` atomically (temp file + rename), creating parent folders.
void write_text_file(const std::filesystem::path& path, const std::string& text);

}  // namespace solbench
