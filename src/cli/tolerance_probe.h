// `solbench validate --probe-tolerance`: would an output that computes nothing (all
// zeros, a constant, a copy of an input) pass a workload's correctness check? Per
// workload, a child process (`solbench __probe-tolerance`, embedded Python, like the
// tracer of `solbench sol`) generates the inputs as the first correctness round does,
// runs the definition's reference and judges such outputs with the judge's rule
// (python/solbench_py/tolerance_probe.py). Weak workloads become validation warnings.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "core/device.h"
#include "core/diagnostics.h"
#include "core/json.h"
#include "core/problem.h"

namespace solbench::cli {

struct ProbeOptions {
  Device device;                       // where the reference runs (the CPU, cuda:0)
  double timeout_s = 120;              // per workload, the reference included; 0: none
  uint64_t max_bytes = 2ull << 30;     // inputs + outputs; larger workloads are skipped
  // At most this many workloads per problem (0: all), spread over their sizes: the
  // smallest, the largest (that fits max_bytes) and evenly between.
  size_t per_problem = 0;
};

struct WorkloadProbe {
  std::string uuid;
  int line = 0;
  std::string status;  // "checked", "not_checked", "skipped"
  std::string reason;  // why not checked or skipped
  json answer;         // the Python side's answer (checked: tolerance, outputs)
  // "output 'y' passes as all zeros; ..." per output with a passing cheat.
  std::vector<std::string> weak;
};

// One child process, reused across workloads and problems; started on first use,
// restarted after a timeout or a crash.
class ToleranceProber {
 public:
  explicit ToleranceProber(ProbeOptions opts);
  ~ToleranceProber();
  ToleranceProber(const ToleranceProber&) = delete;  // owns the child
  ToleranceProber& operator=(const ToleranceProber&) = delete;

  // Every resolved workload of `p`, in file order; a weak one adds a warning to
  // `diags` (the workload file, its line, path "tolerance").
  std::vector<WorkloadProbe> probe(const Problem& p, Diagnostics& diags);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// {"device", "workloads": [...], "checked", "weak", "not_checked", "skipped"}.
json probes_json(const std::vector<WorkloadProbe>& probes, const ProbeOptions& opts);
// "tolerance probe: 5 checked (2 weak), 1 not checked (needs a GPU)".
std::string probes_summary(const std::vector<WorkloadProbe>& probes);

// The hidden child command, `solbench __probe-tolerance`.
void add_probe_child_command(CLI::App& app);

}  // namespace solbench::cli
