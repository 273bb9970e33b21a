#include "eval/baselines.h"

#include <fstream>

#include <fmt/format.h>

#include "harness/protocol.h"  // kOutOfGpuMemory
#include "score/environment.h"

namespace solbench::eval {

std::optional<harness::TimingResult> stored_reference_time(
    store::Store* db, const store::BaselineKey& key,
    const std::function<void(const std::string&)>& warn) {
  if (!db) return std::nullopt;
  try {
    const std::optional<store::ReferenceTime> r = db->reference_time(key);
    if (!r) return std::nullopt;
    harness::TimingResult t = harness::TimingResult::from_json(r->timing, "its timing");
    if (t.stats.median_ms != r->t_ref_ms)
      throw std::runtime_error("its timing's median is not its T_ref");
    return t;
  } catch (const std::exception& e) {
    warn(fmt::format("looking up the reference time of workload {}: {}", key.workload_uuid,
                     e.what()));
    return std::nullopt;
  }
}

void record_reference_time(store::Store* db, const store::BaselineKey& key,
                           const harness::TimingResult& t,
                           const std::function<void(const std::string&)>& warn) {
  if (!db) return;
  try {
    db->put_reference_time({key, t.stats.median_ms, t.to_json(/*with_samples=*/false), ""});
  } catch (const std::exception& e) {
    warn(fmt::format("results store {}: the reference time of workload {} was not recorded: {}",
                     db->file().string(), key.workload_uuid, e.what()));
  }
}

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

std::map<std::string, AheadBaseline> read_ahead_baselines(
    const std::string& file, const std::string& definition_hash,
    const std::function<void(const std::string&)>& warn) {
  std::map<std::string, AheadBaseline> out;
  std::ifstream in(file);
  const json doc = in.is_open() ? json::parse(in, nullptr, /*allow_exceptions=*/false) : json();
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("problems")) {
    warn(fmt::format("{}: not a `solbench baseline --json` document; T_b is measured here", file));
    return out;
  }
  const json env = doc.value("environment", json::object());
  for (const json& p : doc["problems"]) {
    if (!p.is_object() || p.value("definition_hash", "") != definition_hash) continue;
    for (const json& w : p.value("workloads", json::array())) {
      score::BaselineResult r;
      r.uuid = w.value("uuid", "");
      if (w.contains("t_b_ms") && w["t_b_ms"].is_number()) r.t_b_ms = w["t_b_ms"].get<double>();
      r.method = w.value("method", json()).is_string() ? w["method"].get<std::string>() : "";
      r.reason = w.value("reason", json()).is_string() ? w["reason"].get<std::string>() : "";
      r.status = w.value("status", "");
      const bool eager = r.t_b_ms && r.method == "eager";
      const bool verdict = !r.t_b_ms && !r.status.empty() &&
                           r.reason.find(harness::kOutOfGpuMemory) == std::string::npos;
      if (r.uuid.empty() || w.value("cached", false) || !(eager || verdict)) continue;
      r.cached = true;
      const std::string uuid = r.uuid;  // named first: the assignment moves `r` before its key
      out[uuid] = {score::baseline_key(definition_hash, uuid, env, env.value("driver", "")),
                   std::move(r)};
    }
  }
  return out;
}

}  // namespace solbench::eval
