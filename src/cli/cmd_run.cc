// `solbench run DATASET_DIR`: evaluates every (problem, solution) of a data set,
// each in a child `solbench eval`, on one or more device slots, resuming from
// the results store, and prints a summary (docs/run.md; engine: src/runset/).
//
// Exit codes: 0 every result PASSED (skipped aside), 1 a failure or invalid
// input, 2 usage error, 130 interrupted by SIGINT (143 by SIGTERM, 129 by SIGHUP)
// after printing the summary so far.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/eval_flags.h"
#include "harness/interrupt.h"
#include "runset/runset.h"
#include "sol/hardware.h"
#include "store/store.h"

namespace solbench::cli {

namespace {

namespace fs = std::filesystem;

struct RunCliOptions {
  std::string dataset;
  std::string solutions;
  bool reference = false;
  std::vector<std::string> categories;
  std::vector<std::string> problems;
  score::WorkloadSelection workloads;
  // Statuses to evaluate again ("failed": all but PASSED; "skipped": the stored
  // out-of-memory skips).
  std::vector<std::string> rerun;
  std::string shard;  // "I/N"
  bool plan = false;
  std::string device = "cpu";
  std::string gpus;
  int cpu_slots = 0;
  int jobs_per_gpu = 1;
  int baseline_ahead = -1;
  std::string db;
  bool no_db = false;
  bool json_output = false;
  eval::Settings settings;  // each child eval's (the same flags as eval's)
};

// Set by the first SIGINT, SIGTERM or SIGHUP (harness/interrupt.h); the slots poll
// it: no evaluation starts, the running ones get the signal and clean up (what they
// finished is kept). A second signal ends the process at once.
std::atomic<bool> g_stop{false};

std::string command_line() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string s, arg;
  while (std::getline(in, arg, '\0')) s += (s.empty() ? "" : " ") + arg;
  return s;
}

// `--plan`: the shard assignment and its balance, nothing evaluated.
int run_plan(const runset::RunOptions& o, bool json_output) {
  const int count = o.shard ? o.shard->count : 1;
  const runset::PlanReport p = runset::plan_run(o, count);
  const runset::ShardPlan& plan = p.plan;
  size_t published = 0;
  for (const auto& pp : p.pairs) published += pp.cost.t_sol_published ? 1 : 0;
  double total = 0;
  for (double l : plan.load_s) total += l;
  if (json_output) {
    json shards = json::array();
    for (size_t s = 0; s < plan.load_s.size(); ++s)
      shards.push_back({{"index", s},
                        {"pairs", plan.pairs[s]},
                        {"setups", plan.setups[s]},
                        {"predicted_seconds", plan.load_s[s]}});
    json pairs = json::array();
    for (const auto& pp : p.pairs)
      pairs.push_back({{"problem", pp.problem},
                       {"definition", pp.definition},
                       {"uuid", pp.uuid},
                       {"bytes", pp.cost.bytes},
                       {"t_sol_ms", pp.cost.t_sol_ms},
                       {"t_sol_published", pp.cost.t_sol_published},
                       {"evaluations", pp.cost.evaluations},
                       {"reference_calls", pp.cost.reference_calls},
                       {"predicted_seconds", pp.cost.seconds},
                       {"shard", pp.shard}});
    json doc = {{"dataset", p.dataset},
                {"count", p.count},
                {"pairs_total", p.pairs.size()},
                {"t_sol_published", published},
                {"predicted_seconds", total},
                {"max_over_mean", plan.max_over_mean()},
                {"shards", std::move(shards)},
                {"pairs", std::move(pairs)},
                {"notes", p.notes},
                {"errors", p.errors}};
    fmt::print("{}\n", doc.dump(2));
  } else {
    fmt::print("{} (problem, workload) pair(s) in {} shard(s); T_SOL published for {}, bytes "
               "bound for the rest; predicted {:.0f} s in all\n",
               p.pairs.size(), p.count, published, total);
    fmt::print("{:>5} {:>7} {:>8} {:>13} {:>7}\n", "shard", "pairs", "set-ups", "predicted s",
               "share");
    for (size_t s = 0; s < plan.load_s.size(); ++s)
      fmt::print("{:>5} {:>7} {:>8} {:>13.1f} {:>6.1f}%\n", s, plan.pairs[s], plan.setups[s],
                 plan.load_s[s], total > 0 ? 100 * plan.load_s[s] / total : 0.0);
    fmt::print("balance (max/mean predicted cost): {:.4f}\n", plan.max_over_mean());
    if (o.shard) {
      fmt::print("\nshard {}/{}:\n", o.shard->index, o.shard->count);
      for (const auto& pp : p.pairs)
        if (pp.shard == o.shard->index)
          fmt::print("  {} {} ({:.2f} s)\n", pp.problem, pp.uuid, pp.cost.seconds);
    }
  }
  for (const auto& n : p.notes) std::fprintf(stderr, "note: %s\n", n.c_str());
  for (const auto& e : p.errors) std::fprintf(stderr, "error: %s\n", e.c_str());
  return p.errors.empty() ? 0 : 1;
}

int run_run(const RunCliOptions& c) {
  runset::RunOptions o;
  o.dataset = c.dataset;
  o.solutions = c.solutions;
  o.reference = c.reference;
  o.filter.categories = c.categories;
  o.filter.globs = c.problems;
  o.workloads = c.workloads;
  for (const auto& name : c.rerun) {
    if (name == "failed") {
      for (Status s : {Status::IncorrectShape, Status::IncorrectNumerical, Status::IncorrectDtype,
                       Status::RuntimeError, Status::CompileError, Status::Timeout,
                       Status::RewardHack, Status::InvalidReference})
        o.rerun.push_back(s);
    } else if (name == "skipped") {
      o.rerun_skipped = true;
    } else if (auto s = parse_status(name)) {
      o.rerun.push_back(*s);
    } else {
      std::fprintf(stderr,
                   "error: --rerun %s: not a status (PASSED, RUNTIME_ERROR, ..., failed or "
                   "skipped)\n",
                   name.c_str());
      return 2;
    }
  }
  if (!c.shard.empty()) o.shard = runset::parse_shard(c.shard);
  if (c.plan) {
    return run_plan(o, c.json_output);
  }
  // Usage errors are refused before anything runs or is recorded.
  if (!c.settings.arch.empty()) {
    try {
      (void)sol::select_hardware(c.settings.arch);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "error: %s\n", e.what());
      return 2;
    }
  }
  o.slots = runset::resolve_slots(c.device, c.gpus, c.cpu_slots);
  o.slots = runset::repeat_gpu_slots(o.slots, c.jobs_per_gpu);
  o.baseline_ahead = c.baseline_ahead;
  if (!c.settings.timer.empty() && c.settings.timer != "auto")
    for (const auto& s : o.slots)
      if (s == "cpu") {
        std::fprintf(stderr, "error: --timer %s: GPU timers apply to cuda devices\n",
                     c.settings.timer.c_str());
        return 2;
      }
  o.db = c.db;
  o.no_db = c.no_db;
  o.eval = c.settings;
  o.command_line = command_line();
  o.stop = &g_stop;
  o.progress = stderr;
  o.progress_tty = ::isatty(2);

