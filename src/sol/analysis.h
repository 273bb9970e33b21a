// One workload's speed-of-light analysis, end to end: trace (or cached graph)
// -> cost model -> roofline -> a JSON result that every printer reads.
#pragma once

#include <functional>
#include <string>

#include "core/problem.h"
#include "sol/hardware.h"
#include "sol/op_graph.h"
#include "sol/roofline.h"

namespace solbench::sol {

// Turns a trace request (trace_request()) into a graph. The default traces in
// this process (trace_reference()); `solbench sol` passes one that traces in a
// child process with a time limit (src/cli/cmd_sol.cc).
using TraceFn = std::function<OpGraph(const json& request)>;

struct AnalysisOptions {
  bool use_cache = true;
  bool keep_graph = false;  // put the operator graph in the result ("graph")
  TraceFn trace;            // empty: trace_reference() in this process
};

// Costs a graph against a resolved workload on `hw`: the result object
// (status, work, bytes, time_us, bottleneck, intensity, uncosted, ops, ...).
json analyse_graph(const OpGraph& g, const ResolvedWorkload& r, const HardwareModel& hw);

// Full analysis of workload `index` of `p`. Results are cached by the content
// hash of (definition, workload, hardware model file, cost-model version,
// tracer version); graphs by (definition, workload, tracer version), so a new
// --arch re-costs without re-tracing. A full hit starts no Python.
json analyse_workload(const Problem& p, size_t index, const HardwareModel& hw,
                      const AnalysisOptions& opt);

}  // namespace solbench::sol
