#include "score/baseline.h"

#include <algorithm>
#include <cctype>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "core/settings.h"
#include "core/text.h"
#include "harness/eval_plan.h"
#include "harness/evaluate.h"
#include "harness/timing/memory_shares.h"

namespace solbench::score {

namespace {

// torch.compile exists from torch 2.0 on ("2.11.0+cu130", "10.0"...).
bool torch_has_compile(const std::string& torch_version) {
  int major = 0;
  size_t i = 0;
  for (; i < torch_version.size() && i < 4; ++i) {
    if (!std::isdigit(static_cast<unsigned char>(torch_version[i]))) break;
    major = major * 10 + (torch_version[i] - '0');
  }
  return i > 0 && major >= 2;
}

// The baseline of one workload from the baseline worker's outcome.
BaselineResult from_outcome(const harness::WorkloadOutcome& o) {
  BaselineResult r;
  r.uuid = o.uuid;
  const json b = o.extra.value("baseline", json::object());
  r.method = b.value("method", "");
  const std::string why_eager = b.value("reason", "");
  if (o.skipped) {
    r.reason = "the baseline cannot run here: " + first_line(o.skip_reason, 200);
    r.status = "SKIPPED";
    return r;
  }
  r.status = std::string(status_name(o.status));
  if (!o.phases_ms.empty()) r.phases = o.phases_ms;
  const std::string under = r.method.empty() ? "" : " (reference under " + r.method + ")";
  if (o.status != Status::Passed) {
    r.reason = fmt::format("the baseline{} failed: {}: {}", under, r.status,
                           failure_line(harness::strip_workload_markers(o.log), 200));
    return r;
  }
  if (!o.timing || !(o.timing->stats.median_ms > 0)) {
    r.reason = "the baseline" + under + " was not timed" +
               (o.log.empty() ? "" : ": " + first_line(o.log, 200));
    return r;
  }
  r.t_b_ms = o.timing->stats.median_ms;
  r.reason = why_eager;
  json t = o.timing->stats.to_json();
  t["converged"] = o.timing->converged;
  t["stop_reason"] = o.timing->stop_reason;
  r.timing = t;
  return r;
}

}  // namespace

json BaselineResult::to_json() const {
  json j = {{"uuid", uuid},
            {"t_b_ms", or_null(t_b_ms)},
            {"method", method.empty() ? json(nullptr) : json(method)},
            {"reason", reason.empty() ? json(nullptr) : json(reason)},
            {"cached", cached}};
  if (!recorded.empty()) j["recorded"] = recorded;
  if (!status.empty()) j["status"] = status;
  if (!timing.is_null()) j["timing"] = timing;
  if (!phases.is_null()) j["phases"] = phases;
  return j;
}

std::optional<BaselineResult> cached_baseline(store::Store& db, const store::BaselineKey& key) {
  std::optional<store::Baseline> b = db.baseline(key);
  if (!b) return std::nullopt;
  if (b->method == store::BaselineMethod::Eager && torch_has_compile(key.torch))
    return std::nullopt;
  BaselineResult r;
  r.uuid = key.workload_uuid;
  r.t_b_ms = b->t_b_ms;
  r.method = std::string(store::method_name(b->method));
  r.cached = true;
  r.recorded = b->recorded;
  if (b->method == store::BaselineMethod::Eager)
    r.reason = b->reason.empty() ? "torch.compile unavailable (torch " + key.torch + ")" : b->reason;
  return r;
}

namespace {

// The automatic count (baseline.h): `late` (hand-back's late workers, alone) follows
// the rule for workers alone without its floor of workloads each; `how.handing_back`
// (workers ahead that hand back at "go") the rule ahead without it.
size_t worker_count(const MeasureOptions& o, size_t n, uint64_t largest_bytes,
                    WorkerCountFor how, bool late) {
  if (n == 0) return 0;
  size_t k = 1;
  if (o.workers > 0) {
    k = static_cast<size_t>(o.workers);
  } else if (const auto& set = settings().baseline_workers) {
    k = static_cast<size_t>(*set);
  } else if (o.device.is_cuda()) {
    struct Rule {
      unsigned cpus_each;
      int most;
      size_t workloads_each;
      uint64_t memory;  // for all the workers' values
    };
    // Alone only where the GPU's memory is known: half of it is the budget then,
    // shared with the evaluations beside this one on the GPU (`run --jobs-per-gpu`).
    const uint64_t gpu_share = static_cast<uint64_t>(settings().baseline_gpu_share.value_or(1));
    const Rule r = how.alone && o.gpu_memory_bytes > 0
                       ? Rule{2, kMaxBaselineWorkersAlone,
                              late ? size_t{1} : kMinBaselineWorkloadsPerWorkerAlone,
                              o.gpu_memory_bytes / 2 / gpu_share}
                       : Rule{4, kMaxBaselineWorkers,
                              how.handing_back ? size_t{1} : kMinBaselineWorkloadsPerWorker,
                              kBaselineParallelBytes};
    const unsigned cpus =
        std::max(1u, o.cpus                        ? o.cpus
                     : settings().baseline_cpus    ? static_cast<unsigned>(*settings().baseline_cpus)
                                                   : std::thread::hardware_concurrency());
    k = std::clamp<size_t>(cpus / r.cpus_each, 1, r.most);
    k = std::min(k, std::max<size_t>(1, n / r.workloads_each));
    // Workers alone that hold shares of the GPU's memory for what they hold on it
    // (memory_shares.h) wait for memory there: the CPUs count them.
    if (!(how.shared_memory && how.alone && o.gpu_memory_bytes > 0)) {
      const uint64_t each = std::max<uint64_t>(1, largest_bytes * kBaselineFootprint);
      k = std::min<size_t>(k, std::max<uint64_t>(1, r.memory / each));
    }
  }
  return std::min(k, n);
}

}  // namespace

size_t baseline_worker_count(const MeasureOptions& o, size_t n, uint64_t largest_bytes,
                             WorkerCountFor how) {
  how.handing_back = how.handing_back && !how.alone;
  return worker_count(o, n, largest_bytes, how, /*late=*/false);
}

size_t late_baseline_worker_count(const MeasureOptions& o, size_t n, uint64_t largest_bytes,
                                  bool shared_memory) {
  return worker_count(o, n, largest_bytes, {.alone = true, .shared_memory = shared_memory},
                      /*late=*/true);
}

size_t memory_share_units(const MeasureOptions& o) {
  if (!o.device.is_cuda() || o.gpu_memory_bytes == 0 || !settings().baseline_memory_shares)
    return 0;
  return harness::memory_share_count(o.gpu_memory_bytes);
}

MeasureRun measure_baselines(const Problem& problem, const std::vector<size_t>& indices,
                             const MeasureOptions& o) {
  MeasureRun run;
  run.results.resize(indices.size());
  for (size_t k = 0; k < indices.size(); ++k) {
    run.results[k].uuid = problem.workloads.at(indices[k]).uuid;
    run.results[k].reason = "the baseline worker reported nothing for this workload";
  }
  if (indices.empty()) return run;

  const std::string driver = driver_version(o.device);
  const auto with_device = [&](json env) {
    env["device"] = o.device;
    env["driver"] = driver;
    return env;
  };
  uint64_t largest = 0;
  for (size_t i : indices)
    if (i < problem.resolved.size() && problem.resolved[i])
      largest = std::max(largest, problem.resolved[i]->input_bytes + problem.resolved[i]->output_bytes);
  // Ahead, with the automatic count for workers alone known (the GPU's memory): at
  // "go" each worker keeps what it will soon have compiled and hands the rest back
  // (harness::WorkerPlan::hand_back), and late workers (late_baseline_worker_count),
  // started then with the GPU to T_b, compile and measure those side by side.
  const bool may_hand_back = o.go.valid() && o.workers <= 0 && !settings().baseline_workers &&
                             settings().baseline_hand_back.value_or(o.gpu_memory_bytes > 0);
  // The GPU's memory shared out to the workers' GPU work (memory_shares.h).
  const size_t share_units = memory_share_units(o);
  const bool shared_memory = share_units > 0;
  size_t workers =
      baseline_worker_count(o, indices.size(), largest, {.handing_back = may_hand_back});
  // Ahead of "go" only where their memory fits beside the solution's evaluation.
  const bool ahead =
      o.go.valid() && largest * kBaselineFootprint * workers <= kBaselineParallelBytes;
  if (o.go.valid() && !ahead && !harness::go_given(o.go)) {
    for (auto& r : run.results) r.reason = kBaselineNotNeeded;
    return run;
  }
  // Not ahead: they start now that the evaluation's own workers are done (or
  // there are none), with the GPU to themselves.
  if (!ahead)
    workers = baseline_worker_count(o, indices.size(), largest,
                                    {.alone = true, .shared_memory = shared_memory});
  const bool hand_back = ahead && may_hand_back;
  // Worker g measures positions g, g + K, g + 2K, ... (sizes usually grow along a
  // problem's workloads, so each gets small and large ones).
  std::vector<std::vector<size_t>> share(workers);
  for (size_t k = 0; k < indices.size(); ++k) share[k % workers].push_back(k);

  std::mutex mu;  // the callers' callbacks, `run`, `share` and the pool, one thread at a time
  std::condition_variable pool_cv;
  std::deque<size_t> pool;     // handed back, not yet taken by a late worker
  size_t ahead_open = ahead ? workers : 0;  // workers ahead that may still hand back
  std::vector<bool> delivered(indices.size(), false);
  std::vector<json> envs(workers, json::object());
  const auto deliver = [&](size_t k, const harness::WorkloadOutcome& outcome, const json& env) {
    if (delivered[k] || outcome.handed_back) return;
    delivered[k] = true;
    run.results[k] = from_outcome(outcome);
    if (o.on_result) o.on_result(k, run.results[k], env);
  };
  std::vector<harness::RunnerResult> results(workers);
  std::vector<std::exception_ptr> errors(workers);
  // One worker (its record at `slot` of envs, results, errors and share) measuring
  // share[slot]; `early`: started ahead, waiting for "go".
  const auto measure = [&](size_t slot, bool early) {
    std::vector<size_t> mine;
    {
      std::lock_guard<std::mutex> lock(mu);
      mine = share[slot];
    }
    harness::HarnessRequest hr;
    hr.role = harness::Role::Baseline;
    hr.definition = to_json(problem.definition);
    for (size_t k : mine) hr.workloads.push_back(harness::workload_spec(problem, indices[k]));
    hr.device = o.device;
    hr.rounds = o.rounds;
    hr.seed = o.seed;
    hr.timing = o.timing;
    hr.timer_options = o.timer_options;
    hr.workload_timeout = o.workload_timeout;
    hr.keep_scratch = o.keep_scratch;
    hr.no_sandbox = o.no_sandbox;
    hr.memory_share_units = share_units;
    if (early) {
      hr.go = o.go;
      hr.hand_back = hand_back;
    }
    hr.on_event = [&, slot, mine](const harness::RunnerEvent& e) {
      std::lock_guard<std::mutex> lock(mu);
      const bool mapped = e.workload >= 0 && static_cast<size_t>(e.workload) < mine.size();
      if (e.kind == harness::EventKind::Ready && e.env) {
        envs[slot] = with_device(*e.env);
        if (run.env.empty()) run.env = envs[slot];
      } else if (e.kind == harness::EventKind::Result && e.outcome && mapped) {
        deliver(mine[e.workload], *e.outcome, envs[slot]);
      } else if (e.kind == harness::EventKind::HandedBack && mapped) {
        pool.push_back(mine[e.workload]);
        pool_cv.notify_all();
        return;  // the caller hears of it from the late worker that measures it
      }
      if (!o.on_event) return;
      harness::RunnerEvent own = e;
      own.workload = mapped ? static_cast<int>(mine[e.workload]) : -1;
      o.on_event(own);
    };
    harness::RunnerResult rr;
    std::exception_ptr error;
    try {
      rr = harness::evaluate(hr);
    } catch (...) {
      error = std::current_exception();
    }
    std::lock_guard<std::mutex> lock(mu);
    results[slot] = std::move(rr);
    errors[slot] = error;
    if (early && --ahead_open == 0) pool_cv.notify_all();
  };
  // A late worker: takes its share of what is handed back (an even split over the
  // late workers, at least one) until nothing is left and no ahead worker may
  // hand back more; each share is a fresh worker of its own.
  const auto late = [&](size_t late_workers) {
    for (;;) {
      size_t slot;
      {
        std::unique_lock<std::mutex> lock(mu);
        pool_cv.wait(lock, [&] { return !pool.empty() || ahead_open == 0; });
        if (pool.empty()) return;
        const size_t take = std::max<size_t>(1, (pool.size() + late_workers - 1) / late_workers);
        std::vector<size_t> mine;
        for (size_t i = 0; i < take && !pool.empty(); ++i) {
          mine.push_back(pool.front());
          pool.pop_front();
        }
        std::sort(mine.begin(), mine.end());
        slot = share.size();
        share.push_back(std::move(mine));
        envs.emplace_back(json::object());
        results.emplace_back();
        errors.emplace_back();
      }
      measure(slot, /*early=*/false);
    }
  };
  std::vector<std::thread> threads;
  for (size_t g = 0; g < workers; ++g) {
    if (workers == 1 && !hand_back) break;  // measured on this thread, below
    threads.emplace_back(measure, g, ahead);
  }
  if (threads.empty()) measure(0, ahead);
  if (hand_back && harness::go_given(o.go)) {
    const size_t late_workers =
        late_baseline_worker_count(o, indices.size(), largest, shared_memory);
    for (size_t l = 0; l < late_workers; ++l) threads.emplace_back(late, late_workers);
  }
  for (auto& t : threads) t.join();
  // What a worker reported only at its end (and every worker's record), in order.
  for (size_t g = 0; g < share.size(); ++g) {
    const harness::RunnerResult& rr = results[g];
    for (const auto& w : rr.workers) run.workers.push_back(w);
    if (envs[g].empty() && !rr.env.empty()) envs[g] = with_device(rr.env);
    if (run.env.empty() && !envs[g].empty()) run.env = envs[g];
    for (size_t j = 0; j < share[g].size() && j < rr.outcomes.size(); ++j)
      deliver(share[g][j], rr.outcomes[j], envs[g]);
  }
  // Cancelled ahead of "go": what the workers say of their workloads is no failure.
  if (ahead && !harness::go_given(o.go))
    for (size_t k = 0; k < indices.size(); ++k)
      if (!run.results[k].t_b_ms) run.results[k].reason = kBaselineNotNeeded;
  // Every worker failed to run: as one worker always did, the caller hears why.
  if (std::all_of(errors.begin(), errors.end(), [](const auto& e) { return e != nullptr; }))
    std::rethrow_exception(errors.front());
  // Some did: the others' workloads say why they have no T_b.
  for (size_t g = 0; g < share.size(); ++g) {
    if (!errors[g]) continue;
    std::string what = "unknown error";
    try {
      std::rethrow_exception(errors[g]);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    for (size_t k : share[g]) {
      if (delivered[k]) continue;
      delivered[k] = true;
      run.results[k].reason = "the baseline worker could not run: " + what;
      if (o.on_result) o.on_result(k, run.results[k], envs[g]);
    }
  }
  return run;
}

}  // namespace solbench::score
