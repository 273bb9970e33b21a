// The compiler runs of a build, up to a number at once: every source is compiled
// by its own process (and the precompiled header beside them), started in order,
// and the log lists each step's command and output in that order, whatever
// finished first.
//
//   Step          one compiler run: what, the command, whether it may fail alone
//   StepLimits    how many at once, the build's deadline, the log's bound
//   run_steps     runs them; StepsOutcome: the log, the status, the failures
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

#include "harness/build/build.h"
#include "harness/process.h"

namespace solbench::harness::build_internal {

// One compiler run of a build: a source (or the precompiled header).
struct Step {
  std::string what;               // "compiling main.cpp"
  std::vector<std::string> argv;  // the whole command
  bool optional = false;          // its failure costs only itself (the PCH), never the build
  // Filled by run_steps():
  bool ok = false;
  std::string output;             // the command, then what it printed
  std::string failure;            // why it failed ("compiling x failed (exit 1)")
  BuildStatus status = BuildStatus::Ok;
};

struct StepLimits {
  int jobs = 1;                    // compilers at once (at least 1)
  Deadline deadline = kNoDeadline;
  size_t log_limit_bytes = 64 << 10;  // each step's output
  double limit_seconds = 0;        // the build's limit, for the timeout message
};

struct StepsOutcome {
  BuildStatus status = BuildStatus::Ok;
  std::string log;      // each started step's command and output, in step order
  std::string message;  // the failures of required steps, the first one first
  bool ok() const { return status == BuildStatus::Ok && message.empty(); }
};

// Runs the steps in `cwd`. After a required step fails no other step is started
// (those running finish; optional ones are stopped). When the deadline passes,
// everything running is killed and the outcome is a Timeout.
StepsOutcome run_steps(std::vector<Step>& steps, const std::filesystem::path& cwd,
                       const StepLimits& limits);

}  // namespace solbench::harness::build_internal
