// `solbench eval PROBLEM_DIR --solution FILE`: builds the solution, evaluates it in
// sandboxed worker processes (src/harness/runner.h) on every selected workload,
// scores it (docs/score.md: T_SOL from the sol module, the baseline T_b from the
// results store or measured in a worker of its own after the solution's, the SOL
// Score S), appends one trace per workload to -o and records it in the results
// store as soon as its numbers are final, and prints a table.
//
// Exit codes: 0 every evaluated workload PASSED (skipped ones aside), 1 a workload
// failed or the input is invalid, 2 usage error.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli/commands.h"
#include "core/json.h"
#include "core/problem.h"
#include "core/solution.h"
#include "core/trace.h"
#include "harness/eval_plan.h"
#include "harness/evaluate.h"
#include "harness/timing/gpu/device.h"
#include "harness/timing/gpu/gpu_timer_factory.h"
#include "harness/runner.h"
#include "harness/timing/device_lock.h"
#include "harness/worker/zygote.h"
#include "harness/worker/worker_policy.h"
#include "harness/timing/timer.h"
#include "cli/device_flags.h"
#include "score/baseline.h"
#include "score/selection.h"
#include "score/sol_score.h"
#include "store/store.h"

namespace solbench::cli {

namespace {

namespace fs = std::filesystem;
using harness::WorkloadOutcome;

struct EvalOptions {
  std::string problem_dir;
  std::string solution;
  bool reference = false;  // evaluate the definition's own reference as the solution
  // nvcc target for CUDA sources: "auto" is the evaluated GPU's compute capability
  // (90a on an H100), "default" leaves nvcc's own default, else e.g. "90a", "100a".
  std::string cuda_arch = "auto";
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
  uint64_t seed = 0;  // 0: a secret of its own per evaluation (WorkerPlan::seed)
  double target_rse = 0.01;
  double time_budget_ms = 500;
  bool no_timing = false;
  bool no_sandbox = false;
  std::string arch;          // hardware model for T_SOL; empty: the device's own
  bool no_baseline = false;  // do not measure T_b (S stays null unless the store has it)
  std::string db;            // results store; empty: store::default_db_path()
  bool no_db = false;
};

std::string short_uuid(const std::string& u) { return u.substr(0, 8); }

std::string axes_text(const Workload& w) {
  std::string s;
  for (const auto& [n, v] : w.axes) s += fmt::format("{}{}={}", s.empty() ? "" : " ", n, v);
  return s;
}

// Milliseconds in every time column (one unit per column; tiny bounds in
// scientific notation rather than another unit).
std::string ms_text(double ms) {
  if (!(ms > 0)) return "-";
  return fmt::format("{:.4g}", ms);
}
std::string ms_text(const std::optional<double>& ms) { return ms ? ms_text(*ms) : "-"; }

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

// What the score needs of each selected workload beside its outcome.
struct ScoreState {
  score::SolBound bound;                          // T_SOL, or why none
  std::optional<score::BaselineResult> baseline;  // T_b (nullopt: see t_b_reason)
  std::string t_b_reason;
  std::optional<score::Published> published;      // SOL-ExecBench's B200 numbers
  score::WorkloadScore s;
};

std::string score_text(const score::WorkloadScore& s) {
  if (!s.score) return "-";
  return fmt::format("{:.3f}{}", *s.score, s.sol_violation ? "!" : "");
}

void print_table(const Problem& p, const std::vector<size_t>& sel,
                 const std::vector<WorkloadOutcome>& outs, const std::vector<ScoreState>& sc,
                 bool verbose, bool row_reasons) {
  fmt::print("{:>3}  {:<8}  {:<22} {:<20} {:>10} {:>10} {:>8} {:>10} {:>10} {:>10} {:>10} {:>6}\n",
             "#", "workload", "axes", "status", "latency_ms", "ref_ms", "speedup", "max_abs",
             "max_rel", "T_SOL_ms", "T_b_ms", "S");
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
    const ScoreState& st = sc[k];
    const std::string t_b = st.baseline ? ms_text(st.baseline->t_b_ms) : "-";
    fmt::print("{:>3}  {:<8}  {:<22} {:<20} {:>10} {:>10} {:>8} {:>10} {:>10} {:>10} {:>10} {:>6}\n",
               sel[k], short_uuid(w.uuid), axes, status, ms_text(lat), ms_text(ref), speed, mabs,
               mrel, ms_text(st.bound.t_sol_ms), t_b, score_text(st.s));
    if (o.skipped)
      fmt::print("     skipped: {}\n", first_line(o.skip_reason, 110));
    else if (row_reasons && o.status != Status::Passed && !o.log.empty())
      fmt::print("     {}\n", failure_line(o.log));
    if (st.s.sol_violation) fmt::print("     {}\n", st.s.reason);
    if (st.baseline && st.baseline->t_b_ms)
      if (const std::string e = score::eager_note(st.baseline->method, st.baseline->reason); !e.empty())
        fmt::print("     T_b {} ms: {}\n", ms_text(st.baseline->t_b_ms), e);
    if (verbose && o.timing)
      fmt::print("     timing: n={} mean={} min={} stddev={} rse={:.2f}% ({})\n",
                 o.timing->stats.count, ms_text(o.timing->stats.mean_ms),
                 ms_text(o.timing->stats.min_ms), ms_text(o.timing->stats.stddev_ms),
                 o.timing->stats.rse * 100, o.timing->stop_reason);
    if (verbose && st.published)
      fmt::print("     published B200: T_b {} ms, T_SOL {} ms\n", ms_text(st.published->baseline_ms),
                 ms_text(st.published->sol_ms));
  }
}

json summary_json(const std::vector<WorkloadOutcome>& outs, const score::Aggregate& problem_score) {
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
  j["sol_score"] = problem_score.to_json();
  return j;
}

// This process's command line, as the store's runs table keeps it.
std::string command_line() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::string out;
  for (char c : all) out += c == '\0' ? ' ' : c;
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out.empty() ? "solbench eval" : out;
}

