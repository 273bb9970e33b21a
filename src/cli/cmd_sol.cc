// `solbench sol PROBLEM_DIR...`: speed-of-light bounds per workload (tables or
// JSON), over one problem folder or a folder of problems.
//
// References are traced in child processes (`solbench __sol-trace`, one per job
// slot, reused across workloads), each trace under a wall-clock limit
// (--timeout): a reference that never finishes is killed with its process group
// and its workload ends as an error, while the other workloads go on. With
// -j N, N slots trace in parallel. Cache hits start no child.
//
// Usage errors (an unknown --arch, a --workload that names no workload or
// several) are refused with exit 2 before anything is traced. A problem that
// does not load is reported once, with the loader's first error (file:line, as
// `solbench validate` shows it), and the other problems go on (exit 1).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cctype>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include <fmt/format.h>

#include "bridge/python.h"
#include "cli/commands.h"
#include "core/text.h"
#include "score/tracer_process.h"
#include "core/json.h"
#include "core/problem.h"
#include "core/settings.h"
#include "harness/framing.h"
#include "harness/service_child.h"
#include "harness/process.h"
#include "harness/worker/zygote.h"
#include "score/selection.h"
#include "sol/analysis.h"
#include "sol/hardware.h"
#include "sol/op_graph.h"
#include "sol/tracer.h"

namespace solbench::cli {

namespace {

namespace fs = std::filesystem;

struct SolOptions {
  std::vector<std::string> dirs;
  std::string arch;
  std::vector<std::string> workloads;  // uuids; empty: every workload
  std::string dump_ops;
  bool json_output = false;
  bool no_cache = false;
  double timeout_s = 60;  // per workload trace; 0: no limit
  double trace_budget_s = sol::kTraceBudgetS;  // per workload trace; 0: none
  int jobs = 1;
};

// A tracer's side: reads trace requests from the channel `fd` until EOF and
// answers each with {"graph": ...} or {"error": ...}; tracing runs in this
// process's embedded Python. The process then ends without its exit handlers and
// static destructors (torch's and its CUDA libraries' teardown, 0.1 s that `sol`
// waited for), as workers do. Exec'd as `solbench __sol-trace`, or forked from a
// zygote as its entry point "sol-trace" (harness/worker/zygote.h).
[[noreturn]] void serve_traces(int fd) {
  bridge::keep_bytecode();  // before torch: the tracer runs references only
  sol::warm_up_tracer();
  const int rc = harness::serve_frames(fd, [](const json& request) -> json {
    try {
      return {{"graph", sol::to_json(sol::trace_reference(request))}};
    } catch (const std::exception& e) {
      return {{"error", std::string("tracer failed: ") + e.what()}};
    }
  });
  std::fflush(nullptr);
  ::_exit(rc);
}

int trace_entry(int fd) { serve_traces(fd); }

// `solbench __sol-trace`: the child side, its channel in SOLBENCH_CHANNEL_FD.
int run_trace_child() {
  const std::optional<int> fd = settings().internal.channel_fd;
  if (!fd) {
    std::fprintf(stderr, "error: __sol-trace is started by `solbench sol` (no SOLBENCH_CHANNEL_FD)\n");
    return 2;
  }
  serve_traces(*fd);
}

std::string shape_text(const json& shapes) {
  std::string s;
  for (auto& [k, v] : shapes.items()) {
    if (v.is_null()) continue;
    std::string dims;
    for (auto& d : v) dims += (dims.empty() ? "" : "x") + std::to_string(d.get<int64_t>());
    s += (s.empty() ? "" : " ") + k + "[" + dims + "]";
  }
  return s.size() > 60 ? s.substr(0, 57) + "..." : s;
}

// What the tables' columns hold, printed once under the hardware line.
void print_legend(const sol::HardwareModel& hw) {
  std::printf("units: T_SOL_us in microseconds; work in GFLOP on tensor cores (TC) and CUDA cores (CC),\n"
              "SFU_Gop in G results; DRAM_MB: the bytes T_SOL's DRAM term moves (JSON bytes.dram_mb),\n"
              "so DRAM_MB / T_SOL_us is the implied bandwidth in TB/s (%s: at most %s)\n",
              hw.name.c_str(), fmt::format("{:g}", hw.dram_bandwidth_gbs / 1000).c_str());
}

void print_problem(const std::string& name, const json& results) {
  std::printf("\n%s\n", name.c_str());
  std::printf("  %-8s %-60s %9s %9s %9s %9s %9s %-6s %s\n", "workload", "shapes", "TC_GFLOP",
              "CC_GFLOP", "SFU_Gop", "DRAM_MB", "T_SOL_us", "bound", "mode");
  for (auto& r : results) {
    std::string uuid = r.value("uuid", "").substr(0, 8);
    std::string status = r.value("status", "");
    if (status != "ok") {
      std::printf("  %-8s %-60s %s: %s\n", uuid.c_str(), shape_text(r.value("shapes", json::object())).c_str(),
                  status.c_str(), r.value("reason", "").substr(0, 160).c_str());
      continue;
    }
    std::string mode = r.value("mode", "");
    if (!r["uncosted"].empty()) mode += " UNCOSTED:" + std::to_string(r["uncosted"].size());
    if (r.contains("partial")) mode += " PARTIAL";
    // The analysis reports TFLOP and MB; the table GFLOP (a matmul's 1,100 and an
    // elementwise op's 0.03 both read) and the DRAM term's MB.
    std::printf("  %-8s %-60s %9s %9s %9s %9s %9s %-6s %s%s\n", uuid.c_str(),
                shape_text(r["shapes"]).c_str(), quantity_text(sum_numbers(r["work"]["tensor_tflop"]) * 1e3).c_str(),
                quantity_text(sum_numbers(r["work"]["cuda_tflop"]) * 1e3).c_str(),
                quantity_text(r["work"]["sfu_gop"].get<double>()).c_str(), quantity_text(number_at(r, {"bytes", "dram_mb"}).value_or(0)).c_str(),
                quantity_text(number_at(r, {"time_us", "sol"}).value_or(0), "0").c_str(), r.value("bottleneck", "").c_str(),
                mode.c_str(), r.value("cached", false) ? " (cached)" : "");
  }
}

struct LoadedProblem {
  fs::path dir;
  Problem problem;
  Diagnostics diags;             // the loader's
  std::vector<size_t> selected;  // workload indices to analyse
  std::vector<json> results;     // aligned with `selected`
  size_t remaining = 0;

