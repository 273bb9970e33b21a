// Interrupting `solbench eval` and `solbench run` (harness/interrupt.h), through the
// real binary on the CPU: a Python solution that marks its call in its scratch
// folder and sleeps, interrupted once it sleeps. SIGINT: exit by SIGINT (run: 130
// after its summary), no scratch folder left, nothing recorded. SIGKILL: the
// folders stay, and the next start removes them (harness/staging.h).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "core/json.h"
#include "harness/staging.h"
#include "python_solution_eval.h"
#include "runset/runset_test_util.h"
#include "store/store.h"

namespace solbench {
namespace {

namespace fs = std::filesystem;
using runset::testing::Background;
using runset::testing::wait_until;
using testing::pytorch_source;
using testing::read;

// Writes `in_call` into its working directory (its scratch folder), then sleeps.
const std::string kSleepInCall = pytorch_source(
    "import time", "    open('in_call', 'w').close()\n    time.sleep(600)\n");

std::set<std::string> entries(const fs::path& dir) {
  std::set<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) out.insert(e.path().filename().string());
  return out;
}

std::string listing(const fs::path& dir) {
  std::string s;
  for (const auto& n : entries(dir)) s += " " + n;
  return s.empty() ? " (empty)" : s;
}

// A worker of the evaluation is in the solution's call.
bool in_call(const fs::path& staging) {
  for (const auto& n : entries(staging))
    if (n.rfind("worker-", 0) == 0 && fs::exists(staging / n / "in_call")) return true;
  return false;
}

size_t traces_in(const fs::path& db) {
  store::Store::Options o;
  o.mode = store::Store::Mode::Existing;
  return store::Store::open(db, o).trace_count();
}

class Interrupt : public testing::PythonSolutionEval {
 protected:
  fs::path staging() const { return dir_ / "staging"; }

  std::string eval_args(const fs::path& sol, const std::string& more) const {
    return "eval '" + problem_.string() + "' -s '" + sol.string() + "' -w " + testing::kB1 +
           " --rounds 1 --no-timing --timeout 300 " + more;
  }
};

TEST_F(Interrupt, SigintEndsTheEvaluationRemovesItsScratchAndRecordsNothing) {
  const fs::path sol = solution("sleeper", kSleepInCall);
  const fs::path db = dir_ / "results.db";
  Background bg(dir_, eval_args(sol, "--json --db '" + db.string() + "'"));
  ASSERT_TRUE(wait_until([&] { return in_call(staging()); })) << bg.err() << listing(staging());
  // Whose are the folders: the evaluating process's (`solbench eval`), a worker's
  // scratch included.
  size_t workers = 0;
  for (const auto& n : entries(staging())) {
    auto o = harness::parse_scratch_name(n);
    ASSERT_TRUE(o.has_value()) << n;
    std::string cmd = read("/proc/" + std::to_string(o->pid) + "/cmdline");
    for (char& c : cmd) c = c == '\0' ? ' ' : c;
    EXPECT_EQ(cmd.find(" eval "), cmd.find(' ')) << n << ": " << cmd;
    workers += n.rfind("worker-", 0) == 0;
  }
  EXPECT_GE(workers, 1u) << listing(staging());

  bg.signal(SIGINT);  // what Ctrl-C does: its process group holds it alone
  const int st = bg.wait();
  EXPECT_TRUE((WIFSIGNALED(st) && WTERMSIG(st) == SIGINT) || (WIFEXITED(st) && WEXITSTATUS(st) == 130))
      << "status " << st << ": " << bg.err();
  EXPECT_HAS(bg.err(), "solbench: interrupted by SIGINT; removed ");
  EXPECT_TRUE(entries(staging()).empty()) << listing(staging());
  EXPECT_EQ(bg.out(), "");  // no result document
  EXPECT_EQ(traces_in(db), 0u);
}

TEST_F(Interrupt, AKilledEvaluationsScratchGoesAtTheNextStart) {
  const fs::path sol = solution("sleeper", kSleepInCall);
  {
    Background bg(dir_, eval_args(sol, "--no-db"));
    ASSERT_TRUE(wait_until([&] { return in_call(staging()); })) << bg.err() << listing(staging());
    bg.signal(SIGKILL);
    const int st = bg.wait();
    ASSERT_TRUE(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
  }
  // What a SIGKILL leaves: the worker's folder (and the judge's records folder).
  std::set<std::string> left = entries(staging());
  size_t owned = 0;
  for (const auto& n : left) owned += harness::parse_scratch_name(n).has_value();
  ASSERT_GE(owned, 1u) << listing(staging());

  // The next evaluation removes them before it makes its own.
  const json doc = eval(solution("quick", pytorch_source("", "")), std::string(" -w ") + testing::kB1,
                        " --rounds 1 --no-timing --no-db ");
  ASSERT_EQ(doc.value("results", json::array()).size(), 1u) << doc.dump();
  EXPECT_EQ(status(doc), "PASSED") << log(doc);
  EXPECT_TRUE(entries(staging()).empty()) << listing(staging());
}

TEST_F(Interrupt, RunPassesSigintToItsEvaluationsWhichCleanUp) {
  // One problem (this fixture's copy) and the sleeping solution.
  const fs::path sols = dir_ / "solutions";
  fs::create_directories(sols);
  fs::copy_file(solution("sleeper", kSleepInCall), sols / "sleeper.json");
  const fs::path db = dir_ / "run.db";
  Background bg(dir_, "run '" + problem_.string() + "' --solutions '" + sols.string() +
                          "' --max-workloads 1 --rounds 1 --no-timing --json --db '" +
                          db.string() + "'");
  ASSERT_TRUE(wait_until([&] { return in_call(staging()); })) << bg.err() << listing(staging());
  bg.signal(SIGINT);
  const int st = bg.wait();
  ASSERT_TRUE(WIFEXITED(st)) << "status " << st << ": " << bg.err();
  EXPECT_EQ(WEXITSTATUS(st), 130) << bg.err();
  // The evaluation ended itself on the SIGINT run passed on and removed its scratch
  // (its stderr goes to run); run removed its own.
  EXPECT_HAS(bg.err(), "solbench: interrupted by SIGINT; stopping");
  EXPECT_TRUE(entries(staging()).empty()) << listing(staging());
  const json doc = json::parse(bg.out(), nullptr, false);
  ASSERT_TRUE(doc.is_object()) << bg.out() << bg.err();
  EXPECT_EQ(doc["interrupted"], true);
  // Not run, and no failure: nothing recorded for it.
  EXPECT_EQ(doc["total"]["not_run"], 1) << doc.dump(2);
  EXPECT_TRUE(doc["total"]["statuses"].empty()) << doc.dump(2);
  EXPECT_EQ(traces_in(db), 0u);
}

}  // namespace
}  // namespace solbench
