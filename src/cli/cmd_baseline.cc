// `solbench baseline PROBLEM_DIR|DATASET_DIR`: the scoring baseline T_b of every
// selected workload on this device (docs/score.md): the reference under
// torch.compile (eager where that is missing or fails, with the reason), timed as
// solutions are, in a worker that never loads solution code. Values already in
// the results store for this definition, workload and environment are reused
// (`cached`), new ones are recorded there.
//
// Exit codes: 0 every selected workload has a T_b, 1 some have none (or a
// problem is invalid), 2 usage error.
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli/commands.h"
#include "core/text.h"
#include "cli/eval_flags.h"
#include "core/json.h"
#include "core/problem.h"
#include "eval/baselines.h"
#include "eval/request.h"
#include "harness/timing/gpu/gpu_timer_factory.h"
#include "harness/timing/timer.h"
#include "score/arch.h"
#include "score/baseline.h"
#include "score/environment.h"
#include "score/published.h"
#include "score/selection.h"
#include "score/sol_score.h"
#include "score/tracer_process.h"
#include "store/store.h"

namespace solbench::cli {

namespace {

namespace fs = std::filesystem;

struct BaselineOptions {
  std::string path;
  std::string device = "cpu";
  std::string db;
  bool no_db = false;
  bool json_output = false;
  bool remeasure = false;
  std::string arch;
  score::WorkloadSelection workloads;
  std::string timer = "auto";
  int rounds = 1;
  uint64_t seed = 0;  // 0: a secret of its own per evaluation (WorkerPlan::seed)
  double target_rse = 0.01;
  double time_budget_ms = 500;
  double timeout_s = 300;
  bool no_sandbox = false;
  bool keep_staging = false;
};

std::string ms_cell(const std::optional<double>& v) {
  return v ? fmt::format("{:.4g}", *v) : std::string("-");
}

// A table cell: the axes in at most 22 characters.
std::string axes_cell(const Workload& w) { return fit(axes_text(w.axes), 22); }

// Warnings go to stderr in both modes: with --json stdout stays one document.
void warn(const std::string& text) { std::fprintf(stderr, "warning: %s\n", text.c_str()); }

// The environment fields of two keys, "" when equal, else what differs.
std::string key_difference(const store::BaselineKey& a, const store::BaselineKey& b) {
  std::string d;
  auto cmp = [&](const char* what, const std::string& x, const std::string& y) {
    if (x != y) d += fmt::format("{}{} \"{}\" vs \"{}\"", d.empty() ? "" : ", ", what, x, y);
  };
  cmp("gpu_model", a.gpu_model, b.gpu_model);
  cmp("driver", a.driver, b.driver);
  cmp("torch", a.torch, b.torch);
  cmp("timer", a.timer, b.timer);
  return d;
}

// One `baseline` command over its problem folders: per problem, T_b from the
// store or measured (eval/baselines.h), then its rows; the summary at the end.
class BaselineCommand {
 public:
  explicit BaselineCommand(const BaselineOptions& o) : o_(o) {}
  int run();

 private:
  void open_store();
  void measure_options();
  std::vector<score::BaselineResult> find(const Problem& problem, const std::vector<size_t>& sel,
                                          const std::string& def_hash);
  void problem_rows(const Problem& problem, const fs::path& dir, const std::vector<size_t>& sel,
                    const std::vector<score::BaselineResult>& results, const std::string& def_hash);
  void print_header(const Problem& problem, const fs::path& dir, bool published);
  void print_summary() const;

