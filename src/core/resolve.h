// Resolution of a workload against its definition: every axis value, the
// concrete shape and byte size of every tensor, and the destination-passing
// argument order (inputs, then outputs).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/diagnostics.h"
#include "core/dtype.h"
#include "core/json.h"

namespace solbench {

struct Definition;
struct Workload;

struct ResolvedTensor {
  std::string name;
  DType dtype = DType::Float32;
  bool scalar = false;           // passed by value; shape empty, no bytes
  std::vector<int64_t> shape;    // empty for scalars and 0-d tensors
  uint64_t elements = 0;         // product of shape (1 for 0-d; 0 for scalars)
  uint64_t bytes = 0;            // storage bytes (FP4 rounds up)
};

struct ResolvedWorkload {
  std::vector<std::pair<std::string, int64_t>> axes;  // all axes: const, var, expr
  std::vector<ResolvedTensor> inputs;
  std::vector<ResolvedTensor> outputs;
  uint64_t input_bytes = 0;
  uint64_t output_bytes = 0;

  std::optional<int64_t> axis(std::string_view name) const;
  // Inputs then outputs: the destination-passing-style argument order.
  std::vector<const ResolvedTensor*> dps_arguments() const;
};

// Evaluates all axes (const, then var from the workload, then expr in
// dependency order), checks constraints, computes shapes and sizes. Problems
// (unknown or missing axes, cycles, negative sizes, overflow, failed
// constraints) go to `diags` with the file, the workload's line and a JSON path;
// returns nullopt when any occurred.
std::optional<ResolvedWorkload> resolve_workload(const Definition& def, const Workload& w,
                                                 const std::string& file, Diagnostics& diags);

// The dict a definition's custom_inputs_entrypoint receives (SOL-ExecBench's
// axes_and_scalars): every axis, plus the value of each scalar input, whether the
// workload gives it as a "scalar" source or, as the public L2 set does for inputs
// made by the custom function, under "axes".
json axes_and_scalars(const Workload& w, const ResolvedWorkload& r);

}  // namespace solbench
