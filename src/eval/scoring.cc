#include "eval/scoring.h"

#include <string>
#include <vector>

#include <fmt/format.h>

namespace solbench::eval {

namespace {

// The score's reason with the specific causes of a missing input in place of
// the formula's generic ones.
void explain(ScoreState& st, const Trace& t, bool timed) {
  score::WorkloadScore& s = st.s;
  if (s.score || s.baseline_at_or_below_sol) return;
  std::vector<std::string> why;
  if (t.evaluation.status != Status::Passed) {
    // The first cause is the only one worth reading.
    why.push_back(fmt::format("the workload did not pass ({})", status_name(t.evaluation.status)));
  } else {
    if (!s.t_k_ms) why.push_back(timed ? "the solution's time is unknown" : "not timed (--no-timing)");
    if (!s.t_sol_ms) why.push_back(st.bound.reason.empty() ? "T_SOL unknown" : st.bound.reason);
    // Without T_k no baseline was measured: that is not a cause of its own.
    if (!s.t_b_ms && s.t_k_ms)
      why.push_back(st.baseline ? st.baseline->reason
                                : (st.t_b_reason.empty() ? "T_b unknown" : st.t_b_reason));
  }
  std::string text;
  for (const auto& w : why) text += (text.empty() ? "" : "; ") + w;
  const size_t at = s.reason.find("no score: ");
  s.reason = (at == std::string::npos ? s.reason + (s.reason.empty() ? "" : "; ")
                                      : s.reason.substr(0, at)) +
             "no score: " + text;
}

// The score's keys in a trace (docs/score.md lists them; `solbench run` reads them).
void put_score(Trace& t, const ScoreState& st, const score::ArchChoice& arch) {
  json& x = t.evaluation.extra;
  const score::WorkloadScore& s = st.s;
  x[std::string(score::kTSolKey)] = or_null(s.t_sol_ms);
  if (arch.measured) x[std::string(score::kTAttainableKey)] = or_null(st.bound.t_attainable_ms);
  x[std::string(score::kTBKey)] = or_null(s.t_b_ms);
  x[std::string(score::kScoreKey)] = or_null(s.score);
  x[std::string(score::kViolationKey)] = s.sol_violation;
  x[std::string(score::kScoreReasonKey)] = s.reason.empty() ? json(nullptr) : json(s.reason);
  json d = {{"arch", arch.to_json()}, {"t_sol", st.bound.to_json()}, {"score", s.to_json()}};
  if (st.baseline) {
    d["t_b"] = st.baseline->to_json();
  } else {
    d["t_b"] = {{"t_b_ms", nullptr},
                {"reason", st.t_b_reason.empty() ? json(nullptr) : json(st.t_b_reason)}};
  }
  if (st.published) d["published"] = st.published->to_json();
  x[std::string(score::kScoreDetailsKey)] = d;
}

}  // namespace

void score_trace(Trace& t, ScoreState& st, const score::ArchChoice& arch, bool timed) {
  std::optional<double> t_k;
  if (t.evaluation.status == Status::Passed && t.evaluation.performance &&
      t.evaluation.performance->latency_ms > 0)
    t_k = t.evaluation.performance->latency_ms;
  st.s = score::sol_score(t_k, st.bound.t_sol_ms, st.baseline ? st.baseline->t_b_ms : std::nullopt);
  explain(st, t, timed);
  put_score(t, st, arch);
}

}  // namespace solbench::eval
