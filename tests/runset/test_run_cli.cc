// `solbench run` end to end on a CATEGORY/PROBLEM data set of symlinked bundled
// problems and their CPU solutions (one workload each, one correctness round,
// 20 ms timing budgets): run then resume, SIGKILL mid-run then rerun, SIGINT,
// the --json document, the recording paths (eval --db, or run itself with
// --no-db to the child), and a crashing child.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "core/problem.h"
#include "core/solution.h"
#include "harness/eval_plan.h"
#include "runset/run.h"
#include "runset_test_util.h"
#include "store/store.h"

namespace solbench::runset {
namespace {

using namespace testing;

const std::string kFast = " --max-workloads 1 --rounds 1 --time-budget-ms 20 ";

// What must not depend on how the results were obtained (now, or from the
// store; on which slot; how fast).
json stable(json j) {
  if (j.is_object()) {
    for (const char* k : {"seconds", "evaluated", "resumed", "device", "environment_probes", "db"})
      j.erase(k);
    for (auto& [k, v] : j.items()) v = stable(v);
  } else if (j.is_array()) {
    for (auto& v : j) v = stable(v);
  }
  return j;
}

size_t traces_in(const fs::path& db) {
  if (!fs::exists(db)) return 0;
  store::Store::Options o;
  o.mode = store::Store::Mode::Existing;
  // The run creates the file before its tables: polled in between, it is empty,
  // which is "no trace yet", not an error.
  try {
    return store::Store::open(db, o).trace_count();
  } catch (const std::exception&) {
    return 0;
  }
}

// Processes whose command line mentions `needle` (children left behind).
int processes_mentioning(const std::string& needle) {
  int n = 0;
  for (const auto& e : fs::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string cmd = read(e.path() / "cmdline");
    for (char& c : cmd)
      if (c == '\0') c = ' ';
    if (cmd.find(needle) != std::string::npos) ++n;
  }
  return n;
}

class RunCli : public ::testing::Test {
 protected:
  void SetUp() override {
    ds_ = make_dataset(dir() / "data", {{"L1", kRms}, {"L1", kSwiglu}, {"L2", kSoftmax}});
    add_solution(sols_, kRms, "pytorch_simple");
    add_solution(sols_, kRms, "cpp_rowwise");
    add_solution(sols_, kSwiglu, "pytorch_simple");
    add_solution(sols_, kSoftmax, "pytorch_simple");
  }
  const fs::path& dir() const { return tmp_.path(); }
  // A PASSED trace of kRms's pytorch solution whose workload uuid reads "UUID",
  // for stand-in evals to fill in.
  fs::path passed_template() const {
    Trace passed;
    passed.definition = kRms;
    passed.solution = "rmsnorm_llama3_8b_h4096_pytorch";
    passed.workload = {{"uuid", "UUID"}};
    passed.evaluation.status = Status::Passed;
    passed.evaluation.correctness = Correctness{};
    passed.evaluation.performance = Performance{0.01, 0.02, 2};
    passed.evaluation.environment.hardware = "fake";
    passed.evaluation.timestamp = "2026-01-01T00:00:00.000Z";
    write(dir() / "template.json", to_json(passed).dump() + "\n");
    return dir() / "template.json";
  }
  // A stand-in for solbench: no --db in its help, no environment probe (an eval
  // with --reference fails); `body` is what its eval does.
  fs::path stand_in(const std::string& name, const std::string& body) const {
    const fs::path f = dir() / name;
    write(f, "#!/bin/sh\n"
             "case \"$*\" in *--help*) exit 0;; esac\n"
             "case \"$*\" in *--reference*) echo 'probe: no worker here' >&2; exit 1;; esac\n" +
                 body);
    fs::permissions(f, fs::perms::owner_all);
    return f;
  }
  std::string args(const fs::path& db, const std::string& more = "") const {
    return "run '" + ds_.string() + "' --solutions '" + sols_.string() + "'" + kFast + "--db '" +
           db.string() + "' " + more;
  }

