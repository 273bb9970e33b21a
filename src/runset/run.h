// `solbench run`'s engine: a data set's problems, the solutions matched to them,
// the slots they run on, one child eval per (problem, solution), resume from the
// results store, and the report the summary prints.
#pragma once

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "eval/request.h"
#include "runset/child_eval.h"
#include "runset/dataset.h"
#include "runset/shard.h"
#include "runset/summary.h"

namespace solbench::runset {

// Who writes the traces into the store; decided once per run (plan_recording).
enum class Recording {
  Run,   // run records what each child returns; the child gets --no-db when eval knows it
  Eval,  // eval records as results arrive (--db FILE); run records only what no child could
};

// What this binary's `eval` accepts, read from `eval --help`.
struct EvalSupport {
  bool db = false;     // --db FILE
  bool no_db = false;  // --no-db
};
EvalSupport eval_support_from_help(const std::string& help);
EvalSupport probe_eval_support(const std::filesystem::path& program);  // runs `eval --help`

struct RecordingPlan {
  Recording who = Recording::Run;
  std::vector<std::string> child_args;  // every evaluation child
  std::vector<std::string> probe_args;  // environment probes: never record
};
RecordingPlan plan_recording(const EvalSupport& s, const std::filesystem::path& db);

struct RunOptions {
  std::filesystem::path dataset;
  std::filesystem::path solutions;  // empty: none (then --reference)
  bool reference = false;           // evaluate each problem's reference too
  ProblemFilter filter;
  score::WorkloadSelection workloads;  // per problem (score/selection.h), as eval's options
  // Stored results with one of these statuses are evaluated again instead of
  // resumed (--rerun); the new traces are recorded beside the old ones.
  std::vector<Status> rerun;
  // Workloads the store holds an out-of-memory skip of (docs/run.md "Resume") are
  // evaluated again instead of taken from the store (--rerun skipped).
  bool rerun_skipped = false;
  std::optional<ShardSpec> shard;   // --shard I/N: only this slice of the (problem, workload) pairs
  std::vector<std::string> slots{"cpu"};
  // T_b ahead (baseline_lane.h): how many problems' baselines are measured at once
  // beside the evaluations, on a run whose slots are all one GPU; 0: none (each
  // evaluation measures its own); -1: kBaselineAheadJobs there.
  int baseline_ahead = -1;
  // The GPU's memory for T_b ahead's rule of an evaluation that needs the GPU to
  // itself (run.cc needs_gpu_alone); 0: from the device's hardware model
  // (score::device_memory_bytes), and no such rule where that is unknown.
  uint64_t gpu_memory_bytes = 0;
  std::filesystem::path db;         // empty: store::default_db_path()
  bool no_db = false;               // a private store, removed at the end (nothing resumed or kept)
  eval::Settings eval;              // passed to each child eval (its flags)
  std::filesystem::path program;    // the solbench binary children run; empty: self_exe()
  std::string command_line;         // recorded with the run
  const std::atomic<bool>* stop = nullptr;  // set (SIGINT): stop starting, abandon what runs
  std::FILE* progress = stderr;     // null: silent
  bool progress_tty = false;
};

// Runs the data set. Throws InputError for an unusable data set or filter, and
// StoreError for an unusable store; problems and solutions that do not load are
// reported in the result (and make exit_code 1), the others still run.
RunReport run_dataset(const RunOptions& o);
inline constexpr int kBaselineAheadJobs = 2;

// `run --plan`: how the run's (problem, workload) pairs split into `count`
// shards (shard.h), without evaluating anything or opening a store.
struct PlannedPair {
  std::string problem;     // "CATEGORY/PROBLEM" or "PROBLEM"
  std::string definition;
  std::string uuid;
  PairCost cost;
  int shard = 0;
};
struct PlanReport {
  std::string dataset;
  int count = 1;
  std::vector<PlannedPair> pairs;  // problem then workload order
  ShardPlan plan;
  std::vector<std::string> notes;   // metadata.json entries not used (file, field, why)
  std::vector<std::string> errors;  // problems and solution files that do not load
};
PlanReport plan_run(const RunOptions& o, int count);

}  // namespace solbench::runset