  const BaselineOptions& o_;
  Device device_;  // o_.device, parsed once
  std::optional<score::ArchChoice> arch_;
  // T_SOL beside T_b with --arch: traced in a child process, as eval's (never here).
  score::TracerProcess tracer_{score::kTraceTimeoutS};
  sol::AnalysisOptions bounds_{.use_cache = true, .keep_graph = false, .trace = tracer_.fn(),
                               .memo = std::make_shared<sol::GraphMemo>()};
  json timer_options_ = json::object();
  std::optional<store::Store> db_;
  json db_info_ = nullptr;
  json predicted_ = json::object();  // the key's environment, predicted for the look-up
  score::MeasureOptions mo_;
  json problems_ = json::array();
  json env_ = json::object();
  size_t n_total_ = 0, n_missing_ = 0, n_cached_ = 0, n_measured_ = 0, n_eager_ = 0;
  int rc_ = 0;
  bool printed_header_ = false;
};

// The store: its baselines are the cache. A store that cannot be opened costs
// the cache, never the measurement.
void BaselineCommand::open_store() {
  if (o_.no_db) return;
  const fs::path file = o_.db.empty() ? store::default_db_path() : fs::path(o_.db);
  db_info_ = {{"path", file.string()}};
  try {
    db_.emplace(store::Store::open(file));
  } catch (const std::exception& e) {
    db_info_["error"] = e.what();
    warn(fmt::format("results store {}: {}; baselines are measured and not cached",
                     file.string(), e.what()));
  }
}

void BaselineCommand::measure_options() {
  mo_.device = device_;
  mo_.timer_options = timer_options_;
  mo_.timing.target_rse = o_.target_rse;
  mo_.timing.budget_ms = o_.time_budget_ms;
  mo_.rounds = o_.rounds;
  mo_.seed = o_.seed;
  mo_.workload_timeout = eval::time_limit(o_.timeout_s);
  mo_.keep_scratch = o_.keep_staging;
  mo_.no_sandbox = o_.no_sandbox;
  // Workers that start with the GPU to themselves (as here: no evaluation beside
  // them) keep their values within half its memory, as eval's do after the
  // solution's (score/baseline.h); the device's own model, whatever --arch names.
  try {
    mo_.gpu_memory_bytes = score::device_memory_bytes(
        arch_ && arch_->matches_device ? *arch_ : score::choose_arch("", device_));
  } catch (const std::exception&) {
    mo_.gpu_memory_bytes = 0;  // no model for this GPU: the count without its memory
  }
}

std::vector<score::BaselineResult> BaselineCommand::find(const Problem& problem,
                                                         const std::vector<size_t>& sel,
                                                         const std::string& def_hash) {
  store::Store* db = db_ ? &*db_ : nullptr;
  auto predicted_key = [&](const std::string& uuid) {
    return score::baseline_key(def_hash, uuid, predicted_, predicted_.value("driver", ""));
  };
  std::vector<score::BaselineResult> results(sel.size());
  std::vector<size_t> todo;  // positions in sel
  for (size_t k = 0; k < sel.size(); ++k) {
    results[k].uuid = problem.workloads[sel[k]].uuid;
    std::optional<score::BaselineResult> hit;
    if (!o_.remeasure) hit = eval::stored_baseline(db, predicted_key(results[k].uuid), warn);
    if (hit) results[k] = *hit;
    else todo.push_back(k);
  }
  if (todo.empty()) return results;
  std::vector<size_t> indices;
  for (size_t k : todo) indices.push_back(sel[k]);
  if (!o_.json_output)
    std::fprintf(stderr, "measuring %zu baseline(s) of %s on %s...\n", indices.size(),
                 problem.definition.name.c_str(), o_.device.c_str());
  auto on_each = [&](size_t pos, const score::BaselineResult& r, const store::BaselineKey* key) {
    results[todo[pos]] = r;
    if (!db || !key) return;
    const std::string diff = key_difference(predicted_key(r.uuid), *key);
    if (!diff.empty())
      warn(fmt::format("the environment predicted for the cache look-up differs from the "
                       "measuring worker's ({}): stored under the worker's", diff));
  };
  try {
    const score::MeasureRun run =
        eval::measure_and_record(problem, indices, mo_, db, def_hash, on_each, warn);
    if (!run.env.empty()) {
      env_ = run.env;
      if (arch_) score::confirm_device(*arch_, device_, env_);
    }
  } catch (const std::exception& e) {
    // What was measured before is recorded; the rest say why they have none.
    for (size_t k : todo)
      if (!results[k].t_b_ms && results[k].reason.empty())
        results[k].reason = std::string("the baseline worker could not run: ") + e.what();
  }
  n_measured_ += indices.size();
  return results;
}

void BaselineCommand::print_header(const Problem& problem, const fs::path& dir, bool published) {
  if (!printed_header_) {
    printed_header_ = true;
    fmt::print("baselines on {} ({}){}\n", env_.value("hardware", o_.device), o_.device,
               arch_ && arch_->model ? fmt::format("; T_SOL on {}", arch_->model->name) : "");
  }
  fmt::print("\n{}  ({})\n", problem.definition.name, dir.string());
  fmt::print("  {:<8}  {:<22} {:>12} {:<14} {:<7}", "workload", "axes", "T_b (ms)", "method",
             "cached");
  if (arch_ && arch_->model) fmt::print(" {:>12}", "T_SOL (ms)");
  if (published) fmt::print(" {:>14} {:>14}", "B200 T_b (ms)", "B200 SOL (ms)");
  fmt::print("  {}\n", "note");
}

void BaselineCommand::problem_rows(const Problem& problem, const fs::path& dir,
                                   const std::vector<size_t>& sel,
                                   const std::vector<score::BaselineResult>& results,
                                   const std::string& def_hash) {
  std::string pub_note;
  std::vector<std::optional<score::Published>> published;
  if (arch_ && arch_->model && score::is_b200(*arch_->model)) {
    try {
      published = score::published_b200(problem, dir, &pub_note);
    } catch (const std::exception& e) {
      pub_note = e.what();
    }
    if (!pub_note.empty()) warn(pub_note);
  }
  if (!o_.json_output) print_header(problem, dir, !published.empty());
  json rows = json::array();
  for (size_t k = 0; k < sel.size(); ++k) {
    const Workload& w = problem.workloads[sel[k]];
    const score::BaselineResult& r = results[k];
    ++n_total_;
    if (r.cached) ++n_cached_;
    if (!r.t_b_ms) {
      ++n_missing_;
      rc_ = 1;
    } else if (r.method == "eager") {
      ++n_eager_;
    }
    json row = r.to_json();
    row["axes"] = json::object();
    for (const auto& [n, v] : w.axes) row["axes"][n] = v;
    std::optional<score::SolBound> bound;
    if (arch_ && arch_->model) {
      bound = score::sol_bound(problem, sel[k], *arch_->model, bounds_);
      row["t_sol_ms"] = or_null(bound->t_sol_ms);
      if (!bound->reason.empty()) row["t_sol_reason"] = bound->reason;
    }
    const std::optional<score::Published>* pub =
        sel[k] < published.size() ? &published[sel[k]] : nullptr;
    if (pub && *pub) row["published"] = (*pub)->to_json();
    rows.push_back(row);
    if (o_.json_output) continue;
    fmt::print("  {:<8}  {:<22} {:>12} {:<14} {:<7}", short_uuid(w.uuid), axes_cell(w),
               ms_cell(r.t_b_ms), r.method.empty() ? "-" : r.method, r.cached ? "yes" : "no");
    if (bound) fmt::print(" {:>12}", ms_cell(bound->t_sol_ms));
    if (!published.empty())
      fmt::print(" {:>14} {:>14}", ms_cell(pub && *pub ? (*pub)->baseline_ms : std::nullopt),
                 ms_cell(pub && *pub ? (*pub)->sol_ms : std::nullopt));
    // An eager T_b says so beside it: "eager (why)".
    const std::string eager = r.t_b_ms ? score::eager_note(r.method, r.reason) : "";
    fmt::print("  {}\n", eager.empty() ? r.reason : eager);
  }
  json pj = {{"name", problem.definition.name}, {"dir", dir.string()},
             {"definition_hash", def_hash}, {"workloads", rows}};
  if (!pub_note.empty()) pj["published_note"] = pub_note;
  problems_.push_back(pj);
}

void BaselineCommand::print_summary() const {
  const json summary = {{"workloads", n_total_}, {"cached", n_cached_}, {"measured", n_measured_},
                        {"without_baseline", n_missing_}, {"eager", n_eager_}};
  if (o_.json_output) {
    json doc = {{"device", o_.device}, {"environment", env_}, {"db", db_info_},
                {"arch", arch_ ? arch_->to_json() : json(nullptr)}, {"problems", problems_},
                {"summary", summary}};
    fmt::print("{}\n", doc.dump(2));
    return;
  }
  fmt::print("\nsummary: {} workload(s): {} from the store, {} measured, {} without a baseline\n",
             n_total_, n_cached_, n_measured_, n_missing_);
  if (n_eager_)
    fmt::print("warning: {} T_b(s) eager, not the reference under torch.compile (the note "
               "column says why)\n",
               n_eager_);
  if (arch_ && !arch_->note.empty()) fmt::print("note: {}\n", arch_->note);
  if (db_) fmt::print("store: {}\n", db_->file().string());
}

int BaselineCommand::run() {
  try {
    device_ = eval::parse_device(o_.device, o_.timer);
  } catch (const eval::RequestError& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }
  if (!fs::exists(o_.path)) throw InputError(o_.path, 0, "", "no such file or folder");
  const std::vector<fs::path> dirs = find_problem_dirs(o_.path);
  if (dirs.empty()) throw InputError(o_.path, 0, "", "no definition.json at or below this folder");
  if (!o_.arch.empty()) {
    try {
      arch_ = score::choose_arch(o_.arch, device_);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "error: %s\n", e.what());
      return 2;
    }
  }
  if (o_.timer != "auto") timer_options_["timer"] = o_.timer;
  open_store();
  // What is stored is the measuring worker's own environment.
  if (db_) predicted_ = score::predicted_worker_env(device_, timer_options_);
  env_ = predicted_;
  measure_options();
  for (const fs::path& dir : dirs) {
    Diagnostics diags;
    Problem problem = load_problem(problem_paths(dir), diags);
    std::vector<size_t> sel;
    if (diags.empty()) sel = score::select_workloads(problem, o_.workloads, diags);
    if (!diags.empty()) {
      for (const auto& d : diags.items()) std::fprintf(stderr, "error: %s\n", d.str().c_str());
      problems_.push_back({{"name", problem.definition.name}, {"dir", dir.string()},
                           {"error", diags.items().front().str()}});
      rc_ = 1;
      continue;
    }
    const std::string def_hash = store::definition_hash(problem.definition);
    problem_rows(problem, dir, sel, find(problem, sel, def_hash), def_hash);
  }
  print_summary();
  return rc_;
}

}  // namespace

