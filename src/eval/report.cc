#include "eval/report.h"

#include <cmath>
#include <stdexcept>

#include "core/diagnostics.h"

namespace solbench::eval {

bool Report::all_passed() const {
  for (const auto& w : workloads)
    if (!w.skipped && (!w.trace || w.trace->evaluation.status != Status::Passed)) return false;
  return true;
}

json Report::summary() const {
  json counts = json::object();
  json skipped = json::object();
  double log_sum = 0;
  int n_speed = 0;
  for (const auto& w : workloads) {
    if (w.skipped) {
      const std::string why = w.skip_reason.substr(0, w.skip_reason.find(':'));
      skipped[why] = skipped.value(why, 0) + 1;
      continue;
    }
    if (!w.trace) continue;
    const Evaluation& e = w.trace->evaluation;
    const std::string s(status_name(e.status));
    counts[s] = counts.value(s, 0) + 1;
    if (e.status == Status::Passed && e.performance && e.performance->latency_ms > 0 &&
        e.performance->reference_latency_ms > 0) {
      log_sum += std::log(e.performance->reference_latency_ms / e.performance->latency_ms);
      ++n_speed;
    }
  }
  json j = {{"workloads", workloads.size()}, {"statuses", counts}, {"skipped", skipped}};
  j["geomean_speedup"] = n_speed ? json(std::exp(log_sum / n_speed)) : json(nullptr);
  j["sol_score"] = problem_score.to_json();
  return j;
}

json Report::to_json() const {
  json j = json::object();
  j["definition"] = definition;
  j["solution"] = solution;
  j["device"] = device;
  j["build"] = build.record;
  // The build log itself is in results[0].evaluation.log (once); this is its first error.
  if (!build.ok) j["build_error"] = build.first_error;
  j["environment"] = environment;
  j["sandbox"] = sandbox;
  j["workers"] = workers;
  j["reference_workers"] = reference_workers;
  j["baseline_workers"] = baseline_workers;
  json results = json::array();
  for (const auto& w : workloads) {
    if (w.trace) {
      results.push_back(solbench::to_json(*w.trace));
    } else {
      results.push_back({{"workload", {{"uuid", w.uuid}}}, {"skipped", true},
                         {"skip_reason", w.skip_reason}});
    }
  }
  j["results"] = results;
  j["summary"] = summary();
  json eager_list = json::array();
  for (const auto& e : eager)
    eager_list.push_back({{"uuid", e.uuid}, {"t_b_ms", e.t_b_ms}, {"reason", e.reason}});
  j["score"] = {{"arch", arch.to_json()},
                {"problem", problem_score.to_json()},
                {"baselines", {{"cached", baselines_cached},
                               {"measured", baselines_measured},
                               {"skipped", baselines_skipped},
                               {"eager", eager_list}}}};
  if (!published_note.empty()) j["score"]["published_note"] = published_note;
  j["db"] = db;
  j["timeline_t_ns"] = timeline;
  j["tracer"] = tracer;
  return j;
}

namespace {

WorkloadReport workload_from_json(const json& r, size_t n) {
  // n: the position in results, for messages.
  WorkloadReport w;
  if (!r.is_object() || !r.contains("workload") || !r["workload"].is_object())
    throw std::runtime_error("eval report: results[" + std::to_string(n) +
                             "].workload: expected an object");
  w.uuid = r["workload"].value("uuid", "");
  w.axes = r["workload"].value("axes", json::object());
  if (r.value("skipped", false)) {
    w.skipped = true;
    w.skip_reason = r.value("skip_reason", "");
    return w;
  }
  // A trace that does not parse is left out (no trace, not skipped): the reader
  // treats its workload as unreported.
  Diagnostics d;
  Trace t = parse_trace(r, "eval --json", 0, d);
  if (d.empty()) w.trace = std::move(t);
  return w;
}

}  // namespace

Report Report::from_json(const json& j) {
  if (!j.is_object() || !j.contains("results") || !j["results"].is_array())
    throw std::runtime_error("eval report: expected an object with a \"results\" array");
  Report r;
  r.definition = j.value("definition", "");
  r.solution = j.value("solution", "");
  r.device = j.value("device", "");
  r.build.record = j.value("build", json(nullptr));
  r.build.ok = !j.contains("build_error");
  r.build.first_error = j.value("build_error", "");
  r.environment = j.value("environment", json::object());
  r.sandbox = j.value("sandbox", json::object());
  r.workers = j.value("workers", json::array());
  r.reference_workers = j.value("reference_workers", json::array());
  r.baseline_workers = j.value("baseline_workers", json::array());
  for (size_t n = 0; n < j["results"].size(); ++n)
    r.workloads.push_back(workload_from_json(j["results"][n], n));
  const json score = j.value("score", json::object());
  r.arch = score::ArchChoice::from_json(score.value("arch", json::object()));
  r.problem_score = score::Aggregate::from_json(score.value("problem", json::object()));
  const json b = score.value("baselines", json::object());
  r.baselines_cached = b.value("cached", size_t{0});
  r.baselines_measured = b.value("measured", size_t{0});
  r.baselines_skipped = b.value("skipped", false);
  for (const json& e : b.value("eager", json::array()))
    r.eager.push_back({e.value("uuid", ""), e.value("t_b_ms", 0.0), e.value("reason", "")});
  r.published_note = score.value("published_note", "");
  r.db = j.value("db", json(nullptr));
  r.timeline = j.value("timeline_t_ns", json::object());
  r.tracer = j.value("tracer", json(nullptr));
  return r;
}

}  // namespace solbench::eval
