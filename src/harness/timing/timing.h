// The measurement loop: warm-up calls, then timed calls until the relative standard
// error of the median is under the target or the time budget is spent.
//
// What is called is a Measurable: prepare() sets up one call outside the measured
// span (fresh arguments at new addresses, poisoned outputs), run() is the span,
// finish() runs after it, also unmeasured (saving outputs for later verification).
// The same loop times the solution and the reference, on the CPU or a GPU; only the
// Timer differs.
#pragma once

#include <string>
#include <vector>

#include "core/json.h"
#include "harness/timing/timer.h"
#include "harness/timing/timing_stats.h"

namespace solbench::harness {

struct TimingOptions {
  int warmup = 3;              // calls before measuring
  int min_iterations = 5;      // timed calls before the precision target may stop the loop
  int max_iterations = 1000;   // hard cap on timed calls
  double target_rse = 0.01;    // relative standard error of the median to reach
  double budget_ms = 1000;     // wall time for warm-up + timed calls (incl. prepare/finish)

  json to_json() const;
  static TimingOptions from_json(const json& j);
};

class Measurable {
 public:
  virtual ~Measurable() = default;
  // Sets up call `index` (0-based over warm-up and timed calls); not measured.
  virtual void prepare(int index) = 0;
  // The measured call.
  virtual void run() = 0;
  // After the span of call `index`; `timed` is false for warm-up calls.
  virtual void finish(int index, bool timed) { (void)index; (void)timed; }
  // Host time of prepare()'s own steps since the last take ({} where it keeps none).
  virtual json take_steps() { return json::object(); }
};

// Host time the loop spent in each of its steps, over warm-up and timed calls: what a
// timed call costs beyond the GPU's work (fresh arguments, the L2 flush and the
// timer's reads), which bounds how many calls a second a GPU-serial loop can make.
struct LoopSteps {
  double prepare_ms = 0;        // Measurable::prepare: the call's fresh arguments
  double timer_prepare_ms = 0;  // Timer::prepare: idle checks, L2 flush, launch gate
  double call_ms = 0;           // begin .. end: the call as the host sees it
  double read_ms = 0;           // Timer::elapsed_ms: wait for the GPU, read its records
  double finish_ms = 0;         // Measurable::finish: checks and kept outputs
  // Within those: the timer's steps ("timer_<step>") and prepare()'s ("prepare_<step>").
  json detail = json::object();

  json to_json() const;  // the five above and the detail's, flat, in ms
};

struct TimingResult {
  TimingStats stats;
  LoopSteps steps;
  std::vector<double> samples_ms;  // in call order
  bool converged = false;          // the precision target was reached
  std::string stop_reason;         // "converged", "budget", "max_iterations"
  int warmup_calls = 0;
  double wall_ms = 0;              // whole loop, incl. prepare/finish

  json to_json(bool with_samples = false) const;
  // What to_json wrote; throws std::runtime_error naming `name` (the object's key
  // where it was read; json::exception for a stats field of the wrong type) when it
  // is not that.
  static TimingResult from_json(const json& j, const std::string& name);
};

// Runs the loop. Exceptions from the Measurable propagate (the caller reports
// which call failed through its own bookkeeping).
TimingResult measure(Timer& timer, Measurable& m, const TimingOptions& opts);

// Calls the loop may make at most (warm-up + max timed), for sizing argument pools.
inline int max_calls(const TimingOptions& o) { return o.warmup + o.max_iterations; }

}  // namespace solbench::harness