// Records the evaluation in the results store: a run, the solution, and every
// trace with its T_SOL, T_b and S (one transaction per trace), plus measured
// baselines. A store that cannot be opened or written is a warning: the
// evaluation, its -o file and its output never depend on it.
class StoreRecorder {
 public:
  StoreRecorder(const EvalOptions& o, const store::SolutionRecord& solution,
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

  store::Store* db() { return db_ ? &*db_ : nullptr; }

  void record(const Trace& t, const ScoreState& st) {
    if (!db_) return;
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
      db_->record_trace(run_, t, x);
      ++recorded_;
    } catch (const std::exception& e) {
      ++errors_;
      warn(fmt::format("results store {}: the trace of workload {} was not recorded: {}", path_,
                       t.workload.value("uuid", "?"), e.what()));
    }
  }

  void put_baseline(const store::Baseline& b) {
    if (!db_) return;
    try {
      db_->put_baseline(b);
    } catch (const std::exception& e) {
      warn(fmt::format("results store {}: the baseline of workload {} was not recorded: {}",
                       path_, b.key.workload_uuid, e.what()));
    }
  }

  void finish() {
    if (!db_) return;
    try {
      db_->finish_run(run_);
    } catch (const std::exception& e) {
      warn(fmt::format("results store {}: run {} not marked finished: {}", path_, run_, e.what()));
    }
  }

  // Warnings wait until the live progress line is gone.
  const std::vector<std::string>& warnings() const { return warnings_; }
  void warn(const std::string& w) { warnings_.push_back(w); }

  json to_json() const {
    if (path_.empty()) return nullptr;
    json j = {{"path", path_}, {"recorded", recorded_}, {"errors", errors_}};
    j["run"] = db_ ? json(run_) : json(nullptr);
    if (!open_error_.empty()) j["error"] = open_error_;
    return j;
  }
  std::string summary_line() const {
    if (path_.empty()) return "";
    if (!db_) return fmt::format("store: {} not used ({})", path_, open_error_);
    return fmt::format("store: {} (run {}, {} trace(s) recorded{})", path_, run_, recorded_,
                       errors_ ? fmt::format(", {} failed", errors_) : "");
  }