  runset::RunReport r;
  try {
    harness::InterruptStop signals(&g_stop);
    r = runset::run_dataset(o);
  } catch (const eval::RequestError& e) {
    for (const auto& m : e.messages) std::fprintf(stderr, "error: %s\n", m.c_str());
    return e.usage ? 2 : 1;
  }
  if (c.json_output) {
    fmt::print("{}\n", runset::summary_json(r).dump(2));
  } else {
    fmt::print("{}", runset::summary_table(r));
  }
  std::fflush(stdout);
  runset::Tally all;
  for (const auto& p : r.problems)
    for (const auto& e : p.evaluations) all.add(e);
  if (r.shard)
    std::fprintf(stderr,
                 "run: shard %d/%d: %zu of %zu (problem, workload) pair(s), predicted %.0f s "
                 "(balance max/mean %.3f)\n",
                 r.shard->index, r.shard->count, r.shard->pairs, r.shard->total_pairs,
                 r.shard->predicted_s, r.shard->max_over_mean);
  std::fprintf(stderr,
               "run: %zu evaluation(s) on %zu slot(s): %zu result(s) evaluated, %zu from the store "
               "%s (traces recorded by %s), %.1f s\n",
               all.evaluations, r.slots.size(), all.evaluated, all.resumed, r.db.c_str(),
               r.recording.empty() ? "-" : r.recording.c_str(), r.seconds);
  if (r.interrupted) return 128 + (harness::interrupt_signal() ? harness::interrupt_signal() : SIGINT);
  return runset::exit_code(r);
}

}  // namespace

