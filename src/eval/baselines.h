// The scoring baseline T_b of a problem's workloads (docs/score.md), as `eval`
// and `baseline` both need it: looked up in the results store, else measured in
// a worker of its own (the reference under torch.compile, score/baseline.h)
// and recorded there as soon as each arrives.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/json.h"
#include "core/problem.h"
#include "harness/timing/timing.h"
#include "score/baseline.h"
#include "store/store.h"

namespace solbench::eval {

// The stored T_ref of `key` (store::ReferenceTime) as the timed loop's result, or
// nullopt; a failed look-up or a row that does not parse calls `warn` and is a miss.
std::optional<harness::TimingResult> stored_reference_time(
    store::Store* db, const store::BaselineKey& key,
    const std::function<void(const std::string&)>& warn);
// Records a T_ref the Judge measured under `key`; a failure calls `warn`.
void record_reference_time(store::Store* db, const store::BaselineKey& key,
                           const harness::TimingResult& t,
                           const std::function<void(const std::string&)>& warn);

// The stored T_b of `key`, or nullopt; a failed look-up calls `warn` and is a miss.
std::optional<score::BaselineResult> stored_baseline(
    store::Store* db, const store::BaselineKey& key,
    const std::function<void(const std::string&)>& warn);

// Called as each measured T_b arrives: its position in `indices`, the result and
// the key it was stored under (the measuring worker's environment; null when it
// has none: no T_b).
using OnBaseline = std::function<void(size_t, const score::BaselineResult&,
                                      const store::BaselineKey*)>;

// Measures T_b of problem.workloads[i] for each i in `indices` in one baseline
// worker (options.on_result is replaced) and records each in `db` (may be null)
// under the worker's key. Returns the worker's run; a worker that cannot run at
// all throws (what was measured before is recorded).
score::MeasureRun measure_and_record(const Problem& problem, const std::vector<size_t>& indices,
                                     score::MeasureOptions options, store::Store* db,
                                     const std::string& definition_hash, const OnBaseline& on_each,
                                     const std::function<void(const std::string&)>& warn);

// `run`'s T_b ahead (docs/run.md): what a `baseline --json` document of the
// problem says that the store does not keep, so that the evaluation neither
// measures it again nor loses it: an eager T_b (the store reuses those only
// where torch has no torch.compile) and a workload its worker's verdict left
// without one (the compiled reference outside the tolerance, say). Rows a
// worker gave no verdict on (it died) or that ran out of GPU memory (beside the
// evaluation before) are left out: the evaluation measures those. By workload
// uuid, each with the key it was measured under. A file that cannot be read is
// an empty map and a `warn`.
struct AheadBaseline {
  store::BaselineKey key;
  score::BaselineResult result;  // `cached`: not measured by this evaluation
};
std::map<std::string, AheadBaseline> read_ahead_baselines(
    const std::string& file, const std::string& definition_hash,
    const std::function<void(const std::string&)>& warn);

}  // namespace solbench::eval
