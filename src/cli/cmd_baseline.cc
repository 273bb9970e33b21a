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
#include "core/json.h"
#include "core/problem.h"
#include "harness/timing/gpu/gpu_timer_factory.h"
#include "harness/timing/timer.h"
#include "cli/device_flags.h"
#include "score/baseline.h"
#include "score/selection.h"
#include "score/sol_score.h"
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
  std::vector<std::string> workloads;
  int smallest = 0;
  std::string timer = "auto";
  int rounds = 1;
  uint64_t seed = 0;  // 0: a secret of its own per evaluation (WorkerPlan::seed)
  double target_rse = 0.01;
  double time_budget_ms = 500;
  double timeout_s = 300;
  bool no_sandbox = false;
  bool keep_staging = false;
};

json opt(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }

std::string ms_cell(const std::optional<double>& v) {
  return v ? fmt::format("{:.4g}", *v) : std::string("-");
}

std::string axes_text(const Workload& w) {
  std::string s;
  for (const auto& [n, v] : w.axes) s += fmt::format("{}{}={}", s.empty() ? "" : " ", n, v);
  return s.size() > 22 ? s.substr(0, 19) + "..." : s;
}

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

int run_baseline(const BaselineOptions& o) {
  if (const int rc = check_device_and_timer(o.device, o.timer)) return rc;
  if (!fs::exists(o.path)) throw InputError(o.path, 0, "", "no such file or folder");
  const std::vector<fs::path> dirs = find_problem_dirs(o.path);
  if (dirs.empty()) throw InputError(o.path, 0, "", "no definition.json at or below this folder");

  std::optional<score::ArchChoice> arch;
  if (!o.arch.empty()) {
    try {
      arch = score::choose_arch(o.arch, o.device);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "error: %s\n", e.what());
      return 2;
    }
  }

  json timer_options = json::object();
  if (o.timer != "auto") timer_options["timer"] = o.timer;

  // The store: its baselines are the cache. A store that cannot be opened costs
  // the cache, never the measurement.
  std::optional<store::Store> db;
  json db_info = nullptr;
  if (!o.no_db) {
    const fs::path file = o.db.empty() ? store::default_db_path() : fs::path(o.db);
    db_info = {{"path", file.string()}};
    try {
      db.emplace(store::Store::open(file));
    } catch (const std::exception& e) {
      db_info["error"] = e.what();
      warn(fmt::format("results store {}: {}; baselines are measured and not "
                                      "cached", file.string(), e.what()));
    }
  }
  // The key's environment, predicted for the look-up; what is stored is the
  // measuring worker's own.
  const json predicted = db ? score::predicted_worker_env(o.device, timer_options) : json::object();

  score::MeasureOptions mo;
  mo.device = o.device;
  mo.timer_options = timer_options;
  mo.timing.target_rse = o.target_rse;
  mo.timing.budget_ms = o.time_budget_ms;
  mo.rounds = o.rounds;
  mo.seed = o.seed;
  mo.workload_timeout = std::chrono::duration<double>(o.timeout_s);
  mo.keep_scratch = o.keep_staging;
  mo.no_sandbox = o.no_sandbox;

  json problems = json::array();
  json env = predicted;
  size_t n_total = 0, n_missing = 0, n_cached = 0, n_measured = 0, n_eager = 0;
  int rc = 0;
  bool printed_header = false;
  for (const fs::path& dir : dirs) {
    Diagnostics diags;
    Problem problem = load_problem(problem_paths(dir), diags);
    std::vector<size_t> sel;
    if (diags.empty()) sel = score::select_workloads(problem, o.workloads, o.smallest, diags);
    if (!diags.empty()) {
      for (const auto& d : diags.items()) std::fprintf(stderr, "error: %s\n", d.str().c_str());
      problems.push_back({{"name", problem.definition.name}, {"dir", dir.string()},
                          {"error", diags.items().front().str()}});
      rc = 1;
      continue;
    }
    const std::string def_hash = store::definition_hash(problem.definition);
    std::vector<score::BaselineResult> results(sel.size());
    std::vector<size_t> todo;  // positions in sel
    for (size_t k = 0; k < sel.size(); ++k) {
      const std::string& uuid = problem.workloads[sel[k]].uuid;
      results[k].uuid = uuid;
      std::optional<score::BaselineResult> hit;
      if (db && !o.remeasure) {
        try {
          hit = score::cached_baseline(
              *db, score::baseline_key(def_hash, uuid, predicted, predicted.value("driver", "")));
        } catch (const std::exception& e) {
          warn(fmt::format("looking up the baseline of {}: {}", uuid, e.what()));
        }
      }
      if (hit) results[k] = *hit;
      else todo.push_back(k);
    }

    if (!todo.empty()) {
      std::vector<size_t> indices;
      for (size_t k : todo) indices.push_back(sel[k]);
      if (!o.json_output)
        std::fprintf(stderr, "measuring %zu baseline(s) of %s on %s...\n", indices.size(),
                     problem.definition.name.c_str(), o.device.c_str());
      mo.on_result = [&](size_t pos, const score::BaselineResult& r, const json& wenv) {
        const size_t k = todo[pos];
        results[k] = r;
        if (!db || !r.t_b_ms || r.method.empty()) return;
        // Recorded as soon as measured: a later failure loses nothing.
        const store::BaselineKey key =
            score::baseline_key(def_hash, r.uuid, wenv, wenv.value("driver", ""));
        try {
          db->put_baseline({key, *r.t_b_ms, *store::parse_method(r.method), "", r.reason});
        } catch (const std::exception& e) {
          warn(fmt::format("recording the baseline of {}: {}", r.uuid, e.what()));
        }
        const std::string diff = key_difference(
            score::baseline_key(def_hash, r.uuid, predicted, predicted.value("driver", "")), key);
        if (!diff.empty())
          warn(fmt::format("the environment predicted for the cache look-up differs from the "
                           "measuring worker's ({}): stored under the worker's", diff));
      };
      try {
        score::MeasureRun run = score::measure_baselines(problem, indices, mo);
        if (!run.env.empty()) {
          env = run.env;
          if (arch) score::confirm_device(*arch, o.device, env);
        }
      } catch (const std::exception& e) {
        // What was measured before is recorded; the rest say why they have none.
        for (size_t k : todo)
          if (!results[k].t_b_ms && results[k].reason.empty())
            results[k].reason = std::string("the baseline worker could not run: ") + e.what();
      }
      n_measured += indices.size();
    }

    std::string pub_note;
    std::vector<std::optional<score::Published>> published;
    if (arch && arch->model && score::is_b200(*arch->model)) {
      try {
        published = score::published_b200(problem, dir, &pub_note);
      } catch (const std::exception& e) {
        pub_note = e.what();
      }
      if (!pub_note.empty()) warn(pub_note);
    }

    json rows = json::array();
    if (!o.json_output) {
      if (!printed_header) {
        printed_header = true;
        fmt::print("baselines on {} ({}){}\n", env.value("hardware", o.device), o.device,
                   arch && arch->model ? fmt::format("; T_SOL on {}", arch->model->name) : "");
      }
      fmt::print("\n{}  ({})\n", problem.definition.name, dir.string());
      fmt::print("  {:<8}  {:<22} {:>12} {:<14} {:<7}", "workload", "axes", "T_b (ms)", "method",
                 "cached");
      if (arch && arch->model) fmt::print(" {:>12}", "T_SOL (ms)");
      if (!published.empty()) fmt::print(" {:>14} {:>14}", "B200 T_b (ms)", "B200 SOL (ms)");
      fmt::print("  {}\n", "note");
    }
    for (size_t k = 0; k < sel.size(); ++k) {
      const Workload& w = problem.workloads[sel[k]];
      const score::BaselineResult& r = results[k];
      ++n_total;
      if (r.cached) ++n_cached;
      if (!r.t_b_ms) {
        ++n_missing;
        rc = 1;
      } else if (r.method == "eager") {
        ++n_eager;
      }
      json row = r.to_json();
      row["axes"] = json::object();
      for (const auto& [n, v] : w.axes) row["axes"][n] = v;
      std::optional<score::SolBound> bound;
      if (arch && arch->model) {
        bound = score::sol_bound(problem, sel[k], *arch->model);
        row["t_sol_ms"] = opt(bound->t_sol_ms);
        if (!bound->reason.empty()) row["t_sol_reason"] = bound->reason;
      }
      const std::optional<score::Published>* pub =
          sel[k] < published.size() ? &published[sel[k]] : nullptr;
      if (pub && *pub) row["published"] = (*pub)->to_json();
      rows.push_back(row);
      if (!o.json_output) {
        fmt::print("  {:<8}  {:<22} {:>12} {:<14} {:<7}", w.uuid.substr(0, 8), axes_text(w),
                   ms_cell(r.t_b_ms), r.method.empty() ? "-" : r.method, r.cached ? "yes" : "no");
        if (bound) fmt::print(" {:>12}", ms_cell(bound->t_sol_ms));
        if (!published.empty())
          fmt::print(" {:>14} {:>14}", ms_cell(pub && *pub ? (*pub)->baseline_ms : std::nullopt),
                     ms_cell(pub && *pub ? (*pub)->sol_ms : std::nullopt));
        // An eager T_b says so beside it: "eager (why)".
        const std::string eager = r.t_b_ms ? score::eager_note(r.method, r.reason) : "";
        fmt::print("  {}\n", eager.empty() ? r.reason : eager);
      }
    }
    json pj = {{"name", problem.definition.name}, {"dir", dir.string()},
               {"definition_hash", def_hash}, {"workloads", rows}};
    if (!pub_note.empty()) pj["published_note"] = pub_note;
    problems.push_back(pj);
  }

  const json summary = {{"workloads", n_total}, {"cached", n_cached}, {"measured", n_measured},
                        {"without_baseline", n_missing}, {"eager", n_eager}};
  if (o.json_output) {
    json doc = {{"device", o.device}, {"environment", env}, {"db", db_info},
                {"arch", arch ? arch->to_json() : json(nullptr)}, {"problems", problems},
                {"summary", summary}};
    fmt::print("{}\n", doc.dump(2));
  } else {
    fmt::print("\nsummary: {} workload(s): {} from the store, {} measured, {} without a baseline\n",
               n_total, n_cached, n_measured, n_missing);
    if (n_eager)
      fmt::print("warning: {} T_b(s) eager, not the reference under torch.compile (the note "
                 "column says why)\n",
                 n_eager);
    if (arch && !arch->note.empty()) fmt::print("note: {}\n", arch->note);
    if (db) fmt::print("store: {}\n", db->file().string());
  }
  return rc;
}

}  // namespace

