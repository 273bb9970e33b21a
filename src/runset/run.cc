#include "runset/run.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <set>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/settings.h"
#include "core/text.h"

#include "harness/eval_plan.h"
#include "harness/process.h"
#include "harness/protocol.h"  // kValuesFootprint
#include "harness/staging.h"
#include "harness/worker/zygote.h"
#include "runset/baseline_lane.h"
#include "runset/progress.h"
#include "runset/resume.h"
#include "runset/scheduler.h"
#include "runset/shard.h"
#include "runset/solutions.h"
#include "score/arch.h"
#include "score/sol_score.h"
#include "store/store.h"

namespace solbench::runset {

namespace fs = std::filesystem;

EvalSupport eval_support_from_help(const std::string& help) {
  // An option is declared where a line starts with it ("  --db TEXT ...",
  // "  -o,--output TEXT ..."); other mentions ("Excludes: --db") do not count.
  EvalSupport s;
  std::istringstream lines(help);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::string first;
    if (!(words >> first) || first[0] != '-') continue;
    std::istringstream names(first);
    for (std::string name; std::getline(names, name, ',');) {
      if (name == "--db") s.db = true;
      if (name == "--no-db") s.no_db = true;
    }
  }
  return s;
}

EvalSupport probe_eval_support(const fs::path& program) {
  harness::RunOptions ro;
  ro.timeout = std::chrono::seconds(30);
  return eval_support_from_help(
      harness::run_command({program.string(), "eval", "--help"}, ro).output);
}

RecordingPlan plan_recording(const EvalSupport& s, const fs::path& db) {
  RecordingPlan p;
  p.who = s.db ? Recording::Eval : Recording::Run;
  if (p.who == Recording::Eval)
    p.child_args = {"--db", db.string()};
  else if (s.no_db)
    p.child_args = {"--no-db"};
  if (s.no_db) p.probe_args = {"--no-db"};
  return p;
}

namespace {

// The first line of a message, whole (core/text.h's, not cut).
std::string first_line(const std::string& s) { return solbench::first_line(s, std::string::npos); }


// What a run evaluates, before any store or child: the problems (loaded),
// the solution files and the (problem, solution) tasks.
struct Selection {
  Layout layout = Layout::Problems;
  std::vector<LoadedProblem> problems;
  SolutionScan scan;
  Matching matching;
  size_t sharded_tasks = 0;  // tasks before apply_shard dropped those of other shards
};

Selection select_run(const RunOptions& o) {
  Selection sel;
  const DataSet ds = discover(o.dataset);
  sel.layout = ds.layout;
  std::vector<std::string> definitions;
  for (const ProblemDir& p : select_problems(ds, o.filter)) {
    LoadedProblem lp = load_for_run(p, o.workloads);
    if (lp.unwanted) continue;
    definitions.push_back(lp.problem ? lp.problem->definition.name : "");
    sel.problems.push_back(std::move(lp));
  }
  if (!o.workloads.wanted.empty() && sel.problems.empty())
    throw eval::RequestError(
        true, {fmt::format("--workload {}: no workload of the selected problems has this uuid "
                           "(or uuid prefix)",
                           fmt::join(o.workloads.wanted, ", "))});
  if (!o.solutions.empty()) sel.scan = scan_solutions(o.solutions);
  sel.matching = match_solutions(definitions, sel.scan.solutions, o.reference);
  return sel;
}

// Evaluations (tasks) per problem: the solutions each pair of it is evaluated with.
std::vector<size_t> evaluations_per_problem(const Selection& sel) {
  std::vector<size_t> n(sel.problems.size(), 0);
  for (const Task& t : sel.matching.tasks) ++n[t.problem];
  return n;
}

// Keeps this shard's (problem, workload) pairs. A problem with no pair to
// share out (invalid, without a solution or a workload) stays in every shard's
// report, so each shard reports what is wrong with the data set; a problem all
// of whose pairs went to other shards leaves the report (and its tasks go).
RunReport::ShardInfo apply_shard(Selection& sel, const ShardSpec& spec,
                                 std::vector<std::string>& notes) {
  const CostModel model;
  const std::vector<size_t> evaluations = evaluations_per_problem(sel);
  const std::vector<PairCost> pairs = predict_costs(sel.problems, evaluations, model, notes);
  const ShardPlan plan = plan_shards(pairs, spec.count, model);
  RunReport::ShardInfo info;
  info.index = spec.index;
  info.count = spec.count;
  info.total_pairs = pairs.size();
  info.pairs = plan.pairs[static_cast<size_t>(spec.index)];
  info.predicted_s = plan.load_s[static_cast<size_t>(spec.index)];
  info.max_over_mean = plan.max_over_mean();

  std::vector<std::vector<size_t>> keep(sel.problems.size());  // workload positions kept
  for (size_t i = 0; i < pairs.size(); ++i)
    if (plan.shard_of[i] == spec.index) keep[pairs[i].problem].push_back(pairs[i].workload);
  std::vector<bool> shared_out(sel.problems.size(), false);
  for (const PairCost& p : pairs) shared_out[p.problem] = true;

  std::vector<LoadedProblem> problems;
  std::vector<std::optional<size_t>> new_index(sel.problems.size());
  for (size_t i = 0; i < sel.problems.size(); ++i) {
    LoadedProblem& lp = sel.problems[i];
    if (shared_out[i]) {
      if (keep[i].empty()) continue;
      std::sort(keep[i].begin(), keep[i].end());  // workload.jsonl order, as without --shard
      std::vector<size_t> selected;
      std::vector<std::string> uuids;
      for (size_t k : keep[i]) {
        selected.push_back(lp.selected[k]);
        uuids.push_back(lp.uuids[k]);
      }
      lp.selected = std::move(selected);
      lp.uuids = std::move(uuids);
    }
    new_index[i] = problems.size();
    problems.push_back(std::move(lp));
  }
  sel.sharded_tasks = sel.matching.tasks.size();
  std::vector<Task> tasks;
  for (Task t : sel.matching.tasks)
    if (new_index[t.problem]) {
      t.problem = *new_index[t.problem];
      tasks.push_back(t);
    }
  sel.problems = std::move(problems);
  sel.matching.tasks = std::move(tasks);
  return info;
}

// The position in its problem's selection of a task's k-th workload.
size_t position(const Task& t, size_t k) { return t.part.empty() ? k : t.part[k]; }

// One run's state, shared by the slot threads. Every member a slot writes is
// either its own (reports of its task) or serialised (store, progress, envs).
class Runner {
 public:
  explicit Runner(const RunOptions& o) : o_(o) {}
  RunReport run();