void add_baseline_command(CLI::App& app) {
  auto o = std::make_shared<BaselineOptions>();
  auto* cmd = app.add_subcommand(
      "baseline",
      "Measure the scoring baseline T_b (the reference under torch.compile, else eager) on this "
      "device, reusing values in the results store");
  cmd->add_option("problems", o->path, "a problem folder, or a folder of problems (a data set)")
      ->required();
  cmd->add_option("--device", o->device, "cpu or cuda:N")->capture_default_str();
  add_store_options(cmd, o->db, o->no_db, "results store the baselines are read from and recorded in");
  cmd->add_flag("--json", o->json_output, "print the results as one JSON document");
  cmd->add_flag("--remeasure", o->remeasure, "measure even where the store has a baseline");
  cmd->add_option("--arch", o->arch,
                  "hardware model for T_SOL beside T_b (solbench hw list); b200 also shows "
                  "SOL-ExecBench's published numbers from metadata.json");
  add_workload_options(cmd, o->workloads);
  cmd->add_option("--timer", o->timer, "GPU timer (as for eval)")
      ->check(CLI::IsMember(
          std::vector<std::string>(gpu::kGpuTimerKinds.begin(), gpu::kGpuTimerKinds.end())))
      ->capture_default_str();
  cmd->add_option("--rounds", o->rounds,
                  "correctness rounds of the compiled reference against the eager one")
      ->check(CLI::Range(1, 1000))->capture_default_str();
  cmd->add_option("--seed", o->seed,
                 "derive every input value from this seed (reproducible, and predictable to "
                 "whoever knows it: for debugging); default: a secret drawn per evaluation");
  cmd->add_option("--target-rse", o->target_rse,
                  "stop timing once the relative standard error of the median is below this")
      ->check(CLI::Range(1e-6, 1.0))->capture_default_str();
  cmd->add_option("--time-budget-ms", o->time_budget_ms, "wall-time budget per workload")
      ->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_option("--timeout", o->timeout_s,
                  "seconds per workload before the worker is killed (TIMEOUT); 0: no limit")
      ->check(CLI::NonNegativeNumber)->capture_default_str();
  cmd->add_flag("--keep-staging", o->keep_staging, "keep the worker's scratch folder");
  cmd->add_flag("--no-sandbox", o->no_sandbox, "run the worker without the sandbox (debugging only)");
  cmd->callback([o] { exit_code() = BaselineCommand(*o).run(); });
}

}  // namespace solbench::cli
