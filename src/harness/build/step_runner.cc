#include "harness/build/step_runner.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <thread>

#include "harness/build/command_lines.h"

namespace solbench::harness::build_internal {
namespace fs = std::filesystem;

namespace {

class StepRunner {
 public:
  StepRunner(std::vector<Step>& steps, const fs::path& cwd, const StepLimits& limits)
      : steps_(steps), cwd_(cwd), limits_(limits), started_(steps.size(), false) {}

  void run() {
    auto nap = std::chrono::milliseconds(1);
    for (;;) {
      start_more();
      if (running_.empty()) break;
      const bool progressed = reap();
      // What is optional is not worth waiting for once the build has failed.
      if (stop_) stop_optional();
      if (Clock::now() >= limits_.deadline && !running_.empty()) {
        kill_all();
        break;
      }
      if (progressed) {
        nap = std::chrono::milliseconds(1);
      } else {
        std::this_thread::sleep_for(nap);
        nap = std::min(nap * 2, std::chrono::milliseconds(10));
      }
    }
  }

  // The log in step order (a deterministic log whatever finished first); the
  // failures last, the first required one first.
  StepsOutcome outcome() const {
    StepsOutcome o;
    for (size_t i = 0; i < steps_.size(); ++i) {
      if (!started_[i]) continue;
      const Step& s = steps_[i];
      o.log += s.output;
      if (s.optional && !s.ok && !s.failure.empty()) o.log += s.failure + "\n";
    }
    std::vector<std::string> failures;
    for (const Step& s : steps_) {
      if (s.optional || s.ok || s.failure.empty()) continue;
      if (s.status == BuildStatus::Timeout && o.status != BuildStatus::Timeout) {
        o.status = BuildStatus::Timeout;
        failures.insert(failures.begin(), s.failure);
      } else {
        if (o.status == BuildStatus::Ok) o.status = s.status;
        failures.push_back(s.failure);
      }
    }
    if (timed_out_ && o.status != BuildStatus::Timeout) o.status = BuildStatus::Timeout;
    for (const auto& f : failures) o.message += (o.message.empty() ? "" : "\n") + f;
    return o;
  }

 private:
  struct Running {
    size_t index;
    Child child;
  };

  void fail_step(Step& s, const std::string& why, BuildStatus st) {
    s.ok = false;
    s.failure = why;
    s.status = st;
    if (!s.optional) stop_ = true;
  }

  // Starts steps in order while there is room and no required step has failed.
  void start_more() {
    const size_t limit = static_cast<size_t>(std::max(1, limits_.jobs));
    while (!stop_ && next_ < steps_.size() && running_.size() < limit) {
      Step& s = steps_[next_];
      started_[next_] = true;
      s.output = "$ " + command_line(s.argv) + "\n";
      SpawnOptions so;
      so.argv = s.argv;
      so.cwd = cwd_;
      so.output = OutputMode::Capture;
      so.log_limit_bytes = limits_.log_limit_bytes;
      try {
        running_.push_back({next_, Child::spawn(so)});
      } catch (const SpawnError& e) {
        fail_step(s, s.what + ": " + e.what(), BuildStatus::CompileError);
      }
      ++next_;
    }
  }

  // Collects the steps that finished; true when one did.
  bool reap() {
    bool progressed = false;
    for (size_t k = 0; k < running_.size();) {
      std::optional<ExitStatus> st = running_[k].child.poll();
      if (!st) {
        ++k;
        continue;
      }
      Step& s = steps_[running_[k].index];
      std::string out = running_[k].child.log();
      if (!out.empty() && out.back() != '\n') out += '\n';
      s.output += out;
      if (st->success()) s.ok = true;
      else if (s.failure.empty())
        fail_step(s, s.what + " failed (" + st->describe() + ")", BuildStatus::CompileError);
      running_.erase(running_.begin() + static_cast<std::ptrdiff_t>(k));
      progressed = true;
    }
    return progressed;
  }

  void stop_optional() {
    for (auto& r : running_) {
      Step& s = steps_[r.index];
      if (s.optional && s.failure.empty()) {
        s.failure = s.what + ": stopped (a source failed to compile)";
        r.child.kill_group();
      }
    }
  }

  // The deadline passed: every step still running is killed and fails.
  void kill_all() {
    timed_out_ = true;
    for (auto& r : running_) {
      r.child.kill_group();
      r.child.wait();
      Step& s = steps_[r.index];
      s.output += r.child.log();
      if (!s.output.empty() && s.output.back() != '\n') s.output += '\n';
      fail_step(s, timeout_message(s.what, limits_.limit_seconds), BuildStatus::Timeout);
    }
    running_.clear();
  }

  std::vector<Step>& steps_;
  const fs::path& cwd_;
  const StepLimits limits_;
  std::vector<Running> running_;
  std::vector<bool> started_;
  size_t next_ = 0;
  bool stop_ = false;  // a required step failed: start nothing more
  bool timed_out_ = false;
};

}  // namespace

StepsOutcome run_steps(std::vector<Step>& steps, const fs::path& cwd, const StepLimits& limits) {
  StepRunner runner(steps, cwd, limits);
  runner.run();
  return runner.outcome();
}

}  // namespace solbench::harness::build_internal