 private:
  struct Slotted {  // where a task's report lives
    size_t problem;
    size_t evaluation;
  };
  void prepare();
  // Per workload of the task, in its order: the bytes its inputs and outputs hold,
  // a proxy for its time known before anything runs.
  std::vector<double> workload_costs(const Task& t) const;
  // Whether one of `remaining` (positions in the task) needs more of the GPU than
  // the lane's jobs leave an evaluation (start_lane): it is then evaluated alone.
  bool needs_gpu_alone(size_t task, const std::vector<size_t>& remaining) const;
  // The same for every workload of the task.
  bool needs_gpu_alone(size_t task) const;
  // On several devices, each task longer than a device's share cut into parts
  // (split_for_slots); on one device (however many slots), `tasks` as they are.
  std::vector<Task> cut_for_slots(const std::vector<Task>& tasks) const;
  // Which of the run's passes an evaluation belongs to: the first (every task,
  // slots side by side), the large ones alone after it, or the retry alone of those
  // that ran out of GPU memory beside others.
  enum class Pass { First, Alone, RetryAlone };
  void evaluate(size_t task, size_t slot, Pass pass);
  // Whether an evaluation on `slot` in `pass` has its GPU to itself: only then is
  // an out-of-memory skip proof that the workload does not fit (stores_skip).
  bool gpu_to_itself(size_t slot, Pass pass) const;
  // How many evaluations run at once on the device of `slot` in `pass`.
  size_t evaluations_on_device(size_t slot, Pass pass) const;
  // The T_b worker count's share of the host for a child on `slot` in `pass`.
  std::vector<std::pair<std::string, std::string>> baseline_share_env(size_t slot,
                                                                      Pass pass) const;
  // One slot of each distinct device (the first of each), for evaluations that run
  // alone on their GPU.
  std::vector<size_t> one_slot_per_device() const;
  // Evaluations that ran out of GPU memory beside others (--jobs-per-gpu N > 1, or
  // T_b ahead) are evaluated again, one per GPU at a time.
  void retry_out_of_memory_alone();
  // T_b ahead (baseline_lane.h): a job per problem in the order their evaluations
  // start (`order`, tasks), but the first's and those too large to measure beside
  // an evaluation; no lane where the run cannot have one (one GPU, eval records
  // into the store and measures T_b).
  // Whether T_b ahead runs at all (start_lane), and the GPU's memory it counts with.
  bool lane_possible() const;
  uint64_t lane_gpu_memory() const;
  // `alone_first`: the first tasks of `order` are too large to share the GPU with
  // the jobs: they get none, and the lane starts paused.
  void start_lane(const std::vector<size_t>& order, size_t alone_first);
  LaneOutcome measure_ahead(const LaneJob& job, const std::atomic<bool>& preempt);
  // The share variables of a lane job's T_b workers.
  std::vector<std::pair<std::string, std::string>> lane_env() const;
  void report_lane();
  void absorb(size_t task, const std::string& device, const std::vector<size_t>& remaining,
              const ChildResult& c, bool gpu_to_itself);
  std::optional<json> environment(const std::string& device, const Problem& p);
  bool child_recorded(const EvaluationReport& e, const Trace& t);
  void record(size_t task, const std::string& device, const Trace& t);
  // Records the skip of the task's k-th workload (stores_skip said so) under the
  // device's store environment; not at all (a warning) when that is unknown.
  void record_skip(size_t task, size_t k, const std::string& device, const std::string& reason);
  // Puts the task's solution into the store once per run.
  void put_solution(size_t task);
  // The run's environment, from its first recorded result.
  void set_run_environment(const std::string& env_hash);
  EvaluationReport& report(size_t task) {
    return report_.problems[where_[task].problem].evaluations[where_[task].evaluation];
  }

