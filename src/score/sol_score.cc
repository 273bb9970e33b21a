#include "score/sol_score.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace solbench::score {

namespace {

std::string ms(double v) { return fmt::format("{:.6g} ms", v); }

// Why `v` cannot be used as a time, or "" when it can. `zero_ok`: T_SOL may be 0
// (a bound of no work is still a bound).
std::string unusable(const char* what, const std::optional<double>& v, bool zero_ok) {
  if (!v) return fmt::format("{} unknown", what);
  if (!std::isfinite(*v)) return fmt::format("{} is not finite ({})", what, *v);
  if (*v < 0 || (*v == 0 && !zero_ok))
    return fmt::format("{} is {} (expected a time {} 0)", what, ms(*v), zero_ok ? ">=" : ">");
  return "";
}

}  // namespace

json WorkloadScore::to_json() const {
  json j = {{"t_k_ms", or_null(t_k_ms)},
            {"t_sol_ms", or_null(t_sol_ms)},
            {"t_b_ms", or_null(t_b_ms)},
            {"score", or_null(score)},
            {"sol_violation", sol_violation},
            {"baseline_at_or_below_sol", baseline_at_or_below_sol},
            {"reason", reason.empty() ? json(nullptr) : json(reason)}};
  if (sol_violation) j["violation"] = {{"t_k_ms", *t_k_ms}, {"t_sol_ms", *t_sol_ms}};
  return j;
}

std::string eager_note(const std::string& method, const std::string& reason) {
  if (method != "eager") return "";
  return "eager (" + (reason.empty() ? std::string("reason unknown") : reason) + ")";
}

WorkloadScore sol_score(std::optional<double> t_k_ms, std::optional<double> t_sol_ms,
                        std::optional<double> t_b_ms) {
  WorkloadScore s;
  s.t_k_ms = t_k_ms;
  s.t_sol_ms = t_sol_ms;
  s.t_b_ms = t_b_ms;
  const std::string bad_k = unusable("T_k (the kernel's time)", t_k_ms, false);
  const std::string bad_sol = unusable("T_SOL", t_sol_ms, true);
  const std::string bad_b = unusable("T_b (the baseline's time)", t_b_ms, false);
  std::vector<std::string> why;

  // A violation needs only T_k and T_SOL: flag it even when T_b is unknown.
  if (bad_k.empty() && bad_sol.empty() && *t_k_ms < *t_sol_ms) {
    s.sol_violation = true;
    why.push_back(fmt::format(
        "sol_violation: T_k {} < T_SOL {}: faster than the speed of light, so the bound, the "
        "timer or the kernel is wrong",
        ms(*t_k_ms), ms(*t_sol_ms)));
  }
  if (bad_k.empty() && bad_sol.empty() && bad_b.empty()) {
    const double k = *t_k_ms, sol = *t_sol_ms, b = *t_b_ms;
    if (b <= sol) {
      // The formula's denominator is not positive: the public rule (shared/spec
      // formats.md) scores 1 if T_k <= T_SOL, else 0, and the flag says why.
      s.baseline_at_or_below_sol = true;
      s.score = k <= sol ? 1.0 : 0.0;
      why.push_back(fmt::format(
          "T_b {} <= T_SOL {}: the formula is undefined (the baseline is at or below the bound: "
          "the bound or the baseline's timing is wrong), so the public rule gives {} (1 if "
          "T_k <= T_SOL, else 0)",
          ms(b), ms(sol), k <= sol ? 1 : 0));
    } else {
      const double raw = 1.0 / (1.0 + (k - sol) / (b - sol));
      s.score = std::min(raw, 1.0);
      if (s.sol_violation)
        why.push_back(fmt::format("the score is capped at 1 (the formula gives {:.6g})", raw));
    }
  } else {
    std::string missing;
    for (const std::string* b : {&bad_k, &bad_sol, &bad_b})
      if (!b->empty()) missing += (missing.empty() ? "" : ", ") + *b;
    why.push_back("no score: " + missing);
  }
  for (size_t i = 0; i < why.size(); ++i) s.reason += (i == 0 ? "" : "; ") + why[i];
  return s;
}

Aggregate Aggregate::from_json(const json& j) {
  Aggregate a;
  if (!j.is_object()) return a;
  if (j.contains("mean") && j["mean"].is_number()) a.mean = j["mean"].get<double>();
  a.items = j.value("items", 0);
  a.scored = j.value("scored", 0);
  a.failed = j.value("failed", 0);
  a.unscored = j.value("unscored", 0);
  a.violations = j.value("violations", 0);
  return a;
}

json Aggregate::to_json() const {
  return {{"mean", or_null(mean)},     {"items", items},       {"scored", scored},
          {"failed", failed},      {"unscored", unscored}, {"violations", violations}};
}

Aggregate problem_score(const std::vector<ScoredWorkload>& workloads) {
  Aggregate a;
  double sum = 0;
  for (const ScoredWorkload& w : workloads) {
    ++a.items;
    if (w.sol_violation) ++a.violations;
    if (!w.passed) {
      ++a.failed;
      ++a.scored;  // counts 0
    } else if (w.score) {
      ++a.scored;
      sum += *w.score;
    } else {
      ++a.unscored;
    }
  }
  if (a.scored > 0) a.mean = sum / a.scored;
  return a;
}

Aggregate category_score(const std::vector<Aggregate>& problems) {
  Aggregate a;
  double sum = 0;
  for (const Aggregate& p : problems) {
    ++a.items;
    a.failed += p.failed;
    a.violations += p.violations;
    if (p.mean) {
      ++a.scored;
      sum += *p.mean;
    } else {
      ++a.unscored;
    }
  }
  if (a.scored > 0) a.mean = sum / a.scored;
  return a;
}

std::string score_text(std::optional<double> score, bool failed) {
  if (failed) return "0.000";
  return score ? fmt::format("{:.3f}", *score) : std::string("n/a");
}

}  // namespace solbench::score
