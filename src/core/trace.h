// Traces: one evaluation result per JSONL line, in the public trace format.
// solbench's own additions live under keys listed in docs/formats.md; readers
// ignore unknown keys, and unknown keys read are written back unchanged.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/diagnostics.h"
#include "core/json.h"

namespace solbench {

enum class Status {
  Passed,
  IncorrectShape,
  IncorrectNumerical,
  IncorrectDtype,
  RuntimeError,
  CompileError,
  Timeout,
  RewardHack,
  InvalidReference,
};
std::string_view status_name(Status s);  // "PASSED", ...
std::optional<Status> parse_status(std::string_view name);

struct Correctness {
  double max_relative_error = 0;
  double max_absolute_error = 0;
  bool has_nan = false;
  bool has_inf = false;
  bool operator==(const Correctness&) const = default;
};

struct Performance {
  double latency_ms = 0;
  double reference_latency_ms = 0;
  double speedup_factor = 0;
  bool operator==(const Performance&) const = default;
};

struct Environment {
  std::string hardware;
  std::vector<std::pair<std::string, std::string>> libs;
  json extra = json::object();
  bool operator==(const Environment&) const = default;
};

struct Evaluation {
  Status status = Status::Passed;
  std::string log;
  std::optional<Correctness> correctness;  // PASSED and INCORRECT_NUMERICAL
  std::optional<Performance> performance;  // PASSED
  Environment environment;
  std::string timestamp;                   // ISO 8601
  json extra = json::object();             // [ext] e.g. timing statistics, SOL, score
  bool operator==(const Evaluation&) const = default;
};

struct Trace {
  std::string definition;
  std::string solution;
  json workload = json::object();
  Evaluation evaluation;
  json extra = json::object();
  bool operator==(const Trace&) const = default;
};

Trace parse_trace(const json& j, const std::string& file, int line, Diagnostics& diags);
json to_json(const Trace& t);
std::vector<Trace> load_traces(const std::filesystem::path& path, Diagnostics& diags);
// Appends one line per trace (creating the file), flushing after each.
void append_traces(const std::filesystem::path& path, const std::vector<Trace>& traces);

// Current UTC time as ISO 8601 with milliseconds, e.g. 2026-11-23T10:00:00.123Z.
std::string iso8601_now();

}  // namespace solbench
