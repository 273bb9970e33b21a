// Sharding a run over several machines (`solbench run --shard I/N`,
// docs/cluster.md): the run's (problem, workload) pairs are split into N
// slices of about equal predicted cost, each evaluated by one `run` writing its
// own store, later merged (`solbench db merge`).
//
// The split must come out the same on every machine without any exchange
// between them, so it depends only on the data set's files and the command
// line: the predicted cost uses each workload's bytes (resolved from the
// definition) and the T_SOL the data set publishes (metadata.json), never a
// machine's caches or hardware.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "runset/dataset.h"

namespace solbench::runset {

// Shard `index` (0-based, as SLURM_ARRAY_TASK_ID with --array=0-(N-1)) of `count`.
struct ShardSpec {
  int index = 0;
  int count = 1;
};
// "I/N" with 0 <= I < N. Throws InputError naming the option and the expected form.
ShardSpec parse_shard(std::string_view text);

// The cost predictor: seconds a (problem, workload) pair takes, per solution
// evaluated on it, plus a set-up per (problem, solution) on each shard that
// gets any of the problem's workloads. Rough figures for a GPU evaluation with
// eval's defaults (docs/cluster.md says where each comes from); only their
// ratios matter to the balance.
struct CostModel {
  double child_setup_s = 5.0;  // a child eval: process, Python + torch import, build
  double workload_s = 1.5;     // a worker's set-up and two timing budgets (500 ms each)
  int rounds = 5;              // correctness rounds (eval's default), each with fresh inputs
  double bytes_per_s = 2e9;    // making inputs and comparing outputs, per round
  double sol_multiple = 20;    // reference + solution runs per round, in units of T_SOL
  // T_b's torch.compile of each workload's shapes, once per pair: per call written in
  // the reference (reference_calls), a proxy for the size of the graph it compiles.
  // Against the first 50 public problems evaluated on an H100 (session 43), the
  // rank correlation of the predicted with the measured evaluation seconds rose from
  // 0.44 without this term to 0.76 with it (docs/cluster.md).
  double compile_s_per_call = 0.05;
  // T_SOL where the data set publishes none: the memory-bound bound bytes / bandwidth
  // (B200 HBM, the hardware the published figures are for).
  double fallback_bytes_per_s = 8e12;
};

struct PairCost {
  size_t problem = 0;   // index into the run's problems
  size_t workload = 0;  // index into that problem's selected workloads (LoadedProblem::uuids)
  uint64_t bytes = 0;   // inputs + outputs
  double t_sol_ms = 0;
  bool t_sol_published = false;  // from metadata.json, else the bytes bound
  size_t evaluations = 0;        // solutions evaluated on the pair
  double seconds = 0;            // predicted: all its evaluations, without set-ups
  size_t reference_calls = 0;    // reference_calls() of the problem's reference
};

// Published T_SOL (ms) per workload index (workload.jsonl order) from
// PROBLEM/metadata.json (`sol.per_workload[i].sol_ms`, the public data set's
// SOLAR figures). Empty when the file is absent; when it is unusable (not
// JSON, a dummy, another workload count, a bad entry) a note naming the file,
// field and expectation is added and the entries concerned are left out.
std::map<size_t, double> published_sol_ms(const std::filesystem::path& problem_dir,
                                          const Problem& p, std::vector<std::string>& notes);

// The calls written in a reference's source (`name(...)`, `a.b(...)`; not `def`,
// `class` or a keyword before a parenthesis; comments left out): how large a graph
// torch.compile traces from it, roughly, without running Python.
size_t reference_calls(const std::string& source);

// One entry per selected workload of each valid problem with evaluations[i] > 0,
// in problem then workload order.
std::vector<PairCost> predict_costs(const std::vector<LoadedProblem>& problems,
                                    const std::vector<size_t>& evaluations, const CostModel& m,
                                    std::vector<std::string>& notes);

struct ShardPlan {
  int count = 1;
  std::vector<int> shard_of;     // per pair, aligned with the pairs given
  std::vector<double> load_s;    // per shard: its pairs and its set-ups
  std::vector<size_t> pairs;     // per shard
  std::vector<size_t> setups;    // per shard: (problem, solution) children it starts
  double max_over_mean() const;  // 1 = perfect balance
};

// Greedy, problems by decreasing whole cost, each problem's pairs by
// decreasing cost. A pair stays on a shard that already holds its problem while
// that shard is within its fair share (total / N), so a problem is built once;
// otherwise it goes to the shard whose load would be lowest with it, counting a
// set-up where the shard has none of the problem yet (so an expensive problem
// spreads out, and the small problems, coming last, fill the gaps). Ties: the
// order the pairs come in, the lower shard. Depends only on the pairs, so every
// machine computes the same plan.
ShardPlan plan_shards(const std::vector<PairCost>& pairs, int count, const CostModel& m);

}  // namespace solbench::runset
