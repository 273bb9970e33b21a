// Which workloads of a problem a command works on. `eval`, `baseline` and `run`
// take the same three options with the same meaning (cli/workload_flags.h), so a
// baseline measured with `baseline --smallest 2` is the one `eval --smallest 2`
// looks up, and `run --smallest 2` evaluates those two.
#pragma once

#include <string>
#include <vector>

#include "core/diagnostics.h"
#include "core/problem.h"

namespace solbench::score {

struct WorkloadSelection {
  std::vector<std::string> wanted;  // -w/--workload: uuids or unique uuid prefixes; empty: all
  int first = 0;     // --max-workloads N: the first N in workload.jsonl order; 0: all
  int smallest = 0;  // --smallest N: the N with the fewest input + output bytes; 0: all
};

// Indices into problem.workloads, in this order of narrowing: the resolved
// workloads in file order; with `wanted` only those (in the order asked, each
// once; an unknown or ambiguous one is an error under "--workload"); the first
// `first` of them; the `smallest` smallest of those (by bytes, stable).
std::vector<size_t> select_workloads(const Problem& problem, const WorkloadSelection& selection,
                                     Diagnostics& diags);

// The entries of `wanted` that name a workload of `problem` (a uuid or a
// prefix of one): `run` keeps, per problem, the ones that are its own.
std::vector<std::string> wanted_here(const Problem& problem, const std::vector<std::string>& wanted);

}  // namespace solbench::score