  std::string name() const {
    return problem.definition.name.empty() ? dir.filename().string() : problem.definition.name;
  }
};

// The loader's errors ("file:line: path: message"); none when the problem loaded.
std::vector<std::string> load_errors(const LoadedProblem& lp) {
  std::vector<std::string> lines;
  for (const auto& d : lp.diags.items()) lines.push_back(d.str());
  return lines;
}

// A problem that did not load (in full), once: its first error (the one
// `solbench validate` shows first) and how many more there are.
void print_load_errors(const LoadedProblem& lp) {
  const std::vector<std::string> lines = load_errors(lp);
  if (lines.empty()) return;
  std::fflush(stdout);  // the error follows the tables printed so far
  std::fprintf(stderr, "error: %s\n", lines[0].c_str());
  if (lines.size() > 1)
    std::fprintf(stderr, "error: %s: %zu more error(s) (solbench validate %s lists them all)\n",
                 lp.dir.string().c_str(), lines.size() - 1, lp.dir.string().c_str());
  std::fflush(stderr);
}

// The workloads each problem bounds: its resolved ones, or those --workload names
// (each a uuid or a prefix unique over all the problems), by the rule `eval -w`
// follows (score::select_workloads). An unknown or ambiguous name goes to `usage`.
void select_workloads(std::vector<LoadedProblem>& problems, const std::vector<std::string>& wanted,
                      Diagnostics& usage) {
  if (wanted.empty()) {
    for (auto& lp : problems) {
      Diagnostics none;  // nothing is asked for, so nothing can be missing
      lp.selected = score::select_workloads(lp.problem, score::WorkloadSelection{}, none);
    }
    return;
  }
  // Every problem's workloads as one list, so that a prefix must be unique over the run.
  Problem all;
  std::vector<std::pair<size_t, size_t>> origin;  // (problem, workload) of each entry
  for (size_t pi = 0; pi < problems.size(); ++pi) {
    const Problem& p = problems[pi].problem;
    for (size_t i = 0; i < p.workloads.size(); ++i) {
      all.workloads.push_back(p.workloads[i]);
      all.resolved.push_back(i < p.resolved.size() ? p.resolved[i] : std::nullopt);
      origin.emplace_back(pi, i);
    }
  }
  score::WorkloadSelection by_name;
  by_name.wanted = wanted;
  for (size_t k : score::select_workloads(all, by_name, usage))
    problems[origin[k].first].selected.push_back(origin[k].second);
  for (auto& lp : problems) std::sort(lp.selected.begin(), lp.selected.end());
}

int run_sol(const SolOptions& o) {
  // Usage errors first, before any tracing: the hardware model, then (once the
  // problems are loaded) the workloads asked for.
  sol::HardwareModel hw;
  try {
    hw = sol::select_hardware(o.arch);
  } catch (const sol::HardwareChoiceError& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }
  std::vector<fs::path> dirs;
  for (auto& d : o.dirs) {
    if (!fs::exists(d)) throw InputError(d, 0, "", "no such file or folder");
    auto found = find_problem_dirs(d);
    if (found.empty()) throw InputError(d, 0, "", "no definition.json at or below this folder");
    dirs.insert(dirs.end(), found.begin(), found.end());
  }
  std::vector<LoadedProblem> problems;
  for (auto& dir : dirs) {
    LoadedProblem lp;
    lp.dir = dir;
    lp.problem = load_problem(problem_paths(dir), lp.diags);
    problems.push_back(std::move(lp));
  }
  Diagnostics usage;
  select_workloads(problems, o.workloads, usage);
  if (!usage.empty()) {
    for (const auto& d : usage.items()) std::fprintf(stderr, "error: %s\n", d.str().c_str());
    size_t not_loaded = 0;
    for (const auto& lp : problems) not_loaded += !lp.diags.empty();
    if (not_loaded > 0)
      std::fprintf(stderr, "note: %zu problem(s) did not load, so their workloads could not be chosen:\n",
                   not_loaded);
    for (const auto& lp : problems)
      if (!lp.diags.empty()) std::fprintf(stderr, "note: %s\n", lp.diags.items()[0].str().c_str());
    return 2;
  }

  sol::AnalysisOptions aopt;
  aopt.use_cache = !o.no_cache;
  aopt.trace_budget_s = o.trace_budget_s;
  aopt.memo = std::make_shared<sol::GraphMemo>();  // one trace per shape signature
  aopt.keep_graph = !o.dump_ops.empty();
  json out = {{"hardware", hw.name}, {"problems", json::array()}};
  json dump = json::object();
  size_t n_ok = 0, n_untraceable = 0, n_error = 0, n_uncosted = 0, n_cached = 0, n_timeout = 0, n_partial = 0;
  size_t n_not_loaded = 0;
  std::map<std::string, int64_t> uncosted_ops;
  auto t0 = std::chrono::steady_clock::now();
  if (!o.json_output) {
    std::printf("hardware: %s (%s)\n", hw.display_name.c_str(), hw.name.c_str());
    print_legend(hw);
  }

  // Every selected workload of every problem is one task; slots take tasks in
  // order and the main thread prints problems in order as they complete.
  std::vector<std::pair<size_t, size_t>> tasks;  // (problem, position in selected)
  for (size_t pi = 0; pi < problems.size(); ++pi) {
    LoadedProblem& lp = problems[pi];
    lp.results.resize(lp.selected.size());
    lp.remaining = lp.selected.size();
    for (size_t k = 0; k < lp.selected.size(); ++k) tasks.emplace_back(pi, k);
  }
  std::mutex mu;
  std::condition_variable done_cv;
  std::atomic<size_t> next{0};
  size_t n_slots = std::max<size_t>(1, std::min<size_t>(size_t(o.jobs), tasks.size()));
  // With several slots, one zygote imports torch once and every slot's tracer forks
  // from it (docs/sol.md "Speed"): started on the first trace that a cache miss needs
  // (a run of cache hits starts none), by this thread, since the zygote dies with the
  // thread that started it. The slot waits for it.
  bool zygote_wanted = false, zygote_started = n_slots < 2;
  json tracer_launches = json::object();  // how the slots' tracers started: {"zygote": n, "exec": m}
  auto slot_main = [&] {
    score::TracerProcess slot(o.timeout_s);  // this job slot's tracer process
    sol::AnalysisOptions opt = aopt;
    opt.trace = [&, trace = slot.fn()](const json& request) {
      {
        std::unique_lock<std::mutex> lock(mu);
        if (!zygote_started) {
          zygote_wanted = true;
          done_cv.notify_all();
          done_cv.wait(lock, [&] { return zygote_started; });
        }
      }
      return trace(request);
    };
    for (size_t t; (t = next++) < tasks.size();) {
      auto [pi, k] = tasks[t];
      const Problem& p = problems[pi].problem;
      size_t index = problems[pi].selected[k];
      json r;
      try {
        r = sol::analyse_workload(p, index, hw, opt);
      } catch (const std::exception& e) {
        r = {{"uuid", p.workloads[index].uuid}, {"index", index}, {"status", "error"},
             {"reason", e.what()}};
      }
      std::lock_guard<std::mutex> lock(mu);
      problems[pi].results[k] = std::move(r);
      --problems[pi].remaining;
      done_cv.notify_all();
    }
    if (const json l = slot.launch(); l.is_object()) {
      std::lock_guard<std::mutex> lock(mu);
      const std::string how = l.value("launch", "exec");
      tracer_launches[how] = tracer_launches.value(how, 0) + 1;
    }
  };
  std::vector<std::thread> slots;
  for (size_t i = 0; i < n_slots && !tasks.empty(); ++i) slots.emplace_back(slot_main);

  for (auto& lp : problems) {
    {
      std::unique_lock<std::mutex> lock(mu);
      for (;;) {
        done_cv.wait(lock, [&] { return lp.remaining == 0 || (zygote_wanted && !zygote_started); });
        if (lp.remaining == 0) break;
        lock.unlock();
        harness::start_process_zygote();  // a no-op where SOLBENCH_ZYGOTE names one (or "0")
        lock.lock();
        zygote_started = true;
        done_cv.notify_all();
      }
    }
    json results = json::array();
    for (auto& r : lp.results) {
      if (r.contains("graph")) {
        dump[lp.name()][r["uuid"].get<std::string>()] = r["graph"];
        r.erase("graph");
      }
      std::string st = r.value("status", "");
      if (st == "ok") {
        ++n_ok;
        if (!r["uncosted"].empty()) ++n_uncosted;
        if (r.contains("partial")) ++n_partial;
        for (auto& [k, v] : r["uncosted"].items()) uncosted_ops[k] += v.get<int64_t>();
      } else if (st == "untraceable") {
        ++n_untraceable;
      } else {
        ++n_error;
        if (r.value("reason", "").find("(--timeout)") != std::string::npos) ++n_timeout;
      }
      if (r.value("cached", false)) ++n_cached;
      results.push_back(std::move(r));
    }
    // A problem whose errors keep some of it from loading says so once (with
    // --workload only where a chosen workload is).
    const bool failed = !lp.diags.empty() && (o.workloads.empty() || !results.empty());
    n_not_loaded += failed;
    if (results.empty() && !failed) continue;
    if (failed) print_load_errors(lp);
    if (!o.json_output) {
      if (!results.empty()) print_problem(lp.name() + "  (" + lp.dir.string() + ")", results);
      std::fflush(stdout);
    } else {
      // The document comes at the end; a line per problem on stderr says how far a
      // long run got (and where it stood when a time limit cut it off).
      size_t ok = 0;
      double traced = 0;
      for (const auto& r : results) {
        ok += r.value("status", "") == "ok";
        traced += r.value("trace_seconds", 0.0);
      }
      const double at = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::fprintf(stderr, "sol: [%zu/%zu] %s: %zu of %zu bounded%s, traced %.1f s, at %.1f s\n",
                   out["problems"].size() + 1, problems.size(), lp.name().c_str(), ok,
                   results.size(), failed ? " (did not load in full)" : "", traced, at);
      std::fflush(stderr);
    }
    out["problems"].push_back({{"name", lp.name()}, {"dir", lp.dir.string()},
                               {"diagnostics", lp.diags.str()}, {"errors", load_errors(lp)},
                               {"workloads", results}});
  }
  for (auto& t : slots) t.join();
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  out["summary"] = {{"problems", out["problems"].size()}, {"not_loaded", n_not_loaded},
                    {"bounded", n_ok},
                    {"untraceable", n_untraceable}, {"errors", n_error},
                    {"with_uncosted_ops", n_uncosted}, {"uncosted_ops", uncosted_ops},
                    {"timed_out", n_timeout}, {"partial", n_partial}, {"cached", n_cached},
                    {"traces", aopt.memo->traces()}, {"seconds", secs},
                    {"timeout_s", o.timeout_s}, {"jobs", o.jobs},
                    {"tracer_launches", tracer_launches}};
  if (!o.dump_ops.empty()) {
    std::ofstream f(o.dump_ops);
    f << dump.dump(1) << "\n";
    if (!f) throw std::runtime_error("cannot write --dump-ops file " + o.dump_ops);
  }
  if (o.json_output) {
    std::printf("%s\n", out.dump(1).c_str());
  } else {
    std::printf("\nsummary: %zu workloads bounded, %zu untraceable here, %zu errors (%zu timed out), "
                "%zu with uncosted operators, %zu from cache, %.2f s\n",
                n_ok, n_untraceable, n_error, n_timeout, n_uncosted, n_cached, secs);
    if (n_partial > 0)
      std::printf("%zu bound(s) from a partial trace (PARTIAL: the time budget ran out; "
                  "--trace-budget)\n", n_partial);
    if (n_not_loaded > 0)
      std::printf("%zu problem(s) did not load in full (errors on stderr; solbench validate)\n",
                  n_not_loaded);
    if (!uncosted_ops.empty()) {
      std::printf("uncosted operators:");
      for (auto& [k, v] : uncosted_ops) std::printf(" %s(x%lld)", k.c_str(), static_cast<long long>(v));
      std::printf("\n");
    }
  }
  return n_error > 0 || n_not_loaded > 0 ? 1 : 0;
}

}  // namespace

void add_sol_command(CLI::App& app) {
  auto o = std::make_shared<SolOptions>();
  auto* cmd = app.add_subcommand(
      "sol", "Speed-of-light bounds (roofline over the traced reference): T_SOL per workload in "
             "microseconds, work in GFLOP, DRAM bytes in MB");
  cmd->add_option("problems", o->dirs, "Problem folders, or folders of problems")->required();
  cmd->add_option("--arch", o->arch,
                  "Hardware model (see `solbench hw list`); default: the local GPU. An unknown "
                  "name is a usage error (exit 2)");
  cmd->add_option("-w,--workload", o->workloads,
                  "Only this workload: a uuid or a prefix unique over the problems (repeatable); "
                  "none matching, or several, is a usage error (exit 2)");
  cmd->add_option("--dump-ops", o->dump_ops, "Write the operator graphs as JSON to FILE");
  cmd->add_flag("--json", o->json_output,
                "Print JSON (times in time_us, work in TFLOP and Gop, bytes in MB; docs/sol.md)");
  cmd->add_flag("--no-cache", o->no_cache, "Ignore and do not write the result cache");
  cmd->add_option("--timeout", o->timeout_s,
                  "Seconds one workload's trace may take before its tracer process is killed and "
                  "the workload ends as an error (0: no limit)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--trace-budget", o->trace_budget_s,
                  "Seconds of tracing after which a workload's trace stops where it stands and "
                  "T_SOL bounds the part traced, marked partial (0: none; kept below 3/4 of "
                  "--timeout)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("-j,--jobs", o->jobs, "Workloads traced in parallel (one tracer process each)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->callback([o] { exit_code() = run_sol(*o); });

  harness::register_zygote_entry("sol-trace", trace_entry);
  auto* child = app.add_subcommand("__sol-trace", "SOL tracer process (internal; started by sol)");
  child->group("");  // hidden
  child->callback([] { exit_code() = run_trace_child(); });
}

}  // namespace solbench::cli