  const RunOptions& o_;
  fs::path program_;
  fs::path db_path_;
  RunReport report_;
  std::vector<LoadedProblem> problems_;
  SolutionScan scan_;
  std::vector<Task> tasks_;
  std::vector<Slotted> where_;
  std::optional<store::Store> db_;
  int64_t run_id_ = 0;
  RecordingPlan recording_;
  DeviceEnvironments envs_;
  std::optional<Progress> progress_;
  harness::StagingDir scratch_;
  bool empty_shard_ = false;
  std::vector<std::string> progress_notes_;  // found while preparing, shown once progress starts
  std::vector<std::pair<std::string, std::string>> child_env_;  // for every child eval
  std::vector<size_t> ran_alone_;  // tasks too large to share a GPU: the pass after the others
  std::vector<char> beside_;       // per task: evaluated beside others (an OOM skip proves nothing)
  uint64_t lane_gpu_bytes_ = 0;    // the lane's GPU's memory (needs_gpu_alone); 0: unknown
  // The lane starts paused for the evaluations too large to share the GPU with its
  // jobs, which go first (first_alone_ marks their tasks); the last of them to end
  // resumes it.
  std::vector<char> first_alone_;
  std::atomic<size_t> first_alone_left_{0};
  std::unique_ptr<BaselineLane> lane_;
  size_t lane_jobs_ = 0;           // T_b ahead's jobs at once (0: no lane)
  std::vector<size_t> tasks_left_; // per problem: its tasks not started yet
  std::mutex m_;                     // guards the members below
  std::set<size_t> solutions_put_;   // tasks whose solution is in the store
  bool run_env_set_ = false;
  std::atomic<bool> usage_error_{false};  // an evaluation was a usage error: start no more
};

// --jobs-per-gpu N > 1: an evaluation shares its GPU only where its largest
// workload's values, times kValuesFootprint, stay within this. Not for memory alone:
// a large workload's untimed steps (records of hundreds of MB written and read under
// the shared lock) are long, and every timed loop on the GPU waits for the steps in
// flight, so side by side such evaluations took longer than one after the other
// (one H100, 2026-11-26: FlashInfer 011 and L1/025, 0.7-1 GB workloads, 4-6x their
// time alone with three at once; six problems of at most 256 MB, 1.38x the
// throughput; docs/run.md).
constexpr uint64_t kSharedGpuBytes = 2ull << 30;

std::vector<double> Runner::workload_costs(const Task& t) const {
  const LoadedProblem& lp = problems_[t.problem];
  const size_t n = t.part.empty() ? lp.selected.size() : t.part.size();
  std::vector<double> c(n, 0);
  for (size_t k = 0; k < n; ++k)
    if (const auto& r = lp.problem->resolved.at(lp.selected[position(t, k)]))
      c[k] = double(r->input_bytes + r->output_bytes);
  return c;
}

bool Runner::needs_gpu_alone(size_t task, const std::vector<size_t>& remaining) const {
  if (lane_gpu_bytes_ <= harness::kBesideEvaluationBytes) return false;
  const std::vector<double> bytes = workload_costs(tasks_[task]);
  const double room = double(lane_gpu_bytes_ - harness::kBesideEvaluationBytes);
  return std::any_of(remaining.begin(), remaining.end(), [&](size_t k) {
    return k < bytes.size() && bytes[k] * double(harness::kValuesFootprint) > room;
  });
}

bool Runner::needs_gpu_alone(size_t task) const {
  std::vector<size_t> all(workload_costs(tasks_[task]).size());
  std::iota(all.begin(), all.end(), size_t{0});
  return needs_gpu_alone(task, all);
}

bool Runner::lane_possible() const {
  const bool one_gpu = !o_.slots.empty() && Device::parse(o_.slots[0]).is_cuda() &&
                       std::all_of(o_.slots.begin(), o_.slots.end(),
                                   [&](const std::string& s) { return s == o_.slots[0]; });
  // Only where evaluations measure T_b (timed, not --no-baseline) and read the
  // store the lane writes (eval records, so it was given the store: --db).
  return o_.baseline_ahead != 0 && one_gpu && !o_.eval.no_baseline && !o_.eval.no_timing &&
         recording_.who == Recording::Eval;
}

uint64_t Runner::lane_gpu_memory() const {
  if (o_.gpu_memory_bytes != 0) return o_.gpu_memory_bytes;
  try {
    return score::device_memory_bytes(score::choose_arch("", Device::parse(o_.slots[0])));
  } catch (const std::exception&) {
    return 0;  // unknown: no evaluation pauses the lane
  }
}

std::vector<Task> Runner::cut_for_slots(const std::vector<Task>& tasks) const {
  // Devices, not slots: parts of one evaluation side by side on one GPU
  // (--jobs-per-gpu) would only share its memory, and the biggest evaluations are
  // the ones cut (retry_out_of_memory_alone counts devices the same way).
  const size_t devices = std::set<std::string>(o_.slots.begin(), o_.slots.end()).size();
  if (devices < 2) return tasks;
  std::vector<std::vector<double>> costs;
  for (const Task& t : tasks) costs.push_back(workload_costs(t));
  const auto parts = split_for_slots(costs, devices);
  std::vector<Task> out;
  for (size_t i = 0; i < tasks.size(); ++i) {
    if (parts[i].size() < 2) {
      out.push_back(tasks[i]);
      continue;
    }
    for (size_t p = 0; p < parts[i].size(); ++p) {
      Task t = tasks[i];
      t.part.clear();
      for (size_t k : parts[i][p]) t.part.push_back(position(tasks[i], k));
      t.part_label = fmt::format("{}/{}", p + 1, parts[i].size());
      out.push_back(std::move(t));
    }
  }
  return out;
}

void Runner::prepare() {
  program_ = o_.program.empty() ? harness::self_exe() : o_.program;
  Selection sel = select_run(o_);
  report_.dataset = o_.dataset.string();
  report_.layout = sel.layout;
  report_.slots = o_.slots;
  report_.db = o_.no_db ? "(none: --no-db)"
                        : (o_.db.empty() ? store::default_db_path() : o_.db).string();
  if (o_.shard) report_.shard = apply_shard(sel, *o_.shard, progress_notes_);

  for (const LoadedProblem& lp : sel.problems) {
    ProblemReport pr;
    pr.where = lp.where;
    pr.workloads = lp.selected.size();
    pr.error = lp.error;
    if (lp.problem) pr.definition = lp.problem->definition.name;
    report_.problems.push_back(std::move(pr));
  }
  problems_ = std::move(sel.problems);
  scan_ = std::move(sel.scan);
  for (const auto& d : scan_.errors.items()) report_.errors.push_back(d.str());
  for (size_t s : sel.matching.unmatched_solutions)
    report_.unmatched_solutions.push_back(scan_.solutions[s].file.string());
  tasks_ = cut_for_slots(sel.matching.tasks);
  for (const Task& t : tasks_) {
    const LoadedProblem& lp = problems_[t.problem];
    EvaluationReport e;
    if (t.solution) {
      const SolutionFile& sf = scan_.solutions[*t.solution];
      e.solution = sf.solution.name;
      e.solution_hash = sf.hash;
      e.solution_file = sf.file.string();
    } else {
      const ReferenceSolution r = reference_solution(lp.problem->definition);
      e.solution = r.name;
      e.solution_hash = r.hash;
    }
    const size_t n = t.part.empty() ? lp.uuids.size() : t.part.size();
    for (size_t k = 0; k < n; ++k) e.uuids.push_back(lp.uuids[position(t, k)]);
    e.results.resize(e.uuids.size());
    e.part = t.part_label;
    auto& evs = report_.problems[t.problem].evaluations;
    where_.push_back({t.problem, evs.size()});
    evs.push_back(std::move(e));
  }
  // A shard may get no pair at all (more shards than pairs): it still opens
  // its store and records its run, so that every shard leaves a store to merge.
  empty_shard_ = tasks_.empty() && o_.shard && sel.sharded_tasks > 0;
  if (tasks_.empty() && !empty_shard_) {
    bool any_valid = false;
    for (const auto& lp : problems_) any_valid = any_valid || lp.problem.has_value();
    report_.errors.push_back(
        !any_valid ? "nothing to evaluate: no selected problem loads"
        : o_.solutions.empty()
            ? "nothing to evaluate: give --solutions DIR or --reference"
            : fmt::format("nothing to evaluate: no solution in {} is for a selected problem "
                          "({} solution file(s) found)",
                          o_.solutions.string(), scan_.solutions.size()));
  }
}

std::optional<json> Runner::environment(const std::string& device, const Problem& p) {
  const fs::path problem_dir = p.paths.definition.parent_path();
  auto env = envs_.get(device, [&]() -> std::optional<json> {
    std::string name = device;
    for (char& ch : name)
      if (ch == ':') ch = '_';
    const fs::path dir = scratch_.path() / ("probe-" + name);
    fs::create_directories(dir);
    ChildRequest req;
    req.program = program_;
    req.problem_dir = problem_dir;
    req.device = device;
    req.extra_args = recording_.probe_args;
    // The cheapest evaluation on this device's timer: eval's flags for those settings.
    eval::Settings probe;
    probe.rounds = 1;
    probe.no_timing = true;
    probe.timer = o_.eval.timer;
    req.extra_args.insert(req.extra_args.end(), {"--smallest", "1"});
    for (auto& a : probe.flags()) req.extra_args.push_back(std::move(a));
    req.scratch = dir;
    req.deadline = o_.eval.deadline(1);
    req.stop = o_.stop;
    const ChildResult c = run_child_eval(req);
    if (c.report && is_worker_environment(c.report->environment)) return c.report->environment;
    if (c.interrupted) return std::nullopt;
    progress_->note(fmt::format(
        "warning: cannot tell the environment of {} (eval --reference on {}: {}{}{}): results "
        "already in the store are not reused for this problem",
        device, problem_dir.string(), c.describe(), c.stderr_tail.empty() ? "" : "; ",
        first_line(c.stderr_tail)));
    return std::nullopt;
  });
  return env;
}

void Runner::put_solution(size_t task) {
  std::lock_guard lock(m_);
  if (solutions_put_.count(task)) return;
  const Task& tk = tasks_[task];
  store::SolutionRecord rec;
  if (tk.solution) {
    rec = store::SolutionRecord::from(scan_.solutions[*tk.solution].solution);
  } else {
    const ReferenceSolution r = reference_solution(problems_[tk.problem].problem->definition);
    rec = {r.name, problems_[tk.problem].problem->definition.name, r.content};
  }
  db_->put_solution(rec);
  solutions_put_.insert(task);
}

void Runner::set_run_environment(const std::string& env_hash) {
  std::lock_guard lock(m_);
  if (!run_env_set_) {
    db_->set_run_environment(run_id_, env_hash);
    run_env_set_ = true;
  }
}

void Runner::record(size_t task, const std::string& device, const Trace& t) {
  const EvaluationReport& e = report(task);
  put_solution(task);
  const std::string env = db_->put_environment(store::environment_from_trace(t));
  set_run_environment(env);
  store::TraceExtras x;
  x.solution_hash = e.solution_hash;
  x.environment_hash = env;
  x.sol_score = sol_score_of(t);
  x.extras = {{"recorded_by", "solbench run"}, {"device", device}};
  if (auto it = t.evaluation.extra.find(std::string(score::kTAttainableKey));
      it != t.evaluation.extra.end() && it->is_number())
    x.extras["t_attainable_ms"] = *it;
  db_->record_trace(run_id_, t, x);
}

void Runner::record_skip(size_t task, size_t k, const std::string& device,
                         const std::string& reason) {
  const EvaluationReport& e = report(task);
  const LoadedProblem& lp = problems_[tasks_[task].problem];
  // The environment resume looks skips up in (evaluate): the worker's, which the
  // child that skipped it has just reported (absorb learned it), mapped as traces are.
  const std::optional<json> env = environment(device, *lp.problem);
  if (!env) {
    progress_->note(fmt::format("warning: {} / {}: workload {} ran out of GPU memory, but the "
                                "environment of {} is unknown: the skip is not stored and a "
                                "later run tries it again",
                                lp.where.label(), e.solution, e.uuids[k], device));
    return;
  }
  put_solution(task);
  const std::string env_hash = db_->put_environment(
      store_environment(*lp.problem, lp.selected[position(tasks_[task], k)], *env));
  set_run_environment(env_hash);
  store::Skip skip;
  skip.solution_hash = e.solution_hash;
  skip.environment_hash = env_hash;
  skip.definition = lp.problem->definition.name;
  skip.workload_uuid = e.uuids[k];
  skip.reason = reason;
  db_->record_skip(run_id_, skip);
}

bool Runner::child_recorded(const EvaluationReport& e, const Trace& t) {
  // eval appends a trace to -o just before committing it: a child that died in
  // between left it unrecorded. (It is dead now: no commit can follow.) A trace
  // without hardware is recorded by eval under a predicted environment; it is
  // left alone.
  const store::EnvironmentInfo env = store::environment_from_trace(t);
  return env.gpu_model.empty() ||
         db_->has_result(e.solution_hash, t.workload.value("uuid", ""), env.hash());
}

void Runner::absorb(size_t task, const std::string& device, const std::vector<size_t>& remaining,
                    const ChildResult& c, bool gpu_to_itself) {
  EvaluationReport& e = report(task);
  const LoadedProblem& lp = problems_[tasks_[task].problem];
  std::map<std::string, Trace> traces;
  std::map<std::string, std::string> skipped;
  if (c.report) {
    envs_.learn(device, c.report->environment);
    // eval records as it goes (Recording::Eval); a store it could not write is
    // only a warning there, and would make the next run evaluate these again.
    const json& db = c.report->db;
    if (recording_.who == Recording::Eval && db.is_object() &&
        (db.contains("error") || db.value("errors", 0) > 0))
      progress_->note(fmt::format("warning: {}: eval did not record every trace in {}: {}",
                                  lp.where.label() + " / " + e.solution, db.value("path", "?"),
                                  db.value("error", fmt::format("{} trace(s) failed",
                                                                db.value("errors", 0)))));
    for (const eval::WorkloadReport& w : c.report->workloads) {
      if (w.skipped) skipped[w.uuid] = w.skip_reason;
      else if (w.trace) traces[w.uuid] = *w.trace;
    }
  } else {
    for (const Trace& t : c.traces) traces[t.workload.value("uuid", "")] = t;
  }
  // eval's exit 2 is a usage error, the same for every evaluation of the run: it is
  // never a result (nothing is recorded, so nothing is "resumed" later) and the run
  // stops starting evaluations.
  if (!c.report && !c.interrupted && !c.timed_out && c.spawn_error.empty() &&
      c.status.exited && c.status.exit_code == 2) {
    std::lock_guard lock(m_);
    if (report_.usage_error.empty()) {
      const std::string why = first_line(c.stderr_tail);
      report_.usage_error = why.rfind("error: ", 0) == 0 ? why.substr(7) : why;
      progress_->note("error: " + why + " (nothing recorded; the run stops)");
    }
    usage_error_ = true;
    e.error = "eval: usage error: " + report_.usage_error;
    return;
  }
  const bool failed = !c.report && !c.interrupted;
  if (failed) {
    e.error = fmt::format("eval {}", c.describe());
    const std::string why = first_line(c.stderr_tail);
    if (!why.empty() && why != "[...]") e.error += ": " + why;
  }
  for (size_t k : remaining) {
    const std::string& uuid = e.uuids[k];
    if (auto it = traces.find(uuid); it != traces.end()) {
      if (recording_.who == Recording::Run || (!c.report && !child_recorded(e, it->second)))
        record(task, device, it->second);
      e.results[k] = result_of(it->second);
    } else if (auto s = skipped.find(uuid); s != skipped.end()) {
      WorkloadResult r;
      r.uuid = uuid;
      r.skip_reason = s->second;
      e.results[k] = r;
      if (stores_skip(s->second, gpu_to_itself)) record_skip(task, k, device, s->second);
    } else if (!c.interrupted) {
      // The child gave no result for it: the evaluation's failure, recorded here
      // whoever records (the child could not).
      harness::WorkloadOutcome out;
      out.index = static_cast<int>(lp.selected[position(tasks_[task], k)]);
      out.uuid = uuid;
      out.status = c.timed_out ? Status::Timeout : Status::RuntimeError;
      out.log = c.report ? "solbench run: eval reported no result for this workload"
                           : fmt::format("solbench run: eval {} before reporting this workload; "
                                         "its stderr ends:\n{}",
                                         c.describe(), c.stderr_tail);
      const json env = environment(device, *lp.problem).value_or(json{{"device", device}});
      const Trace t = harness::make_trace(*lp.problem, lp.selected[position(tasks_[task], k)],
                                          e.solution, out, env);
      record(task, device, t);
      e.results[k] = result_of(t);
    }
  }
}

namespace {

size_t host_cpus() { return std::max(1u, std::thread::hardware_concurrency()); }

// The variables a child's automatic T_b worker count reads (score/baseline.h):
// SOLBENCH_BASELINE_CPUS where `cpus` is set (non-zero), SOLBENCH_BASELINE_GPU_SHARE
// where `gpu_share` is above 1; none that the user set, and none at all where
// SOLBENCH_BASELINE_WORKERS fixes the count.
std::vector<std::pair<std::string, std::string>> share_variables(size_t cpus, size_t gpu_share) {
  std::vector<std::pair<std::string, std::string>> env;
  const Settings& set = settings();
  if (set.baseline_workers) return env;
  if (cpus > 0 && !set.baseline_cpus)
    env.emplace_back("SOLBENCH_BASELINE_CPUS", std::to_string(cpus));
  if (gpu_share > 1 && !set.baseline_gpu_share)
    env.emplace_back("SOLBENCH_BASELINE_GPU_SHARE", std::to_string(gpu_share));
  return env;
}

}  // namespace

// Evaluations side by side share the CPUs, and T_b's workers side by side are there
// for torch.compile's CPU work: each evaluation's automatic count (score/baseline.h)
// gets the CPUs over the slots of its pass, and the GPU's memory over the slots that
// share its GPU, unless SOLBENCH_BASELINE_WORKERS or these variables say otherwise.
// A count rather than a fixed number of workers, so that hand-back's late workers
// (docs/score.md) also start under `run` with several slots.
std::vector<std::pair<std::string, std::string>> Runner::baseline_share_env(size_t slot,
                                                                            Pass pass) const {
  const size_t side_by_side = pass == Pass::First ? o_.slots.size() : one_slot_per_device().size();
  // T_b ahead's jobs share the GPU's memory with the evaluations of the first pass.
  const size_t on_gpu =
      Device::parse(o_.slots[slot]).is_cuda()
          ? evaluations_on_device(slot, pass) + (pass == Pass::First ? lane_jobs_ : 0)
          : 1;
  return share_variables(side_by_side > 1 ? std::max<size_t>(1, host_cpus() / side_by_side) : 0,
                         on_gpu);
}

// A lane job's T_b workers count as `baseline` does (workers alone: one per 2 CPUs,
// at most 8, within half the GPU's memory), with three quarters of the CPUs over
// the lane's jobs at once and the GPU's memory over them and the evaluations
// beside them. With the host's CPUs each (8 workers a job) the evaluations beside
// them ran slower than the T_b they were spared (docs/run.md, "T_b ahead").
//
// The jobs run beside evaluations, whose workers hold no shares of the GPU's memory
// (harness/timing/memory_shares.h): their workers are counted by that memory rule and
// hold none either (SOLBENCH_BASELINE_MEMORY_SHARES=0), so the jobs stay within what
// start_lane gave them (kBesideEvaluationBytes) beside the shares an evaluation's
// T_b hands out; the shares are harness::kSharedMemoryFraction of the GPU's memory
// for that room.
std::vector<std::pair<std::string, std::string>> Runner::lane_env() const {
  auto env = share_variables(std::max<size_t>(1, host_cpus() * 3 / 4 / lane_jobs_),
                             evaluations_on_device(0, Pass::First) + lane_jobs_);
  env.emplace_back("SOLBENCH_BASELINE_MEMORY_SHARES", "0");
  return env;
}

size_t Runner::evaluations_on_device(size_t slot, Pass pass) const {
  if (pass != Pass::First) return 1;  // one evaluation per device at a time
  return std::count(o_.slots.begin(), o_.slots.end(), o_.slots[slot]);
}

bool Runner::gpu_to_itself(size_t slot, Pass pass) const {
  return evaluations_on_device(slot, pass) == 1;
}

void Runner::evaluate(size_t task, size_t slot, Pass pass) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::string& device = o_.slots[slot];
  EvaluationReport& e = report(task);
  const LoadedProblem& lp = problems_[tasks_[task].problem];
  const std::string what =
      lp.where.label() + " / " + e.solution + (e.part.empty() ? "" : " [" + e.part + "]");
  e.device = device;
  progress_->started(task, what, device);
  // One of the evaluations too large to share the GPU with T_b ahead's jobs, which go
  // first with the lane paused: the last of them to end lets the jobs start.
  struct FirstAlone {
    Runner* r = nullptr;
    ~FirstAlone() {
      if (r && --r->first_alone_left_ == 0) r->lane_->resume();
    }
  } first_alone;
  if (lane_ && pass == Pass::First && task < first_alone_.size() && first_alone_[task])
    first_alone.r = this;

