// `solbench eval PROBLEM_DIR --solution FILE`: builds the solution, evaluates it in
// sandboxed worker processes (src/harness/runner.h) on every selected workload,
// appends one trace per workload to -o as results arrive, and prints a table.
//
// Exit codes: 0 every evaluated workload PASSED (skipped ones aside), 1 a workload
// failed or the input is invalid, 2 usage error.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli/commands.h"
#include "core/json.h"
#include "core/problem.h"
#include "core/solution.h"
#include "core/trace.h"
#include "harness/eval_plan.h"
#include "harness/gpu/gpu_timer_factory.h"
#include "harness/runner.h"
#include "harness/worker_policy.h"
#include "harness/timer.h"

namespace solbench::cli {

namespace {

namespace fs = std::filesystem;
using harness::WorkloadOutcome;

struct EvalOptions {
  std::string problem_dir;
  std::string solution;
  bool reference = false;  // evaluate the definition's own reference as the solution
  std::string output;
  bool json_output = false;
  std::vector<std::string> workloads;
  int smallest = 0;        // only the N workloads with the fewest input bytes
  double timeout_s = 300;
  double compile_timeout_s = 120;
  bool keep_staging = false;
  bool verbose = false;
  std::string device = "cpu";
  std::string timer = "auto";  // GPU timer: auto, cupti, events, profiler
  int rounds = 5;
  uint64_t seed = 200;
  double target_rse = 0.01;
  double time_budget_ms = 500;
  bool no_timing = false;
  bool no_sandbox = false;
};

std::string short_uuid(const std::string& u) { return u.substr(0, 8); }

std::string axes_text(const Workload& w) {
  std::string s;
  for (const auto& [n, v] : w.axes) s += fmt::format("{}{}={}", s.empty() ? "" : " ", n, v);
  return s;
}

std::string ms_text(double ms) {
  if (ms <= 0) return "-";
  if (ms < 0.01) return fmt::format("{:.2f}us", ms * 1000);
  return fmt::format("{:.4g}", ms);
}

std::string first_line(const std::string& s, size_t max = 100) {
  size_t start = s.find_first_not_of(" \n");
  if (start == std::string::npos) return "";
  std::string l = s.substr(start, s.find('\n', start) - start);
  return l.size() > max ? l.substr(0, max - 3) + "..." : l;
}

// The most telling line of a failure log: the evaluation's own message comes
// last (after the solution's captured output), so prefer lines naming a round,
// a status reason or an error.
std::string failure_line(const std::string& log) {
  std::vector<std::string> lines;
  size_t pos = 0;
  while (pos < log.size()) {
    size_t e = log.find('\n', pos);
    if (e == std::string::npos) e = log.size();
    if (e > pos) lines.push_back(log.substr(pos, e - pos));
    pos = e + 1;
  }
  for (const char* key : {"round ", "the worker", "did not finish", "error", "Error"})
    for (const auto& l : lines)
      if (l.find(key) != std::string::npos) return first_line(l);
  return lines.empty() ? "" : first_line(lines.back());
}

class Progress {
 public:
  Progress(bool enabled, size_t total) : on_(enabled), total_(total) {}
  void show(const std::string& text) {
    if (!on_) return;
    std::fprintf(stderr, "\r\033[K[%zu/%zu] %s", done_, total_, text.c_str());
    std::fflush(stderr);
  }
  void finished_one() { ++done_; }
  void clear() {
    if (on_) std::fprintf(stderr, "\r\033[K");
  }

 private:
  bool on_;
  size_t total_;
  size_t done_ = 0;
};

std::vector<size_t> select_workloads(const Problem& p, const EvalOptions& o, Diagnostics& d) {
  std::vector<size_t> idx;
  for (size_t i = 0; i < p.workloads.size(); ++i)
    if (p.resolved[i]) idx.push_back(i);
  if (!o.workloads.empty()) {
    std::vector<size_t> chosen;
    for (const auto& want : o.workloads) {
      std::vector<size_t> hits;
      for (size_t i : idx)
        if (p.workloads[i].uuid == want || p.workloads[i].uuid.rfind(want, 0) == 0) hits.push_back(i);
      if (hits.empty())
        d.add("--workload", 0, "", "no workload with uuid (or uuid prefix) \"" + want + "\"");
      else if (hits.size() > 1 && p.workloads[hits[0]].uuid != want)
        d.add("--workload", 0, "", "uuid prefix \"" + want + "\" is ambiguous");
      else if (std::find(chosen.begin(), chosen.end(), hits[0]) == chosen.end())
        chosen.push_back(hits[0]);
    }
    idx = chosen;
  }
  if (o.smallest > 0) {
    std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) {
      const auto& ra = *p.resolved[a];
      const auto& rb = *p.resolved[b];
      return ra.input_bytes + ra.output_bytes < rb.input_bytes + rb.output_bytes;
    });
    if (idx.size() > static_cast<size_t>(o.smallest)) idx.resize(o.smallest);
  }
  return idx;
}

