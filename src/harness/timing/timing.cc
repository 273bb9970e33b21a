#include "harness/timing/timing.h"

#include <algorithm>
#include <stdexcept>

#include "harness/timing/stopping.h"

namespace solbench::harness {

namespace {
double ms_since(int64_t t0_ns) { return static_cast<double>(monotonic_ns() - t0_ns) / 1e6; }

// One call of the loop, each step's host time added to `steps`; the timer's reading.
// The clock is libc's, called directly (timer.h monotonic_ns).
double one_call(Timer& timer, Measurable& m, int index, bool timed, LoopSteps& steps) {
  const int64_t t0 = monotonic_ns();
  m.prepare(index);
  const int64_t t1 = monotonic_ns();
  timer.prepare();
  const int64_t t2 = monotonic_ns();
  timer.begin();
  m.run();
  timer.end();
  const int64_t t3 = monotonic_ns();
  const double ms = timer.elapsed_ms();
  const int64_t t4 = monotonic_ns();
  m.finish(index, timed);
  const int64_t t5 = monotonic_ns();
  auto add = [](double& to, int64_t a, int64_t b) { to += static_cast<double>(b - a) / 1e6; };
  add(steps.prepare_ms, t0, t1);
  add(steps.timer_prepare_ms, t1, t2);
  add(steps.call_ms, t2, t3);
  add(steps.read_ms, t3, t4);
  add(steps.finish_ms, t4, t5);
  return ms;
}
}  // namespace

TimingResult measure(Timer& timer, Measurable& m, const TimingOptions& opts) {
  TimingResult r;
  const int64_t t0 = monotonic_ns();
  int index = 0;
  for (int i = 0; i < opts.warmup; ++i, ++index) {
    // elapsed_ms() also lets device timers drain their records.
    (void)one_call(timer, m, index, false, r.steps);
    ++r.warmup_calls;
    // A very slow call should not spend the whole budget warming up.
    if (ms_since(t0) > opts.budget_ms / 2) break;
  }
  MedianRseCriterion criterion(opts.target_rse, std::max(2, opts.min_iterations));
  const int min_iters = std::max(1, opts.min_iterations);
  const int max_iters = std::max(min_iters, opts.max_iterations);
  r.stop_reason = "max_iterations";
  for (int i = 0; i < max_iters; ++i, ++index) {
    const double ms = one_call(timer, m, index, true, r.steps);
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
  const json timer_steps = timer.take_steps(), call_steps = m.take_steps();
  for (auto it = timer_steps.begin(); it != timer_steps.end(); ++it)
    r.steps.detail["timer_" + it.key()] = *it;
  for (auto it = call_steps.begin(); it != call_steps.end(); ++it)
    r.steps.detail["prepare_" + it.key()] = *it;
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

json LoopSteps::to_json() const {
  json j = {{"prepare_ms", prepare_ms},
            {"timer_prepare_ms", timer_prepare_ms},
            {"call_ms", call_ms},
            {"read_ms", read_ms},
            {"finish_ms", finish_ms}};
  for (auto it = detail.begin(); it != detail.end(); ++it) j[it.key() + "_ms"] = *it;
  return j;
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

TimingResult TimingResult::from_json(const json& j, const std::string& name) {
  if (!j.is_object()) throw std::runtime_error(name + " is not an object");
  TimingResult t;
  t.stats = TimingStats::from_json(j);
  t.converged = j.value("converged", false);
  t.stop_reason = j.value("stop_reason", "");
  t.warmup_calls = j.value("warmup_calls", 0);
  t.wall_ms = j.value("wall_ms", 0.0);
  if (auto s = j.find("samples_ms"); s != j.end()) {
    if (!s->is_array() || s->size() > 1000000)
      throw std::runtime_error(name + ".samples_ms is not an array of times");
    for (const auto& v : *s) {
      if (!v.is_number()) throw std::runtime_error(name + ".samples_ms holds a non-number");
      t.samples_ms.push_back(v.get<double>());
    }
  }
  return t;
}

}  // namespace solbench::harness
