// The cost model: a catalogue of rules, one per operator family, turning each
// recorded aten operator into work per hardware unit and the bytes it moves
// when run on its own (the "unfused" traffic). Operators without a rule are
// reported as uncosted, never silently counted as zero. See docs/sol.md.
#pragma once

#include <array>
#include <map>
#include <string>
#include <vector>

#include "sol/hardware.h"
#include "sol/op_graph.h"

namespace solbench::sol {

// Bumped whenever a rule changes: part of every result cache key.
inline constexpr const char* kCostModelVersion = "sol-cost-13";

constexpr size_t kClasses = size_t(MathClass::Count);

struct Work {
  std::array<double, kClasses> tensor_flops{};  // 2 per MAC, by operand class
  std::array<double, kClasses> cuda_flops{};    // FP64/FP32/FP16/BF16 CUDA-core FLOPs
  double sfu_ops = 0;                           // special-function results
  double int_ops = 0;                           // integer, compare-select, address ops
  double bytes = 0;                             // unfused DRAM traffic

  Work& operator+=(const Work& o);
  Work scaled(double k) const;
  double tensor_total() const;
  double cuda_total() const;
};

struct OpCost {
  size_t index = 0;     // position in OpGraph::ops
  std::string op;       // "mm"
  std::string family;   // rule family, e.g. "matmul"; empty when uncosted
  int64_t count = 1;
  Work work;            // for all `count` calls
  std::string note;     // operand class chosen, why uncosted, ...
  bool costed = false;
};

struct GraphCost {
  std::vector<OpCost> ops;
  Work total;
  std::map<std::string, int64_t> uncosted;  // op name -> calls
  // Bytes each definition input must at least be read with (gathers read only
  // what they touch; unused inputs need not be read). Input name -> bytes.
  std::map<std::string, double> input_touched_bytes;
  // Bytes a kernel must at least write for outputs it may write in part: a
  // broadcast (stride-0) view counts its distinct elements; an output that
  // aliases an input updated in place counts the bytes written into it.
  // Output name -> bytes; outputs not listed are written in full.
  std::map<std::string, double> output_written_bytes;
};

GraphCost cost_graph(const OpGraph& g);

// The catalogue, for documentation and `solbench hw`-style listings:
// family -> operator names it covers.
std::map<std::string, std::vector<std::string>> rule_catalogue();

// The math class of a torch dtype name: float32 -> FP32, int8 -> INT8, ...;
// Count for integer types other than int8/uint8 and for bool.
MathClass class_of_dtype(const std::string& dtype);

}  // namespace solbench::sol
