// definition.json: a problem's axes, typed inputs and outputs, and its PyTorch reference.
#pragma once

#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/diagnostics.h"
#include "core/dtype.h"
#include "core/json.h"

namespace solbench {

enum class AxisKind { Const, Var, Expr };

struct Axis {
  std::string name;
  AxisKind kind = AxisKind::Var;
  int64_t value = 0;        // Const only
  std::string expression;   // Expr only
  std::string description;

  bool operator==(const Axis&) const = default;
};

// One entry of a shape: an axis name, or an integer literal (written as a
// JSON integer or as a string of digits such as "1" in the public set).
struct Dim {
  std::string axis;             // empty for a literal
  int64_t literal = 0;
  bool is_literal() const { return axis.empty(); }
  bool operator==(const Dim&) const = default;
};

struct TensorSpec {
  std::string name;
  std::optional<std::vector<Dim>> shape;  // nullopt: a scalar passed by value
  DType dtype = DType::Float32;
  std::string description;

  bool is_scalar() const { return !shape.has_value(); }
  bool operator==(const TensorSpec&) const = default;
};

struct Definition {
  std::string name;
  std::string op_type;
  std::string description;
  std::vector<Axis> axes;           // in file order
  std::vector<TensorSpec> inputs;   // argument order
  std::vector<TensorSpec> outputs;  // output order
  std::string reference;
  std::vector<std::string> constraints;
  std::optional<std::string> custom_inputs_entrypoint;
  std::string hf_id;
  json extra = json::object();      // unknown keys, preserved on write

  const Axis* find_axis(std::string_view name) const;
  const TensorSpec* find_input(std::string_view name) const;
  const TensorSpec* find_output(std::string_view name) const;

  bool operator==(const Definition&) const = default;
};

namespace detail {

// Helpers shared by the format parsers (definition, workload, solution, trace).

// A JSON value as quoted in messages: "found 3", "found \"x\"", "found an array".
std::string describe_json(const json& j);
// JSON paths: join_path("inputs", "x") == "inputs.x"; index_path("shape", 1) == "shape[1]".
// Keys that are not identifier-like are quoted: inputs["a b"].
std::string join_path(std::string_view base, std::string_view key);
std::string index_path(std::string_view base, size_t index);

// Reads typed fields of one JSON document (or one JSONL line) and reports
// what is wrong with the file, line and JSON path. Every accessor returns
// nothing (and reports) when a required field is missing or a field has the
// wrong type; optional fields that are absent or null return nothing silently.
class FieldReader {
 public:
  FieldReader(std::string file, int line, Diagnostics& diags)
      : file_(std::move(file)), line_(line), diags_(diags) {}

  void error(const std::string& path, std::string message) const {
    diags_.add(file_, line_, path, std::move(message));
  }
  // True when `v` is an object; reports "expected an object" otherwise.
  bool expect_object(const json& v, const std::string& path) const;

  const json* field(const json& obj, const std::string& obj_path, std::string_view key,
                    bool required) const;
  std::optional<std::string> string(const json& obj, const std::string& obj_path,
                                    std::string_view key, bool required) const;
  std::optional<int64_t> integer(const json& obj, const std::string& obj_path,
                                 std::string_view key, bool required) const;
  std::optional<double> number(const json& obj, const std::string& obj_path,
                               std::string_view key, bool required) const;
  std::optional<bool> boolean(const json& obj, const std::string& obj_path,
                              std::string_view key, bool required) const;
  // An array of strings; null counts as absent.
  std::optional<std::vector<std::string>> strings(const json& obj, const std::string& obj_path,
                                                  std::string_view key, bool required) const;

  // Value checks on an already-found value.
  std::optional<int64_t> as_integer(const json& v, const std::string& path) const;

  const std::string& file() const { return file_; }
  int line() const { return line_; }
  Diagnostics& diags() const { return diags_; }

 private:
  std::string file_;
  int line_;
  Diagnostics& diags_;
};

// The keys of `obj` not listed in `known`, in file order.
json unknown_keys(const json& obj, std::initializer_list<std::string_view> known);

// True when `source` has a top-level `def NAME(` (Python function definition).
bool defines_python_function(std::string_view source, std::string_view name);

}  // namespace detail

// Parses and validates. Problems go to `diags` (with `file` and JSON paths);
// the returned object holds whatever could be read.
Definition parse_definition(const json& j, const std::string& file, Diagnostics& diags);
Definition load_definition(const std::filesystem::path& path, Diagnostics& diags);
json to_json(const Definition& d);

}  // namespace solbench
