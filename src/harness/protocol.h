// The worker protocol: what the parent sends a worker (one plan) and what the
// worker streams back (frames), as JSON over the framed channel (framing.h).
//
//   parent -> worker   {"type":"plan", ...WorkerPlan}
//   worker -> parent   {"type":"hello", "t_ns", "pid"}                 process started
//                      {"type":"ready", "t_ns", "env", "sandbox", "startup_ms"}
//                                                                      Python, reference and
//                                                                      solution loaded
//                      {"type":"load_failed", "t_ns", "message"}       the solution could not
//                                                                      be loaded (all remaining
//                                                                      workloads fail with it)
//                      {"type":"begin", "t_ns", "index"}               workload started
//                      {"type":"progress", "t_ns", "index", "phase", "round"?}
//                      {"type":"result", "t_ns", ...WorkloadOutcome}   one per workload
//                      {"type":"done", "t_ns"}                         all workloads finished
//
// Before each "begin" frame the worker also writes workload_log_marker(index) to its
// stderr. Output is captured by a thread reading a pipe, unordered with the frames;
// the marker puts the cut between two workloads' prints in stream order.
//
// t_ns is CLOCK_MONOTONIC (std::chrono::steady_clock) in nanoseconds, a system-wide
// clock, so the parent can place the worker's events on its own time line.
// Everything the worker reports is about untrusted code's behaviour and is treated
// as data: the parent validates frames and owns the statuses of crashes and hangs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/json.h"
#include "core/trace.h"
#include "harness/timing/timing.h"

namespace solbench::harness {

// "\x1esolbench workload <index>\n" (record separator first: not a line a solution prints).
inline constexpr std::string_view kWorkloadLogMarker = "\x1esolbench workload ";
std::string workload_log_marker(size_t index);
// `text` without the marker lines (for logs shown to people).
std::string strip_workload_markers(std::string text);

// How the worker calls the solution.
enum class EntryKind {
  Native,          // dlopen(library) + dlsym(entry): include/solbench/kernel.h ABI
  TorchExtension,  // import the built module `module_name` from `library`, call `entry`
  Python,          // write `sources` into the scratch folder, import `entry_file`, call `entry`
  Reference,       // the definition's own reference, run as a solution (return style)
};
std::string_view entry_kind_name(EntryKind k);
std::optional<EntryKind> parse_entry_kind(std::string_view s);

struct WorkerPlan {
  json definition = json::object();  // definition.json (core to_json)
  std::string solution_name;
  EntryKind kind = EntryKind::Python;
  std::string library;      // Native / TorchExtension: the built shared object
  std::string module_name;  // TorchExtension
  std::string entry;        // symbol or function name
  std::string entry_file;   // Python: "pkg/main.py"
  json sources = json::array();  // Python: [{path, content}]
  bool dps = true;
  std::vector<std::string> languages;  // the solution's spec.languages (names)

  // One entry per workload, in evaluation order: {index, uuid, axes, inputs, outputs,
  // tolerance, op_type, dataset_root} (see python/solbench_py/runtime.py Workload).
  std::vector<json> workloads;

  std::string device = "cpu";
  int rounds = 5;
  uint64_t seed = 200;
  int input_sets = 4;            // distinct input sets rotated through timed calls
  int verify_samples = 8;        // timed calls whose outputs are re-checked
  bool time_solution = true;
  bool time_reference = true;
  TimingOptions timing;
  json timer_options = json::object();  // make_timer(device, stream, options): GPU timer keys
  // The GPU's timing lock (timing/device_lock.h), held for each timed loop; "": none.
  std::string timing_lock;
  json sandbox = json::object(); // SandboxOptions overrides: {"seccomp": false, ...}
  // The scoring baseline (docs/score.md): kind Reference only. The reference
  // "solution" runs under torch.compile where this torch has it (eager otherwise,
  // or when compiling fails); each outcome's extra["baseline"] says which and why.
  bool baseline_compile = false;
  // A reference worker (runner.h RunnerOptions::reference_worker): kind Reference,
  // no solution loaded, and per workload only the reference is timed (T_ref); its
  // outcome's status says whether that worked.
  bool reference_role = false;

  json to_json() const;
  static WorkerPlan from_json(const json& j);  // throws std::runtime_error when malformed
};

// The worker's report for one workload.
struct WorkloadOutcome {
  int index = -1;
  std::string uuid;
  Status status = Status::RuntimeError;
  bool skipped = false;        // could not be evaluated here (missing blob, dtype, GPU)
  std::string skip_reason;
  std::string log;
  std::optional<Correctness> correctness;
  std::optional<TimingResult> timing;            // the solution's
  std::optional<TimingResult> reference_timing;
  json phases_ms = json::object();               // inputs, reference, correctness, timing, ...
  json extra = json::object();                   // verification, threads, ...

  json to_json() const;
  static WorkloadOutcome from_json(const json& j);  // throws std::runtime_error
};

// steady_clock now, in nanoseconds.
int64_t monotonic_ns();

}  // namespace solbench::harness