void add_run_command(CLI::App& app) {
  auto c = std::make_shared<RunCliOptions>();
  auto* cmd = app.add_subcommand(
      "run", "Evaluate a data set: every problem with its solutions, in child evals, resumable");
  cmd->add_option("problems", c->dataset,
                  "a data set (CATEGORY/PROBLEM/...), a folder of problems, or one problem folder")
      ->required();
  auto* sols = cmd->add_option("--solutions", c->solutions,
                               "folder of solution JSON files (searched recursively), matched to "
                               "problems by their definition field");
  auto* ref = cmd->add_flag("--reference", c->reference,
                            "evaluate each problem's reference as the solution");
  (void)sols;
  (void)ref;
  cmd->add_option("--category", c->categories, "only this category (repeatable)");
  cmd->add_option("--problem", c->problems, "only problems whose folder name matches this glob (repeatable)");
  cmd->add_option("--shard", c->shard,
                  "I/N: evaluate only slice I (0-based) of N of the (problem, workload) pairs, "
                  "split by predicted cost; the same on every machine (docs/cluster.md)")
      // Checked at parse time: a malformed I/N is a usage error (exit 2).
      ->check(CLI::Validator(
          [](std::string& v) -> std::string {
            try {
              runset::parse_shard(v);
              return "";
            } catch (const InputError& e) {
              return e.what();
            }
          },
          "I/N", "shard"));
  cmd->add_flag("--plan", c->plan,
                "print how the pairs split into the --shard N shards and the balance; evaluate "
                "nothing");
  cmd->add_option("--rerun", c->rerun,
                  "evaluate again the stored results of this status instead of resuming them "
                  "(a status such as RUNTIME_ERROR, failed: every status but PASSED, or skipped: "
                  "the workloads stored as out of GPU memory; repeatable)");
  add_workload_options(cmd, c->workloads);
  auto* dev = cmd->add_option("--device", c->device, "cpu or cuda:N (one slot)")->capture_default_str();
  auto* gpus = cmd->add_option("--gpus", c->gpus,
                               "one slot per GPU: all (CUDA_VISIBLE_DEVICES or nvidia-smi -L) or 0,1,...");
  auto* cpu = cmd->add_option("--cpu-slots", c->cpu_slots, "N parallel CPU slots (tests)")
                  ->check(CLI::PositiveNumber)
                  ->group("");
  cmd->add_option("--jobs-per-gpu", c->jobs_per_gpu,
                  "evaluations at once on each GPU: their untimed steps overlap, each timed loop "
                  "runs alone on the GPU (a lock per GPU); those with a workload over 256 MB run "
                  "alone, last (default 1)")
      ->check(CLI::Range(1, 64));
  cmd->add_option("--baseline-ahead", c->baseline_ahead,
                  "on one GPU, measure the next problems' T_b (solbench baseline) beside the "
                  "evaluation in progress, this many problems at a time; 0: each evaluation "
                  "measures its own (default 2)")
      ->check(CLI::Range(0, 16));
  gpus->excludes(dev)->excludes(cpu);
  cpu->excludes(dev);
  add_store_options(cmd, c->db, c->no_db,
                    "results store: where traces are recorded and resumed from; with --no-db a "
                    "private one that goes with the run");
  cmd->add_flag("--json", c->json_output, "print the summary as one JSON document");
  add_settings_options(cmd, c->settings);
  cmd->callback([c] {
    if (c->solutions.empty() && !c->reference)
      throw CLI::RequiredError("--solutions (or --reference)");
    exit_code() = run_run(*c);
  });
}

}  // namespace solbench::cli