void print_table(const Problem& p, const std::vector<size_t>& sel,
                 const std::vector<WorkloadOutcome>& outs, bool verbose, bool row_reasons) {
  fmt::print("{:>3}  {:<8}  {:<22} {:<20} {:>10} {:>10} {:>8} {:>10} {:>10}\n", "#", "workload",
             "axes", "status", "latency_ms", "ref_ms", "speedup", "max_abs", "max_rel");
  for (size_t k = 0; k < outs.size(); ++k) {
    const WorkloadOutcome& o = outs[k];
    const Workload& w = p.workloads[sel[k]];
    std::string axes = axes_text(w);
    if (axes.size() > 22) axes = axes.substr(0, 19) + "...";
    const std::string status = o.skipped ? "SKIPPED" : std::string(status_name(o.status));
    double lat = o.timing ? o.timing->stats.median_ms : 0;
    double ref = o.reference_timing ? o.reference_timing->stats.median_ms : 0;
    std::string speed = (lat > 0 && ref > 0) ? fmt::format("{:.2f}x", ref / lat) : "-";
    std::string mabs = o.correctness ? fmt::format("{:.3g}", o.correctness->max_absolute_error) : "-";
    std::string mrel = o.correctness ? fmt::format("{:.3g}", o.correctness->max_relative_error) : "-";
    fmt::print("{:>3}  {:<8}  {:<22} {:<20} {:>10} {:>10} {:>8} {:>10} {:>10}\n", sel[k],
               short_uuid(w.uuid), axes, status, ms_text(lat), ms_text(ref), speed, mabs, mrel);
    if (o.skipped)
      fmt::print("     skipped: {}\n", first_line(o.skip_reason, 110));
    else if (row_reasons && o.status != Status::Passed && !o.log.empty())
      fmt::print("     {}\n", failure_line(o.log));
    if (verbose && o.timing)
      fmt::print("     timing: n={} mean={} min={} stddev={} rse={:.2f}% ({})\n",
                 o.timing->stats.count, ms_text(o.timing->stats.mean_ms),
                 ms_text(o.timing->stats.min_ms), ms_text(o.timing->stats.stddev_ms),
                 o.timing->stats.rse * 100, o.timing->stop_reason);
  }
}

json summary_json(const std::vector<WorkloadOutcome>& outs) {
  json counts = json::object();
  json skipped = json::object();
  double log_sum = 0;
  int n_speed = 0;
  for (const auto& o : outs) {
    if (o.skipped) {
      skipped[o.skip_reason.substr(0, o.skip_reason.find(':'))] =
          skipped.value(o.skip_reason.substr(0, o.skip_reason.find(':')), 0) + 1;
      continue;
    }
    const std::string s(status_name(o.status));
    counts[s] = counts.value(s, 0) + 1;
    if (o.status == Status::Passed && o.timing && o.reference_timing &&
        o.timing->stats.median_ms > 0 && o.reference_timing->stats.median_ms > 0) {
      log_sum += std::log(o.reference_timing->stats.median_ms / o.timing->stats.median_ms);
      ++n_speed;
    }
  }
  json j = {{"workloads", outs.size()}, {"statuses", counts}, {"skipped", skipped}};
  j["geomean_speedup"] = n_speed ? json(std::exp(log_sum / n_speed)) : json(nullptr);
  return j;
}

