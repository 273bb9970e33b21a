// The reference traced for T_SOL in a child process (`solbench __sol-trace`,
// cmd_sol.cc), never in the evaluating process: the child imports torch and
// traces while the parent builds and runs workers, a reference that never
// finishes is killed with its process group at the limit, and the parent holds
// no Python interpreter. Started on first use: a cache hit starts nothing. Where
// this process keeps a zygote (an evaluation, `run`'s children, Python), the
// tracer is forked from it (entry point "sol-trace"), torch already imported;
// else it is exec'd.
#pragma once

#include "core/json.h"
#include "harness/service_child.h"
#include "sol/analysis.h"
#include "sol/op_graph.h"

namespace solbench::score {

// Each trace's limit where a command has no --timeout of its own (eval, baseline):
// a reference that never finishes leaves its workloads without a bound, not the
// evaluation without an end.
inline constexpr double kTraceTimeoutS = 120;

class TracerProcess {
 public:
  // `timeout_s` bounds each trace (0: none).
  explicit TracerProcess(double timeout_s);

  // The graph of one trace request, or a graph with status "error" and the reason.
  // A request's time budget ("budget_s") is kept below the time limit (three
  // quarters of it), so that a long trace ends with a partial graph, not killed.
  sol::OpGraph trace(const json& request);
  // How its process started (harness::ServiceChild::launch); null: none started.
  json launch() const { return child_.launch(); }
  // trace() as sol::AnalysisOptions::trace takes it (this object must outlive it).
  sol::TraceFn fn() {
    return [this](const json& request) { return trace(request); };
  }

 private:
  harness::ServiceChild child_;
  double timeout_s_;
};

}  // namespace solbench::score
