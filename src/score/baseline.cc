#include "score/baseline.h"

#include <cctype>

#include <fmt/format.h>

#include "core/text.h"
#include "harness/eval_plan.h"
#include "harness/evaluate.h"

namespace solbench::score {

namespace {

// torch.compile exists from torch 2.0 on ("2.11.0+cu130", "10.0"...).
bool torch_has_compile(const std::string& torch_version) {
  int major = 0;
  size_t i = 0;
  for (; i < torch_version.size() && i < 4; ++i) {
    if (!std::isdigit(static_cast<unsigned char>(torch_version[i]))) break;
    major = major * 10 + (torch_version[i] - '0');
  }
  return i > 0 && major >= 2;
}

// The baseline of one workload from the baseline worker's outcome.
BaselineResult from_outcome(const harness::WorkloadOutcome& o) {
  BaselineResult r;
  r.uuid = o.uuid;
  const json b = o.extra.value("baseline", json::object());
  r.method = b.value("method", "");
  const std::string why_eager = b.value("reason", "");
  if (o.skipped) {
    r.reason = "the baseline cannot run here: " + first_line(o.skip_reason, 200);
    r.status = "SKIPPED";
    return r;
  }
  r.status = std::string(status_name(o.status));
  const std::string under = r.method.empty() ? "" : " (reference under " + r.method + ")";
  if (o.status != Status::Passed) {
    r.reason = fmt::format("the baseline{} failed: {}: {}", under, r.status,
                           failure_line(harness::strip_workload_markers(o.log), 200));
    return r;
  }
  if (!o.timing || !(o.timing->stats.median_ms > 0)) {
    r.reason = "the baseline" + under + " was not timed" +
               (o.log.empty() ? "" : ": " + first_line(o.log, 200));
    return r;
  }
  r.t_b_ms = o.timing->stats.median_ms;
  r.reason = why_eager;
  json t = o.timing->stats.to_json();
  t["converged"] = o.timing->converged;
  t["stop_reason"] = o.timing->stop_reason;
  r.timing = t;
  return r;
}

}  // namespace

json BaselineResult::to_json() const {
  json j = {{"uuid", uuid},
            {"t_b_ms", or_null(t_b_ms)},
            {"method", method.empty() ? json(nullptr) : json(method)},
            {"reason", reason.empty() ? json(nullptr) : json(reason)},
            {"cached", cached}};
  if (!recorded.empty()) j["recorded"] = recorded;
  if (!status.empty()) j["status"] = status;
  if (!timing.is_null()) j["timing"] = timing;
  return j;
}

std::optional<BaselineResult> cached_baseline(store::Store& db, const store::BaselineKey& key) {
  std::optional<store::Baseline> b = db.baseline(key);
  if (!b) return std::nullopt;
  if (b->method == store::BaselineMethod::Eager && torch_has_compile(key.torch))
    return std::nullopt;
  BaselineResult r;
  r.uuid = key.workload_uuid;
  r.t_b_ms = b->t_b_ms;
  r.method = std::string(store::method_name(b->method));
  r.cached = true;
  r.recorded = b->recorded;
  if (b->method == store::BaselineMethod::Eager)
    r.reason = b->reason.empty() ? "torch.compile unavailable (torch " + key.torch + ")" : b->reason;
  return r;
}

MeasureRun measure_baselines(const Problem& problem, const std::vector<size_t>& indices,
                             const MeasureOptions& o) {
  MeasureRun run;
  run.results.resize(indices.size());
  for (size_t k = 0; k < indices.size(); ++k) {
    run.results[k].uuid = problem.workloads.at(indices[k]).uuid;
    run.results[k].reason = "the baseline worker reported nothing for this workload";
  }
  if (indices.empty()) return run;

  harness::HarnessRequest hr;
  hr.role = harness::Role::Baseline;
  hr.definition = to_json(problem.definition);
  for (size_t i : indices) hr.workloads.push_back(harness::workload_spec(problem, i));
  hr.device = o.device;
  hr.rounds = o.rounds;
  hr.seed = o.seed;
  hr.timing = o.timing;
  hr.timer_options = o.timer_options;
  hr.workload_timeout = o.workload_timeout;
  hr.keep_scratch = o.keep_scratch;
  hr.no_sandbox = o.no_sandbox;

  const std::string driver = driver_version(o.device);
  std::vector<bool> delivered(indices.size(), false);
  hr.on_event = [&](const harness::RunnerEvent& e) {
    if (e.kind == harness::EventKind::Ready && e.env) {
      run.env = *e.env;
      run.env["device"] = o.device;
      run.env["driver"] = driver;
    } else if (e.kind == harness::EventKind::Result && e.outcome && e.workload >= 0 &&
               static_cast<size_t>(e.workload) < indices.size() && !delivered[e.workload]) {
      const size_t k = static_cast<size_t>(e.workload);
      delivered[k] = true;
      run.results[k] = from_outcome(*e.outcome);
      if (o.on_result) o.on_result(k, run.results[k], run.env);
    }
    if (o.on_event) o.on_event(e);
  };
  harness::RunnerResult rr = harness::evaluate(hr);
  run.workers = rr.workers;
  if (run.env.empty() && !rr.env.empty()) {
    run.env = rr.env;
    run.env["device"] = o.device;
    run.env["driver"] = driver;
  }
  for (size_t k = 0; k < indices.size() && k < rr.outcomes.size(); ++k)
    if (!delivered[k]) {
      delivered[k] = true;
      run.results[k] = from_outcome(rr.outcomes[k]);
      if (o.on_result) o.on_result(k, run.results[k], run.env);
    }
  return run;
}

}  // namespace solbench::score