void add_baseline_command(CLI::App& app) {
  auto o = std::make_shared<BaselineOptions>();
  auto* cmd = app.add_subcommand(
      "baseline",
      "Measure the scoring baseline T_b (the reference under torch.compile, else eager) on this "
      "device, reusing values in the results store");
  cmd->add_option("path", o->path, "problem folder, or a folder of problems (a data set)")
      ->required();
  cmd->add_option("--device", o->device, "cpu or cuda:N")->capture_default_str();
  cmd->add_option("--db", o->db, "results store file (default: " +
                                     store::default_db_path().string() + ")");
  cmd->add_flag("--no-db", o->no_db, "neither read nor record baselines in the results store");
  cmd->add_flag("--json", o->json_output, "print the results as one JSON document");
  cmd->add_flag("--remeasure", o->remeasure, "measure even where the store has a baseline");
  cmd->add_option("--arch", o->arch,
                  "hardware model for T_SOL beside T_b (solbench hw list); b200 also shows "
                  "SOL-ExecBench's published numbers from metadata.json");
  cmd->add_option("--workload,-w", o->workloads,
                  "only this workload (uuid or prefix; repeatable)");
  cmd->add_option("--smallest", o->smallest, "only the N smallest workloads (by bytes)")
      ->check(CLI::PositiveNumber);
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
  cmd->add_option("--timeout", o->timeout_s, "seconds per workload before the worker is killed")
      ->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_flag("--keep-staging", o->keep_staging, "keep the worker's scratch folder");
  cmd->add_flag("--no-sandbox", o->no_sandbox, "run the worker without the sandbox (debugging only)");
  auto* no_db = cmd->get_option("--no-db");
  no_db->excludes(cmd->get_option("--db"));
  cmd->callback([o] { exit_code() = run_baseline(*o); });
}

}  // namespace solbench::cli
