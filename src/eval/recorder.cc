#include "eval/recorder.h"

#include <fstream>
#include <iterator>

#include <fmt/format.h>

#include "harness/interrupt.h"

namespace solbench::eval {

namespace {

// This process's command line, as the store's runs table keeps it.
std::string command_line() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::string out;
  for (char c : all) out += c == '\0' ? ' ' : c;
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out.empty() ? "solbench eval" : out;
}

}  // namespace

StoreRecorder::StoreRecorder(const Request& o, const store::SolutionRecord& solution,
                             std::function<json()> predicted_env)
    : predicted_env_(std::move(predicted_env)) {
  if (o.no_db) return;
  path_ = o.db.empty() ? store::default_db_path().string() : o.db;
  try {
    store::Store db = store::Store::open(path_);
    solution_hash_ = db.put_solution(solution);
    run_ = db.begin_run({command_line(), o.problem_dir, "", ""});
    db_.emplace(std::move(db));
  } catch (const std::exception& e) {
    open_error_ = e.what();
    warn(fmt::format("results store {}: {}; the evaluation goes on without recording it",
                     path_, e.what()));
  }
}

void StoreRecorder::record(const Trace& t, const ScoreState& st) {
  // Interrupted: a workload whose worker the interrupt killed is no RUNTIME_ERROR.
  if (!db_ || harness::interrupted()) return;
  try {
    store::EnvironmentInfo env = store::environment_from_trace(t);
    if (env.gpu_model.empty()) {
      // No worker reported (a failed build or load): where it would have run.
      const json p = predicted_env_();
      env.gpu_model = p.value("hardware", "");
      if (env.torch.empty()) env.torch = p.value("torch", "");
      if (env.timer.empty()) env.timer = p.value("timer", "");
      if (env.driver.empty()) env.driver = p.value("driver", "");
    }
    const std::string env_hash = db_->put_environment(env);
    if (!run_env_set_) {
      db_->set_run_environment(run_, env_hash);
      run_env_set_ = true;
    }
    store::TraceExtras x;
    x.solution_hash = solution_hash_;
    x.environment_hash = env_hash;
    x.t_sol_ms = st.s.t_sol_ms;
    x.t_b_ms = st.s.t_b_ms;
    x.sol_score = st.s.score;
    x.extras = {{"sol_violation", st.s.sol_violation},
                {"score_reason", st.s.reason.empty() ? json(nullptr) : json(st.s.reason)},
                {"t_b_method", st.baseline ? json(st.baseline->method) : json(nullptr)},
                {"t_b_reason", st.baseline && !st.baseline->reason.empty()
                                   ? json(st.baseline->reason) : json(nullptr)},
                {"t_b_cached", st.baseline ? json(st.baseline->cached) : json(nullptr)},
                {"t_sol_bottleneck", st.bound.bottleneck}};
    if (st.bound.t_attainable_ms) x.extras["t_attainable_ms"] = *st.bound.t_attainable_ms;
    db_->record_trace(run_, t, x);
    ++recorded_;
  } catch (const std::exception& e) {
    ++errors_;
    warn(fmt::format("results store {}: the trace of workload {} was not recorded: {}", path_,
                     t.workload.value("uuid", "?"), e.what()));
  }
}

void StoreRecorder::put_baseline(const store::Baseline& b) {
  if (!db_) return;
  try {
    db_->put_baseline(b);
  } catch (const std::exception& e) {
    warn(fmt::format("results store {}: the baseline of workload {} was not recorded: {}",
                     path_, b.key.workload_uuid, e.what()));
  }
}

void StoreRecorder::finish() {
  if (!db_ || harness::interrupted()) return;  // the run stays unfinished
  try {
    db_->finish_run(run_);
  } catch (const std::exception& e) {
    warn(fmt::format("results store {}: run {} not marked finished: {}", path_, run_, e.what()));
  }
}

json StoreRecorder::to_json() const {
  if (path_.empty()) return nullptr;
  json j = {{"path", path_}, {"recorded", recorded_}, {"errors", errors_}};
  j["run"] = db_ ? json(run_) : json(nullptr);
  if (!open_error_.empty()) j["error"] = open_error_;
  return j;
}

std::string StoreRecorder::summary_line() const {
  if (path_.empty()) return "";
  if (!db_) return fmt::format("store: {} not used ({})", path_, open_error_);
  return fmt::format("store: {} (run {}, {} trace(s) recorded{})", path_, run_, recorded_,
                     errors_ ? fmt::format(", {} failed", errors_) : "");
}

}  // namespace solbench::eval
