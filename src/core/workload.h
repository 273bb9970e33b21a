// workload.jsonl: concrete axis values, input sources and tolerances, one per line.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/diagnostics.h"
#include "core/json.h"
#include "core/resolve.h"

namespace solbench {

struct Definition;

enum class InputKind { Random, Scalar, Safetensors, Custom };

struct InputSource {
  InputKind kind = InputKind::Random;
  json value;              // Scalar: the value (number or bool)
  std::string path;        // Safetensors: relative to the data set root
  std::string tensor_key;  // Safetensors
  bool operator==(const InputSource&) const = default;
};

struct Tolerance {
  double max_atol = 1e-2;
  double max_rtol = 1e-2;
  double required_matched_ratio = 0.99;
  std::optional<double> max_error_cap;
  bool allow_negative_inf = false;
  bool operator==(const Tolerance&) const = default;
};

struct Workload {
  std::string uuid;
  std::vector<std::pair<std::string, int64_t>> axes;           // var axes only
  std::vector<std::pair<std::string, InputSource>> inputs;     // by input name
  std::optional<Tolerance> tolerance;  // as written; nullopt: defaults
  json extra = json::object();         // unknown keys, preserved on write
  int line = 0;                        // 1-based line in its file (0: not from a file)

  Tolerance effective_tolerance() const { return tolerance.value_or(Tolerance{}); }
  std::optional<int64_t> axis(std::string_view name) const;
  const InputSource* input(std::string_view name) const;

  // Equality ignores `line`.
  bool operator==(const Workload& o) const {
    return uuid == o.uuid && axes == o.axes && inputs == o.inputs &&
           tolerance == o.tolerance && extra == o.extra;
  }
};

std::string_view input_kind_name(InputKind k);

// Where a safetensors source's blob is: `dataset_root` / its path (an absolute
// path stands as it is).
std::filesystem::path blob_path(const std::filesystem::path& dataset_root, const InputSource& src);

// Parses one workload object (shape of the line only, without a definition).
Workload parse_workload(const json& j, const std::string& file, int line, Diagnostics& diags);

// Checks a workload against its definition: axes are exactly the var axes,
// every input has a source of a fitting kind, constraints hold, shapes resolve.
// A source for a name the definition has no input for is a warning (naming the
// file, line, input and workload uuid), not an error: SOL-ExecBench ignores such
// entries; drop_unknown_inputs removes them.
void check_workload(const Definition& def, const Workload& w, const std::string& file,
                    Diagnostics& diags);
// check_workload, also returning the resolution when the workload is valid
// (nullopt when any problem was reported), so callers need not resolve twice.
std::optional<ResolvedWorkload> check_and_resolve_workload(const Definition& def, const Workload& w,
                                                           const std::string& file,
                                                           Diagnostics& diags);

// Removes the sources for names the definition has no input for (the ones
// check_workload warns about); returns their names in file order.
std::vector<std::string> drop_unknown_inputs(const Definition& def, Workload& w);

// Reads every line (blank lines skipped); a bad line is reported and skipped,
// the good ones are returned. Duplicate uuids are reported.
std::vector<Workload> load_workloads(const std::filesystem::path& path, Diagnostics& diags);

json to_json(const Workload& w);
std::string to_jsonl(const std::vector<Workload>& ws);

// How tables and progress lines show a workload's var axes: "batch_size=4 seq_len=128"
// (its uuid: core/text.h short_uuid).
std::string axes_text(const std::vector<std::pair<std::string, int64_t>>& axes);

}  // namespace solbench
