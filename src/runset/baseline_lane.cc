#include "runset/baseline_lane.h"

#include <algorithm>

namespace solbench::runset {

namespace {
using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}
}  // namespace

BaselineLane::BaselineLane(std::vector<LaneJob> jobs, size_t concurrent, RunJob run,
                           const std::atomic<bool>* stop, bool paused)
    : jobs_(std::move(jobs)), out_(jobs_.size()), run_(std::move(run)), stop_(stop),
      paused_(paused ? 1 : 0) {
  const size_t n = std::min(std::max<size_t>(concurrent, 1), jobs_.size());
  for (size_t s = 0; s < n; ++s) threads_.emplace_back([this, s] { loop(s); });
}

BaselineLane::~BaselineLane() { finish(); }

void BaselineLane::loop(size_t slot) {
  std::unique_lock lock(mu_);
  for (;;) {
    const auto stopped = [&] { return finishing_ || (stop_ && stop_->load()); };
    // A stop while paused is seen at the next job's end or resume(): a paused
    // lane has no job running.
    cv_.wait(lock, [&] { return paused_ == 0 || finishing_; });
    while (next_ < jobs_.size() && out_[next_].state != LaneOutcome::State::Queued) ++next_;
    if (stopped() || next_ >= jobs_.size()) return;
    const size_t i = next_++;
    out_[i].state = LaneOutcome::State::Running;
    ++running_;
    lock.unlock();
    const auto t0 = Clock::now();
    LaneOutcome o;
    try {
      o = run_(jobs_[i], slot, preempt_);
    } catch (const std::exception& e) {
      o.error = e.what();
    }
    o.seconds = since(t0);
    lock.lock();
    o.waited = out_[i].waited;
    if (o.preempted && !stopped()) {  // again once resumed, unless claimed meanwhile
      out_[i].state = LaneOutcome::State::Queued;
      next_ = std::min(next_, i);
    } else {
      o.state = LaneOutcome::State::Done;
      out_[i] = std::move(o);
    }
    --running_;
    last_busy_ = Clock::now();
    cv_.notify_all();
  }
}

std::optional<size_t> BaselineLane::find(size_t problem) const {
  for (size_t i = 0; i < jobs_.size(); ++i)
    if (jobs_[i].problem == problem) return i;
  return std::nullopt;
}

double BaselineLane::claim(size_t problem) {
  const auto t0 = Clock::now();
  std::unique_lock lock(mu_);
  if (const auto i = find(problem)) {
    LaneOutcome& o = out_[*i];
    if (o.state == LaneOutcome::State::Queued) o.state = LaneOutcome::State::Dropped;
    cv_.wait(lock, [&] { return o.state != LaneOutcome::State::Running; });
    o.waited += since(t0);
  }
  return since(t0);
}

std::optional<LaneOutcome> BaselineLane::outcome(size_t problem) const {
  std::lock_guard lock(mu_);
  if (const auto i = find(problem)) return out_[*i];
  return std::nullopt;
}

void BaselineLane::drop(size_t problem) {
  std::lock_guard lock(mu_);
  if (const auto i = find(problem); i && out_[*i].state == LaneOutcome::State::Queued)
    out_[*i].state = LaneOutcome::State::Dropped;
}

bool BaselineLane::busy_since(Clock::time_point t) const {
  std::lock_guard lock(mu_);
  return running_ > 0 || last_busy_ >= t;
}

double BaselineLane::pause() {
  const auto t0 = Clock::now();
  std::unique_lock lock(mu_);
  ++paused_;
  if (running_ > 0) preempt_ = true;
  cv_.wait(lock, [&] { return running_ == 0; });
  preempt_ = false;
  return since(t0);
}

void BaselineLane::resume() {
  std::lock_guard lock(mu_);
  if (paused_ > 0) --paused_;
  cv_.notify_all();
}

void BaselineLane::finish() {
  {
    std::unique_lock lock(mu_);
    finishing_ = true;
    for (auto& o : out_)
      if (o.state == LaneOutcome::State::Queued) o.state = LaneOutcome::State::Dropped;
    cv_.notify_all();
  }
  for (auto& t : threads_)
    if (t.joinable()) t.join();
  threads_.clear();
}

std::vector<std::pair<LaneJob, LaneOutcome>> BaselineLane::outcomes() const {
  std::lock_guard lock(mu_);
  std::vector<std::pair<LaneJob, LaneOutcome>> r;
  for (size_t i = 0; i < jobs_.size(); ++i) r.emplace_back(jobs_[i], out_[i]);
  return r;
}

}  // namespace solbench::runset
