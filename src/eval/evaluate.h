// One evaluation, from a request to a report: the library behind `solbench
// eval`, `run`'s children, `baseline`'s T_b stage and the Python module.
//
// Stages, in order (each a member of the Evaluation in evaluate.cc):
//   load       definition, workloads (resolved), solution, the selection;
//              nothing is built or run when an input is bad (RequestError)
//   hardware   the hardware model for T_SOL (--arch, else the device's own)
//              and each workload's bound, found beside the build and workers
//   build      the solution's shared object (build cache), outside any worker
//   run        the harness's front door (harness/evaluate.h): the solution's
//              workers, then a reference worker that judges and times T_ref
//   judge      each outcome into a trace; T_b from the store when it has it
//   baseline   T_b measured for the rest in a worker of its own (eval/baselines.h)
//   score      S per workload and the problem's mean (eval/scoring.h)
//   record     each trace appended to the traces file and to the results store
//              as soon as its numbers are final (eval/recorder.h)
#pragma once

#include <string>

#include "core/definition.h"
#include "eval/report.h"
#include "eval/request.h"
#include "store/store.h"

namespace solbench::eval {

// What a caller sees while an evaluation runs, on the evaluating thread.
class Observer {
 public:
  virtual ~Observer() = default;
  // The inputs loaded: this many workloads will be evaluated.
  virtual void selected(size_t /*workloads*/) {}
  // What is happening now ("building X", "3f2a1b0c d=128: timing round 2/5").
  virtual void status(const std::string& /*text*/) {}
  // Nothing is happening that a status line should show (between stages).
  virtual void clear_status() {}
  // A workload's outcome arrived from the workers (position in the report).
  virtual void outcome(size_t /*position*/, const WorkloadReport& /*w*/) {}
  // A warning about the inputs or the request, at once (also with --json).
  virtual void notice(const std::string& /*text*/) {}
  // A warning about the built solution (an import it should not use).
  virtual void build_warning(const std::string& /*text*/) {}
};

// Runs the request. Throws RequestError for a request that cannot run (before
// anything was built or run); never throws for problems of the solution, which
// are the report's statuses.
Report evaluate(const Request& request, Observer& observer);

// The solution's name and its record in the results store for the definition's
// own reference evaluated as a solution (`--reference`, `run --reference`).
std::string reference_solution_name(const std::string& definition_name);
store::SolutionRecord reference_solution_record(const Definition& definition);

}  // namespace solbench::eval
