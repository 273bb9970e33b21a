#include "eval/baselines.h"

#include <fmt/format.h>

#include "score/environment.h"

namespace solbench::eval {

std::optional<score::BaselineResult> stored_baseline(
    store::Store* db, const store::BaselineKey& key,
    const std::function<void(const std::string&)>& warn) {
  if (!db) return std::nullopt;
  try {
    return score::cached_baseline(*db, key);
  } catch (const std::exception& e) {
    warn(fmt::format("looking up the baseline of workload {}: {}", key.workload_uuid, e.what()));
    return std::nullopt;
  }
}

score::MeasureRun measure_and_record(const Problem& problem, const std::vector<size_t>& indices,
                                     score::MeasureOptions options, store::Store* db,
                                     const std::string& definition_hash, const OnBaseline& on_each,
                                     const std::function<void(const std::string&)>& warn) {
  options.on_result = [&](size_t pos, const score::BaselineResult& r, const json& wenv) {
    if (!r.t_b_ms || r.method.empty()) {
      on_each(pos, r, nullptr);
      return;
    }
    // Recorded as soon as measured: a later failure loses nothing.
    const store::BaselineKey key =
        score::baseline_key(definition_hash, r.uuid, wenv, wenv.value("driver", ""));
    if (db) {
      try {
        db->put_baseline({key, *r.t_b_ms, *store::parse_method(r.method), "", r.reason});
      } catch (const std::exception& e) {
        warn(fmt::format("results store {}: the baseline of workload {} was not recorded: {}",
                         db->file().string(), r.uuid, e.what()));
      }
    }
    on_each(pos, r, &key);
  };
  return score::measure_baselines(problem, indices, options);
}

}  // namespace solbench::eval
