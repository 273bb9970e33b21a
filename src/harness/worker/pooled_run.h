// The timed pool run: a Candidate timed with arguments from an ArgPool
// (runtime.ArgPool), each call's values from a seed handed out just before it, and
// the calls the parent picks kept for verification. Worker-internal (pybind11
// types); include from the worker session's files only.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <pybind11/embed.h>

#include "harness/timing/timing.h"
#include "harness/values.h"
#include "harness/worker/candidate.h"

namespace solbench::harness::detail {

namespace py = pybind11;

// Times a Candidate with arguments from an ArgPool. Each call's values come from a
// seed handed out just before it (values.h: by the parent in a worker that runs
// solution code), and the calls kept for verification are picked after they
// returned (the grant of the next call, or the end of the loop, names the slot):
// their outputs and their inputs as the call left them are copied then, outside
// the timed spans. Anyone holding the seed can generate a kept call's inputs
// again (CallValues.pristine), so it is checked against the reference computed on
// exactly the values it saw. Hidden like pybind11's own types, which it holds.
class __attribute__((visibility("hidden"))) PooledRun final : public Measurable {
 public:
  // `before_span`: run once a call's arguments are ready, just before its span.
  PooledRun(Candidate& c, py::object pool, py::module_& runtime, ValueSource& values,
            bool check_lazy, std::function<void()> before_span = {})
      : c_(c),
        pool_(std::move(pool)),
        runtime_(runtime),
        values_(values),
        check_lazy_(check_lazy),
        before_span_(std::move(before_span)) {}
  ~PooledRun() override { collector_back(); }

  // "call N: main._Lazy" for the first call whose outputs were not plain tensors.
  const std::string& lazy() const { return lazy_; }

  void prepare(int) override;
  void run() override;
  void finish(int, bool timed) override;
  json take_steps() override { return steps_.take(); }
  // After the loop: where the last call goes.
  void end();

  struct Saved {
    int call = -1;       // index among the timed calls (-1: a warm-up call)
    int pool_call = -1;  // index among the pool's calls (warm-up included)
    uint64_t seed = 0;   // of its values
    py::object outputs;
    py::object inputs_after;  // the inputs as the call left them
  };
  // The kept calls, in slot order.
  std::vector<Saved> saved() const;

 private:
  void keep(int slot);
  void collector_back();

  Candidate& c_;
  py::object pool_;
  py::module_& runtime_;
  ValueSource& values_;
  bool check_lazy_;
  std::function<void()> before_span_;
  bool collector_off_ = false, collector_was_on_ = false;
  int call_ = 0;
  int calls_ = 0;   // calls prepared so far
  int warmup_ = 0;  // warm-up calls finished so far
  uint64_t seed_ = 0;
  std::vector<Saved> saved_;
  py::list inputs_;
  std::string lazy_;
  StepTimes steps_;
};

}  // namespace solbench::harness::detail
