#include "harness/worker/pooled_run.h"

#include <stdexcept>

#include <fmt/format.h>

namespace solbench::harness::detail {

// From the seed's arrival to the span, nothing of the solution's may run
// (python/solbench_py/hooks.py): the seed reaches Python only once the previous
// call's objects are released (their finalizers have run) and with the garbage
// collector off (no collection, no gc.callbacks, no __del__ of cyclic garbage)
// until the span begins.
void PooledRun::prepare(int) {
  int64_t t0 = monotonic_ns();
  const CallGrant g = values_.call(calls_);
  t0 = steps_.add("seed", t0);
  keep(g.keep);  // the previous call, before this one's fill overwrites its views
  c_.release();
  inputs_ = py::list();
  t0 = steps_.add("keep_release", t0);
  if (!collector_off_) {
    collector_was_on_ = PyGC_Disable() == 1;
    collector_off_ = true;
  }
  py::tuple t = pool_.attr("next")(g.seed).cast<py::tuple>();
  t0 = steps_.add("values", t0);
  inputs_ = t[1].cast<py::list>();
  call_ = t[3].cast<int>();
  seed_ = g.seed;
  ++calls_;
  c_.bind(inputs_, t[2].cast<py::list>());
  t0 = steps_.add("bind", t0);
  if (before_span_) before_span_();
  steps_.add("checks", t0);
}

void PooledRun::run() {
  collector_back();
  c_.invoke();
}

void PooledRun::finish(int, bool timed) {
  // Every call, warm-up included: a tensor subclass returned from any call could
  // do its work when the harness first touches it, after the span.
  if (check_lazy_ && lazy_.empty()) {
    const std::string bad = runtime_.attr("lazy_outputs")(c_.outputs()).cast<std::string>();
    if (!bad.empty()) lazy_ = fmt::format("call {}: {}", call_ + 1, bad);
  }
  if (!timed) ++warmup_;
}

void PooledRun::end() {
  if (calls_ > 0) keep(values_.calls_end(calls_));
}

std::vector<PooledRun::Saved> PooledRun::saved() const {
  std::vector<Saved> out;
  for (const auto& s : saved_)
    if (s.pool_call >= 0) out.push_back(s);
  return out;
}

void PooledRun::keep(int slot) {
  if (slot < 0 || calls_ == 0) return;
  if (slot > 4096) throw std::runtime_error("a sample slot out of range");
  if (static_cast<size_t>(slot) >= saved_.size()) saved_.resize(slot + 1);
  const int pool_call = calls_ - 1;
  saved_[slot] = {pool_call >= warmup_ ? pool_call - warmup_ : -1, pool_call, seed_,
                  runtime_.attr("clone_all")(c_.outputs()), runtime_.attr("clone_all")(inputs_)};
}

void PooledRun::collector_back() {
  if (collector_off_ && collector_was_on_) PyGC_Enable();
  collector_off_ = false;
}

}  // namespace solbench::harness::detail
