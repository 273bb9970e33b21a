// Timers for the measurement loop (timing.h): how long one call took.
//
// A Timer measures one span at a time: prepare() runs before the span and is not
// measured (the GPU timer flushes the L2 there), begin()/end() bracket the call,
// elapsed_ms() returns the span (it may wait for the device). The CPU timer reads
// the monotonic clock; the GPU issue adds CUPTI and CUDA-event timers with the
// same interface.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "core/device.h"
#include "core/json.h"
#include "harness/timing/clock.h"

namespace solbench::harness {

// Host time by named step, added up until taken: what a timer or a timed call's
// set-up spends where (the loop's phases, timing.h `LoopSteps::detail`). Keyed by
// the names' views: every step is named by a string literal, so a call of the
// timed loop adds no allocation (names over 15 bytes would each make a
// std::string).
class StepTimes {
 public:
  // Adds the time since `t0_ns` (monotonic_ns) to `step`, a string literal; returns now.
  int64_t add(std::string_view step, int64_t t0_ns) {
    const int64_t now = monotonic_ns();
    ms_[step] += static_cast<double>(now - t0_ns) / 1e6;
    return now;
  }
  // {"step": ms, ...} since the last take; then empty.
  json take() {
    json j = json::object();
    for (const auto& [k, v] : ms_) j[std::string(k)] = v;
    ms_.clear();
    return j;
  }

 private:
  std::map<std::string_view, double> ms_;
};

class Timer {
 public:
  virtual ~Timer() = default;
  // Short identifier recorded in traces, e.g. "cpu-monotonic".
  virtual std::string name() const = 0;
  // Outside the measured span, before every timed call (cache flush, sync).
  virtual void prepare() {}
  virtual void begin() = 0;
  virtual void end() = 0;
  // Duration of the last begin()..end() span in milliseconds.
  virtual double elapsed_ms() = 0;
  // After a call the loop did not time (a correctness round), outside any span:
  // GPU timers wait, within a bound, for the work the call left on the device and
  // throw gpu::WorkLeftRunning (gpu/gpu_errors.h) when some is still running.
  virtual void wait_idle() {}
  // What the timer found and undid since the last take, for the trace (GPU: a
  // persisting-L2 set-aside or access-policy window a solution left); null if nothing.
  virtual json take_findings() { return json(); }
  // What the trace should know about this timer (resolution, fallbacks used).
  virtual json details() const { return json::object(); }
  // Host time of its own steps since the last take ({} where it keeps none).
  virtual json take_steps() { return json::object(); }
  // One untimed span around nothing, before any timed loop: pays what a timer's
  // first call costs once a process (the L2 flush's first launch, CUPTI's first
  // records: 65-140 ms on an H200) where nothing waits for it. Counts nothing.
  virtual void warm_up() {}
};

// Host wall-clock timer on CLOCK_MONOTONIC (clock.h monotonic_ns): with the
// worker's code sealed (worker/code_seal.h) and the binary linked with full RELRO,
// every step from here to the vDSO is read-only memory that solution code cannot
// rewrite.
class CpuTimer final : public Timer {
 public:
  std::string name() const override { return "cpu-monotonic"; }
  void begin() override { start_ = monotonic_ns(); }
  void end() override { stop_ = monotonic_ns(); }
  double elapsed_ms() override { return static_cast<double>(stop_ - start_) / 1e6; }
  json details() const override;

 private:
  int64_t start_ = 0, stop_ = 0;
};

// The timer for `device`: the CPU gives a CpuTimer; cuda:N the GPU timer of
// src/harness/timing/gpu/gpu_timer_factory.h (CUPTI, events fallback) measuring work
// launched on `stream` (a cudaStream_t, the one the solution is given) with
// `options` passed through. Throws std::runtime_error for cuda:N in a build
// without CUDA.
std::unique_ptr<Timer> make_timer(const Device& device, void* stream = nullptr,
                                  const json& options = json::object());

}  // namespace solbench::harness
