#include "runset/child_eval.h"

#include <signal.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "core/diagnostics.h"
#include "harness/interrupt.h"
#include "harness/worker/zygote.h"

namespace solbench::runset {

namespace fs = std::filesystem;

namespace {

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

std::vector<std::string> eval_args(const ChildRequest& r) {
  std::vector<std::string> a = {"eval", r.problem_dir.string()};
  if (r.solution_file)
    a.insert(a.end(), {"-s", r.solution_file->string()});
  else
    a.push_back("--reference");
  a.insert(a.end(), {"--device", r.device, "--json", "-o", (r.scratch / "traces.jsonl").string()});
  for (const auto& w : r.workloads) a.insert(a.end(), {"-w", w});
  a.insert(a.end(), r.extra_args.begin(), r.extra_args.end());
  return a;
}

std::vector<std::string> baseline_args(const ChildRequest& r) {
  std::vector<std::string> a = {"baseline", r.problem_dir.string(), "--device", r.device, "--json"};
  for (const auto& w : r.workloads) a.insert(a.end(), {"-w", w});
  a.insert(a.end(), r.extra_args.begin(), r.extra_args.end());
  return a;
}

std::string ChildResult::describe() const {
  if (!spawn_error.empty()) return "could not be started: " + spawn_error;
  if (interrupted) return "interrupted (killed when the run was stopped)";
  if (timed_out) return fmt::format("killed after {:.0f} s (the run's deadline for it)", seconds);
  return status.describe();
}

std::string tail(const std::string& s, size_t max) {
  if (s.size() <= max) return s;
  size_t start = s.size() - max;
  const size_t nl = s.find('\n', start);
  if (nl != std::string::npos && nl + 1 < s.size()) start = nl + 1;
  return "[...]\n" + s.substr(start);
}

std::vector<Trace> read_trace_lines(const fs::path& file) {
  // load_traces keeps every line that parses and diagnoses the others (a line the
  // killed child left cut short), which are of no use here.
  Diagnostics ignored;
  return load_traces(file, ignored);
}

ChildResult run_child_eval(const ChildRequest& r) {
  ChildResult res;
  const fs::path out_file = r.scratch / "stdout.json";
  const fs::path traces_file = r.scratch / "traces.jsonl";
  std::error_code ec;
  fs::remove(out_file, ec);
  fs::remove(traces_file, ec);

  // The child's stdout goes to a file of its own (the shell redirects it, then
  // becomes solbench), its stderr to the capture.
  harness::SpawnOptions so;
  so.argv = {"/bin/sh", "-c", "exec \"$0\" \"$@\" >\"$SOLBENCH_RUN_STDOUT\"", r.program.string()};
  const bool eval = r.command == ChildRequest::Command::Eval;
  for (auto& a : eval ? eval_args(r) : baseline_args(r)) so.argv.push_back(std::move(a));
  so.env_set = {{"SOLBENCH_RUN_STDOUT", out_file.string()}};
  // The run's zygote: every evaluation's workers fork from one process that
  // imported torch once (harness/worker/zygote.h).
  for (auto& kv : harness::zygote_environment()) so.env_set.push_back(std::move(kv));
  for (const auto& kv : r.env) so.env_set.push_back(kv);
  so.output = harness::OutputMode::Capture;
  so.log_limit_bytes = 256 << 10;
  so.die_with_parent = true;

  const auto t0 = std::chrono::steady_clock::now();
  try {
    harness::Child child = harness::Child::spawn(so);
    const auto deadline =
        t0 + std::chrono::duration_cast<std::chrono::steady_clock::duration>(r.deadline);
    std::chrono::steady_clock::time_point stopped_at;
    for (;;) {
      if (auto st = child.poll()) {
        res.status = *st;
        break;
      }
      if (((r.stop && r.stop->load()) || (r.preempt && r.preempt->load())) && !res.interrupted) {
        // The run's signal (SIGTERM when stopped otherwise), once (a second one would
        // end it at once): the child ends its workers and removes its scratch
        // (harness/interrupt.h); killed if it takes too long.
        res.interrupted = true;
        stopped_at = std::chrono::steady_clock::now();
        ::kill(child.pid(), harness::interrupt_signal() ? harness::interrupt_signal() : SIGTERM);
      } else if (res.interrupted &&
                 std::chrono::steady_clock::now() - stopped_at > std::chrono::seconds(10)) {
        child.kill_group(SIGKILL);
      } else if (std::chrono::steady_clock::now() >= deadline && !res.timed_out) {
        res.timed_out = true;
        child.kill_group(SIGKILL);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    res.stderr_tail = tail(child.log(), 4000);
  } catch (const harness::SpawnError& e) {
    res.spawn_error = e.what();
    return res;
  }
  res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  res.traces = read_trace_lines(traces_file);
  if (!res.interrupted && !res.timed_out) {
    const std::string text = read_file(out_file);
    const json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (!j.is_discarded() && j.is_object()) res.document = j;
    if (eval && !j.is_discarded() && j.is_object() && j.contains("results")) {
      try {
        res.report = eval::Report::from_json(j);
      } catch (const std::exception&) {
        // Not eval's document: read as if none was printed.
      }
    }
  }
  return res;
}

}  // namespace solbench::runset