int run_eval(const EvalOptions& o) {
  // --- inputs: everything is checked before anything is built or run.
  Diagnostics diags;
  Problem problem = load_problem(problem_paths(o.problem_dir), diags);
  Solution solution;
  if (!o.reference) solution = load_solution(o.solution, diags);
  std::vector<size_t> sel;
  if (diags.empty()) sel = select_workloads(problem, o, diags);
  if (!diags.empty()) {
    for (const auto& d : diags.items()) std::fprintf(stderr, "error: %s\n", d.str().c_str());
    return 1;
  }
  // e.g. workload inputs the definition lacks: ignored, as the public tool does.
  for (const auto& d : diags.warnings()) std::fprintf(stderr, "warning: %s\n", d.str().c_str());
  if (sel.empty()) {
    std::fprintf(stderr, "error: %s: no workloads to evaluate\n", o.problem_dir.c_str());
    return 1;
  }
  if (o.device != "cpu" && harness::cuda_ordinal(o.device) < 0) {
    std::fprintf(stderr, "error: --device: \"%s\" is not cpu or cuda:N\n", o.device.c_str());
    return 2;
  }
  if (o.timer != "auto" && o.device == "cpu") {
    std::fprintf(stderr, "error: --timer %s: GPU timers apply to --device cuda:N\n", o.timer.c_str());
    return 2;
  }
  const std::string solution_name = o.reference ? problem.definition.name + "/reference"
                                                : solution.name;
  const bool live = !o.json_output && ::isatty(2);
  Progress progress(live, sel.size());

  // --- build (or cache hit), outside any worker: compilers are trusted, the code is not run.
  harness::PrepareOptions po;
  po.device = o.device;
  po.compile_timeout = std::chrono::duration<double>(o.compile_timeout_s);
  po.keep_staging = o.keep_staging;
  if (!o.reference) progress.show("building " + solution_name);
  harness::PreparedSolution prep = o.reference
                                       ? harness::reference_as_solution()
                                       : harness::prepare_solution(solution, problem.definition, po);
  json build_info = prep.build ? prep.build->to_json() : json(nullptr);
  if (!build_info.is_null()) build_info.erase("log");
  if (prep.build && !prep.build->import_violations.empty() && !o.json_output) {
    progress.clear();
    for (const auto& v : prep.build->import_violations)
      std::fprintf(stderr, "warning: the solution imports %s\n", v.str().c_str());
  }

  std::vector<WorkloadOutcome> outs;
  harness::RunnerResult rr;
  std::vector<std::optional<Trace>> traces(sel.size());  // by position in sel
  size_t n_traces = 0;
  auto record = [&](size_t k, const WorkloadOutcome& out, const json& env) {
    if (out.skipped) return;
    Trace t = harness::make_trace(problem, sel[k], solution_name, out, env);
    if (prep.build) t.evaluation.extra["solbench_build"] = {
        {"cache_hit", prep.build->cache_hit}, {"seconds", prep.build->seconds}};
    if (!o.output.empty()) append_traces(o.output, {t});  // as results arrive
    traces[k] = std::move(t);
    ++n_traces;
  };

  if (!prep.ok) {
    // One build, one report: the first trace carries the whole message (the build
    // log, first error first); the others point to it, unless the reason is a
    // single short line, which every trace repeats.
    progress.clear();
    const size_t nl = prep.log.find('\n');
    const bool one_line =
        (nl == std::string::npos || nl + 1 == prep.log.size()) && prep.log.size() <= 300;
    const std::string pointer = fmt::format(
        "{}: the solution was not built; the build log is in the trace of workload {} (the first "
        "of this evaluation)",
        status_name(prep.failure), sel.empty() ? "" : problem.workloads[sel[0]].uuid);
    for (size_t k = 0; k < sel.size(); ++k) {
      WorkloadOutcome out;
      out.index = static_cast<int>(sel[k]);
      out.uuid = problem.workloads[sel[k]].uuid;
      out.status = prep.failure;
      out.log = k == 0 || one_line ? prep.log : pointer;
      record(k, out, json{{"device", o.device}});
      outs.push_back(std::move(out));
    }
  } else {
    harness::WorkerPlan plan;
    plan.definition = to_json(problem.definition);
    plan.solution_name = solution_name;
    plan.kind = prep.kind;
    plan.library = prep.library;
    plan.module_name = prep.module_name;
    plan.entry = prep.entry;
    plan.entry_file = prep.entry_file;
    plan.sources = prep.sources;
    plan.dps = prep.dps;
    for (Language l : solution.spec.languages) plan.languages.emplace_back(language_name(l));
    for (size_t i : sel) plan.workloads.push_back(harness::workload_spec(problem, i));
    plan.device = o.device;
    plan.rounds = std::max(1, o.rounds);
    plan.seed = o.seed;
    plan.time_solution = !o.no_timing;
    plan.time_reference = !o.no_timing;
    plan.timing.target_rse = o.target_rse;
    plan.timing.budget_ms = o.time_budget_ms;
    if (o.timer != "auto") plan.timer_options["timer"] = o.timer;
    if (o.no_sandbox) {
      plan.sandbox = {{"enabled", false}};
    } else {
      // Processes, writes and compile caches by the kind of solution (worker_policy.h).
      harness::WorkerPolicyRequest pr;
      pr.kind = prep.kind;
      pr.device = o.device;
      pr.content = o.reference ? to_json(problem.definition).dump() : to_json(solution).dump();
      plan.sandbox = harness::worker_sandbox_plan(pr);
    }

    harness::RunnerOptions ro;
    ro.workload_timeout = std::chrono::duration<double>(o.timeout_s);
    ro.keep_scratch = o.keep_staging;
    std::vector<bool> recorded(sel.size(), false);
    json last_env = {{"device", o.device}};
    ro.on_event = [&](const harness::RunnerEvent& e) {
      // The runner reports plan positions; sel maps them to workload indices.
      auto pos = [](int plan_index) { return plan_index; };
      if (e.kind == "worker_start") {
        progress.show("starting a worker");
      } else if (e.kind == "begin" || e.kind == "progress") {
        const size_t k = static_cast<size_t>(pos(e.workload));
        std::string what = e.kind == "begin" ? "starting" : e.phase;
        if (e.round >= 0) what += fmt::format(" round {}/{}", e.round + 1, plan.rounds);
        progress.show(fmt::format("{} {}: {}", short_uuid(problem.workloads[sel[k]].uuid),
                                  axes_text(problem.workloads[sel[k]]), what));
      } else if (e.kind == "result" && e.outcome) {
        const size_t k = static_cast<size_t>(pos(e.workload));
        progress.finished_one();
        if (!recorded[k]) {
          recorded[k] = true;
          record(k, *e.outcome, last_env);
        }
        if (!live && o.verbose && !o.json_output)
          std::fprintf(stderr, "[%s] %s\n", short_uuid(problem.workloads[sel[k]].uuid).c_str(),
                       e.outcome->skipped ? "SKIPPED" : std::string(status_name(e.outcome->status)).c_str());
      } else if (e.kind == "ready") {
        if (e.env) {
          last_env = *e.env;
          last_env["device"] = o.device;
        }
        progress.show("worker ready");
      }
    };
    rr = harness::run_plan(plan, ro);
    progress.clear();
    outs = rr.outcomes;
    // Outcomes the event stream did not deliver (failures decided by the runner
    // after a crash or timeout are delivered too, but be safe).
    for (size_t k = 0; k < outs.size(); ++k)
      if (!recorded[k]) {
        recorded[k] = true;
        record(k, outs[k], last_env);
      }
  }
  progress.clear();

  const json summary = summary_json(outs);
  bool all_ok = true;
  for (const auto& out : outs)
    if (!out.skipped && out.status != Status::Passed) all_ok = false;

  if (o.json_output) {
    json j = json::object();
    j["definition"] = problem.definition.name;
    j["solution"] = solution_name;
    j["device"] = o.device;
    j["build"] = build_info;
    // The build log itself is in results[0].evaluation.log (once); this is its first error.
    if (!prep.ok) j["build_error"] = prep.first_error;
    j["environment"] = rr.env;
    j["sandbox"] = rr.sandbox;
    j["workers"] = rr.workers;
    json results = json::array();
    for (size_t k = 0; k < outs.size(); ++k) {
      if (traces[k]) {
        results.push_back(to_json(*traces[k]));
      } else {
        results.push_back({{"workload", {{"uuid", outs[k].uuid}}}, {"skipped", true},
                           {"skip_reason", outs[k].skip_reason}});
      }
    }
    j["results"] = results;
    j["summary"] = summary;
    fmt::print("{}\n", j.dump(2));
  } else {
    fmt::print("{} / {} on {}\n", problem.definition.name, solution_name,
               rr.env.value("hardware", o.device));
    if (prep.build)
      fmt::print("build: {} ({:.2f} s){}\n", prep.build->cache_hit ? "cache hit" : "compiled",
                 prep.build->seconds, prep.ok ? "" : " FAILED");
    if (!prep.ok) {
      std::string text = prep.log.size() > 4000 ? prep.log.substr(0, 4000) + "\n[...]" : prep.log;
      while (!text.empty() && text.back() == '\n') text.pop_back();
      fmt::print("{}\n", text);
    }
    // A failed build is reported above, once: the rows only carry the status.
    print_table(problem, sel, outs, o.verbose, /*row_reasons=*/prep.ok);
    std::string counts;
    for (auto it = summary["statuses"].begin(); it != summary["statuses"].end(); ++it)
      counts += fmt::format("{}{} {}", counts.empty() ? "" : ", ", it.value().get<int>(), it.key());
    for (auto it = summary["skipped"].begin(); it != summary["skipped"].end(); ++it)
      counts += fmt::format("{}{} skipped ({})", counts.empty() ? "" : ", ",
                            it.value().get<int>(), it.key());
    fmt::print("summary: {} workload(s): {}", outs.size(), counts);
    if (!summary["geomean_speedup"].is_null())
      fmt::print("; geomean speedup vs reference {:.2f}x", summary["geomean_speedup"].get<double>());
    fmt::print("\n");
    if (!o.output.empty()) fmt::print("traces: {} ({} appended)\n", o.output, n_traces);
  }
  return all_ok ? 0 : 1;
}

}  // namespace