  // Resume: what the store holds for this solution in this device's environment.
  const auto candidates =
      stored_traces(*db_, lp.problem->definition.name, e.solution, e.solution_hash, e.uuids);
  // Stored out-of-memory skips count at a task's first evaluation in the run only:
  // the retry alone is for skips seen beside others, and --rerun skipped wants them.
  const std::vector<store::Skip> skips =
      pass == Pass::RetryAlone || o_.rerun_skipped
          ? std::vector<store::Skip>{}
          : db_->skips(e.solution_hash, e.uuids, /*any environment*/ "");
  if (!candidates.empty() || !skips.empty()) {
    if (auto env = environment(device, *lp.problem)) {
      const std::string env_hash =
          store_environment(*lp.problem, lp.selected[position(tasks_[task], 0)], *env).hash();
      const auto done = resumable(*db_, candidates, e.solution_hash, env_hash);
      const auto skipped = resumable_skips(skips, env_hash);
      for (size_t k = 0; k < e.uuids.size(); ++k)
        if (auto it = done.find(e.uuids[k]); it != done.end()) {
          WorkloadResult r = result_of(it->second);
          const bool again = r.status && std::find(o_.rerun.begin(), o_.rerun.end(),
                                                   *r.status) != o_.rerun.end();
          if (!again) e.results[k] = std::move(r);
        } else if (auto sk = skipped.find(e.uuids[k]); sk != skipped.end()) {
          // Only where the pair has no trace in this environment: a trace (one that
          // fitted after all, --rerun skipped) is the newer word.
          e.results[k] = result_of(sk->second);
        }
    }
  }
  std::vector<size_t> remaining;
  for (size_t k = 0; k < e.uuids.size(); ++k)
    if (!e.results[k]) remaining.push_back(k);

