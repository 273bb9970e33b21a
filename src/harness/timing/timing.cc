#include "harness/timing/timing.h"

#include <algorithm>
#include <chrono>

#include "harness/timing/stopping.h"

namespace solbench::harness {

namespace {
double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

TimingResult measure(Timer& timer, Measurable& m, const TimingOptions& opts) {
  TimingResult r;
  const auto t0 = std::chrono::steady_clock::now();
  int index = 0;
  for (int i = 0; i < opts.warmup; ++i, ++index) {
    m.prepare(index);
    timer.prepare();
    timer.begin();
    m.run();
    timer.end();
    (void)timer.elapsed_ms();  // lets device timers drain their records
    m.finish(index, false);
    ++r.warmup_calls;
    // A very slow call should not spend the whole budget warming up.
    if (ms_since(t0) > opts.budget_ms / 2) break;
  }
  MedianRseCriterion criterion(opts.target_rse, std::max(2, opts.min_iterations));
  const int min_iters = std::max(1, opts.min_iterations);
  const int max_iters = std::max(min_iters, opts.max_iterations);
  r.stop_reason = "max_iterations";
  for (int i = 0; i < max_iters; ++i, ++index) {
    m.prepare(index);
    timer.prepare();
    timer.begin();
    m.run();
    timer.end();
    const double ms = timer.elapsed_ms();
    m.finish(index, true);
    r.samples_ms.push_back(ms);
    criterion.add(ms);
    const int n = i + 1;
    if (n >= min_iters && criterion.converged()) {
      r.converged = true;
      r.stop_reason = "converged";
      break;
    }
    if (n >= min_iters && ms_since(t0) > opts.budget_ms) {
      r.stop_reason = "budget";
      break;
    }
  }
  r.stats = summarize(r.samples_ms);
  r.wall_ms = ms_since(t0);
  return r;
}

json TimingOptions::to_json() const {
  json j = json::object();
  j["warmup"] = warmup;
  j["min_iterations"] = min_iterations;
  j["max_iterations"] = max_iterations;
  j["target_rse"] = target_rse;
  j["budget_ms"] = budget_ms;
  return j;
}

TimingOptions TimingOptions::from_json(const json& j) {
  TimingOptions o;
  o.warmup = j.value("warmup", o.warmup);
  o.min_iterations = j.value("min_iterations", o.min_iterations);
  o.max_iterations = j.value("max_iterations", o.max_iterations);
  o.target_rse = j.value("target_rse", o.target_rse);
  o.budget_ms = j.value("budget_ms", o.budget_ms);
  return o;
}

json TimingResult::to_json(bool with_samples) const {
  json j = stats.to_json();
  j["converged"] = converged;
  j["stop_reason"] = stop_reason;
  j["warmup_calls"] = warmup_calls;
  j["wall_ms"] = wall_ms;
  if (with_samples) j["samples_ms"] = samples_ms;
  return j;
}

}  // namespace solbench::harness