void add_eval_command(CLI::App& app) {
  auto o = std::make_shared<EvalOptions>();
  auto* cmd = app.add_subcommand(
      "eval", "Build a solution and evaluate it on a problem's workloads in sandboxed workers");
  cmd->add_option("problem_dir", o->problem_dir, "problem folder (definition.json, workload.jsonl)")
      ->required();
  auto* sol = cmd->add_option("--solution,-s", o->solution, "solution.json to evaluate");
  auto* ref = cmd->add_flag("--reference", o->reference,
                            "evaluate the definition's own reference as the solution");
  sol->excludes(ref);
  cmd->add_option("-o,--output", o->output, "append one trace per workload (JSONL) to this file");
  cmd->add_flag("--json", o->json_output, "print the results as one JSON document");
  cmd->add_option("--workload,-w", o->workloads, "evaluate only this workload (uuid or prefix; repeatable)");
  cmd->add_option("--smallest", o->smallest, "evaluate only the N smallest workloads (by bytes)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--timeout", o->timeout_s, "seconds per workload before the worker is killed (TIMEOUT)")
      ->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_option("--compile-timeout", o->compile_timeout_s, "seconds for the build")
      ->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_flag("--keep-staging", o->keep_staging, "keep build and worker scratch folders");
  cmd->add_flag("-v,--verbose", o->verbose, "timing statistics per workload");
  cmd->add_option("--device", o->device, "cpu or cuda:N")->capture_default_str();
  cmd->add_option("--timer", o->timer,
                  "GPU timer: auto (CUPTI activity, else events), cupti, events, or profiler "
                  "(each kernel's gpu__time_duration, as ncu reports it; serialises kernels)")
      ->check(CLI::IsMember(
          std::vector<std::string>(gpu::kGpuTimerKinds.begin(), gpu::kGpuTimerKinds.end())))
      ->capture_default_str();
  cmd->add_option("--rounds", o->rounds, "correctness rounds, each with fresh inputs")
      ->check(CLI::Range(1, 1000))->capture_default_str();
  cmd->add_option("--seed", o->seed, "input generation seed")->capture_default_str();
  cmd->add_option("--target-rse", o->target_rse,
                  "stop timing once the relative standard error of the median is below this")
      ->check(CLI::Range(1e-6, 1.0))->capture_default_str();
  cmd->add_option("--time-budget-ms", o->time_budget_ms,
                  "wall-time budget per timed candidate and workload (solution, reference)")
      ->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_flag("--no-timing", o->no_timing, "check correctness only");
  cmd->add_flag("--no-sandbox", o->no_sandbox, "run workers without the sandbox (debugging only)");
  cmd->callback([o, cmd] {
    if (o->solution.empty() && !o->reference)
      throw CLI::RequiredError("--solution (or --reference)");
    (void)cmd;
    exit_code() = run_eval(*o);
  });
}

}  // namespace solbench::cli