 private:
  std::function<json()> predicted_env_;
  std::optional<store::Store> db_;
  std::string path_, open_error_, solution_hash_;
  int64_t run_ = -1;
  bool run_env_set_ = false;
  int recorded_ = 0, errors_ = 0;
  std::vector<std::string> warnings_;
};

// The score's reason with the specific causes of a missing input in place of
// the formula's generic ones.
void explain(ScoreState& st, const Trace& t, bool timed) {
  score::WorkloadScore& s = st.s;
  if (s.score || s.baseline_at_or_below_sol) return;
  std::vector<std::string> why;
  if (t.evaluation.status != Status::Passed) {
    // The first cause is the only one worth reading.
    why.push_back(fmt::format("the workload did not pass ({})", status_name(t.evaluation.status)));
  } else {
    if (!s.t_k_ms) why.push_back(timed ? "the solution's time is unknown" : "not timed (--no-timing)");
    if (!s.t_sol_ms) why.push_back(st.bound.reason.empty() ? "T_SOL unknown" : st.bound.reason);
    // Without T_k no baseline was measured: that is not a cause of its own.
    if (!s.t_b_ms && s.t_k_ms)
      why.push_back(st.baseline ? st.baseline->reason
                                : (st.t_b_reason.empty() ? "T_b unknown" : st.t_b_reason));
  }
  std::string text;
  for (const auto& w : why) text += (text.empty() ? "" : "; ") + w;
  const size_t at = s.reason.find("no score: ");
  s.reason = (at == std::string::npos ? s.reason + (s.reason.empty() ? "" : "; ")
                                      : s.reason.substr(0, at)) +
             "no score: " + text;
}

// The score's keys in a trace (docs/score.md lists them; `solbench run` reads them).
void put_score(Trace& t, const ScoreState& st, const score::ArchChoice& arch) {
  json& x = t.evaluation.extra;
  const score::WorkloadScore& s = st.s;
  auto opt = [](const std::optional<double>& v) { return v ? json(*v) : json(nullptr); };
  x[std::string(score::kTSolKey)] = opt(s.t_sol_ms);
  x[std::string(score::kTBKey)] = opt(s.t_b_ms);
  x[std::string(score::kScoreKey)] = opt(s.score);
  x[std::string(score::kViolationKey)] = s.sol_violation;
  x[std::string(score::kScoreReasonKey)] = s.reason.empty() ? json(nullptr) : json(s.reason);
  json d = {{"arch", arch.to_json()}, {"t_sol", st.bound.to_json()}, {"score", s.to_json()}};
  if (st.baseline) {
    d["t_b"] = st.baseline->to_json();
  } else {
    d["t_b"] = {{"t_b_ms", nullptr},
                {"reason", st.t_b_reason.empty() ? json(nullptr) : json(st.t_b_reason)}};
  }
  if (st.published) d["published"] = st.published->to_json();
  x[std::string(score::kScoreDetailsKey)] = d;
}

// The nvcc target for --cuda-arch on `device`: built for the GPU that runs it,
// as SOL-ExecBench does (nvcc's default, sm_75 in CUDA 13, would JIT-compile PTX at
// load and refuse Hopper-only instructions). NVML names the compute capability
// without initialising CUDA in this process (device.h identify_device).
std::string resolve_cuda_arch(const std::string& choice, const std::string& device) {
  if (choice == "default") return "";
  if (choice != "auto") return choice;
  const int ordinal = harness::cuda_ordinal(device);
  if (ordinal < 0) return "";
  try {
    const gpu::DeviceIdentity d = gpu::identify_device(ordinal);
    return gpu::sm_arch_name(d.cc_major, d.cc_minor).substr(3);  // "sm_90a" -> "90a"
  } catch (const std::exception& e) {
    std::fprintf(stderr, "warning: --cuda-arch auto: %s; building for nvcc's default\n", e.what());
    return "";
  }
}

