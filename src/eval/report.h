// What one evaluation found: per workload its outcome, its trace (with the
// score's keys) and the score's inputs; the build, the workers, the score of
// the problem and where it was recorded. `to_json` is `eval --json`'s document;
// `from_json` reads it back (run's children), restoring what the document holds.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "core/json.h"
#include "core/trace.h"
#include "harness/protocol.h"
#include "score/arch.h"
#include "score/baseline.h"
#include "score/published.h"
#include "score/sol_score.h"

namespace solbench::eval {

// What the score needs of one workload beside its outcome.
struct ScoreState {
  score::SolBound bound;                          // T_SOL, or why none
  std::optional<score::BaselineResult> baseline;  // T_b (nullopt: see t_b_reason)
  std::string t_b_reason;
  std::optional<score::Published> published;      // SOL-ExecBench's B200 numbers
  score::WorkloadScore s;
};

struct WorkloadReport {
  size_t index = 0;  // in the problem's workloads
  std::string uuid;
  json axes = json::object();
  std::optional<Trace> trace;  // none when skipped
  bool skipped = false;
  std::string skip_reason;
  // In memory only (not in the document): the worker's outcome and the score's
  // inputs, for printers.
  harness::WorkloadOutcome outcome;
  ScoreState score;
};

// A T_b measured eagerly, not under torch.compile (docs/score.md).
struct EagerBaseline {
  std::string uuid;
  double t_b_ms = 0;
  std::string reason;
};

struct BuildReport {
  bool ok = true;          // false: no worker ran (COMPILE_ERROR, TIMEOUT, or skipped)
  json record = nullptr;   // the build's record without its log; null when nothing was built
  std::string first_error; // !ok: the log's first error line
  std::string log;         // !ok: the whole log, first error first (in memory only)
};

struct Report {
  std::string definition, solution, device;
  BuildReport build;
  json environment = json::object();        // the ready worker's (hardware, torch, timer)
  json sandbox = json::object();
  json workers = json::array();
  json reference_workers = json::array();
  json baseline_workers = json::array();  // T_b's workers (score/baseline.h), side by side
  std::vector<WorkloadReport> workloads;
  score::ArchChoice arch;
  score::Aggregate problem_score;
  size_t baselines_cached = 0, baselines_measured = 0;
  bool baselines_skipped = false;           // --no-baseline
  std::vector<EagerBaseline> eager;
  std::string published_note;
  json db = nullptr;                        // {path, recorded, errors, run, error?}; null: --no-db
  std::string db_line;                      // the store's summary line (in memory only)
  std::string traces_file;
  size_t traces_written = 0;
  json timeline = json::object();           // stage -> CLOCK_MONOTONIC ns
  json tracer = nullptr;                    // T_SOL's tracer process: {launch, note?}; null: none ran
  std::vector<std::string> warnings;        // shown once, after the live progress line

  // Every evaluated (not skipped) workload PASSED.
  bool all_passed() const;
  // {workloads, statuses: {STATUS: n}, skipped: {why: n}, geomean_speedup, sol_score}
  json summary() const;
  json to_json() const;
  // Throws std::runtime_error when `j` is not a report; a result whose trace does
  // not parse comes back with neither a trace nor a skip (unreported).
  static Report from_json(const json& j);
};

}  // namespace solbench::eval
