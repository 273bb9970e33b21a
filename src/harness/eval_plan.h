// The parent's side of one evaluation, around the runner: from a problem folder
// and a solution to a WorkerPlan (building C++-family solutions first), and from
// the workers' outcomes to traces in the public format.
//
//   prepare_solution()  build (or cache hit) -> how the worker calls the solution,
//                       or the COMPILE_ERROR / TIMEOUT every workload gets, with
//                       the build log (first error first) to report once
//   workload_spec()     one resolved workload as runtime.Workload reads it
//   make_trace()        one outcome -> one trace line
#pragma once

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>

#include "core/device.h"
#include "core/json.h"
#include "core/problem.h"
#include "core/solution.h"
#include "core/trace.h"
#include "harness/build/build.h"
#include "harness/protocol.h"

namespace solbench::harness {

struct PrepareOptions {
  Device device;  // the CPU by default
  std::chrono::duration<double> compile_timeout = std::chrono::seconds(120);
  bool keep_staging = false;
  std::string cuda_arch;       // e.g. "90a" for nvcc; empty: nvcc's default
};

// How the worker will call the solution, or why no worker will run.
struct PreparedSolution {
  bool ok = false;
  Status failure = Status::CompileError;  // every workload's status when !ok
  // With !ok: the solution is for another kind of device (host C++ on a GPU, CUDA on
  // the CPU). Its workloads are skipped with `log` as the reason, not failed: a data
  // set's solutions for the CPU are not wrong on a GPU run.
  bool skip = false;
  // Why, when !ok: the build's log with its first error line moved to the top
  // (first_error_line of harness/build.h), or the one-line reason.
  std::string log;
  std::string first_error;                // that first line alone
  EntryPoint entry;                       // with ok: what the worker calls
  std::optional<BuildResult> build;       // C++ family
  double seconds = 0;
};

// Checks that the solution fits the definition and the device, builds C++-family
// solutions (through the build cache) and fills the plan fields. Never throws for
// problems of the solution.
PreparedSolution prepare_solution(const Solution& s, const Definition& def,
                                  const PrepareOptions& opts);

// The problem's own reference as a return-style "solution" (public-set checks).
PreparedSolution reference_as_solution();

// runtime.Workload's spec of problem.workloads[i] (must be resolved): uuid, all
// axes, inputs with shapes and sources, outputs, tolerance, op_type, dataset_root.
json workload_spec(const Problem& problem, size_t i);

// One trace per outcome. `env` is the ready worker's environment (hardware,
// torch, timer). Skipped outcomes have no status in the public format: callers
// leave them out of the trace file.
Trace make_trace(const Problem& problem, size_t workload_index, const std::string& solution_name,
                 const WorkloadOutcome& o, const json& env);

}  // namespace solbench::harness
