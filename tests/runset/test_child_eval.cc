// The child evaluation: its command line, eval's JSON kept apart from its
// stderr, what a child that dies leaves (its -o traces, its stderr's tail), the
// run's deadline and stop request; which recording plan `eval --help` leads to.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <thread>

#include "core/problem.h"
#include "runset/child_eval.h"
#include "runset/run.h"
#include "runset_test_util.h"

namespace solbench::runset {
namespace {

using namespace testing;
using V = std::vector<std::string>;

fs::path script(const TempDir& t, const std::string& body) {
  const fs::path p = t.write("fake_solbench.sh", "#!/bin/sh\n" + body);
  fs::permissions(p, fs::perms::owner_all);
  return p;
}

// A finished trace line as eval appends it to -o.
std::string trace_line(const std::string& uuid) {
  Trace t;
  t.definition = "d";
  t.solution = "s";
  t.workload = {{"uuid", uuid}};
  t.evaluation.status = Status::RuntimeError;
  t.evaluation.log = "x";
  t.evaluation.environment.hardware = "cpu";
  t.evaluation.timestamp = "2026-01-01T00:00:00.000Z";
  return to_json(t).dump();
}

ChildRequest request(const TempDir& t, const fs::path& program) {
  ChildRequest r;
  r.program = program;
  r.problem_dir = "/p";
  r.solution_file = fs::path("/s.json");
  r.workloads = {"u1", "u2"};
  r.scratch = t.path() / "scratch";
  fs::create_directories(r.scratch);
  return r;
}

TEST(ChildEval, CommandLine) {
  TempDir t;
  ChildRequest r = request(t, "/bin/true");
  r.device = "cuda:1";
  eval::Settings f;
  f.rounds = 1;
  f.time_budget_ms = 20;
  f.no_timing = true;
  r.extra_args = {"--no-db"};
  for (auto& a : f.flags()) r.extra_args.push_back(a);
  const V a = eval_args(r);
  const V want = {"eval", "/p", "-s", "/s.json", "--device", "cuda:1", "--json", "-o",
                  (r.scratch / "traces.jsonl").string(), "-w", "u1", "-w", "u2", "--no-db",
                  "--rounds", "1", "--time-budget-ms", "20", "--no-timing"};
  EXPECT_EQ(a, want);
  r.solution_file.reset();
  const V b = eval_args(r);
  EXPECT_NE(std::find(b.begin(), b.end(), "--reference"), b.end());
  EXPECT_EQ(std::find(b.begin(), b.end(), "-s"), b.end());
}

TEST(ChildEval, TheBaselineCommandLineIsOneTheRealBaselineAccepts) {
  // T_b ahead (baseline_lane.h) runs `solbench baseline` with the run's store and
  // the settings T_b is measured with; a flag it refused would leave every
  // evaluation to measure its own, silently but for a warning.
  TempDir t;
  ChildRequest r = request(t, SOLBENCH_BINARY);
  r.command = ChildRequest::Command::Baseline;
  r.problem_dir = kProblems / kRms;
  r.solution_file.reset();
  Diagnostics d;
  const Problem p = load_problem(problem_paths(r.problem_dir), d);
  r.workloads = {p.workloads.at(0).uuid};
  eval::Settings f;
  f.rounds = 3;  // not T_b's: eval's T_b makes one round
  f.timeout_s = 120;
  f.seed = 7;
  f.target_rse = 0.5;
  f.time_budget_ms = 20;
  r.extra_args = {"--db", (t.path() / "store.db").string()};
  for (auto& a : f.baseline_flags()) r.extra_args.push_back(a);
  const V want = {"baseline", r.problem_dir.string(), "--device", "cpu", "--json", "-w",
                  r.workloads[0], "--db", (t.path() / "store.db").string(), "--timeout", "120",
                  "--seed", "7", "--target-rse", "0.5", "--time-budget-ms", "20"};
  EXPECT_EQ(baseline_args(r), want);
  r.env = {{"SOLBENCH_CACHE_DIR", (t.path() / "cache").string()},
           {"SOLBENCH_STAGING_DIR", (t.path() / "staging").string()}};
  const ChildResult c = run_child_eval(r);
  ASSERT_TRUE(c.document.is_object()) << c.describe() << "\n" << c.stderr_tail;
  EXPECT_FALSE(c.report);  // not eval's document
  const json& sum = c.document["summary"];
  EXPECT_EQ(sum.value("workloads", 0), 1);
  EXPECT_EQ(sum.value("measured", 0), 1);
  EXPECT_EQ(sum.value("without_baseline", 1), 0) << c.document.dump(1);
}

TEST(ChildEval, DeadlineCoversEveryWorkload) {
  eval::Settings f;
  f.timeout_s = 10;
  f.compile_timeout_s = 5;
  EXPECT_GT(f.deadline(3).count(), 5 + 3 * 10);
  EXPECT_GT(f.deadline(3).count(), f.deadline(1).count());
}

TEST(ChildEval, JsonFromStdoutStderrApart) {
  TempDir t;
  const fs::path p = script(t,
                            "echo 'warning: something' >&2\n"
                            "echo '{\"results\": [], \"environment\": {\"hardware\": \"h\"}}'\n"
                            "echo 'late line on stderr' >&2\n"
                            "exit 1\n");
  const ChildResult c = run_child_eval(request(t, p));
  ASSERT_TRUE(c.report) << c.stderr_tail;
  EXPECT_EQ(c.report->environment["hardware"], "h");
  EXPECT_HAS(c.stderr_tail, "warning: something");
  EXPECT_HAS(c.stderr_tail, "late line on stderr");
  EXPECT_EQ(c.status.exit_code, 1);
}

TEST(ChildEval, ACrashLeavesItsFinishedTracesAndStderr) {
  TempDir t;
  // Finds -o, writes one whole trace line and half of another, then dies.
  const fs::path p = script(t,
                            "while [ $# -gt 0 ]; do [ \"$1\" = -o ] && out=$2; shift; done\n"
                            "echo '" + trace_line("u1") + "' >> \"$out\"\n"
                            "printf '{\"definition\": \"d\", \"solu' >> \"$out\"\n"
                            "echo 'Segmentation fault in the evaluator' >&2\n"
                            "kill -SEGV $$\n");
  const ChildResult c = run_child_eval(request(t, p));
  EXPECT_FALSE(c.report);
  ASSERT_EQ(c.traces.size(), 1u);
  EXPECT_EQ(c.traces[0].workload["uuid"], "u1");
  EXPECT_HAS(c.stderr_tail, "Segmentation fault in the evaluator");
  EXPECT_HAS(c.describe(), "SIGSEGV");
}

TEST(ChildEval, DeadlineKillsAHungChild) {
  TempDir t;
  ChildRequest r = request(t, script(t, "sleep 30\n"));
  r.deadline = std::chrono::milliseconds(300);
  const auto t0 = std::chrono::steady_clock::now();
  const ChildResult c = run_child_eval(r);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
  EXPECT_TRUE(c.timed_out);
  EXPECT_FALSE(c.report);
  EXPECT_HAS(c.describe(), "deadline");
}

TEST(ChildEval, StopKillsTheChild) {
  TempDir t;
  std::atomic<bool> stop{false};
  ChildRequest r = request(t, script(t, "sleep 30\n"));
  r.stop = &stop;
  std::thread setter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    stop = true;
  });
  const auto t0 = std::chrono::steady_clock::now();
  const ChildResult c = run_child_eval(r);
  setter.join();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
  EXPECT_TRUE(c.interrupted);
  EXPECT_HAS(c.describe(), "interrupted");
}