  const bool stopped = (o_.stop && o_.stop->load()) || usage_error_;
  // T_b ahead: the problem's baselines are in the store before its evaluation
  // looks them up (or it measures them itself).
  bool last_of_problem = false;
  {
    std::lock_guard lock(m_);
    size_t& left = tasks_left_[tasks_[task].problem];
    if (left > 0) --left;  // a retry alone is not a task of its own
    last_of_problem = left == 0;
  }
  if (lane_ && (remaining.empty() || stopped)) {
    if (last_of_problem) lane_->drop(tasks_[task].problem);
  } else if (lane_) {
    e.baseline_wait_seconds = lane_->claim(tasks_[task].problem);
  }
  if (!remaining.empty() && !stopped) {
    const fs::path dir = scratch_.path() / fmt::format("task-{}", task);
    fs::create_directories(dir);
    ChildRequest req;
    req.program = program_;
    req.problem_dir = lp.where.dir;
    if (tasks_[task].solution) req.solution_file = scan_.solutions[*tasks_[task].solution].file;
    for (size_t k : remaining) req.workloads.push_back(e.uuids[k]);
    req.device = device;
    req.extra_args = recording_.child_args;
    for (auto& a : o_.eval.flags()) req.extra_args.push_back(std::move(a));
    if (lane_)
      if (const auto ahead = lane_->outcome(tasks_[task].problem); ahead && !ahead->document.empty())
        req.extra_args.insert(req.extra_args.end(), {"--baselines-ahead", ahead->document});
    req.scratch = dir;
    req.deadline = o_.eval.deadline(remaining.size());
    req.stop = o_.stop;
    req.env = child_env_;
    for (auto& kv : baseline_share_env(slot, pass)) req.env.push_back(std::move(kv));
    // Beside the lane's jobs an evaluation's out-of-memory skip proves nothing: it
    // is tried again alone at the end (retry_out_of_memory_alone). One whose
    // workload would not fit beside them anyway has the GPU to itself: the running
    // jobs are stopped (queued again) and none starts until it ends. Then a skip is
    // stored at once, and a run stopped in parts (which never reaches the retry)
    // does not evaluate it again in every part (L1/076, L2/012 and L2/026: 28-106 s
    // each time on an H100).
    struct Resume {
      BaselineLane* lane = nullptr;
      ~Resume() {
        if (lane) lane->resume();
      }
    } paused;
    if (lane_ && pass == Pass::First && gpu_to_itself(slot, pass) &&
        needs_gpu_alone(task, remaining)) {
      e.baseline_wait_seconds += lane_->pause();
      paused.lane = lane_.get();
    }
    const auto started = std::chrono::steady_clock::now();
    const ChildResult c = run_child_eval(req);
    const bool alone = gpu_to_itself(slot, pass) && !(lane_ && lane_->busy_since(started));
    beside_[task] = !alone;
    absorb(task, device, remaining, c, alone);
    harness::remove_tree_quietly(dir);
  }
  e.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  Tally t;
  t.add(e);
  progress_->finished(task, what, device, t.text(), t.failed() > 0 || !e.error.empty(),
                      remaining.empty(), e.seconds);
}

