// run_plan (runner.h) and what the runner's parts share (runner_internal.h).
#include "harness/runner.h"

#include <random>

#include "harness/runner_internal.h"
#include "harness/values.h"

namespace solbench::harness {

namespace runner_detail {

std::string tail(const std::string& text, size_t n) {
  const std::string s = strip_workload_markers(text);
  if (s.size() <= n) return s;
  return "[... " + std::to_string(s.size() - n) + " bytes omitted ...]\n" + s.substr(s.size() - n);
}

RunnerEvent make_event(EventKind kind, int workload) {
  RunnerEvent e;
  e.kind = kind;
  e.workload = workload;
  return e;
}

WorkloadOutcome failed(int index, const std::string& uuid, Status st, std::string log) {
  WorkloadOutcome o;
  o.index = index;
  o.uuid = uuid;
  o.status = st;
  o.log = std::move(log);
  return o;
}

uint64_t evaluation_secret(const WorkerPlan& plan) {
  if (plan.seed != 0) return value_seed(plan.seed, "solbench --seed", ValueKind::Round, 0) | 1;
  std::random_device rd;
  uint64_t secret = 0;
  while (secret == 0) secret = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  return secret;
}

}  // namespace runner_detail

using namespace runner_detail;

bool go_given(const std::shared_future<bool>& go) {
  try {
    return go.get();
  } catch (const std::future_error&) {
    return false;
  }
}

RunnerResult run_plan(const WorkerPlan& plan, const RunnerOptions& opts) {
  const json first = plan.workloads.empty() ? json(nullptr) : plan.workloads.front();
  if (!opts.reference_worker || plan.role != WorkerRole::Solution) {
    RunnerResult r = run_workers(plan, opts, nullptr);
    prepare_spares({&plan}, first, opts);
    return r;
  }
  RunnerResult r = run_judged(plan, opts);
  const WorkerPlan rp = reference_plan(plan, opts);
  prepare_spares({&plan, &rp}, first, opts);
  return r;
}

}  // namespace solbench::harness
