// The SOL Score (docs/score.md): how far a kernel's time T_k is from the speed of
// light T_SOL, measured against a scoring baseline T_b,
//
//     S = 1 / (1 + (T_k - T_SOL) / (T_b - T_SOL))
//
// S = 1 at the speed of light, 0.5 at the baseline, -> 0 as T_k grows. Pure
// functions (no I/O), with the aggregates: a problem's score is the mean over its
// workloads, a category's the mean over its problems.
//
// Where the formula does not apply the result says why instead of inventing a
// number:
//   - T_k < T_SOL is impossible for a correct bound, timer and kernel: flagged as
//     `sol_violation` with both times; the score is capped at 1 (never above) and
//     the reason says so, so a 1.0 is never silent;
//   - T_b <= T_SOL (the baseline at or below the bound): the score is undefined
//     (null) with the reason; SOL-ExecBench's convention (1 if T_k <= T_SOL, else
//     0) is named in the reason but not applied (see docs/score.md);
//   - a missing, zero, negative or non-finite time: null with the reason.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/json.h"

namespace solbench::score {

// Keys `solbench eval` writes into each trace's evaluation.extra (and what
// `solbench run` reads back): stable names, listed in docs/score.md.
inline constexpr std::string_view kTSolKey = "solbench_t_sol_ms";         // number | null
// T_attainable (measured ceilings + one launch; docs/sol.md "Measured ceilings"):
// present only where the device has a calibration; never part of the score.
inline constexpr std::string_view kTAttainableKey = "solbench_t_attainable_ms";  // number | null
inline constexpr std::string_view kTBKey = "solbench_t_b_ms";             // number | null
inline constexpr std::string_view kScoreKey = "solbench_sol_score";       // number | null
inline constexpr std::string_view kViolationKey = "solbench_sol_violation";  // bool
inline constexpr std::string_view kScoreReasonKey = "solbench_score_reason";  // string | null
inline constexpr std::string_view kScoreDetailsKey = "solbench_score";    // object

struct WorkloadScore {
  std::optional<double> t_k_ms;
  std::optional<double> t_sol_ms;
  std::optional<double> t_b_ms;
  std::optional<double> score;           // in [0, 1]; nullopt: undefined (see reason)
  bool sol_violation = false;            // T_k < T_SOL
  bool baseline_at_or_below_sol = false; // T_b <= T_SOL
  // Why `score` is null, or what a violation means; empty for a plain score.
  std::string reason;

  // {t_k_ms, t_sol_ms, t_b_ms, score, sol_violation, baseline_at_or_below_sol,
  //  reason (null when empty), violation: {t_k_ms, t_sol_ms} (only on a violation)}
  json to_json() const;
};

// "eager (REASON)" for a T_b measured eagerly (`method` "eager"), "" otherwise:
// what every output shows beside an eager T_b (docs/score.md), so that a
// fallback from torch.compile is never silent.
std::string eager_note(const std::string& method, const std::string& reason);

// The score of one workload. Times in milliseconds; nullopt means unknown.
WorkloadScore sol_score(std::optional<double> t_k_ms, std::optional<double> t_sol_ms,
                        std::optional<double> t_b_ms);

// How every table prints a score (eval, run, db): three decimals; a workload
// that did not pass counts 0 and shows 0.000; a score that cannot be computed (a
// PASSED workload without T_SOL or T_b, a mean of nothing) shows "n/a", never a
// number and never a dash that reads as "worse than 0".
std::string score_text(std::optional<double> score, bool failed = false);

// One workload as an aggregate sees it.
struct ScoredWorkload {
  bool passed = false;               // PASSED (anything else counts 0)
  std::optional<double> score;       // the workload's S (PASSED only)
  bool sol_violation = false;
};

// A mean with what went into it. For a problem the counts are workloads; for a
// category they are problems (violations are always workloads).
struct Aggregate {
  std::optional<double> mean;  // nullopt when nothing could be scored
  int items = 0;               // everything given
  int scored = 0;              // in the mean (failed workloads included, as 0)
  int failed = 0;              // workloads not PASSED: scored 0
  int unscored = 0;            // left out of the mean: PASSED without a score, or a
                               // problem without a mean
  int violations = 0;          // workloads with T_k < T_SOL
  json to_json() const;        // {mean, items, scored, failed, unscored, violations}
  static Aggregate from_json(const json& j);  // missing keys keep their defaults
};

// Mean over the workloads: a PASSED workload contributes its S, any other status
// 0 (as the results store's leaderboard counts); a PASSED workload without a
// score (no T_SOL or no T_b) is left out and counted in `unscored`.
Aggregate problem_score(const std::vector<ScoredWorkload>& workloads);

// Mean over the problems' means; problems without a mean are left out (counted
// in `unscored`). `failed` and `violations` add up the problems' counts.
Aggregate category_score(const std::vector<Aggregate>& problems);

}  // namespace solbench::score
