// One evaluation in a child process: `solbench eval PROBLEM -s SOL --device D
// --json -o TRACES [-w UUID ...] [flags]`, re-executing this binary, so that a
// crash or hang of one evaluation cannot take the run down. The same runs a
// problem's T_b ahead of its evaluation (`solbench baseline PROBLEM --device D
// --json [-w UUID ...] [flags]`, baseline_lane.h).
//
// The child's stdout (eval's JSON document) goes to a file of its own, its
// stderr to a bounded capture (the tail explains a failure), and eval appends
// each trace to the -o file as its result arrives: when the child dies before
// printing its document, the workloads it had finished are still read back.
#pragma once

#include <atomic>
#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/json.h"
#include "core/trace.h"
#include "eval/report.h"
#include "harness/process.h"

namespace solbench::runset {

struct ChildRequest {
  enum class Command { Eval, Baseline };
  Command command = Command::Eval;
  std::filesystem::path program;  // the solbench binary (harness::self_exe())
  std::filesystem::path problem_dir;
  std::optional<std::filesystem::path> solution_file;  // nullopt: --reference (Eval only)
  std::vector<std::string> workloads;  // uuids (-w each); empty: eval's own selection
  std::string device = "cpu";
  std::vector<std::string> extra_args;  // recording (--db FILE / --no-db) and eval flags
  std::filesystem::path scratch;        // an existing folder for stdout.json and traces.jsonl
  std::vector<std::pair<std::string, std::string>> env;  // set in the child's environment
  std::chrono::duration<double> deadline = std::chrono::hours(24);
  const std::atomic<bool>* stop = nullptr;  // when set: the child is killed (interrupted)
  // The same for this child alone (T_b ahead's lane giving the GPU to an evaluation).
  const std::atomic<bool>* preempt = nullptr;
};

// The child's command line (after the program): eval's, or baseline's.
std::vector<std::string> eval_args(const ChildRequest& r);
std::vector<std::string> baseline_args(const ChildRequest& r);

struct ChildResult {
  std::optional<eval::Report> report;  // eval's --json output, when it printed one
  json document = nullptr;  // the child's --json output as printed (any command); null: none
  std::vector<Trace> traces;     // the -o file: one per finished workload (a cut last line is dropped)
  std::string stderr_tail;       // the last few kB of the child's stderr
  harness::ExitStatus status;
  bool interrupted = false;  // killed because `stop` was set
  bool timed_out = false;    // killed at `deadline`
  std::string spawn_error;   // the child could not be started
  double seconds = 0;
  // How the child ended, for messages: "exit 1", "killed by SIGSEGV", ...
  std::string describe() const;
};

ChildResult run_child_eval(const ChildRequest& r);

// The traces of a JSONL file that parse; a line cut short by a killed writer
// (or any line that does not parse) is skipped.
std::vector<Trace> read_trace_lines(const std::filesystem::path& file);

// The last `max` bytes of `s`, starting at a line boundary where there is one.
std::string tail(const std::string& s, size_t max);

}  // namespace solbench::runset
