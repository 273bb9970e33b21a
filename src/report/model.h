// The report as data: what collect() makes of the store, the problem folders
// and the SOL analysis, and what render_html() draws. Strings from the store
// are kept as they are: the renderer escapes them.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "core/trace.h"
#include "report/placement.h"
#include "report/roofs.h"
#include "score/sol_score.h"

namespace solbench::report {

// Measured: a solution at its achieved intensity and FLOP rate from `eval --profile`'s
// counters (docs/profile.md), beside its point at the workload's own intensity.
// ReferenceMeasured: the reference's call the same way (its FLOPs over T_ref).
enum class PointKind { Sol, Baseline, Solution, Measured, ReferenceMeasured };

struct ChartPoint {
  PointKind kind = PointKind::Solution;
  int series = -1;          // Solution, Measured: index into ProblemReport::solutions
  double intensity = 0;     // FLOP/byte
  double flops_per_s = 0;   // achieved
  std::string label;        // what the point is, shown as its tooltip
  std::string target;       // the anchor of its table row
};

// A time that has no point, and why.
struct NotPlaced {
  std::string what;      // "T_SOL", "baseline T_b", "solution NAME", "every point"
  std::string workload;  // the workload's label
  std::string reason;
  std::string target;    // the anchor of its table row
};

// One solution (one version, by hash) on a problem, as the leaderboard ranks it.
struct SolutionSummary {
  std::string name;  // shown: the name, with the hash's first 8 digits when a name has two versions
  std::string hash;
  int rank = 0;
  int workloads = 0, passed = 0, unscored = 0;
  std::optional<double> mean_score, mean_latency_ms;
};

// One solution's latest trace on one workload.
struct Row {
  int series = 0;  // index into ProblemReport::solutions
  std::string anchor;
  Status status = Status::Passed;
  std::optional<double> t_k_ms, t_b_ms, t_sol_ms, score;
  // T_attainable where the device had a calibration (hw calibrate); shown beside T_SOL.
  std::optional<double> t_attainable_ms;
  // How T_b was measured: "torch.compile", "eager" (t_b_reason says why), "" unknown.
  std::string t_b_method, t_b_reason;
  bool sol_violation = false;
  std::string score_reason;  // why S is null, or what a violation means
  std::string log;           // the evaluation's log (failures say why)
  std::string recorded;
  std::string not_placed;    // empty: the row has a point on the chart
  json profile = nullptr;    // the trace's solbench_profile (eval --profile); null without
};

struct WorkloadReport {
  std::string uuid;
  std::string label;  // the axes: "batch_size=1"
  std::string anchor;
  std::optional<WorkloadWork> work;  // from the SOL analysis on the chart's model
  std::string work_reason;           // why there is none
  std::optional<double> t_sol_ms, t_b_ms;  // as recorded with the traces (latest)
  std::string t_b_method, t_b_reason;      // of that T_b
  std::vector<Row> rows;             // by the solutions' rank
};

// Workload scores of a category's problems (each problem's best solution), in
// tenths: bins[i] holds scores in [i/10, (i+1)/10) (1.0 in the last bin).
struct ScoreHistogram {
  std::array<int, 10> bins{};
  int failed = 0;    // not PASSED: counted 0 in the means, drawn apart
  int unscored = 0;  // PASSED without a score: in no bin and no mean
  void add(const score::ScoredWorkload& w);
  void merge(const ScoreHistogram& o);
  int total() const;
};

struct ProblemReport {
  std::string definition;
  std::string gpu_model;  // as recorded (the CPU's name on CPU runs)
  std::string category;   // the data set's category of its folder; "all" when unknown
  std::string anchor;
  std::string folder;     // where the work and bytes came from; empty: nowhere
  std::optional<Roofs> roofs;            // nullopt: no hardware model
  std::vector<std::string> notes;        // what the reader must know (shown above the chart)
  std::vector<SolutionSummary> solutions;  // by rank
  std::vector<WorkloadReport> workloads;
  std::vector<ChartPoint> points;
  std::vector<NotPlaced> not_placed;
  score::Aggregate score;      // the best solution's (rank 1) mean over the workloads
  ScoreHistogram histogram;    // the best solution's workload scores
};

struct CategoryReport {
  std::string name;
  std::string anchor;
  std::vector<size_t> problems;  // indices into Report::problems
  int workloads = 0;
  score::Aggregate score;  // the mean of its problems' means
  ScoreHistogram histogram;
};

struct Report {
  std::string title;
  std::string db;         // the store's file
  std::string generated;  // ISO 8601
  std::string selection;  // the filters, as text ("" when none)
  std::vector<CategoryReport> categories;
  std::vector<ProblemReport> problems;
  std::vector<std::string> notes;  // for the whole page
  size_t placed() const;
  size_t not_placed() const;
};

}  // namespace solbench::report