  TempDir tmp_;
  fs::path ds_;
  fs::path sols_ = tmp_.path() / "solutions";
};

TEST_F(RunCli, RunThenResumeEvaluatesNothingNew) {
  const fs::path db = dir() / "a.db";
  const CliRun first = solbench(dir(), args(db, "--cpu-slots 3 --json"));
  ASSERT_EQ(first.rc, 0) << first.err << first.out;
  ASSERT_FALSE(first.doc.is_discarded()) << first.out;
  EXPECT_EQ(first.doc["slots"], json({"cpu", "cpu", "cpu"}));
  EXPECT_EQ(first.doc["total"]["evaluations"], 4);
  EXPECT_EQ(first.doc["total"]["statuses"]["PASSED"], 4);
  EXPECT_EQ(first.doc["total"]["evaluated"], 4);
  EXPECT_EQ(first.doc["total"]["resumed"], 0);
  EXPECT_EQ(traces_in(db), 4u);
  // Not a terminal: one plain line per finished evaluation.
  EXPECT_HAS(first.err, "[4/4] ");

  const CliRun second = solbench(dir(), args(db, "--cpu-slots 3 --json"));
  ASSERT_EQ(second.rc, 0) << second.err;
  EXPECT_EQ(second.doc["total"]["evaluated"], 0);
  EXPECT_EQ(second.doc["total"]["resumed"], 4);
  EXPECT_EQ(second.doc["environment_probes"], 1);  // one device kind: cpu
  EXPECT_EQ(traces_in(db), 4u);                    // nothing recorded again
  EXPECT_EQ(stable(first.doc), stable(second.doc));
  EXPECT_HAS(second.err, "from the store");

  // A changed solution is a new one: only it is evaluated again.
  const fs::path edited = sols_ / (std::string(kSwiglu) + "_pytorch_simple.json");
  json s = json::parse(read(edited));
  s["sources"][0]["content"] = s["sources"][0]["content"].get<std::string>() + "\n# edited\n";
  write(edited, s.dump(2));
  const CliRun third = solbench(dir(), args(db, "--json"));
  ASSERT_EQ(third.rc, 0) << third.err;
  EXPECT_EQ(third.doc["total"]["evaluated"], 1);
  EXPECT_EQ(third.doc["total"]["resumed"], 3);
  EXPECT_EQ(traces_in(db), 5u);
}

TEST_F(RunCli, KillThenRerunGivesTheUninterruptedTable) {
  const fs::path whole = dir() / "whole.db", killed = dir() / "killed.db";
  const CliRun reference = solbench(dir(), args(whole, "--json"));
  ASSERT_EQ(reference.rc, 0) << reference.err;

  size_t at_kill = 0;
  {
    Background bg(dir(), args(killed));
    ASSERT_TRUE(wait_until([&] { return traces_in(killed) >= 1; })) << bg.err();
    bg.signal(SIGKILL);
    const int st = bg.wait();
    ASSERT_TRUE(WIFSIGNALED(st));
    at_kill = traces_in(killed);
  }
  EXPECT_GE(at_kill, 1u);
  EXPECT_LT(at_kill, 4u) << "the run finished before it was killed: nothing was tested";
  // Its children died with it.
  EXPECT_TRUE(wait_until([&] { return processes_mentioning(killed.string()) == 0; },
                         std::chrono::seconds(10)));

  const CliRun rerun = solbench(dir(), args(killed, "--json"));
  ASSERT_EQ(rerun.rc, 0) << rerun.err;
  EXPECT_EQ(rerun.doc["total"]["resumed"], at_kill);
  EXPECT_EQ(rerun.doc["total"]["evaluated"], 4 - at_kill);
  EXPECT_EQ(traces_in(killed), 4u);
  json a = stable(reference.doc), b = stable(rerun.doc);
  a.erase("dataset");
  b.erase("dataset");
  EXPECT_EQ(a, b);
  // The printed tables too (both now entirely from their stores).
  const CliRun ta = solbench(dir(), args(whole)), tb = solbench(dir(), args(killed));
  EXPECT_EQ(ta.rc, 0);
  EXPECT_EQ(ta.out, tb.out);
  EXPECT_HAS(ta.out, "total: 3 problem(s), 4 evaluation(s), 4 result(s): 4 PASSED");
}

TEST_F(RunCli, SigintRecordsWhatFinishedPrintsTheSummaryAndExits130) {
  const fs::path db = dir() / "int.db";
  Background bg(dir(), args(db, "--json"));
  ASSERT_TRUE(wait_until([&] { return bg.err().find("[1/4]") != std::string::npos; })) << bg.err();
  bg.signal(SIGINT);
  const int st = bg.wait();
  ASSERT_TRUE(WIFEXITED(st)) << bg.err();
  EXPECT_EQ(WEXITSTATUS(st), 130) << bg.err();
  const json doc = json::parse(bg.out(), nullptr, false);
  ASSERT_FALSE(doc.is_discarded()) << bg.out();
  EXPECT_EQ(doc["interrupted"], true);
  const size_t passed = doc["total"]["statuses"].value("PASSED", 0);
  const size_t not_run = doc["total"]["not_run"];
  EXPECT_GE(passed, 1u);
  EXPECT_GE(not_run, 1u);
  EXPECT_EQ(passed + not_run, 4u);
  EXPECT_EQ(traces_in(db), passed);  // what returned is recorded, nothing else

  const CliRun rest = solbench(dir(), args(db, "--json"));
  ASSERT_EQ(rest.rc, 0) << rest.err;
  EXPECT_EQ(rest.doc["total"]["evaluated"], not_run);
  EXPECT_EQ(rest.doc["total"]["statuses"]["PASSED"], 4);
}

TEST_F(RunCli, JsonSummaryOfAReferenceRunWithScores) {
  // One problem folder, its reference, scored against the H100's bound; a broken
  // file among the solutions is reported and fails the run, the rest still runs.
  write(sols_ / "broken.json", "{\"definition\": ");
  const fs::path db = dir() / "ref.db";
  const CliRun r = solbench(dir(), "run '" + (kProblems / kRms).string() + "' --reference --solutions '" +
                                       sols_.string() + "'" + kFast + "--arch h100_sxm --db '" +
                                       db.string() + "' --json");
  EXPECT_EQ(r.rc, 1) << r.err;
  ASSERT_FALSE(r.doc.is_discarded()) << r.out;
  EXPECT_EQ(r.doc["layout"], "problem");
  ASSERT_EQ(r.doc["errors"].size(), 1u);
  EXPECT_HAS(r.doc["errors"][0].get<std::string>(), "broken.json");
  ASSERT_EQ(r.doc["problems"].size(), 1u);
  const json& p = r.doc["problems"][0];
  EXPECT_EQ(p["category"], "");
  EXPECT_EQ(p["definition"], kRms);
  EXPECT_EQ(p["workloads"], 1);
  // Its own solutions (and the reference) are evaluated on it; the others match no problem.
  ASSERT_EQ(p["solutions"].size(), 3u);
  EXPECT_EQ(p["solutions"][2]["solution"], std::string(kRms) + "/reference");
  EXPECT_TRUE(p["solutions"][2]["solution_file"].is_null());
  EXPECT_EQ(r.doc["unmatched_solutions"].size(), 2u);
  for (const json& s : p["solutions"]) {
    EXPECT_EQ(s["statuses"]["PASSED"], 1) << s.dump();
    EXPECT_EQ(s["workload_results"].size(), 1u);
    ASSERT_TRUE(s["mean_sol_score"].is_number()) << s.dump();
    EXPECT_GE(s["mean_sol_score"].get<double>(), 0.0);
    EXPECT_LE(s["mean_sol_score"].get<double>(), 1.0);
    EXPECT_EQ(s["scored"], 1);
  }
  ASSERT_EQ(r.doc["categories"].size(), 1u);
  EXPECT_EQ(r.doc["categories"][0]["category"], "");
  EXPECT_EQ(r.doc["categories"][0]["results"], 3);
  EXPECT_TRUE(r.doc["total"]["mean_sol_score"].is_number());
  EXPECT_EQ(traces_in(db), 3u);
}

TEST_F(RunCli, ACompileErrorIsAResultAndIsResumedToo) {
  // A C++ solution that does not build: eval records COMPILE_ERROR without a
  // worker (under the environment it predicts), which resume must find.
  const fs::path bad = dir() / "bad";
  json s = json::parse(read(add_solution(bad, kRms, "cpp_rowwise")));
  s["name"] = "does_not_build";
  s["sources"][0]["content"] = s["sources"][0]["content"].get<std::string>() + "\nnot C++;\n";
  write(bad / (std::string(kRms) + "_cpp_rowwise.json"), s.dump(2));
  const fs::path db = dir() / "ce.db";
  const std::string a = "run '" + (kProblems / kRms).string() + "' --solutions '" + bad.string() +
                        "' --max-workloads 2 --db '" + db.string() + "' --json";
  const CliRun first = solbench(dir(), a);
  EXPECT_EQ(first.rc, 1) << first.err;
  EXPECT_EQ(first.doc["total"]["statuses"]["COMPILE_ERROR"], 2) << first.out;
  const CliRun second = solbench(dir(), a);
  EXPECT_EQ(second.rc, 1);
  EXPECT_EQ(second.doc["total"]["resumed"], 2) << second.err;
  EXPECT_EQ(stable(first.doc), stable(second.doc));
  EXPECT_EQ(traces_in(db), 2u);
  // --rerun: the stored failures are evaluated again, not resumed.
  const CliRun third = solbench(dir(), a + " --rerun COMPILE_ERROR");
  EXPECT_EQ(third.rc, 1);
  EXPECT_EQ(third.doc["total"]["resumed"], 0) << third.err;
  EXPECT_EQ(third.doc["total"]["statuses"]["COMPILE_ERROR"], 2) << third.out;
  EXPECT_EQ(traces_in(db), 4u);
  // A status that was not stored changes nothing; an unknown one is a usage error.
  EXPECT_EQ(solbench(dir(), a + " --rerun TIMEOUT").doc["total"]["resumed"], 2);
  const CliRun bad_status = solbench(dir(), a + " --rerun SLOW");
  EXPECT_EQ(bad_status.rc, 2);
  EXPECT_HAS(bad_status.err, "--rerun SLOW");
  EXPECT_EQ(traces_in(db), 4u);
}

TEST_F(RunCli, UsageAndInputErrors) {
  const fs::path db = dir() / "e.db";
  CliRun r = solbench(dir(), "run '" + ds_.string() + "' --db '" + db.string() + "'");
  EXPECT_EQ(r.rc, 2);
  EXPECT_HAS(r.err, "--solutions");
  r = solbench(dir(), args(db, "--category L3"));
  EXPECT_EQ(r.rc, 1);
  EXPECT_HAS(r.err, "\"L3\": no such category");
  r = solbench(dir(), args(db, "--gpus 0 --device cpu"));
  EXPECT_EQ(r.rc, 2);
  r = solbench(dir(), args(db, "--gpus 0,0"));
  EXPECT_EQ(r.rc, 1);
  EXPECT_HAS(r.err, "listed twice");
  r = solbench(dir(), args(db, "--problem 'nothing*'"));
  EXPECT_EQ(r.rc, 1);
  EXPECT_HAS(r.err, "no problem matches");
  r = solbench(dir(), args(db, "--arch h300"));  // refused before anything runs
  EXPECT_EQ(r.rc, 2);
  EXPECT_HAS(r.err, "h300");
  EXPECT_FALSE(fs::exists(db));  // nothing ran, no store made
}

// run picks workloads with eval's options (-w, --max-workloads, --smallest) and
// passes --seed on; --no-db records nothing in any store.
TEST_F(RunCli, SelectsWorkloadsAsEvalDoesAndNoDbKeepsNothing) {
  const fs::path rms = ds_ / "L1" / kRms;
  const CliRun all = solbench(dir(), "validate '" + rms.string() + "' --json");
  ASSERT_EQ(all.rc, 0) << all.err;
  // The RMSNorm problem's third workload, by an 8-character prefix: the other
  // problems have no such workload and are left out of the run.
  const std::string uuid = all.doc["problems"][0]["workloads"][2]["uuid"].get<std::string>();
  const fs::path db = dir() / "sel.db";
  CliRun r = solbench(dir(), "run '" + ds_.string() + "' --solutions '" + sols_.string() +
                                 "' --rounds 1 --time-budget-ms 20 --seed 7 -w " +
                                 uuid.substr(0, 8) + " --no-db --json");
  ASSERT_EQ(r.rc, 0) << r.err << r.out;
  ASSERT_FALSE(r.doc.is_discarded()) << r.out;
  EXPECT_EQ(r.doc["total"]["evaluations"], 2);  // rmsnorm's two solutions
  EXPECT_EQ(r.doc["total"]["statuses"]["PASSED"], 2);
  EXPECT_EQ(r.doc["problems"].size(), 1u) << r.doc["problems"].dump();
  EXPECT_FALSE(fs::exists(db));
  EXPECT_FALSE(fs::exists(dir() / "cache" / "solbench.db"));  // the default store
  r = solbench(dir(), "run '" + ds_.string() + "' --solutions '" + sols_.string() +
                          "' -w deadbeef --no-db");
  EXPECT_EQ(r.rc, 2);
  EXPECT_HAS(r.err, "--workload deadbeef");
  // --smallest: the N smallest by bytes, as eval and baseline take them.
  r = solbench(dir(), "run '" + rms.string() + "' --solutions '" + sols_.string() +
                          "' --rounds 1 --no-timing --smallest 2 --no-db --json");
  ASSERT_EQ(r.rc, 0) << r.err << r.out;
  EXPECT_EQ(r.doc["total"]["results"], 4) << r.doc["total"].dump();  // 2 solutions x 2
}

// The engine called directly, with `program` standing in for solbench.
RunReport run_with(const fs::path& program, const fs::path& dataset, const fs::path& solutions,
                   const fs::path& db, int max_workloads) {
  RunOptions o;
  o.dataset = dataset;
  o.solutions = solutions;
  o.workloads.first = max_workloads;
  o.db = db;
  o.eval.rounds = 1;
  o.eval.time_budget_ms = 20;
  o.program = program;
  o.progress = nullptr;
  return run_dataset(o);
}

TEST_F(RunCli, AUsageErrorOfAnEvaluationIsNeverStoredAndStopsTheRun) {
  // A stand-in for solbench whose eval refuses its request as a usage error (exit 2).
  const fs::path fake = dir() / "refusing_solbench.sh";
  write(fake, "#!/bin/sh\n"
              "case \"$*\" in *--help*) exit 0;; esac\n"
              "echo 'error: --frobnicate: a usage error (a test)' >&2\n"
              "exit 2\n");
  fs::permissions(fake, fs::perms::owner_all);
  const fs::path db = dir() / "usage.db";
  const RunReport r = run_with(fake, ds_ / "L1", sols_, db, 1);
  EXPECT_EQ(exit_code(r), 2);
  EXPECT_HAS(r.usage_error, "a usage error (a test)");
  EXPECT_EQ(traces_in(db), 0u);  // nothing to "resume" later
}

TEST_F(RunCli, RunRecordsItselfWhenEvalHasNoDbAndPassesNoDb) {
  // An eval whose help lacks --db (as before it had a store) but has --no-db.
  const fs::path wrapper = dir() / "solbench_without_db.sh";
  write(wrapper, std::string("#!/bin/sh\n") +
                     "if [ \"$1\" = eval ] && [ \"$2\" = --help ]; then\n"
                     "  '" + SOLBENCH_BINARY + "' eval --help | grep -v -e '^ *--db '\n"
                     "  exit 0\nfi\n"
                     "exec '" + SOLBENCH_BINARY + "' \"$@\"\n");
  fs::permissions(wrapper, fs::perms::owner_all);
  const fs::path db = dir() / "own.db";
  ::setenv("SOLBENCH_CACHE_DIR", (dir() / "cache").c_str(), 1);
  ::setenv("SOLBENCH_STAGING_DIR", (dir() / "staging").c_str(), 1);
  RunReport r = run_with(wrapper, ds_ / "L1", sols_, db, 1);
  EXPECT_EQ(r.recording, "run");
  EXPECT_EQ(exit_code(r), 0) << summary_table(r);
  EXPECT_EQ(traces_in(db), 3u);  // once each: eval got --no-db
  EXPECT_FALSE(fs::exists(dir() / "cache" / "solbench.db"));
  {
    store::Store s = store::Store::open(db);
    for (const auto& t : s.history({})) {
      EXPECT_EQ(t.extras.value("recorded_by", ""), "solbench run");
      EXPECT_EQ(t.status, Status::Passed);
    }
  }
  r = run_with(wrapper, ds_ / "L1", sols_, db, 1);
  Tally all;
  for (const auto& p : r.problems)
    for (const auto& e : p.evaluations) all.add(e);
  EXPECT_EQ(all.resumed, 3u);
  EXPECT_EQ(all.evaluated, 0u);
  EXPECT_EQ(traces_in(db), 3u);
}

TEST_F(RunCli, ACrashingEvalKeepsWhatFinishedAndRecordsTheRestAsRuntimeError) {
  // A stand-in for solbench: no --db in its help, no environment probe; an
  // evaluation writes the first workload's trace to -o, then dies of SIGSEGV.
  const fs::path fake = stand_in("crashing_solbench.sh",
                                 "first=''; out=''\n"
                                 "while [ $# -gt 0 ]; do case \"$1\" in\n"
                                 "  -o) out=$2; shift;;\n"
                                 "  -w) [ -z \"$first\" ] && first=$2; shift;;\n"
                                 "esac; shift; done\n"
                                 "sed \"s/UUID/$first/\" '" + passed_template().string() +
                                     "' >> \"$out\"\n"
                                     "echo 'fatal: boom in the evaluator' >&2\n"
                                     "kill -SEGV $$\n");
  const fs::path only = dir() / "only";
  add_solution(only, kRms, "pytorch_simple");
  const fs::path db = dir() / "crash.db";
  const RunReport r = run_with(fake, kProblems / kRms, only, db, 2);
  ASSERT_EQ(r.problems.size(), 1u);
  ASSERT_EQ(r.problems[0].evaluations.size(), 1u);
  const EvaluationReport& e = r.problems[0].evaluations[0];
  EXPECT_HAS(e.error, "SIGSEGV");
  EXPECT_HAS(e.error, "fatal: boom in the evaluator");
  ASSERT_EQ(e.results.size(), 2u);
  ASSERT_TRUE(e.results[0] && e.results[1]);
  EXPECT_EQ(e.results[0]->status, Status::Passed);        // from its -o file
  EXPECT_EQ(e.results[1]->status, Status::RuntimeError);  // never reported
  EXPECT_EQ(exit_code(r), 1);

  store::Store s = store::Store::open(db);
  const auto rows = s.history({});
  ASSERT_EQ(rows.size(), 2u);
  const store::StoredTrace& failed =
      rows[0].status == Status::RuntimeError ? rows[0] : rows[1];
  EXPECT_EQ(failed.workload_uuid, e.uuids[1]);
  EXPECT_HAS(failed.trace().evaluation.log, "fatal: boom in the evaluator");
  EXPECT_HAS(failed.trace().evaluation.log, "SIGSEGV");
}

TEST_F(RunCli, OnSeveralGpusAnEvaluationLongerThanAGpusShareIsCutIntoParts) {
  // A stand-in for solbench whose eval writes a PASSED trace for each workload it
  // is given (-w) to -o; no environment probe. One problem, one solution, four
  // workloads: that evaluation is all the run's work, more than one GPU's share,
  // so on two GPUs it runs as two child evals of about half its bytes each
  // (split_for_slots), together giving every workload once. Two slots on one GPU
  // (--jobs-per-gpu 2), or on the CPU, cut nothing.
  const fs::path fake = stand_in("passing_solbench.sh",
                                 "ws=''; out=''\n"
                                 "while [ $# -gt 0 ]; do case \"$1\" in\n"
                                 "  -o) out=$2; shift;;\n"
                                 "  -w) ws=\"$ws $2\"; shift;;\n"
                                 "esac; shift; done\n"
                                 "for w in $ws; do sed \"s/UUID/$w/\" '" +
                                     passed_template().string() + "' >> \"$out\"; done\n");
  const fs::path only = dir() / "only";
  add_solution(only, kRms, "pytorch_simple");
  auto run_on = [&](std::vector<std::string> slots, const std::string& db) {
    RunOptions o;
    o.dataset = kProblems / kRms;
    o.solutions = only;
    o.workloads.first = 4;
    o.db = dir() / db;
    o.eval.rounds = 1;
    o.program = fake;
    o.progress = nullptr;
    o.slots = std::move(slots);
    return run_dataset(o);
  };
  const RunReport two = run_on({"cuda:0", "cuda:1"}, "two.db");
  ASSERT_EQ(two.problems.size(), 1u);
  const auto& evs = two.problems[0].evaluations;
  ASSERT_EQ(evs.size(), 2u);
  std::set<std::string> uuids;
  size_t results = 0;
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(evs[i].part, fmt::format("{}/2", i + 1));
    EXPECT_GE(evs[i].uuids.size(), 1u);
    for (const auto& r : evs[i].results) {
      ASSERT_TRUE(r.has_value());
      EXPECT_EQ(r->status, Status::Passed);
      uuids.insert(r->uuid);
      ++results;
    }
  }
  EXPECT_EQ(results, 4u);
  EXPECT_EQ(uuids.size(), 4u);
  EXPECT_EQ(traces_in(dir() / "two.db"), 4u);
  EXPECT_HAS(summary_table(two), "[2/2]");
  for (const auto& [slots, db] : {std::pair{std::vector<std::string>{"cuda:0", "cuda:0"}, "jobs.db"},
                                  std::pair{std::vector<std::string>{"cpu", "cpu"}, "cpu.db"}}) {
    const RunReport one = run_on(slots, db);
    ASSERT_EQ(one.problems[0].evaluations.size(), 1u) << db;
    EXPECT_TRUE(one.problems[0].evaluations[0].part.empty());
    EXPECT_EQ(one.problems[0].evaluations[0].results.size(), 4u);
  }
}

// A stand-in for solbench whose eval reports (--json) every workload it is given
// as skipped with `reason`, or, when `pass_after_first` and it has skipped once
// already, as PASSED; an environment probe (--reference) reports a worker
// environment and nothing else. Each invocation's arguments go to a line of `log`,
// followed by the T_b worker count's share variables it was given.
fs::path skipping_stand_in(const fs::path& dir, const std::string& name, const fs::path& log,
                           const std::string& reason, const fs::path& passed_template = {}) {
  const fs::path f = dir / name;
  const fs::path once = dir / (name + ".skipped-once");
  std::string passing;
  if (!passed_template.empty())
    passing = "if [ -e '" + once.string() + "' ]; then\n"
              "  for w in $ws; do printf '%s' \"$sep\"; sed \"s/UUID/$w/\" '" +
              passed_template.string() + "' | tr -d '\\n'; sep=','; done\n"
              "  printf ']}\\n'; exit 0\n"
              "fi\n"
              "touch '" + once.string() + "'\n";
  // Only `eval` acts: the run also starts its zygote (`__zygote`) with this program.
  write(f, "#!/bin/sh\n"
           "[ \"$1\" = eval ] || exit 0\n"
           "case \"$*\" in *--help*) exit 0;; esac\n"
           "echo \"$* cpus=${SOLBENCH_BASELINE_CPUS:-} share=${SOLBENCH_BASELINE_GPU_SHARE:-}\" >> '" +
               log.string() + "'\n"
           "env='\"environment\":{\"hardware\":\"Fake GPU\",\"timer\":\"events\"}'\n"
           "case \"$*\" in *--reference*) echo \"{$env,\\\"results\\\":[]}\"; exit 0;; esac\n"
           "ws=''\n"
           "while [ $# -gt 0 ]; do case \"$1\" in -w) ws=\"$ws $2\"; shift;; esac; shift; done\n"
           "sep=''; printf '{%s,\"results\":[' \"$env\"\n" +
               passing +
               "for w in $ws; do printf '%s{\"workload\":{\"uuid\":\"%s\"},\"skipped\":true,"
               "\"skip_reason\":\"%s\"}' \"$sep\" \"$w\" '" + reason + "'; sep=','; done\n"
               "printf ']}\\n'\n");
  fs::permissions(f, fs::perms::owner_all);
  return f;
}

// Lines of the stand-in's log that are evaluations (-s SOLUTION), and probes.
size_t evaluations_in(const fs::path& log) {
  size_t n = 0;
  std::istringstream in(read(log));
  for (std::string line; std::getline(in, line);) n += line.find(" -s ") != std::string::npos;
  return n;
}
size_t probes_in(const fs::path& log) {
  size_t n = 0;
  std::istringstream in(read(log));
  for (std::string line; std::getline(in, line);) n += line.find("--reference") != std::string::npos;
  return n;
}

size_t skips_in(const fs::path& db) {
  store::Store::Options o;
  o.mode = store::Store::Mode::Existing;
  return store::Store::open(db, o).skip_count();
}

const char* kOomReason =
    "out of GPU memory: CUDA out of memory. Tried to allocate 20.00 GiB (a test)";

class RunSkips : public RunCli {
 protected:
  RunReport run_on(const fs::path& program, std::vector<std::string> slots,
                   bool rerun_skipped = false) {
    RunOptions o;
    o.dataset = kProblems / kRms;
    o.solutions = only_;
    o.workloads.first = 2;
    o.db = db_;
    o.eval.rounds = 1;
    o.program = program;
    o.progress = nullptr;
    o.slots = std::move(slots);
    o.rerun_skipped = rerun_skipped;
    return run_dataset(o);
  }
  void SetUp() override {
    RunCli::SetUp();
    add_solution(only_, kRms, "pytorch_simple");
  }
  fs::path only_ = dir() / "only";
  fs::path db_ = dir() / "skips.db";
  fs::path log_ = dir() / "evals.log";
};

TEST_F(RunSkips, AnOutOfMemorySkipAloneIsStoredAndTheNextRunStartsNoChildForIt) {
  const fs::path fake = skipping_stand_in(dir(), "oom_solbench.sh", log_, kOomReason);
  const RunReport first = run_on(fake, {"cuda:0"});
  ASSERT_EQ(first.problems.size(), 1u);
  const EvaluationReport& e1 = first.problems[0].evaluations.at(0);
  ASSERT_EQ(e1.results.size(), 2u);
  for (const auto& r : e1.results) {
    ASSERT_TRUE(r);
    EXPECT_FALSE(r->status);
    EXPECT_FALSE(r->resumed);
    EXPECT_EQ(r->skip_reason, kOomReason);
  }
  EXPECT_EQ(evaluations_in(log_), 1u);
  EXPECT_EQ(probes_in(log_), 0u);  // the environment came with the child's report
  EXPECT_EQ(skips_in(db_), 2u);
  {
    store::Store s = store::Store::open(db_);
    const auto rows = s.skips(e1.solution_hash, e1.uuids, "");
    ASSERT_EQ(rows.size(), 2u);
    EXPECT_EQ(rows[0].reason, kOomReason);
    EXPECT_EQ(rows[0].definition, kRms);
    EXPECT_EQ(s.trace_count(), 0u);
  }

  // Again: both from the store, no evaluation started (the one probe tells the
  // environment, which is how stored skips are matched).
  const RunReport second = run_on(fake, {"cuda:0"});
  const EvaluationReport& e2 = second.problems[0].evaluations.at(0);
  Tally t;
  t.add(e2);
  EXPECT_EQ(t.skipped, 2u);
  EXPECT_EQ(t.resumed, 2u);
  EXPECT_EQ(t.evaluated, 0u);
  for (const auto& r : e2.results) {
    ASSERT_TRUE(r);
    EXPECT_EQ(r->skip_reason.rfind(std::string(kOomReason) + kFromTheStore, 0), 0u)
        << r->skip_reason;
  }
  EXPECT_EQ(evaluations_in(log_), 1u);
  EXPECT_EQ(probes_in(log_), 1u);
  EXPECT_EQ(skips_in(db_), 2u);
  EXPECT_EQ(second.environment_probes, 1);
  const json doc = summary_json(second);
  EXPECT_EQ(doc["total"]["resumed"], 2);
  EXPECT_HAS(doc["problems"][0]["solutions"][0]["workload_results"][0].value("skip_reason", ""),
             "(from the store: ");

  // Two slots on the GPU: taken from the store at the first evaluation, and not
  // retried alone as a skip seen beside others would be (it was seen alone).
  const RunReport shared = run_on(fake, {"cuda:0", "cuda:0"});
  Tally ts;
  ts.add(shared.problems[0].evaluations.at(0));
  EXPECT_EQ(ts.resumed, 2u);
  EXPECT_EQ(ts.skipped, 2u);
  EXPECT_EQ(evaluations_in(log_), 1u);

  // --rerun skipped: evaluated again (and, skipped again, stored again).
  const RunReport third = run_on(fake, {"cuda:0"}, /*rerun_skipped=*/true);
  Tally t3;
  t3.add(third.problems[0].evaluations.at(0));
  EXPECT_EQ(t3.evaluated, 2u);
  EXPECT_EQ(t3.resumed, 0u);
  EXPECT_EQ(evaluations_in(log_), 2u);
  EXPECT_EQ(skips_in(db_), 4u);
}

TEST_F(RunSkips, OtherSkipReasonsAreNotStoredAndAreTriedAgain) {
  const fs::path fake = skipping_stand_in(
      dir(), "blob_solbench.sh", log_,
      "the inputs need safetensors blobs this copy lacks: blobs/x.safetensors (a test)");
  for (int i = 0; i < 2; ++i) {
    const RunReport r = run_on(fake, {"cuda:0"});
    Tally t;
    t.add(r.problems[0].evaluations.at(0));
    EXPECT_EQ(t.skipped, 2u) << i;
    EXPECT_EQ(t.evaluated, 2u) << i;
  }
  EXPECT_EQ(evaluations_in(log_), 2u);
  EXPECT_EQ(skips_in(db_), 0u);
}

TEST_F(RunSkips, AnOutOfMemorySkipBesideOthersIsNotStored) {
  // Two slots on one GPU (--jobs-per-gpu 2): the first evaluation runs out of GPU
  // memory, which beside others proves nothing; alone (the retry) it fits.
  const fs::path fake =
      skipping_stand_in(dir(), "oom_once_solbench.sh", log_, kOomReason, passed_template());
  const RunReport r = run_on(fake, {"cuda:0", "cuda:0"});
  const EvaluationReport& e = r.problems[0].evaluations.at(0);
  for (const auto& w : e.results) {
    ASSERT_TRUE(w);
    EXPECT_EQ(w->status, Status::Passed) << w->skip_reason;
  }
  EXPECT_EQ(evaluations_in(log_), 2u);  // the first, and the retry alone
  EXPECT_EQ(skips_in(db_), 0u);
  EXPECT_EQ(traces_in(db_), 2u);
}

TEST_F(RunSkips, EachChildsBaselineWorkersCountOnItsShareOfTheCpusAndOfTheGpu) {
  // T_b's automatic count (score/baseline.h) in each child: the CPUs over the slots
  // side by side in its pass, the GPU's memory over the slots on its GPU. One slot:
  // neither is set. Two on one GPU: half the CPUs and a share of 2, then the retry
  // alone with the whole machine. Two GPUs: half the CPUs each, each GPU its own.
  const std::string half = fmt::format(
      "cpus={}", std::max(1u, std::max(1u, std::thread::hardware_concurrency()) / 2));
  const auto lines = [&] {
    std::vector<std::string> out;
    std::istringstream in(read(log_));
    for (std::string line; std::getline(in, line);)
      if (line.find(" -s ") != std::string::npos) out.push_back(line);
    fs::remove(log_);
    return out;
  };
  const fs::path fake = skipping_stand_in(dir(), "share_solbench.sh", log_, kOomReason);
  run_on(fake, {"cuda:0"});
  std::vector<std::string> l = lines();
  ASSERT_EQ(l.size(), 1u);
  EXPECT_HAS(l[0], " cpus= share=");

  run_on(fake, {"cuda:0", "cuda:0"}, /*rerun_skipped=*/true);
  l = lines();
  ASSERT_EQ(l.size(), 2u);  // beside the other slot, then the retry alone
  EXPECT_HAS(l[0], " " + half + " share=2");
  EXPECT_HAS(l[1], " cpus= share=");

  run_on(fake, {"cuda:0", "cuda:1"}, /*rerun_skipped=*/true);
  l = lines();
  ASSERT_GE(l.size(), 1u);  // in parts, one per GPU, where the evaluation is cut
  for (const std::string& line : l) {
    EXPECT_HAS(line, " " + half + " share=");
    EXPECT_TRUE(line.ends_with(" share=")) << line;
  }
}

// A stand-in for solbench that records the store (--db in its help): its eval
// reports every workload PASSED, its baseline sleeps `baseline_s` and reports
// each workload measured. Each invocation's start (and a baseline's end) goes to
// a line of `log`: "COMMAND-start PROBLEM cpus=.. share=.. ARGS", "baseline-end
// PROBLEM".
fs::path lane_stand_in(const fs::path& dir, const fs::path& log, const fs::path& passed_template,
                       const std::string& baseline_s, const std::string& baseline_exit = "0",
                       const std::string& slow_problem = "-", const std::string& eval_s = "0") {
  const fs::path f = dir / "lane_solbench.sh";
  write(f, "#!/bin/sh\n"
           "case \"$*\" in *--help*) echo '  --db TEXT  the store'; exit 0;; esac\n"
           "[ \"$1\" = eval ] || [ \"$1\" = baseline ] || exit 0\n"
           "cmd=$1; prob=$(basename \"$2\")\n"
           "echo \"$cmd-start $prob cpus=${SOLBENCH_BASELINE_CPUS:-} "
           "share=${SOLBENCH_BASELINE_GPU_SHARE:-} memshares=${SOLBENCH_BASELINE_MEMORY_SHARES:-} "
           "$*\" >> '" + log.string() + "'\n"
           "ws=''\n"
           "while [ $# -gt 0 ]; do case \"$1\" in -w) ws=\"$ws $2\"; shift;;\n"
           "  --baselines-ahead) echo \"ahead-doc $prob $(cat \"$2\")\" >> '" + log.string() + "'; shift;;\n"
           "esac; shift; done\n"
           "if [ \"$cmd\" = baseline ]; then\n"
           "  if [ \"$prob\" = '" + slow_problem + "' ]; then sleep 3; else sleep " + baseline_s + "; fi\n"
           "  echo \"baseline-end $prob\" >> '" + log.string() + "'\n"
           "  [ " + baseline_exit + " = 0 ] || exit " + baseline_exit + "\n"
           "  n=$(echo $ws | wc -w)\n"
           "  printf '{\"summary\":{\"workloads\":%s,\"cached\":0,\"measured\":%s,"
           "\"without_baseline\":0}}\\n' $n $n\n"
           "  exit 0\n"
           "fi\n"
           "sleep " + eval_s + "\n"
           "env='\"environment\":{\"hardware\":\"Fake GPU\",\"timer\":\"events\"}'\n"
           "sep=''; printf '{%s,\"results\":[' \"$env\"\n"
           "for w in $ws; do printf '%s' \"$sep\"; sed \"s/UUID/$w/\" '" +
               passed_template.string() + "' | tr -d '\\n'; sep=','; done\n"
           "printf ']}\\n'\n");
  fs::permissions(f, fs::perms::owner_all);
  return f;
}

// Every evaluation of a run, counted together.
Tally tally_of(const RunReport& r) {
  Tally t;
  for (const auto& p : r.problems)
    for (const auto& e : p.evaluations) t.add(e);
  return t;
}

std::vector<std::string> log_lines(const fs::path& log) {
  std::vector<std::string> out;
  std::istringstream in(read(log));
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

class RunAhead : public RunCli {
 protected:
  // The first `first` workloads of each problem on "cuda:0", `ahead` jobs at once.
  RunOptions options(const fs::path& program, int ahead, size_t first = 1) const {
    RunOptions o;
    o.dataset = ds_;
    o.solutions = sols_;
    o.workloads.first = first;
    o.db = dir() / "ahead.db";
    o.eval.rounds = 2;
    o.program = program;
    o.progress = nullptr;
    o.slots = {"cuda:0"};
    o.baseline_ahead = ahead;
    return o;
  }
  RunReport run_with(const fs::path& program, int ahead) {
    RunOptions o = options(program, ahead);
    std::FILE* progress = std::fopen((dir() / "progress.txt").string().c_str(), "w");
    o.progress = progress;
    o.eval.time_budget_ms = 20;
    RunReport r = run_dataset(o);
    std::fclose(progress);
    return r;
  }
  // `problem` (of `category`) replaced by a copy whose one workload is `workload`.
  void with_one_workload(const char* category, const char* problem,
                         const std::string& workload) const {
    const fs::path p = ds_ / category / problem;
    fs::remove(p);
    fs::create_directories(p);
    for (const char* f : {"definition.json", "reference.py"})
      if (fs::exists(kProblems / problem / f)) fs::copy_file(kProblems / problem / f, p / f);
    write(p / "workload.jsonl", workload + "\n");
  }
  // The first line of the log that starts with `prefix`; the line count where none.
  size_t first_line(const std::string& prefix) const {
    const std::vector<std::string> lines = log_lines(log_);
    for (size_t i = 0; i < lines.size(); ++i)
      if (lines[i].rfind(prefix, 0) == 0) return i;
    return lines.size();
  }
  // How many jobs of `problem` started.
  size_t job_starts(const std::string& problem) const {
    size_t n = 0;
    for (const std::string& l : log_lines(log_)) n += l.rfind("baseline-start " + problem, 0) == 0;
    return n;
  }
  fs::path log_ = dir() / "ahead.log";
};

TEST_F(RunAhead, TheNextProblemsBaselinesAreMeasuredBesideAndEachEvaluationWaitsForItsOwn) {
  // Four evaluations of three problems, in the data set's order: RMSNorm's two
  // solutions, then SwiGLU's, then softmax's. The lane measures the T_b of the
  // problems after the first, two at a time, in `baseline` children given the
  // run's store and T_b's settings; each evaluation starts after its problem's.
  const fs::path fake = lane_stand_in(dir(), log_, passed_template(), "1");
  const RunReport r = run_with(fake, 2);
  const std::vector<std::string> lines = log_lines(log_);
  const auto at = [&](const std::string& prefix) {
    for (size_t i = 0; i < lines.size(); ++i)
      if (lines[i].rfind(prefix, 0) == 0) return i;
    ADD_FAILURE() << "no line " << prefix << " in:\n" << read(log_);
    return lines.size();
  };
  size_t baselines = 0;
  // Three quarters of the CPUs over the two jobs at once; the GPU's memory over
  // them and the evaluation.
  const std::string lane_cpus = fmt::format(
      "cpus={}", std::max(1u, std::max(1u, std::thread::hardware_concurrency()) * 3 / 4 / 2));
  for (const std::string& l : lines) {
    if (l.rfind("baseline-start", 0) != 0) continue;
    ++baselines;
    // Beside evaluations, whose workers hold none: no shares of the GPU's memory.
    EXPECT_HAS(l, " " + lane_cpus + " share=3 memshares=0 baseline ");
    EXPECT_HAS(l, " --device cuda:0 --json -w ");
    EXPECT_HAS(l, " --db " + (dir() / "ahead.db").string());
    EXPECT_HAS(l, " --time-budget-ms 20");
    EXPECT_EQ(l.find("--rounds"), std::string::npos) << l;  // eval's T_b makes one round
  }
  EXPECT_EQ(baselines, 2u);
  // Each evaluation is handed its job's document (eval --baselines-ahead).
  EXPECT_HAS(lines[at(std::string("ahead-doc ") + kSwiglu)], "\"measured\":1");
  EXPECT_HAS(lines[at(std::string("ahead-doc ") + kSoftmax)], "\"measured\":1");
  EXPECT_EQ(read(log_).find(std::string("ahead-doc ") + kRms), std::string::npos);
  EXPECT_LT(at(std::string("baseline-end ") + kSwiglu), at(std::string("eval-start ") + kSwiglu));
  EXPECT_LT(at(std::string("baseline-end ") + kSoftmax), at(std::string("eval-start ") + kSoftmax));
  // Measured beside the first problem's evaluations: both started before its first.
  EXPECT_LT(at(std::string("baseline-start ") + kSoftmax), at(std::string("eval-start ") + kSwiglu));
  for (const std::string& l : lines) {
    if (l.rfind("eval-start", 0) == 0) {
      EXPECT_HAS(l, " cpus= share=3 memshares= eval ");
    }
  }
  ASSERT_TRUE(r.baseline_ahead);
  ASSERT_EQ(r.baseline_ahead->size(), 2u);
  for (const auto& b : *r.baseline_ahead) {
    EXPECT_EQ(b.outcome.state, LaneOutcome::State::Done) << b.problem;
    EXPECT_EQ(b.outcome.measured, 1u);
    EXPECT_TRUE(b.outcome.error.empty()) << b.outcome.error;
  }
  EXPECT_EQ(r.baseline_ahead_jobs, 2);
  EXPECT_HAS(read(dir() / "progress.txt"),
             "note: T_b ahead: 2 of 2 problem(s) done beside the evaluations, 2 at a time (2 "
             "workload(s) with a T_b)");
  const json doc = summary_json(r);
  EXPECT_EQ(doc["baseline_ahead"]["jobs"].size(), 2u);
  EXPECT_EQ(doc["baseline_ahead"]["jobs"][0]["state"], "done");
  EXPECT_EQ(doc["baseline_ahead"]["jobs"][0]["measured"], 1);
  Tally t = tally_of(r);
  EXPECT_EQ(t.statuses["PASSED"], 4u);

  // Off: every evaluation measures its own, with the GPU's memory to itself.
  fs::remove(log_);
  const RunReport off = run_with(fake, 0);
  EXPECT_FALSE(off.baseline_ahead);
  for (const std::string& l : log_lines(log_)) {
    EXPECT_EQ(l.rfind("baseline", 0), std::string::npos) << l;
    EXPECT_HAS(l, " cpus= share= memshares= eval ");
  }
}

TEST_F(RunAhead, AnEvaluationWhoseJobStillRunsLetsTheNextReadyOneGoFirst) {
  // SwiGLU's job takes 3 s, softmax's 0.2 s; RMSNorm's two evaluations 0.4 s each.
  // After them softmax, whose job has ended, is evaluated before SwiGLU.
  const fs::path fake =
      lane_stand_in(dir(), log_, passed_template(), "0.2", "0", kSwiglu, "0.4");
  const RunReport r = run_with(fake, 2);
  const std::string log = read(log_);
  const size_t softmax = log.find(std::string("eval-start ") + kSoftmax);
  const size_t swiglu = log.find(std::string("eval-start ") + kSwiglu);
  ASSERT_NE(softmax, std::string::npos) << log;
  ASSERT_NE(swiglu, std::string::npos) << log;
  EXPECT_LT(softmax, swiglu) << log;
  EXPECT_LT(log.find(std::string("baseline-end ") + kSwiglu), swiglu) << log;
  Tally t = tally_of(r);
  EXPECT_EQ(t.statuses["PASSED"], 4u);
}

TEST_F(RunAhead, AWorkloadTheStoreHoldsAResultOfGetsNoJob) {
  // A resumed run starts no `baseline` child for what it resumes: SwiGLU's one
  // workload has a stored trace of its solution (another environment's: the lane
  // does not ask), softmax's has none.
  const fs::path fake = lane_stand_in(dir(), log_, passed_template(), "0.1");
  const RunReport first = run_with(fake, 2);
  const EvaluationReport* swiglu = nullptr;
  for (const auto& p : first.problems)
    if (p.definition == kSwiglu) swiglu = &p.evaluations.at(0);
  ASSERT_NE(swiglu, nullptr);
  {
    store::Store db = store::Store::open(dir() / "ahead.db");
    Diagnostics d;
    const Solution sol = load_solution(swiglu->solution_file, d);
    ASSERT_EQ(db.put_solution(store::SolutionRecord::from(sol)), swiglu->solution_hash);
    const Problem p = load_problem(problem_paths(kProblems / kSwiglu), d);
    ASSERT_TRUE(d.empty());
    harness::WorkloadOutcome o;
    o.status = Status::RuntimeError;
    o.log = "x";
    const Trace tr = harness::make_trace(p, 0, swiglu->solution, o, {{"hardware", "Other GPU"}});
    const std::string env = db.put_environment(store::environment_from_trace(tr));
    db.record_trace(db.begin_run({"test", "", "", ""}), tr,
                    {swiglu->solution_hash, env, std::nullopt, std::nullopt, std::nullopt,
                     json::object()});
  }
  fs::remove(log_);
  const RunReport again = run_with(fake, 2);
  size_t baselines = 0;
  for (const std::string& l : log_lines(log_))
    if (l.rfind("baseline-start", 0) == 0) {
      ++baselines;
      EXPECT_HAS(l, std::string("baseline-start ") + kSoftmax);
    }
  EXPECT_EQ(baselines, 1u);
  ASSERT_TRUE(again.baseline_ahead);
  EXPECT_EQ(again.baseline_ahead->size(), 1u);
}

TEST_F(RunAhead, AJobTakesTheWorkloadsThatFitBesideAnEvaluationAndLeavesTheLargerOnes) {
  // Softmax with three workloads: batch 1 (1 MB of values), batch 4096 (4.2 GB:
  // 8 times that, for two jobs at once, is over harness::kBesideEvaluationBytes)
  // and one whose safetensors blob is not here. Its job measures the first; the
  // evaluation measures the large one's T_b and skips the third.
  const fs::path soft = ds_ / "L2" / kSoftmax;
  fs::remove(soft);
  fs::create_directories(soft);
  fs::copy_file(kProblems / kSoftmax / "definition.json", soft / "definition.json");
  const std::string small = "0b1c2d3e-0000-4000-8000-000000000001";
  const std::string large = "0b1c2d3e-0000-4000-8000-000000000002";
  std::string lines;
  for (const auto& [uuid, batch] : {std::pair{small, 1}, std::pair{large, 4096}})
    lines += fmt::format(
        "{{\"uuid\": \"{}\", \"axes\": {{\"batch_size\": {}}}, \"inputs\": {{\"logits\": "
        "{{\"type\": \"random\"}}}}, \"tolerance\": {{\"max_atol\": 1e-08, \"max_rtol\": "
        "0.001}}}}\n",
        uuid, batch);
  const std::string no_blob = "0b1c2d3e-0000-4000-8000-000000000004";
  lines += "{\"uuid\": \"" + no_blob +
           "\", \"axes\": {\"batch_size\": 1}, \"inputs\": {\"logits\": {\"type\": "
           "\"safetensors\", \"path\": \"blob/none.safetensors\", \"tensor_key\": \"logits\"}}, "
           "\"tolerance\": {\"max_atol\": 1e-08, \"max_rtol\": 0.001}}\n";
  write(soft / "workload.jsonl", lines);
  const RunOptions o = options(lane_stand_in(dir(), log_, passed_template(), "0"), 2, 3);
  const RunReport r = run_dataset(o);
  std::string softmax_job;
  for (const std::string& l : log_lines(log_))
    if (l.rfind(std::string("baseline-start ") + kSoftmax, 0) == 0) softmax_job = l;
  EXPECT_HAS(softmax_job, " -w " + small);
  EXPECT_EQ(softmax_job.find(large), std::string::npos) << softmax_job;
  EXPECT_EQ(softmax_job.find(no_blob), std::string::npos) << softmax_job;
  ASSERT_TRUE(r.baseline_ahead);
  EXPECT_EQ(r.baseline_ahead->size(), 2u);  // SwiGLU's and softmax's
  // A problem whose every workload is too large gets no job at all.
  const std::string again = fmt::format(
      "{{\"uuid\": \"{}\", \"axes\": {{\"batch_size\": 4096}}, \"inputs\": {{\"logits\": "
      "{{\"type\": \"random\"}}}}, \"tolerance\": {{\"max_atol\": 1e-08, \"max_rtol\": "
      "0.001}}}}\n",
      large);
  write(soft / "workload.jsonl", again);
  fs::remove(log_);
  fs::remove(dir() / "ahead.db");
  const RunReport r2 = run_dataset(o);
  for (const std::string& l : log_lines(log_))
    EXPECT_NE(l.rfind(std::string("baseline-start ") + kSoftmax, 0), 0u) << l;
  ASSERT_TRUE(r2.baseline_ahead);
  EXPECT_EQ(r2.baseline_ahead->size(), 1u);  // SwiGLU's
}


TEST_F(RunAhead, AnEvaluationTooLargeToShareTheGpuWithTheJobsPausesTheLane) {
  // RMSNorm's one workload, batch 262144: 4 GiB of values, 8 times that (32 GiB)
  // over what a 40 GiB GPU leaves beside the jobs (kBesideEvaluationBytes). Its two
  // evaluations (the data set's first problem) go first with the lane paused: no job
  // starts before they have ended; SwiGLU, evaluated next, gets none (as the first
  // problem of a run), softmax's runs once, never stopped.
  with_one_workload("L1", kRms,
                    "{\"uuid\": \"0b1c2d3e-0000-4000-8000-000000000003\", \"axes\": {\"batch_size\": "
                    "262144}, \"inputs\": {\"hidden_states\": {\"type\": \"random\"}, \"weight\": "
                    "{\"type\": \"random\"}}, \"tolerance\": {\"max_atol\": 0.01, \"max_rtol\": 0.01}}");
  RunOptions o = options(lane_stand_in(dir(), log_, passed_template(), "1"), 2);
  o.gpu_memory_bytes = 40ull << 30;
  const RunReport r = run_dataset(o);
  // No job ran through an RMSNorm evaluation: the lane was paused until both had
  // ended, and the first job started after the last of them.
  size_t last_rms = 0;
  const std::vector<std::string> lines = log_lines(log_);
  for (size_t i = 0; i < lines.size(); ++i)
    if (lines[i].rfind(std::string("eval-start ") + kRms, 0) == 0) last_rms = i;
  EXPECT_GT(first_line("baseline-start"), last_rms) << read(log_);
  EXPECT_LT(last_rms, first_line(std::string("eval-start ") + kSwiglu)) << read(log_);
  EXPECT_EQ(job_starts(kSwiglu), 0u) << read(log_);
  EXPECT_EQ(job_starts(kSoftmax), 1u) << read(log_);
  ASSERT_TRUE(r.baseline_ahead);
  ASSERT_EQ(r.baseline_ahead->size(), 1u);
  for (const auto& b : *r.baseline_ahead) {
    EXPECT_EQ(b.outcome.state, LaneOutcome::State::Done) << b.problem;
    EXPECT_EQ(b.outcome.measured, 1u) << b.problem;
    EXPECT_FALSE(b.outcome.preempted) << b.problem;
  }
  Tally t = tally_of(r);
  EXPECT_EQ(t.statuses["PASSED"], 4u);

  // A GPU with room for it beside the jobs: they run once each, beside it.
  fs::remove(log_);
  fs::remove(dir() / "ahead.db");
  o.gpu_memory_bytes = 80ull << 30;
  run_dataset(o);
  EXPECT_EQ(job_starts(kSwiglu), 1u) << read(log_);
  EXPECT_EQ(job_starts(kSoftmax), 1u) << read(log_);
}

TEST_F(RunAhead, EvaluationsTooLargeToShareTheGpuWithTheJobsGoFirstAndStopNone) {
  // Softmax, the data set's last problem, with one workload of batch 8192: 4.2 GB of
  // values, 8 times that over what a 40 GiB GPU leaves beside the jobs. It is
  // evaluated first, with the lane paused: it gets no job, no job starts before its
  // evaluation has ended, and none is stopped.
  with_one_workload("L2", kSoftmax,
                    "{\"uuid\": \"0b1c2d3e-0000-4000-8000-000000000005\", \"axes\": {\"batch_size\": "
                    "8192}, \"inputs\": {\"logits\": {\"type\": \"random\"}}}");
  RunOptions o = options(lane_stand_in(dir(), log_, passed_template(), "1"), 2);
  o.gpu_memory_bytes = 40ull << 30;
  const RunReport r = run_dataset(o);
  const size_t first_eval = first_line("eval-start");
  ASSERT_LT(first_eval, log_lines(log_).size()) << read(log_);
  EXPECT_EQ(first_eval, first_line(std::string("eval-start ") + kSoftmax)) << read(log_);
  EXPECT_GT(first_line("baseline-start"), first_eval) << read(log_);
  // RMSNorm, evaluated next, gets none (as the first problem of a run).
  EXPECT_EQ(job_starts(kSoftmax), 0u) << read(log_);
  EXPECT_EQ(job_starts(kRms), 0u) << read(log_);
  EXPECT_EQ(job_starts(kSwiglu), 1u) << read(log_);
  ASSERT_TRUE(r.baseline_ahead);
  EXPECT_EQ(r.baseline_ahead->size(), 1u);
  for (const auto& b : *r.baseline_ahead) {
    EXPECT_EQ(b.outcome.state, LaneOutcome::State::Done) << b.problem;
    EXPECT_FALSE(b.outcome.preempted) << b.problem;
  }
  Tally t = tally_of(r);
  EXPECT_EQ(t.statuses["PASSED"], 4u);
}

TEST_F(RunAhead, AStoppedRunEndsItsJobsAtOnce) {
  // SIGINT (the run's stop flag) while the jobs run: they are ended, not waited
  // for (a job here would take 30 s).
  const fs::path fake = lane_stand_in(dir(), log_, passed_template(), "30");
  std::atomic<bool> stop{false};
  std::thread stopper([&] {
    for (int i = 0; i < 500 && read(log_).find("baseline-start") == std::string::npos; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    stop = true;
  });
  RunOptions o;
  o.dataset = ds_;
  o.solutions = sols_;
  o.workloads.first = 1;
  o.db = dir() / "ahead.db";
  o.program = fake;
  o.progress = nullptr;
  o.slots = {"cuda:0"};
  o.stop = &stop;
  const auto t0 = std::chrono::steady_clock::now();
  const RunReport r = run_dataset(o);
  stopper.join();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(20));
  EXPECT_TRUE(r.interrupted);
  EXPECT_EQ(read(log_).find("baseline-end"), std::string::npos) << read(log_);
  EXPECT_EQ(processes_mentioning(fake.string()), 0);
}

TEST_F(RunAhead, AFailedBaselineLeavesTheEvaluationToMeasureItsOwn) {
  const fs::path fake = lane_stand_in(dir(), log_, passed_template(), "0", "3");
  const RunReport r = run_with(fake, 1);
  ASSERT_TRUE(r.baseline_ahead);
  ASSERT_EQ(r.baseline_ahead->size(), 2u);
  const LaneOutcome& first = r.baseline_ahead->front().outcome;
  EXPECT_EQ(first.state, LaneOutcome::State::Done);
  EXPECT_HAS(first.error, "baseline exit 3");
  EXPECT_HAS(read(dir() / "progress.txt"), "baseline exit 3 (its evaluation measures it)");
  EXPECT_HAS(read(dir() / "progress.txt"), "note: T_b ahead: 0 of 2 problem(s) done");
  Tally t = tally_of(r);
  EXPECT_EQ(t.statuses["PASSED"], 4u);
}

}  // namespace
}  // namespace solbench::runset

