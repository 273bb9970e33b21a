#include "eval/request.h"

#include <algorithm>

#include <fmt/format.h>

#include "harness/runner.h"

namespace solbench::eval {

namespace {
std::string num(double v) { return fmt::format("{}", v); }
}  // namespace

std::vector<std::string> Settings::flags() const {
  const Settings d;
  std::vector<std::string> a;
  if (timeout_s != d.timeout_s) a.insert(a.end(), {"--timeout", num(timeout_s)});
  if (compile_timeout_s != d.compile_timeout_s)
    a.insert(a.end(), {"--compile-timeout", num(compile_timeout_s)});
  if (rounds != d.rounds) a.insert(a.end(), {"--rounds", std::to_string(rounds)});
  if (seed != d.seed) a.insert(a.end(), {"--seed", std::to_string(seed)});
  if (target_rse != d.target_rse) a.insert(a.end(), {"--target-rse", num(target_rse)});
  if (time_budget_ms != d.time_budget_ms) a.insert(a.end(), {"--time-budget-ms", num(time_budget_ms)});
  if (!timer.empty() && timer != d.timer) a.insert(a.end(), {"--timer", timer});  // "": default
  if (no_timing) a.push_back("--no-timing");
  if (!arch.empty()) a.insert(a.end(), {"--arch", arch});
  if (no_baseline) a.push_back("--no-baseline");
  if (profile) a.push_back("--profile");
  return a;
}

std::vector<std::string> Settings::baseline_flags() const {
  Settings only;  // the defaults, but for what T_b is measured with
  only.timeout_s = timeout_s;
  only.seed = seed;
  only.target_rse = target_rse;
  only.time_budget_ms = time_budget_ms;
  only.timer = timer;
  return only.flags();
}

std::chrono::duration<double> time_limit(double seconds) {
  // Long enough to mean "none", short enough that a deadline computed from it
  // stays far from the clock's range.
  constexpr double kNone = 30.0 * 24 * 3600;
  return std::chrono::duration<double>(seconds > 0 ? seconds : kNone);
}

std::chrono::duration<double> Settings::workload_timeout() const { return time_limit(timeout_s); }
std::chrono::duration<double> Settings::compile_timeout() const {
  return time_limit(compile_timeout_s);
}

std::chrono::duration<double> Settings::deadline(size_t workloads) const {
  // A worker start (Python, torch, the solution loaded), which the runner allows
  // per worker on top of the per-workload timeout.
  const double start = harness::RunnerOptions{}.startup_timeout.count();
  const double per = workload_timeout().count() + start;
  return std::chrono::duration<double>(compile_timeout().count() +
                                       static_cast<double>(std::max<size_t>(workloads, 1)) * per + 60);
}

Device parse_device(const std::string& device, const std::string& timer) {
  const std::optional<Device> d = Device::try_parse(device);
  if (!d) throw RequestError(true, {fmt::format("--device: \"{}\" is not cpu or cuda:N", device)});
  if (!timer.empty() && timer != "auto" && d->is_cpu())
    throw RequestError(true, {fmt::format("--timer {}: GPU timers apply to --device cuda:N", timer)});
  return *d;
}

}  // namespace solbench::eval