TEST(ChildEval, MissingProgram) {
  TempDir t;
  const ChildResult c = run_child_eval(request(t, t.path() / "no-such-solbench"));
  EXPECT_FALSE(c.report);
  // The shell starts, the exec fails: exit 127 with the shell's message.
  EXPECT_TRUE(c.status.exited);
  EXPECT_EQ(c.status.exit_code, 127);
  EXPECT_HAS(c.stderr_tail, "no-such-solbench");
}

TEST(Recording, FromEvalHelp) {
  const std::string with_db =
      "Options:\n"
      "  -h,--help                   Print this help message and exit\n"
      "  --db TEXT Excludes: --no-db results store\n"
      "  --no-db Excludes: --db      do not record in the results store\n";
  const EvalSupport s = eval_support_from_help(with_db);
  EXPECT_TRUE(s.db);
  EXPECT_TRUE(s.no_db);
  // "--db" mentioned only inside another option's line is not an option.
  const EvalSupport only_no = eval_support_from_help("  --no-db Excludes: --db  do not record\n");
  EXPECT_FALSE(only_no.db);
  EXPECT_TRUE(only_no.no_db);
  EXPECT_FALSE(eval_support_from_help("  -o,--output TEXT  traces\n").db);

  const RecordingPlan e = plan_recording({true, true}, "/x.db");
  EXPECT_EQ(e.who, Recording::Eval);
  EXPECT_EQ(e.child_args, (V{"--db", "/x.db"}));
  EXPECT_EQ(e.probe_args, (V{"--no-db"}));
  const RecordingPlan r = plan_recording({false, true}, "/x.db");
  EXPECT_EQ(r.who, Recording::Run);
  EXPECT_EQ(r.child_args, (V{"--no-db"}));
  const RecordingPlan old = plan_recording({false, false}, "/x.db");
  EXPECT_EQ(old.who, Recording::Run);
  EXPECT_TRUE(old.child_args.empty());
  EXPECT_TRUE(old.probe_args.empty());
}

TEST(ChildEval, TraceLinesSkipACutLastLine) {
  TempDir t;
  const fs::path f =
      t.write("t.jsonl", trace_line("a") + "\n\n" + trace_line("b") + "\n{\"definition\": \"d\", ");
  const auto traces = read_trace_lines(f);
  ASSERT_EQ(traces.size(), 2u);
  EXPECT_EQ(traces[1].workload["uuid"], "b");
  EXPECT_TRUE(read_trace_lines(t.path() / "missing.jsonl").empty());
}

}  // namespace
}  // namespace solbench::runset