namespace solbench::runset::testing {
namespace {

// DIR/data/oom_problem: kRms's first workload, with a reference that reports that
// the GPU ran out of memory (as torch says it). The harness's own work failed, so the
// workload is skipped (no trace) with a reason that says so.
fs::path make_oom_dataset(const fs::path& dir) {
  const fs::path prob = dir / "data" / "oom_problem";
  fs::create_directories(prob);
  json def = json::parse(read(kProblems / kRms / "definition.json"));
  def["name"] = "oom_problem";
  def["reference"] =
      "import torch\n\ndef run(hidden_states, weight):\n"
      "    raise RuntimeError('CUDA out of memory. Tried to allocate 8.00 GiB (a test)')\n";
  write(prob / "definition.json", def.dump(2));
  const std::string first = read(kProblems / kRms / "workload.jsonl");
  write(prob / "workload.jsonl", first.substr(0, first.find('\n') + 1));
  return dir / "data";
}

size_t stored_skips(const fs::path& db) {
  store::Store::Options o;
  o.mode = store::Store::Mode::Existing;
  return store::Store::open(db, o).skip_count();
}

TEST(RunOutOfMemory, AnEvaluationThatRanOutOfGpuMemoryBesideOthersIsTriedAgainAlone) {
  // With two evaluations sharing a device `run` evaluates it once more alone. Here it
  // fails the same way again and stays skipped; only that skip, seen alone, is stored.
  TempDir tmp;
  const fs::path data = make_oom_dataset(tmp.path());
  const fs::path db = tmp.path() / "r.db";
  const CliRun r = solbench(tmp.path(), "run '" + data.string() +
                                            "' --reference --cpu-slots 2 --rounds 1 --no-timing "
                                            "--no-baseline --db '" + db.string() + "' --json");
  ASSERT_FALSE(r.doc.is_discarded()) << r.out << r.err;
  EXPECT_HAS(r.err, "ran out of GPU memory beside others");
  const json& s = r.doc["problems"][0]["solutions"][0];
  EXPECT_EQ(s["skipped"], 1) << s.dump();
  const json& w = s["workload_results"][0];
  EXPECT_EQ(w.value("skip_reason", "").rfind("out of GPU memory: CUDA out of memory", 0), 0u)
      << w.dump();
  EXPECT_EQ(stored_skips(db), 1u);  // the retry's, not the one beside the other slot
}

TEST(RunOutOfMemory, ASkipStoredAloneIsTakenFromTheStoreUntilRerunSkipped) {
  // One slot on the device: the evaluation had it to itself, so the skip is stored,
  // and the next run takes it from the store without evaluating it.
  TempDir tmp;
  const fs::path data = make_oom_dataset(tmp.path());
  const fs::path db = tmp.path() / "r.db";
  const std::string args = "run '" + data.string() +
                           "' --reference --rounds 1 --no-timing --no-baseline --db '" +
                           db.string() + "' --json";
  const CliRun first = solbench(tmp.path(), args);
  ASSERT_FALSE(first.doc.is_discarded()) << first.out << first.err;
  EXPECT_EQ(first.doc["total"]["skipped"], 1) << first.out;
  EXPECT_EQ(first.doc["total"]["evaluated"], 1);
  EXPECT_EQ(stored_skips(db), 1u);
  const std::string reason =
      first.doc["problems"][0]["solutions"][0]["workload_results"][0].value("skip_reason", "");
  ASSERT_EQ(reason.rfind("out of GPU memory: CUDA out of memory", 0), 0u) << reason;

  const CliRun second = solbench(tmp.path(), args);
  ASSERT_FALSE(second.doc.is_discarded()) << second.out << second.err;
  EXPECT_EQ(second.doc["total"]["skipped"], 1);
  EXPECT_EQ(second.doc["total"]["evaluated"], 0);
  EXPECT_EQ(second.doc["total"]["resumed"], 1);
  const json& w = second.doc["problems"][0]["solutions"][0]["workload_results"][0];
  EXPECT_EQ(w.value("skip_reason", "").rfind(reason + " (from the store: ", 0), 0u) << w.dump();
  EXPECT_EQ(w["resumed"], true);
  // No child evaluated it: its progress line says "from the store", not a duration.
  EXPECT_HAS(second.err, "from the store");
  EXPECT_HAS(second.err, "1 workload(s) skipped from the store");
  EXPECT_HAS(second.err, "0 result(s) evaluated, 1 from the store");
  EXPECT_EQ(stored_skips(db), 1u);

  const CliRun third = solbench(tmp.path(), args + " --rerun skipped");
  ASSERT_FALSE(third.doc.is_discarded()) << third.out << third.err;
  EXPECT_EQ(third.doc["total"]["evaluated"], 1);
  EXPECT_EQ(third.doc["total"]["resumed"], 0);
  EXPECT_EQ(third.doc["problems"][0]["solutions"][0]["workload_results"][0].value("skip_reason", ""),
            reason);  // evaluated now: no "from the store"
  EXPECT_EQ(stored_skips(db), 2u);  // skipped again, alone: stored again
  // A name that is neither a status nor failed/skipped is a usage error.
  EXPECT_EQ(solbench(tmp.path(), args + " --rerun skiped").rc, 2);
}

}  // namespace
}  // namespace solbench::runset::testing
