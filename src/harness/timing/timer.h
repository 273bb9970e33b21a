// Timers for the measurement loop (timing.h): how long one call took.
//
// A Timer measures one span at a time: prepare() runs before the span and is not
// measured (the GPU timer flushes the L2 there), begin()/end() bracket the call,
// elapsed_ms() returns the span (it may wait for the device). The CPU timer reads
// the monotonic clock; the GPU issue adds CUPTI and CUDA-event timers with the
// same interface.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "core/json.h"

namespace solbench::harness {

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
  // What the trace should know about this timer (resolution, fallbacks used).
  virtual json details() const { return json::object(); }
};

// Host wall-clock timer on std::chrono::steady_clock (CLOCK_MONOTONIC).
class CpuTimer final : public Timer {
 public:
  std::string name() const override { return "cpu-monotonic"; }
  void begin() override { start_ = std::chrono::steady_clock::now(); }
  void end() override { stop_ = std::chrono::steady_clock::now(); }
  double elapsed_ms() override {
    return std::chrono::duration<double, std::milli>(stop_ - start_).count();
  }
  json details() const override;

 private:
  std::chrono::steady_clock::time_point start_{}, stop_{};
};

// The timer for a device string: "cpu" gives a CpuTimer; "cuda:N" the GPU timer
// of src/harness/timing/gpu/gpu_timer_factory.h (CUPTI, events fallback) measuring work
// launched on `stream` (a cudaStream_t, the one the solution is given) with
// `options` passed through. Throws std::runtime_error for a device without a
// timer (also "cuda:N" in a build without CUDA).
std::unique_ptr<Timer> make_timer(const std::string& device, void* stream = nullptr,
                                  const json& options = json::object());

// The CUDA ordinal of "cuda:N" ("cuda" is 0), or -1 for any other device string.
int cuda_ordinal(const std::string& device);

}  // namespace solbench::harness
