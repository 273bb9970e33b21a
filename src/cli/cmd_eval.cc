// `solbench eval PROBLEM_DIR --solution FILE`: the flags of one evaluation and
// its printers. The evaluation itself is the library's (eval/evaluate.h): it
// builds the solution, evaluates it in sandboxed workers on every selected
// workload, scores it (docs/score.md), appends each trace to -o and records it
// in the results store as soon as its numbers are final.
//
// Exit codes: 0 every evaluated workload PASSED (skipped ones aside), 1 a workload
// failed or the input is invalid, 2 usage error.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/eval_flags.h"
#include "core/json.h"
#include "core/text.h"
#include "score/sol_score.h"
#include "eval/evaluate.h"
#include "harness/protocol.h"

namespace solbench::cli {

namespace {

// The report keeps a workload's axes as a JSON object of integers.
std::string axes_text(const json& axes) {
  std::vector<std::pair<std::string, int64_t>> v;
  for (auto it = axes.begin(); it != axes.end(); ++it) v.emplace_back(it.key(), it.value().get<int64_t>());
  return solbench::axes_text(v);
}

// Microseconds in every time column, as in every solbench table (the JSON
// keeps the trace format's milliseconds).
std::string us_text(double ms) { return quantity_text(ms * 1e3); }
std::string us_text(const std::optional<double>& ms) { return ms ? us_text(*ms) : "-"; }

// The live progress line (stderr, TTY only) and the warnings that must not
// break it.
class CliObserver : public eval::Observer {
 public:
  CliObserver(bool live, bool json_output, bool verbose)
      : live_(live), json_(json_output), verbose_(verbose) {}
  void selected(size_t workloads) override { total_ = workloads; }
  void status(const std::string& text) override {
    if (!live_) return;
    std::fprintf(stderr, "\r\033[K[%zu/%zu] %s", done_, total_, text.c_str());
    std::fflush(stderr);
  }
  void clear_status() override {
    if (live_) std::fprintf(stderr, "\r\033[K");
  }
  void outcome(size_t, const eval::WorkloadReport& w) override {
    ++done_;
    if (!live_ && verbose_ && !json_)
      std::fprintf(stderr, "[%s] %s\n", short_uuid(w.uuid).c_str(),
                   w.skipped ? "SKIPPED" : std::string(status_name(w.outcome.status)).c_str());
  }
  void notice(const std::string& text) override {
    clear_status();
    std::fprintf(stderr, "warning: %s\n", text.c_str());
  }
  void build_warning(const std::string& text) override {
    if (json_) return;
    clear_status();
    std::fprintf(stderr, "warning: %s\n", text.c_str());
  }

