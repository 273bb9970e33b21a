// `--profile`'s second half (issue #30 item 2, docs/profile.md): the solution placed
// against the bound's own counts. The worker measured what one call did (kernel
// breakdown, counters: harness/timing/kernel_profile.h); here, where the trace is
// final and T_SOL known, the achieved DRAM bytes and FLOPs are set against T_SOL's
// bytes and work and the hardware model's peaks, and one verdict line says what
// matters most ("moves 2.7x the minimum bytes", "tensor cores at 41% of peak",
// "70% of T_k is gaps between kernels").
#pragma once

#include <optional>
#include <string>

#include "core/json.h"
#include "core/trace.h"
#include "eval/report.h"
#include "score/arch.h"
#include "sol/hardware.h"

namespace solbench::eval {

// The roofline position (solbench_profile.roofline). `profile`: the worker's
// (kernels, counters); `t_k_ms`: the timed median; `t_sol_ms` and `counts` (the
// analysis's work/bytes/time_us, score::SolBound::counts) may be missing, and so
// may `hw`: each ratio that needs one is then null.
json roofline_position(const json& profile, std::optional<double> t_k_ms,
                       std::optional<double> t_sol_ms, const json& counts,
                       const sol::HardwareModel* hw);

// One short line from the profile and its roofline position.
std::string verdict_line(const json& profile, const json& roofline);

// The reference's part of the line, from its profile (solbench_profile.reference)
// and its roofline position: "9 kernels, moves 3.1x the minimum bytes".
std::string reference_verdict(const json& reference, const json& roofline);

// Both into the trace's solbench_profile (a trace without one is left alone), and
// the same for the reference's profile where there is one (its roofline position
// over T_ref; its part appended to the line).
void add_profile_verdict(Trace& t, const ScoreState& st, const score::ArchChoice& arch);

}  // namespace solbench::eval