void Runner::start_lane(const std::vector<size_t>& order, size_t alone_first) {
  if (!lane_possible()) return;
  const size_t at_once = o_.baseline_ahead < 0 ? size_t{kBaselineAheadJobs}
                                               : static_cast<size_t>(o_.baseline_ahead);
  // A job's workers hold its workloads' values beside the evaluation in progress:
  // within harness::kBesideEvaluationBytes for all the jobs at once. A job takes
  // a problem's workloads that fit that rule; the larger ones, and the first
  // problem's (nothing is evaluated before it), are measured by their evaluation
  // (By workload, not by problem: a problem's largest workload used to keep all
  // of its workloads out, 338 of the public set's, 150 of which fit.) Evaluations
  // run beside the jobs, but for one too large to share the GPU with them
  // (needs_gpu_alone), which stops them; one that runs out of memory beside them is
  // tried again alone.
  std::vector<LaneJob> jobs;
  std::vector<char> queued(problems_.size(), 0);
  for (size_t i = 0; i < order.size(); ++i) {
    const Task& t = tasks_[order[i]];
    if (queued[t.problem]) continue;
    queued[t.problem] = 1;
    // The first problem, and the first after those that go first with the lane paused,
    // are evaluated before a job of theirs could be of use.
    if (i <= alone_first) continue;
    const LoadedProblem& lp = problems_[t.problem];
    if (!lp.problem) continue;
    // Left out too: a workload whose safetensors blob is not here (its evaluation
    // skips it at once; a job of the public set's three such problems cost 7-11 s).
    std::set<std::string> left_out;
    for (size_t w : lp.selected)
      if (const auto& r = lp.problem->resolved.at(w);
          (r && double(r->input_bytes + r->output_bytes) * double(harness::kValuesFootprint) *
                        double(at_once) >
                    double(harness::kBesideEvaluationBytes)) ||
          !missing_blob(*lp.problem, w).empty())
        left_out.insert(lp.problem->workloads.at(w).uuid);
    // Every workload a task of the problem will evaluate (eval measures T_b for its
    // PASSED ones; the others cost a compile that is not used). One the store holds
    // a result of for every task (a trace or a stored skip, in any environment) is
    // left to its evaluation: a resumed run starts no job for what it resumes, and
    // where the stored result is another environment's, the evaluation measures
    // its T_b itself.
    LaneJob job{t.problem, {}};
    std::set<std::string> seen;
    for (size_t k : order) {
      if (tasks_[k].problem != t.problem) continue;
      const EvaluationReport& e = report(k);
      std::set<std::string> stored;
      for (const auto& st : stored_traces(*db_, lp.problem->definition.name, e.solution,
                                          e.solution_hash, e.uuids))
        stored.insert(st.workload_uuid);
      for (const auto& sk : db_->skips(e.solution_hash, e.uuids, "")) stored.insert(sk.workload_uuid);
      for (const std::string& u : e.uuids)
        if (!stored.count(u) && !left_out.count(u) && seen.insert(u).second)
          job.uuids.push_back(u);
    }
    if (!job.uuids.empty()) jobs.push_back(std::move(job));
  }
  if (jobs.empty()) return;
  lane_jobs_ = std::min(at_once, jobs.size());
  report_.baseline_ahead_jobs = static_cast<int>(lane_jobs_);
  lane_ = std::make_unique<BaselineLane>(
      std::move(jobs), lane_jobs_,
      [this](const LaneJob& j, size_t, const std::atomic<bool>& preempt) {
        return measure_ahead(j, preempt);
      },
      o_.stop, alone_first > 0);
  first_alone_.assign(tasks_.size(), 0);
  for (size_t i = 0; i < alone_first; ++i) first_alone_[order[i]] = 1;
  first_alone_left_ = alone_first;
}

