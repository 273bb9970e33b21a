// The score of one workload once its trace is final: S from T_k, T_SOL and T_b
// (score/sol_score.h), the reason a row has none in the words of its cause, and
// the score's keys written into the trace (docs/score.md lists them).
#pragma once

#include "core/trace.h"
#include "eval/report.h"
#include "score/arch.h"

namespace solbench::eval {

// Scores `t` (T_k is its latency when PASSED), explains a missing score and
// writes the keys into t.evaluation.extra. `timed`: timing was asked for.
void score_trace(Trace& t, ScoreState& st, const score::ArchChoice& arch, bool timed);

}  // namespace solbench::eval