 private:
  bool live_, json_, verbose_;
  size_t total_ = 0, done_ = 0;
};

std::string score_text(const eval::WorkloadReport& w) {
  const bool failed = w.trace && w.trace->evaluation.status != Status::Passed;
  return score::score_text(w.score.s.score, failed) + (w.score.s.sol_violation ? "!" : "");
}

// A profile's kernels (at most 8, longest first), then its span and times.
void print_kernels(const json& p) {
  std::vector<json> acts(p["activities"].begin(), p["activities"].end());
  std::stable_sort(acts.begin(), acts.end(), [](const json& a, const json& b) {
    return a.value("duration_us", 0.0) > b.value("duration_us", 0.0);
  });
  for (size_t i = 0; i < acts.size() && i < 8; ++i) {
    const json& a = acts[i];
    std::string name = a.value("name", std::string("?"));
    if (name.size() > 60) name = name.substr(0, 57) + "...";
    std::string launch;
    if (a.contains("grid"))
      launch = fmt::format(" <<<{},{},{} x {},{},{}>>>", a["grid"][0].get<int>(), a["grid"][1].get<int>(),
                           a["grid"][2].get<int>(), a["block"][0].get<int>(),
                           a["block"][1].get<int>(), a["block"][2].get<int>());
    const json share = a.value("share_of_t_k", json(nullptr));
    fmt::print("       {:>10.2f} us {:>5} gap {:>8.2f} us  {}{}\n", a.value("duration_us", 0.0),
               share.is_number() ? fmt::format("{:.0f}%", share.get<double>() * 100) : "-",
               a.value("gap_before_us", 0.0), name, launch);
  }
  fmt::print("       span {:.2f} us, busy {:.2f} us, gaps {:.2f} us, host {:.2f} us\n",
             p.value("span_us", 0.0), p.value("busy_us", 0.0), p.value("gaps_us", 0.0),
             p.value("host_us", 0.0));
}

// `--profile`: the verdict line; with -v also the kernels of the solution's call,
// then of the reference's (their shares are of T_ref).
void print_profile(const json& extra, bool verbose) {
  auto it = extra.find("solbench_profile");
  if (it == extra.end() || !it->is_object()) return;
  const json& p = *it;
  // The verdict, then what the profiles' calls (the solution's and the reference's)
  // added to the workload's wall time.
  const auto r = p.find("reference");
  const bool ref = r != p.end() && r->is_object();
  fmt::print("     profile: {} [+{:.0f} ms]\n", p.value("verdict", std::string("-")),
             p.value("added_wall_ms", 0.0) + (ref ? r->value("added_wall_ms", 0.0) : 0.0));
  if (!verbose) return;
  if (p.contains("activities")) print_kernels(p);
  if (ref && r->contains("activities")) {
    fmt::print("     the reference's call:\n");
    print_kernels(*r);
  }
}

void print_row(const eval::WorkloadReport& w, bool verbose, bool row_reasons) {
  const harness::WorkloadOutcome& o = w.outcome;
  std::string axes = axes_text(w.axes);
  if (axes.size() > 22) axes = axes.substr(0, 19) + "...";
  const std::string status = o.skipped ? "SKIPPED" : std::string(status_name(o.status));
  const double lat = o.timing ? o.timing->stats.median_ms : 0;
  const double ref = o.reference_timing ? o.reference_timing->stats.median_ms : 0;
  const std::string speed = (lat > 0 && ref > 0) ? fmt::format("{:.2f}x", ref / lat) : "-";
  const std::string mabs = o.correctness ? fmt::format("{:.3g}", o.correctness->max_absolute_error) : "-";
  const std::string mrel = o.correctness ? fmt::format("{:.3g}", o.correctness->max_relative_error) : "-";
  const eval::ScoreState& st = w.score;
  const std::string t_b = st.baseline ? us_text(st.baseline->t_b_ms) : "-";
  fmt::print("{:>3}  {:<8}  {:<22} {:<20} {:>10} {:>10} {:>8} {:>9} {:>9} {:>10} {:>10} {:>6}\n",
             w.index, short_uuid(w.uuid), axes, status, us_text(lat), us_text(ref), speed, mabs,
             mrel, us_text(st.bound.t_sol_ms), t_b, w.skipped ? "-" : score_text(w));
  if (o.skipped)
    fmt::print("     skipped: {}\n", first_line(o.skip_reason, 110));
  else if (row_reasons && o.status != Status::Passed && !o.log.empty())
    fmt::print("     {}\n", failure_line(o.log));
  if (st.s.sol_violation) fmt::print("     {}\n", st.s.reason);
  // Beside T_SOL where it differs (a measured --arch is both); the score keeps T_SOL.
  if (st.bound.t_attainable_ms && st.bound.t_attainable_ms != st.bound.t_sol_ms)
    fmt::print("     T_attainable {} us (measured ceilings + one launch; T_SOL {} us)\n",
               us_text(st.bound.t_attainable_ms), us_text(st.bound.t_sol_ms));
  if (st.bound.partial.is_object())
    fmt::print("     T_SOL {} us bounds a partial trace (its {:g} s budget ran out after {} operators): "
               "a lower bound, weaker than the whole reference's\n",
               us_text(st.bound.t_sol_ms), st.bound.partial.value("budget_s", 0.0),
               st.bound.partial.value("ops", int64_t(0)));
  if (st.baseline && st.baseline->t_b_ms)
    if (const std::string e = score::eager_note(st.baseline->method, st.baseline->reason); !e.empty())
      fmt::print("     T_b {} us: {}\n", us_text(st.baseline->t_b_ms), e);
  if (verbose && o.timing)
    fmt::print("     timing: n={} mean={} us min={} us stddev={} us rse={:.2f}% ({})\n",
               o.timing->stats.count, us_text(o.timing->stats.mean_ms),
               us_text(o.timing->stats.min_ms), us_text(o.timing->stats.stddev_ms),
               o.timing->stats.rse * 100, o.timing->stop_reason);
  if (w.trace) print_profile(w.trace->evaluation.extra, verbose);
  if (verbose && st.published)
    fmt::print("     published B200: T_b {} us, T_SOL {} us\n", us_text(st.published->baseline_ms),
               us_text(st.published->sol_ms));
}

void print_table(const eval::Report& r, bool verbose, bool row_reasons) {
  fmt::print("{:>3}  {:<8}  {:<22} {:<20} {:>10} {:>10} {:>8} {:>9} {:>9} {:>10} {:>10} {:>6}\n",
             "#", "workload", "axes", "status", "latency_us", "ref_us", "speedup", "max_abs",
             "max_rel", "T_SOL_us", "T_b_us", "S");
  for (const auto& w : r.workloads) print_row(w, verbose, row_reasons);
}

// The score: the bound's model, the mean, and why rows have none (once each).
void print_score(const eval::Report& r) {
  const score::ArchChoice& arch = r.arch;
  const score::Aggregate& ps = r.problem_score;
  if (arch.model)
    fmt::print("T_SOL: {} ({}){}\n", arch.model->name, arch.model->display_name,
               arch.explicit_arch ? " (--arch)" : "");
  if (!arch.note.empty()) fmt::print("note: {}\n", arch.note);
  if (arch.measured && arch.model && arch.measured->name != arch.model->name)
    fmt::print("T_attainable: {} (measured {}; solbench hw show {}); S uses T_SOL\n",
               arch.measured->name, arch.measured->calibration.value("date", "?"), arch.measured->name);
  if (ps.mean)
    fmt::print("SOL score: {:.3f} (mean over {} workload(s); {} failed count 0{}{})\n", *ps.mean,
               ps.scored, ps.failed, ps.unscored ? fmt::format("; {} unscored", ps.unscored) : "",
               ps.violations ? fmt::format("; {} SOL violation(s), capped at 1", ps.violations) : "");
  else
    fmt::print("SOL score: n/a ({})\n",
               arch.model ? "no workload could be scored; why, below"
                          : "no T_SOL: this device has no hardware model; --arch NAME bounds and "
                            "scores against one (solbench hw list)");
  std::set<std::string> reasons;
  for (const auto& w : r.workloads)
    if (!w.skipped && w.outcome.status == Status::Passed && !w.score.s.score)
      reasons.insert(w.score.s.reason);
  for (const auto& why : reasons) fmt::print("  {}\n", why);
  std::map<std::string, size_t> eager_reasons;
  for (const auto& e : r.eager) ++eager_reasons[e.reason];
  for (const auto& [why, n] : eager_reasons)
    fmt::print("warning: T_b of {} workload(s) is {}, not the reference under torch.compile\n",
               n, score::eager_note("eager", why));
}

void print_text(const eval::Report& r, bool verbose) {
  fmt::print("{} / {} on {}\n", r.definition, r.solution, r.environment.value("hardware", r.device));
  if (r.build.record.is_object())
    fmt::print("build: {} ({:.2f} s){}\n", r.build.record.value("cache_hit", false) ? "cache hit" : "compiled",
               r.build.record.value("seconds", 0.0), r.build.ok ? "" : " FAILED");
  if (!r.build.ok) {
    std::string text = r.build.log.size() > 4000 ? r.build.log.substr(0, 4000) + "\n[...]" : r.build.log;
    while (!text.empty() && text.back() == '\n') text.pop_back();
    fmt::print("{}\n", text);
  }
  // A failed build is reported above, once: the rows only carry the status.
  print_table(r, verbose, /*row_reasons=*/r.build.ok);
  const json summary = r.summary();
  std::string counts;
  for (auto it = summary["statuses"].begin(); it != summary["statuses"].end(); ++it)
    counts += fmt::format("{}{} {}", counts.empty() ? "" : ", ", it.value().get<int>(), it.key());
  for (auto it = summary["skipped"].begin(); it != summary["skipped"].end(); ++it)
    counts += fmt::format("{}{} skipped ({})", counts.empty() ? "" : ", ",
                          it.value().get<int>(), it.key());
  fmt::print("summary: {} workload(s): {}", r.workloads.size(), counts);
  if (!summary["geomean_speedup"].is_null())
    fmt::print("; geomean speedup vs reference {:.2f}x", summary["geomean_speedup"].get<double>());
  fmt::print("\n");
  print_score(r);
  if (!r.traces_file.empty()) fmt::print("traces: {} ({} appended)\n", r.traces_file, r.traces_written);
  if (!r.db_line.empty()) fmt::print("{}\n", r.db_line);
}

int run_eval(const eval::Request& request, bool json_output, bool verbose) {
  CliObserver observer(!json_output && ::isatty(2), json_output, verbose);
  eval::Report report;
  try {
    report = eval::evaluate(request, observer);
  } catch (const eval::RequestError& e) {
    for (const auto& m : e.messages) std::fprintf(stderr, "error: %s\n", m.c_str());
    return e.usage ? 2 : 1;
  }
  observer.clear_status();
  for (const auto& w : report.warnings) std::fprintf(stderr, "warning: %s\n", w.c_str());
  if (json_output) {
    report.timeline["document"] = harness::monotonic_ns();
    fmt::print("{}\n", report.to_json().dump(2));
  } else {
    print_text(report, verbose);
  }
  return report.all_passed() ? 0 : 1;
}

}  // namespace

void add_eval_command(CLI::App& app) {
  auto o = std::make_shared<eval::Request>();
  auto json_output = std::make_shared<bool>(false);
  auto verbose = std::make_shared<bool>(false);
  auto* cmd = app.add_subcommand(
      "eval", "Build a solution and evaluate it on a problem's workloads in sandboxed workers");
  cmd->add_option("problem", o->problem_dir, "problem folder (definition.json, workload.jsonl)")
      ->required();
  auto* sol = cmd->add_option("--solution,-s", o->solution, "solution.json to evaluate");
  auto* ref = cmd->add_flag("--reference", o->reference,
                            "evaluate the definition's own reference as the solution");
  sol->excludes(ref);
  cmd->add_option("-o,--output", o->traces_file, "append one trace per workload (JSONL) to this file");
  cmd->add_flag("--json", *json_output, "print the results as one JSON document");
  add_workload_options(cmd, o->workloads);
  cmd->add_option("--device", o->device,
                  "cpu, cuda:N, or cuda:any (the GPU with the fewest evaluations in flight)")
      ->capture_default_str();
  cmd->add_option("--cuda-arch", o->cuda_arch,
                  "nvcc target of CUDA sources: auto (the GPU's compute capability, e.g. 90a), "
                  "default (nvcc's), or a capability such as 90a, 100a")
      ->capture_default_str();
  cmd->add_flag("--build-only", o->build_only,
                "build the solution and report the build; evaluate nothing (needs no GPU)");
  add_settings_options(cmd, o->settings);
  add_store_options(cmd, o->db, o->no_db, "results store to record the traces in");
  cmd->add_option("--baselines-ahead", o->baselines_ahead,
                  "a `baseline --json` document of this problem (solbench run's T_b ahead)")
      ->group("");  // hidden: run's own
  cmd->add_flag("--keep-staging", o->keep_staging, "keep build and worker scratch folders");
  cmd->add_flag("--no-sandbox", o->no_sandbox, "run workers without the sandbox (debugging only)");
  cmd->add_flag("-v,--verbose", *verbose, "timing statistics per workload");
  cmd->callback([o, json_output, verbose] {
    if (o->solution.empty() && !o->reference)
      throw CLI::RequiredError("--solution (or --reference)");
    exit_code() = run_eval(*o, *json_output, *verbose);
  });
}

}  // namespace solbench::cli