LaneOutcome Runner::measure_ahead(const LaneJob& job, const std::atomic<bool>& preempt) {
  const LoadedProblem& lp = problems_[job.problem];
  const fs::path dir = scratch_.path() / fmt::format("ahead-{}", job.problem);
  fs::create_directories(dir);
  ChildRequest req;
  req.command = ChildRequest::Command::Baseline;
  req.program = program_;
  req.problem_dir = lp.where.dir;
  req.workloads = job.uuids;
  req.device = o_.slots[0];
  req.extra_args = recording_.child_args;
  for (auto& a : o_.eval.baseline_flags()) req.extra_args.push_back(std::move(a));
  req.scratch = dir;
  req.deadline = o_.eval.deadline(job.uuids.size());
  req.stop = o_.stop;
  req.preempt = &preempt;
  req.env = child_env_;
  for (auto& kv : lane_env()) req.env.push_back(std::move(kv));
  const ChildResult c = run_child_eval(req);
  harness::remove_tree_quietly(dir);
  LaneOutcome o;
  // Stopped for an evaluation that needs the GPU to itself: what it measured is in
  // the store, and it runs again after (the store answers for those).
  o.preempted = c.interrupted && preempt.load() && !(o_.stop && o_.stop->load());
  if (o.preempted) return o;
  const json& sum = c.document.is_object() ? c.document.value("summary", json()) : json();
  if (sum.is_object()) {
    o.measured = sum.value("measured", size_t{0});
    o.cached = sum.value("cached", size_t{0});
    o.without = sum.value("without_baseline", size_t{0});
    // For its evaluation: the T_b's the store does not keep (eager, none).
    const fs::path doc = scratch_.path() / fmt::format("ahead-{}.json", job.problem);
    std::ofstream(doc) << c.document.dump();
    o.document = doc.string();
  } else if (!c.interrupted) {
    o.error = "baseline " + c.describe();
    const std::string why = first_line(c.stderr_tail);
    if (!why.empty() && why != "[...]") o.error += ": " + why;
    progress_->note(fmt::format("warning: T_b ahead of {}: {} (its evaluation measures it)",
                                lp.where.label(), o.error));
  }
  return o;
}

void Runner::report_lane() {
  std::vector<RunReport::BaselineAhead> jobs;
  size_t done = 0, with_t_b = 0;
  double waited = 0;
  for (const auto& [job, out] : lane_->outcomes()) {
    jobs.push_back({problems_[job.problem].where.label(), job.uuids.size(), out});
    if (out.state == LaneOutcome::State::Done && out.error.empty()) {
      ++done;
      with_t_b += job.uuids.size() - std::min(out.without, job.uuids.size());
    }
    waited += out.waited;
  }
  progress_->note(fmt::format(
      "note: T_b ahead: {} of {} problem(s) done beside the evaluations, {} at a time ({} "
      "workload(s) with a T_b); evaluations waited {:.0f} s for them",
      done, jobs.size(), lane_jobs_, with_t_b, waited));
  report_.baseline_ahead = std::move(jobs);
}

std::vector<size_t> Runner::one_slot_per_device() const {
  std::vector<size_t> first;
  for (size_t s = 0; s < o_.slots.size(); ++s)
    if (std::find_if(first.begin(), first.end(),
                     [&](size_t a) { return o_.slots[a] == o_.slots[s]; }) == first.end())
      first.push_back(s);
  return first;
}

void Runner::retry_out_of_memory_alone() {
  const std::vector<size_t> alone = one_slot_per_device();
  if (o_.stop && o_.stop->load()) return;
  std::vector<size_t> retry;
  for (size_t task = 0; task < tasks_.size(); ++task) {
    if (!beside_[task]) continue;  // alone, its skip is stored: not tried again
    EvaluationReport& e = report(task);
    bool again = false;
    // A skip taken from the store was seen alone already: not tried again.
    for (auto& r : e.results)
      if (r && !r->status && !r->resumed && is_out_of_memory_skip(r->skip_reason)) {
        r.reset();  // evaluated again below; a skip left no trace to resume from
        again = true;
      }
    if (again) retry.push_back(task);
  }
  if (retry.empty()) return;
  progress_->note(fmt::format(
      "note: {} evaluation(s) ran out of GPU memory beside others; evaluating them again, one "
      "per GPU at a time",
      retry.size()));
  run_on_slots(alone.size(), retry.size(),
               [&](size_t i, size_t slot) { evaluate(retry[i], alone[slot], Pass::RetryAlone); },
               o_.stop);
}

