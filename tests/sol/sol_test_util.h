// Helpers for the SOL tests: hand-built operator graphs and the H100 SXM model.
#pragma once

#include <string>
#include <vector>

#include "sol/cost_model.h"
#include "sol/hardware.h"
#include "sol/op_graph.h"
#include "sol/roofline.h"

namespace solbench::sol::testing {

inline HardwareModel model(const std::string& name) {
  return load_hardware(std::string(SOLBENCH_SOURCE_DIR) + "/data/hardware/" + name + ".json");
}

inline json T(int64_t id, std::vector<int64_t> shape, const std::string& dtype) {
  return {{"id", id}, {"shape", shape}, {"dtype", dtype}};
}

inline json op(const std::string& name, json args, std::vector<json> outs, int64_t count = 1) {
  return {{"op", "aten::" + name}, {"overload", "default"}, {"count", count}, {"args", args},
          {"outputs", outs}};
}

// A graph whose boundary inputs are `inputs` (named in0, in1, ...) and outputs `outputs`.
inline OpGraph graph(std::vector<json> inputs, std::vector<json> outputs, std::vector<json> ops) {
  json j = {{"status", "ok"}, {"mode", "meta"}, {"inputs", json::array()},
            {"outputs", json::array()}, {"ops", ops}};
  for (size_t i = 0; i < inputs.size(); ++i) {
    inputs[i]["name"] = "in" + std::to_string(i);
    j["inputs"].push_back(inputs[i]);
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    outputs[i]["name"] = "out" + std::to_string(i);
    j["outputs"].push_back(outputs[i]);
  }
  return parse_op_graph(j, "test graph");
}

// Roofline with boundary bytes taken from the graph's named inputs/outputs.
inline Bound bound(const OpGraph& g, const GraphCost& gc, const HardwareModel& hw) {
  double in = 0, touched = 0, out = 0, written = 0;
  for (auto& t : g.inputs) {
    in += t.bytes();
    touched += gc.input_touched_bytes.at(t.name);
  }
  for (auto& t : g.outputs) {
    out += t.bytes();
    auto it = gc.output_written_bytes.find(t.name);
    written += it == gc.output_written_bytes.end() ? t.bytes() : it->second;
  }
  return roofline(gc.total, in, touched, out, hw, written);
}

inline double cls(const Work& w, MathClass c) { return w.tensor_flops[size_t(c)]; }
inline double cuda(const Work& w, MathClass c) { return w.cuda_flops[size_t(c)]; }

}  // namespace solbench::sol::testing
