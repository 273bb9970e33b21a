// Which workloads of a problem `solbench eval` and `solbench baseline` work on:
// the resolved ones, narrowed by uuid (or uuid prefix) and to the N with the
// fewest input + output bytes. One rule for both, so a baseline measured with
// `baseline --smallest 2` is the one `eval --smallest 2` looks up.
#pragma once

#include <string>
#include <vector>

#include "core/diagnostics.h"
#include "core/problem.h"

namespace solbench::score {

// Indices into problem.workloads: resolved workloads in file order; with
// `wanted` only those (in the order asked, each uuid or unambiguous uuid prefix
// once; an unknown or ambiguous one is an error under "--workload"); with
// `smallest` > 0 the N smallest (by bytes, stable).
std::vector<size_t> select_workloads(const Problem& problem, const std::vector<std::string>& wanted,
                                     int smallest, Diagnostics& diags);

}  // namespace solbench::score