int run_eval(const EvalOptions& o) {
  // The parent's own stages on CLOCK_MONOTONIC (the workers' timestamps' clock),
  // for `--json`'s "timeline_t_ns": where an agent's call spends its time.
  json timeline = json::object();
  auto mark = [&timeline](const char* stage) { timeline[stage] = harness::monotonic_ns(); };
  mark("start");
  // --- inputs: everything is checked before anything is built or run.
  Diagnostics diags;
  Problem problem = load_problem(problem_paths(o.problem_dir), diags);
  Solution solution;
  if (!o.reference) solution = load_solution(o.solution, diags);
  std::vector<size_t> sel;
  if (diags.empty()) sel = score::select_workloads(problem, o.workloads, o.smallest, diags);
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
  if (const int rc = check_device_and_timer(o.device, o.timer)) return rc;
  mark("inputs_loaded");
  // Workers fork from a process that imports torch while the build and T_SOL run.
  harness::start_process_zygote();
  // The workers' sandbox plans need the toolchain probes (compiler drivers and the
  // interpreter, run as child processes: 0.1 s on the H100 machine); they run
  // while T_SOL and the build are looked up (find_toolchains memoises them).
  std::future<void> toolchains;
  if (!o.no_sandbox)
    toolchains = std::async(std::launch::async, [] { (void)harness::find_toolchains(); });
  mark("zygote_asked");
  // An unknown --arch is refused before anything runs (the name alone decides).
  if (!o.arch.empty()) {
    try {
      (void)sol::select_hardware(o.arch);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "error: %s\n", e.what());
      return 2;
    }
  }
  const std::string solution_name = o.reference ? problem.definition.name + "/reference"
                                                : solution.name;
  const bool live = !o.json_output && ::isatty(2);
  Progress progress(live, sel.size());
  json timer_options = json::object();
  if (o.timer != "auto") timer_options["timer"] = o.timer;

  // --- T_SOL (cached per workload and model; tracing runs only the reference).
  // Nothing before the scores needs it. On a GPU the model is picked beside the
  // build and the workers (the detected GPU's model asks NVML, 20-50 ms); the bounds
  // are looked up by the first result (sol_ready), on this thread: a bound not yet
  // cached traces the reference in the embedded Python, which must not start on
  // another thread (that thread would keep the interpreter's lock when it ends, and
  // the process hung at exit on the H100). On the CPU all of it runs here.
  score::ArchChoice arch;
  std::vector<ScoreState> sc(sel.size());
  std::string published_note;
  int64_t t_sol_ns = 0;
  auto find_bounds = [&](bool show) {
    if (arch.model) {
      if (show) progress.show("speed-of-light bounds on " + arch.model->name);
      for (size_t k = 0; k < sel.size(); ++k)
        sc[k].bound = score::sol_bound(problem, sel[k], *arch.model);
    } else {
      for (auto& st : sc) st.bound.reason = "no T_SOL: " + arch.reason;
    }
    t_sol_ns = harness::monotonic_ns();
    if (arch.model && score::is_b200(*arch.model)) {
      try {
        const auto pub = score::published_b200(problem, o.problem_dir, &published_note);
        for (size_t k = 0; k < sel.size(); ++k)
          if (sel[k] < pub.size()) sc[k].published = pub[sel[k]];
      } catch (const std::exception& e) {
        published_note = e.what();
      }
    }
  };
  std::future<score::ArchChoice> arch_found;
  if (harness::cuda_ordinal(o.device) >= 0) {
    arch_found = std::async(std::launch::async, [&o] { return score::choose_arch(o.arch, o.device); });
  } else {
    arch = score::choose_arch(o.arch, o.device);
    find_bounds(true);
    timeline["t_sol"] = t_sol_ns;
  }
  auto sol_ready = [&] {
    if (!arch_found.valid()) return;
    arch = arch_found.get();  // cannot throw: an unknown name was refused above
    find_bounds(false);
    timeline["t_sol"] = t_sol_ns;
  };

  // --- the results store.
  const std::string driver = score::driver_version(o.device);
  std::optional<json> predicted;
  store::SolutionRecord sol_record =
      o.reference ? store::SolutionRecord{solution_name, problem.definition.name,
                                          {{"solbench_reference_of", to_json(problem.definition)}}}
                  : store::SolutionRecord::from(solution);
  StoreRecorder rec(o, sol_record, [&]() {
    if (!predicted) predicted = score::predicted_worker_env(o.device, timer_options);
    return *predicted;
  });
  const std::string def_hash = store::definition_hash(problem.definition);
  mark("store_ready");

  // --- build (or cache hit), outside any worker: compilers are trusted, the code is not run.
  harness::PrepareOptions po;
  po.device = o.device;
  po.compile_timeout = std::chrono::duration<double>(o.compile_timeout_s);
  po.keep_staging = o.keep_staging;
  po.cuda_arch = resolve_cuda_arch(o.cuda_arch, o.device);
  if (!o.reference) progress.show("building " + solution_name);
  harness::PreparedSolution prep = o.reference
                                       ? harness::reference_as_solution()
                                       : harness::prepare_solution(solution, problem.definition, po);
  mark("built");
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
  std::vector<bool> finalized(sel.size(), false);
  std::vector<size_t> pending;  // positions whose T_b the baseline worker measures
  json solution_env = json::object();  // the solution worker's environment
  size_t n_traces = 0, n_cached_baselines = 0;

  // A trace is written (-o) and recorded (store) once its numbers are final:
  // at once, or when the baseline worker has measured its T_b.
  auto finalize = [&](size_t k) {
    if (finalized[k] || !traces[k]) return;  // record() made the trace, after sol_ready()
    finalized[k] = true;
    Trace& t = *traces[k];
    ScoreState& st = sc[k];
    std::optional<double> t_k;
    if (t.evaluation.status == Status::Passed && t.evaluation.performance &&
        t.evaluation.performance->latency_ms > 0)
      t_k = t.evaluation.performance->latency_ms;
    st.s = score::sol_score(t_k, st.bound.t_sol_ms,
                            st.baseline ? st.baseline->t_b_ms : std::nullopt);
    explain(st, t, !o.no_timing);
    put_score(t, st, arch);
    if (!o.output.empty()) append_traces(o.output, {t});
    ++n_traces;
    rec.record(t, st);
  };
  auto cached = [&](size_t k) -> std::optional<score::BaselineResult> {
    if (!rec.db() || solution_env.value("hardware", "").empty()) return std::nullopt;
    try {
      return score::cached_baseline(
          *rec.db(), score::baseline_key(def_hash, problem.workloads[sel[k]].uuid, solution_env,
                                         driver));
    } catch (const std::exception& e) {
      rec.warn(fmt::format("looking up the baseline of workload {}: {}",
                           problem.workloads[sel[k]].uuid, e.what()));
      return std::nullopt;
    }
  };
  auto record = [&](size_t k, const WorkloadOutcome& out, const json& env) {
    if (out.skipped) return;
    Trace t = harness::make_trace(problem, sel[k], solution_name, out, env);
    if (prep.build) t.evaluation.extra["solbench_build"] = {
        {"cache_hit", prep.build->cache_hit}, {"seconds", prep.build->seconds}};
    if (!driver.empty()) t.evaluation.environment.extra["solbench_driver"] = driver;
    traces[k] = std::move(t);
    sol_ready();
    ScoreState& st = sc[k];
    const bool timed_pass = out.status == Status::Passed && out.timing &&
                            out.timing->stats.median_ms > 0;
    if (o.no_baseline) {
      st.t_b_reason = "not measured (--no-baseline)";
    } else if (auto hit = cached(k)) {
      st.baseline = std::move(hit);
      ++n_cached_baselines;
    } else if (!timed_pass) {
      st.t_b_reason = out.status != Status::Passed ? "not measured: the workload did not pass"
                                                   : "not measured: the workload was not timed";
    } else if (!st.bound.t_sol_ms) {
      st.t_b_reason = "not measured: there is no T_SOL, so no score would use it";
    } else {
      pending.push_back(k);  // measured after the solution's worker, in a worker of its own
      return;
    }
    finalize(k);
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
      if (prep.skip) {
        out.skipped = true;
        out.skip_reason = prep.log;
        out.log.clear();
      }
      record(k, out, json{{"device", o.device}});
      outs.push_back(std::move(out));
    }
  } else {
    harness::HarnessRequest hr;
    hr.name = solution_name;
    hr.entry = prep.entry;
    hr.definition = to_json(problem.definition);
    for (size_t i : sel) hr.workloads.push_back(harness::workload_spec(problem, i));
    hr.device = o.device;
    hr.rounds = o.rounds;
    hr.seed = o.seed;
    hr.timed = !o.no_timing;
    hr.timing.target_rse = o.target_rse;
    hr.timing.budget_ms = o.time_budget_ms;
    hr.timer_options = timer_options;
    hr.workload_timeout = std::chrono::duration<double>(o.timeout_s);
    hr.keep_scratch = o.keep_staging;
    hr.no_sandbox = o.no_sandbox;
    if (!o.reference) hr.cache_key = to_json(solution).dump();
    std::vector<bool> recorded(sel.size(), false);
    json last_env = {{"device", o.device}};
    hr.on_event = [&](const harness::RunnerEvent& e) {
      // The runner reports plan positions; sel maps them to workload indices.
      auto pos = [](int plan_index) { return plan_index; };
      if (e.kind == harness::EventKind::WorkerStart) {
        progress.show(e.message == "reference" ? "starting the reference worker"
                                               : "starting a worker");
      } else if (e.kind == harness::EventKind::Begin || e.kind == harness::EventKind::Progress) {
        const size_t k = static_cast<size_t>(pos(e.workload));
        std::string what = e.kind == harness::EventKind::Begin ? "starting" : phase_name(e.phase);
        if (e.round >= 0) what += fmt::format(" round {}/{}", e.round + 1, std::max(1, o.rounds));
        progress.show(fmt::format("{} {}: {}", short_uuid(problem.workloads[sel[k]].uuid),
                                  axes_text(problem.workloads[sel[k]]), what));
      } else if (e.kind == harness::EventKind::Result && e.outcome) {
        const size_t k = static_cast<size_t>(pos(e.workload));
        progress.finished_one();
        if (!recorded[k]) {
          recorded[k] = true;
          record(k, *e.outcome, last_env);
        }
        if (!live && o.verbose && !o.json_output)
          std::fprintf(stderr, "[%s] %s\n", short_uuid(problem.workloads[sel[k]].uuid).c_str(),
                       e.outcome->skipped ? "SKIPPED" : std::string(status_name(e.outcome->status)).c_str());
      } else if (e.kind == harness::EventKind::Ready) {
        if (e.env) {
          last_env = *e.env;
          last_env["device"] = o.device;
          solution_env = last_env;
          sol_ready();
          score::confirm_device(arch, o.device, last_env);  // the worker names its device
        }
        progress.show("worker ready");
      }
    };
    mark("plan_ready");
    rr = harness::evaluate(hr);
    mark("workers_done");
    progress.clear();
    outs = rr.outcomes;
    // Outcomes the event stream did not deliver (failures decided by the runner
    // after a crash or timeout are delivered too, but be safe).
    for (size_t k = 0; k < outs.size(); ++k)
      if (!recorded[k]) {
        recorded[k] = true;
        record(k, outs[k], last_env);
      }

    // --- T_b: the reference under torch.compile, in a worker that never saw the
    // solution, for the timed PASSED workloads the store has no baseline for.
    if (!pending.empty()) {
      std::vector<size_t> indices;
      for (size_t k : pending) indices.push_back(sel[k]);
      score::MeasureOptions mo;
      mo.device = o.device;
      mo.timer_options = hr.timer_options;
      mo.timing = hr.timing;  // the solutions' stopping rule
      mo.rounds = 1;
      mo.seed = o.seed;
      mo.workload_timeout = hr.workload_timeout;
      mo.keep_scratch = o.keep_staging;
      mo.no_sandbox = o.no_sandbox;
      mo.on_event = [&](const harness::RunnerEvent& e) {
        if (e.kind == harness::EventKind::WorkerStart) progress.show("baseline: starting a worker");
        else if ((e.kind == harness::EventKind::Begin || e.kind == harness::EventKind::Progress) && e.workload >= 0)
          progress.show(fmt::format("baseline {}: {}",
                                    short_uuid(problem.workloads[indices[e.workload]].uuid),
                                    e.kind == harness::EventKind::Begin ? "starting" : phase_name(e.phase)));
      };
      mo.on_result = [&](size_t pos, const score::BaselineResult& r, const json& wenv) {
        const size_t k = pending[pos];
        if (r.t_b_ms && !r.method.empty()) {
          const store::BaselineKey key =
              score::baseline_key(def_hash, r.uuid, wenv, wenv.value("driver", ""));
          rec.put_baseline({key, *r.t_b_ms, *store::parse_method(r.method), "", r.reason});
          const store::BaselineKey mine = score::baseline_key(def_hash, r.uuid, solution_env, driver);
          if (key == mine) {
            sc[k].baseline = r;
          } else {
            sc[k].t_b_reason = fmt::format(
                "the baseline worker's environment ({}, torch {}, timer {}) is not the "
                "solution's ({}, torch {}, timer {})",
                key.gpu_model, key.torch, key.timer, mine.gpu_model, mine.torch, mine.timer);
          }
        } else {
          sc[k].t_b_reason = r.reason;
        }
        finalize(k);
      };
      std::string failure = "the baseline worker reported nothing";
      try {
        score::measure_baselines(problem, indices, mo);
      } catch (const std::exception& e) {
        // The solution's results are final already: they are written without T_b.
        failure = std::string("the baseline worker could not run: ") + e.what();
      }
      progress.clear();
      for (size_t k : pending)
        if (!finalized[k]) {
          if (sc[k].t_b_reason.empty()) sc[k].t_b_reason = failure;
          finalize(k);
        }
    }
  }
  progress.clear();
  sol_ready();
  mark("baseline_done");
  for (size_t k = 0; k < sel.size(); ++k) finalize(k);  // none left; be safe
  rec.finish();
  mark("recorded");
  for (const auto& w : rec.warnings()) std::fprintf(stderr, "warning: %s\n", w.c_str());
  if (!published_note.empty()) std::fprintf(stderr, "warning: %s\n", published_note.c_str());

  std::vector<score::ScoredWorkload> scored;
  for (size_t k = 0; k < outs.size(); ++k)
    if (!outs[k].skipped)
      scored.push_back({outs[k].status == Status::Passed, sc[k].s.score, sc[k].s.sol_violation});
  const score::Aggregate problem_score = score::problem_score(scored);
  const json summary = summary_json(outs, problem_score);
  bool all_ok = true;
  for (const auto& out : outs)
    if (!out.skipped && out.status != Status::Passed) all_ok = false;
  size_t n_measured = 0;
  for (size_t k : pending)
    if (sc[k].baseline && !sc[k].baseline->cached) ++n_measured;
  // The workloads whose T_b is eager, not the reference under torch.compile: a
  // warning in every output (docs/score.md), never silent.
  json eager = json::array();
  std::map<std::string, size_t> eager_reasons;
  for (size_t k = 0; k < sc.size(); ++k)
    if (sc[k].baseline && sc[k].baseline->t_b_ms && sc[k].baseline->method == "eager") {
      eager.push_back({{"uuid", sc[k].baseline->uuid},
                       {"t_b_ms", *sc[k].baseline->t_b_ms},
                       {"reason", sc[k].baseline->reason}});
      ++eager_reasons[sc[k].baseline->reason];
    }

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
    j["reference_workers"] = rr.reference_workers;
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
    j["score"] = {{"arch", arch.to_json()},
                  {"problem", problem_score.to_json()},
                  {"baselines", {{"cached", n_cached_baselines},
                                 {"measured", n_measured},
                                 {"skipped", o.no_baseline},
                                 {"eager", eager}}}};
    if (!published_note.empty()) j["score"]["published_note"] = published_note;
    j["db"] = rec.to_json();
    mark("document");
    j["timeline_t_ns"] = timeline;
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
    print_table(problem, sel, outs, sc, o.verbose, /*row_reasons=*/prep.ok);
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
    // The score: the bound's model, the mean, and why rows have none (once each).
    if (arch.model)
      fmt::print("T_SOL: {} ({}){}\n", arch.model->name, arch.model->display_name,
                 arch.explicit_arch ? " (--arch)" : "");
    if (!arch.note.empty()) fmt::print("note: {}\n", arch.note);
    if (problem_score.mean)
      fmt::print("SOL score: {:.3f} (mean over {} workload(s); {} failed count 0{}{})\n",
                 *problem_score.mean, problem_score.scored, problem_score.failed,
                 problem_score.unscored ? fmt::format("; {} unscored", problem_score.unscored) : "",
                 problem_score.violations
                     ? fmt::format("; {} SOL violation(s), capped at 1", problem_score.violations)
                     : "");
    else
      fmt::print("SOL score: -\n");
    std::set<std::string> reasons;
    for (size_t k = 0; k < outs.size(); ++k)
      if (!outs[k].skipped && outs[k].status == Status::Passed && !sc[k].s.score)
        reasons.insert(sc[k].s.reason);
    for (const auto& r : reasons) fmt::print("  {}\n", r);
    for (const auto& [why, n] : eager_reasons)
      fmt::print("warning: T_b of {} workload(s) is {}, not the reference under torch.compile\n",
                 n, score::eager_note("eager", why));
    if (!o.output.empty()) fmt::print("traces: {} ({} appended)\n", o.output, n_traces);
    if (const std::string line = rec.summary_line(); !line.empty()) fmt::print("{}\n", line);
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
  cmd->add_option("--cuda-arch", o->cuda_arch,
                  "nvcc target of CUDA sources: auto (the GPU's compute capability, e.g. 90a), "
                  "default (nvcc's), or a capability such as 90a, 100a")
      ->capture_default_str();
  cmd->add_option("--timer", o->timer,
                  "GPU timer: auto (CUPTI activity, else events), cupti, events, or profiler "
                  "(each kernel's gpu__time_duration, as ncu reports it; serialises kernels)")
      ->check(CLI::IsMember(
          std::vector<std::string>(gpu::kGpuTimerKinds.begin(), gpu::kGpuTimerKinds.end())))
      ->capture_default_str();
  cmd->add_option("--rounds", o->rounds, "correctness rounds, each with fresh inputs")
      ->check(CLI::Range(1, 1000))->capture_default_str();
  cmd->add_option("--seed", o->seed,
                 "derive every input value from this seed (reproducible, and predictable to "
                 "whoever knows it: for debugging); default: a secret drawn per evaluation");
  cmd->add_option("--target-rse", o->target_rse,
                  "stop timing once the relative standard error of the median is below this")
      ->check(CLI::Range(1e-6, 1.0))->capture_default_str();
  cmd->add_option("--time-budget-ms", o->time_budget_ms,
                  "wall-time budget per timed candidate and workload (solution, reference)")
      ->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_flag("--no-timing", o->no_timing, "check correctness only");
  cmd->add_flag("--no-sandbox", o->no_sandbox, "run workers without the sandbox (debugging only)");
  cmd->add_option("--arch", o->arch,
                  "hardware model for T_SOL (solbench hw list); default: the device's own (the "
                  "CPU has none, so S needs --arch there); b200 also shows SOL-ExecBench's "
                  "published numbers (metadata.json)");
  cmd->add_flag("--no-baseline", o->no_baseline,
                "do not measure or look up the scoring baseline T_b (S stays null)");
  cmd->add_option("--db", o->db, "results store to record the traces in (default: " +
                                     store::default_db_path().string() + ")");
  cmd->add_flag("--no-db", o->no_db, "do not record in the results store");
  cmd->get_option("--no-db")->excludes(cmd->get_option("--db"));
  cmd->callback([o, cmd] {
    if (o->solution.empty() && !o->reference)
      throw CLI::RequiredError("--solution (or --reference)");
    (void)cmd;
    exit_code() = run_eval(*o);
  });
}

}  // namespace solbench::cli
