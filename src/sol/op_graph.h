// The operator graph the tracer (python/solbench_py/tracer.py) records: each
// aten operator once per distinct signature with a repeat count, its arguments
// (tensors as {id, shape, dtype[, base]}, scalars as JSON values) and outputs.
// Tensor ids connect producers and consumers, so this is a dataflow graph.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/json.h"

namespace solbench::sol {

struct TensorRef {
  int64_t id = -1;
  int64_t base = -1;  // id of the storage's base tensor for views; -1 if itself
  std::vector<int64_t> shape;
  std::string dtype;  // torch spelling without "torch.", e.g. "bfloat16"
  std::string name;   // definition input/output name (boundary tensors only)
  // Distinct storage elements a view addresses when fewer than numel() (a
  // broadcast view: stride 0 along some dims); -1 when every element is distinct.
  double distinct_numel = -1;

  double numel() const;
  double bytes() const;  // numel * storage size of dtype (packed FP4x2: 1 B per element)
};

// Storage bytes per element of a torch dtype name; 0 for unknown names.
double dtype_bytes(const std::string& dtype);

struct OpNode {
  std::string op;        // without the "aten::" namespace, e.g. "mm", "add_"
  std::string overload;  // "default", "Tensor", ...
  int64_t count = 1;     // identical calls aggregated
  json args = json::object();  // argument name -> encoded value, in schema order
  std::vector<TensorRef> outputs;
  // A gather whose indices were real in every call (the tracer's "selects"):
  // the source dims [select_dim, select_dim + select_ndims) it indexes, whose
  // selected positions OpGraph::selections holds; select_dim -1 otherwise.
  int64_t select_dim = -1, select_ndims = 0;

  // Tensor arguments in order (lists flattened).
  std::vector<TensorRef> tensor_args() const;
  // A tensor argument by schema name (nullopt-like: id -1 when absent/not a tensor).
  TensorRef tensor(const std::string& name) const;
  bool has(const std::string& name) const { return args.contains(name) && !args[name].is_null(); }
};

// What real indices selected of a gather source (tensor `id` of `shape`),
// over every gather of it along dims [dim, dim + ndims): the positions over
// those dims, flattened row-major, as sorted disjoint [start, end) runs, and
// their number. `has_ranges` is false when the tracer listed only the count.
struct Selection {
  int64_t id = -1;
  std::vector<int64_t> shape;
  int64_t dim = 0, ndims = 0;
  double selected = 0;
  bool has_ranges = false;
  std::vector<std::pair<int64_t, int64_t>> ranges;
};

struct OpGraph {
  std::string status = "ok";  // ok | untraceable | error
  std::string reason;         // why not ok
  std::string mode;           // meta | hybrid | cpu
  std::string mode_reason;    // why the fallback ran
  std::string torch_version;
  std::vector<std::string> notes;
  int64_t raw_op_count = 0;
  double seconds = -1;  // the tracer's own time for this trace (-1: not reported)
  // > 0: the trace ran out of this time budget (seconds) and holds the part of the
  // reference run so far, `raw_op_count` operators; its work and bytes are lower
  // bounds of the whole's, and its outputs are not known (docs/sol.md, "Time budget").
  double partial_budget_s = 0;
  std::vector<TensorRef> inputs;   // the definition's tensor inputs (named)
  std::vector<TensorRef> outputs;  // the reference's outputs (named)
  std::vector<OpNode> ops;
  std::vector<Selection> selections;
};

// Reads the tracer's answer (or a hand-built graph). Errors name `origin` and
// the JSON path (InputError).
OpGraph parse_op_graph(const json& j, const std::string& origin);
json to_json(const OpGraph& g);

}  // namespace solbench::sol
