// What a run found, per evaluation (problem, solution), per problem, per
// category and in all, as one JSON document (`solbench run --json`) or a table.
// Everything in it is the same whether a result was evaluated now or resumed
// from the store, so a resumed run prints what an uninterrupted one prints; the
// one exception is a skip taken from the store, whose skip_reason says so.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/json.h"
#include "core/trace.h"
#include "runset/baseline_lane.h"
#include "runset/dataset.h"
#include "store/store.h"

namespace solbench::runset {

struct WorkloadResult {
  std::string uuid;
  std::optional<Status> status;    // nullopt: eval skipped the workload (no trace)
  std::string skip_reason;
  std::optional<double> sol_score;  // evaluation.extra.solbench_sol_score
  // evaluation.extra.solbench_t_sol_ms and solbench_t_attainable_ms (the latter
  // only where the GPU had a calibration: docs/sol.md "Measured ceilings").
  std::optional<double> t_sol_ms, t_attainable_ms;
  // The T_b the score used (evaluation.extra.solbench_score.t_b): "torch.compile",
  // "eager" or "" when there is none; t_b_reason says why it is eager, or why
  // there is none.
  std::string t_b_method, t_b_reason;
  // Why sol_score is null (evaluation.extra.solbench_score_reason), "" with a score.
  std::string score_reason;
  std::string reason;               // not PASSED: the log's telling line (core/text.h)
  bool resumed = false;             // taken from the store
};
WorkloadResult result_of(const Trace& t);
WorkloadResult result_of(const store::StoredTrace& t);  // resumed
// Resumed skip: the stored reason, then kFromTheStore and when it was recorded.
WorkloadResult result_of(const store::Skip& s);
inline constexpr const char* kFromTheStore = " (from the store: ";
// evaluation.extra.solbench_sol_score when it is a number.
std::optional<double> sol_score_of(const Trace& t);

// One (problem, solution) evaluation.
struct EvaluationReport {
  std::string solution;       // name
  std::string solution_hash;  // content hash (the resume key)
  std::string solution_file;  // "" for the reference
  std::string device;         // the slot that ran it ("" if it did not run)
  std::string part;           // "k/n": one of n parts of the pair's workloads (several devices)
  std::vector<std::string> uuids;                       // its workloads, in order
  std::vector<std::optional<WorkloadResult>> results;   // aligned; nullopt: not run
  std::string error;  // how the child failed, when it did
  double seconds = 0;
  // T_b ahead: the seconds this evaluation waited for its problem's baselines
  // (baseline_lane.h), part of `seconds`.
  double baseline_wait_seconds = 0;
};

struct ProblemReport {
  ProblemDir where;
  std::string definition;
  size_t workloads = 0;  // selected for the run
  std::string error;     // the problem could not be loaded (nothing ran)
  std::vector<EvaluationReport> evaluations;
};

struct RunReport {
  std::string dataset;
  Layout layout = Layout::Problems;
  std::vector<std::string> slots;
  std::string db;
  std::string recording;  // "run" or "eval": who writes the traces (docs/run.md)
  std::vector<ProblemReport> problems;
  std::vector<std::string> errors;               // invalid solution files
  std::vector<std::string> unmatched_solutions;  // files whose definition no selected problem has
  bool interrupted = false;
  // An evaluation refused its request as a usage error (eval's exit 2: an unknown
  // --arch, a device that is not there): the run stopped, nothing was recorded for it.
  std::string usage_error;
  // --shard I/N: the slice of the (problem, workload) pairs this run evaluated.
  struct ShardInfo {
    int index = 0;
    int count = 1;
    size_t pairs = 0;        // this shard's
    size_t total_pairs = 0;  // all shards'
    double predicted_s = 0;  // this shard's predicted cost (shard.h)
    double max_over_mean = 1;
  };
  std::optional<ShardInfo> shard;
  int environment_probes = 0;
  double seconds = 0;
  // T_b ahead (baseline_lane.h), when the run had it: per job, its problem and
  // what became of it.
  struct BaselineAhead {
    std::string problem;  // ProblemDir::label()
    size_t workloads = 0;
    LaneOutcome outcome;  // Done, or Dropped (its evaluation measured T_b itself)
  };
  std::optional<std::vector<BaselineAhead>> baseline_ahead;
  int baseline_ahead_jobs = 0;  // at once
};

// Counts over evaluations. `workloads` counts (solution, workload) pairs; each is
// a status, skipped or not run. Mean SOL score, as the store's leaderboard
// scores: a PASSED workload counts with its score (left out without one), any
// other status counts 0; null when no result in it carries a score.
struct Tally {
  size_t evaluations = 0;
  size_t workloads = 0;
  std::map<std::string, size_t> statuses;  // PASSED, INCORRECT_NUMERICAL, ...
  size_t skipped = 0;
  size_t not_run = 0;
  size_t evaluated = 0;  // results evaluated in this run
  size_t resumed = 0;    // results taken from the store
  size_t scored = 0;
  double score_sum = 0;
  bool any_score = false;
  size_t errors = 0;  // evaluations whose child failed, problems that did not load
  // Results scored against an eager T_b, by reason: a warning wherever shown.
  size_t eager_baselines = 0;
  std::map<std::string, size_t> eager_reasons;
  // PASSED results without a SOL score (left out of the means), by reason.
  size_t unscored = 0;
  std::map<std::string, size_t> unscored_reasons;

  void add(const EvaluationReport& e);
  void add(const Tally& t);
  size_t failed() const;  // results with a status other than PASSED
  std::optional<double> mean_sol_score() const;
  json to_json() const;
  // "3 PASSED, 1 INCORRECT_NUMERICAL, 1 skipped, 2 not run"
  std::string text() const;
};

json summary_json(const RunReport& r);
// The table: one row per evaluation, then per category, then in all. It holds no
// timing or device, so an interrupted-then-resumed run prints the same table as
// an uninterrupted one.
std::string summary_table(const RunReport& r);
// 0: every result PASSED (skipped aside) and every input was valid; 1 otherwise.
// (An interrupted run exits 130: the CLI's business.)
int exit_code(const RunReport& r);

}  // namespace solbench::runset
