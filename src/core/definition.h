// definition.json: a problem's axes, typed inputs and outputs, and its PyTorch reference.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
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

// Parses and validates. Problems go to `diags` (with `file` and JSON paths);
// the returned object holds whatever could be read.
Definition parse_definition(const json& j, const std::string& file, Diagnostics& diags);
Definition load_definition(const std::filesystem::path& path, Diagnostics& diags);
json to_json(const Definition& d);

}  // namespace solbench
