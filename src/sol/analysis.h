// One workload's speed-of-light analysis, end to end: trace (or cached graph)
// -> cost model -> roofline -> a JSON result that every printer reads.
#pragma once

#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
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

// Graphs traced during one run, by graph key (the content hash of the trace
// request and the tracer version): a second workload with the same shape
// signature waits for the first one's trace instead of tracing again, with or
// without the on-disk cache and across parallel slots. Thread-safe.
class GraphMemo {
 public:
  // The graph for `key`: computed by `trace` the first time (`*traced` = true),
  // otherwise the first call's graph, waited for if it is still being traced.
  OpGraph get(const std::string& key, const std::function<OpGraph()>& trace, bool* traced);
  size_t traces() const;  // calls that ran `trace`

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::shared_future<OpGraph>> graphs_;
  size_t traces_ = 0;
};

// Each trace's time budget where a command sets none (`sol --trace-budget`): a
// reference whose Python loops run longer is bounded by the part traced so far.
inline constexpr double kTraceBudgetS = 20;

struct AnalysisOptions {
  bool use_cache = true;
  double trace_budget_s = kTraceBudgetS;  // 0: none (the tracer runs to the end)
  bool keep_graph = false;  // put the operator graph in the result ("graph")
  TraceFn trace;            // empty: trace_reference() in this process
  std::shared_ptr<GraphMemo> memo;  // null: every uncached workload traces
};

// Costs a graph against a resolved workload on `hw`: the result object
// (status, work, bytes, time_us, bottleneck, intensity, uncosted, ops, ...).
json analyse_graph(const OpGraph& g, const ResolvedWorkload& r, const HardwareModel& hw);

// Full analysis of workload `index` of `p`. Results are cached by the content
// hash of (definition, workload, hardware model file, cost-model version,
// tracer version); graphs by (trace request, tracer version), so a new --arch
// re-costs without re-tracing and workloads of one shape signature share one
// graph (traced once per run through `opt.memo`). A full hit starts no Python.
// "trace_seconds" is the trace's time in this call as the tracer measured it
// (its wall time where the tracer reported none, e.g. past the time limit; 0 for
// a graph from the cache or the memo, "graph_reused": true for the memo);
// "trace_wall_seconds" the wall time of the call, which also holds the start of
// a tracer process where one had to start.
json analyse_workload(const Problem& p, size_t index, const HardwareModel& hw,
                      const AnalysisOptions& opt);

}  // namespace solbench::sol