RunReport Runner::run() {
  const auto t0 = std::chrono::steady_clock::now();
  prepare();
  progress_.emplace(o_.progress, o_.progress_tty, tasks_.size());
  for (const auto& n : progress_notes_) progress_->note("note: " + n);
  for (const auto& err : report_.errors) progress_->note("error: " + err);
  for (const auto& p : report_.problems)
    if (!p.error.empty()) progress_->note("error: " + p.where.label() + ": " + p.error);
  if (o_.filter.empty())
    for (const auto& f : report_.unmatched_solutions)
      progress_->note("warning: " + f + ": its definition is not a problem of the data set");
  if (tasks_.empty() && !empty_shard_) return report_;

  scratch_ = harness::StagingDir::create(harness::default_staging_base(), "run-");
  // --no-db: a store of the run's own, in its scratch, gone with it.
  db_path_ = o_.no_db ? scratch_.path() / "run.db" : o_.db.empty() ? store::default_db_path() : o_.db;
  db_.emplace(store::Store::open(db_path_));
  recording_ = plan_recording(probe_eval_support(program_), db_path_);
  report_.recording = recording_.who == Recording::Run ? "run" : "eval";
  run_id_ = db_->begin_run({o_.command_line, o_.dataset.string(), "", ""});
  // One zygote for every evaluation of the run (harness/worker/zygote.h), of the
  // executable the evaluations run.
  harness::start_process_zygote(program_);
  // One slot: the data set's order. Several: the largest evaluations first (the
  // bytes their workloads' inputs and outputs hold, a proxy for their time known
  // before anything runs), so that the last to start are short.
  std::vector<double> cost(tasks_.size(), 0);
  std::vector<std::vector<double>> costs;
  for (const Task& t : tasks_) costs.push_back(workload_costs(t));
  if (o_.slots.size() > 1)
    for (size_t t = 0; t < tasks_.size(); ++t)
      for (double c : costs[t]) cost[t] += c;
  const std::vector<size_t> order = costliest_first(cost);
  // With several evaluations per GPU, those too large to share it (kSharedGpuBytes)
  // run alone, one per GPU, after the rest have run side by side (so that a run stopped early
  // has the many small evaluations, not a few large ones).
  const std::vector<size_t> first = one_slot_per_device();
  std::vector<size_t> shared;
  const std::vector<bool> big =
      runs_alone(costs, double(harness::kValuesFootprint), double(kSharedGpuBytes));
  beside_.assign(tasks_.size(), 0);
  tasks_left_.assign(problems_.size(), 0);
  for (const Task& t : tasks_) ++tasks_left_[t.problem];
  for (size_t t : order) (first.size() < o_.slots.size() && big[t] ? ran_alone_ : shared).push_back(t);
  if (!ran_alone_.empty())
    progress_->note(fmt::format(
        "note: {} evaluation(s) whose largest workload is too large to share a GPU ({} times its "
        "bytes over {} GiB) run last, one per GPU",
        ran_alone_.size(), harness::kValuesFootprint, kSharedGpuBytes >> 30));
  // With T_b ahead on one GPU and one slot, the evaluations too large to share the GPU
  // with its jobs (needs_gpu_alone) go first, the lane paused until they are done: in
  // the data set's order each stopped the jobs running then, and a stopped job loses
  // the compile in progress (in session 51 the public L2/036's job was stopped by five
  // such evaluations in turn, and its evaluation waited 168.5 s for it).
  size_t alone_first = 0;
  const bool lane = lane_possible();
  if (lane) lane_gpu_bytes_ = lane_gpu_memory();
  if (o_.slots.size() == 1 && lane) {
    const auto mid = std::stable_partition(shared.begin(), shared.end(),
                                           [&](size_t t) { return needs_gpu_alone(t); });
    if (const size_t n = size_t(mid - shared.begin()); n > 0) {
      alone_first = n;
      progress_->note(fmt::format(
          "note: {} evaluation(s) too large to share the GPU with T_b ahead's jobs ({} times a "
          "workload's bytes over the GPU's memory less {} GiB) go first",
          n, harness::kValuesFootprint, harness::kBesideEvaluationBytes >> 30));
    }
  }
  std::vector<size_t> in_order = shared;
  in_order.insert(in_order.end(), ran_alone_.begin(), ran_alone_.end());
  start_lane(in_order, alone_first);
  // With T_b ahead, an evaluation whose problem's job has not ended lets the next
  // ones whose job has (or that have none) go first, instead of waiting for it.
  const auto ready = [&](size_t i) {
    const auto job = lane_->outcome(tasks_[shared[i]].problem);
    return !job || job->state == LaneOutcome::State::Done ||
           job->state == LaneOutcome::State::Dropped;
  };
  run_on_slots(o_.slots.size(), shared.size(),
               [&](size_t i, size_t slot) { evaluate(shared[i], slot, Pass::First); }, o_.stop,
               lane_ ? std::function<bool(size_t)>(ready) : nullptr, lane_jobs_ + 1);
  if (lane_) {  // the passes alone have the GPU to themselves
    lane_->finish();
    report_lane();
  }
  if (!ran_alone_.empty() && !(o_.stop && o_.stop->load()))
    run_on_slots(first.size(), ran_alone_.size(),
                 [&](size_t i, size_t slot) { evaluate(ran_alone_[i], first[slot], Pass::Alone); },
                 o_.stop);
  retry_out_of_memory_alone();
  size_t stored_skips = 0;
  for (const auto& p : report_.problems)
    for (const auto& e : p.evaluations)
      for (const auto& r : e.results) stored_skips += r && !r->status && r->resumed;
  if (stored_skips)
    progress_->note(fmt::format(
        "note: {} workload(s) skipped from the store: they ran out of GPU memory with the GPU to "
        "themselves in this environment before (--rerun skipped evaluates them again)",
        stored_skips));
  progress_->clear();
  db_->finish_run(run_id_);
  report_.interrupted = o_.stop && o_.stop->load();
  report_.environment_probes = envs_.probes();
  report_.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return report_;
}

}  // namespace

RunReport run_dataset(const RunOptions& o) { return Runner(o).run(); }

PlanReport plan_run(const RunOptions& o, int count) {
  Selection sel = select_run(o);
  PlanReport r;
  r.dataset = o.dataset.string();
  r.count = std::max(1, count);
  for (const auto& d : sel.scan.errors.items()) r.errors.push_back(d.str());
  for (const auto& lp : sel.problems)
    if (!lp.problem) r.errors.push_back(lp.where.label() + ": " + first_line(lp.error));
  const CostModel model;
  const std::vector<size_t> evaluations = evaluations_per_problem(sel);
  const std::vector<PairCost> pairs = predict_costs(sel.problems, evaluations, model, r.notes);
  r.plan = plan_shards(pairs, r.count, model);
  for (size_t i = 0; i < pairs.size(); ++i) {
    const LoadedProblem& lp = sel.problems[pairs[i].problem];
    r.pairs.push_back({lp.where.label(), lp.problem->definition.name, lp.uuids[pairs[i].workload],
                       pairs[i], r.plan.shard_of[i]});
  }
  return r;
}

}  // namespace solbench::runset
