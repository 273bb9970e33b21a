// Workers forked from the warm worker template (src/harness/worker/zygote.h):
// `solbench eval` uses one by default; SOLBENCH_ZYGOTE names an external one (what
// `solbench run` and the Python module hand their evaluations) or turns it off.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "core/json.h"
#include "python_solution_eval.h"
#include "rmsnorm_native.h"
#include "test_support.h"

namespace solbench {
namespace {

namespace fs = std::filesystem;

const fs::path kRmsnorm = fs::path(SOLBENCH_SOURCE_DIR) / "problems/001_rmsnorm_llama3_8b_h4096";
const char* kB1 = "71630508";
const char* kB2 = "9063bb6e";
const std::string kFast = " --rounds 2 --time-budget-ms 30 --no-db --no-baseline --json ";

// A `solbench __zygote` of the test's own at `address` (what `solbench run` and the
// Python module hand their evaluations through SOLBENCH_ZYGOTE); killed at the end.
struct TestZygote {
  pid_t pid = -1;
  explicit TestZygote(const std::string& address) {
    pid = ::fork();
    if (pid == 0) {
      ::execl(SOLBENCH_BINARY, SOLBENCH_BINARY, "__zygote", "--address", address.c_str(), nullptr);
      ::_exit(127);
    }
  }
  ~TestZygote() {
    if (pid <= 0) return;
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
  }
};

class Zygote : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(dir_ / "cache");
    fs::create_directories(dir_ / "staging");
  }

  json eval(const std::string& env, const std::string& args) {
    const fs::path out = dir_ / "stdout.txt", err = dir_ / "stderr.txt";
    const std::string cmd = env + " SOLBENCH_CACHE_DIR='" + (dir_ / "cache").string() +
                            "' SOLBENCH_STAGING_DIR='" + (dir_ / "staging").string() + "' '" +
                            SOLBENCH_BINARY + "' eval '" + kRmsnorm.string() + "' " + args + kFast +
                            " >'" + out.string() + "' 2>'" + err.string() + "'";
    std::system(cmd.c_str());
    err_ = testing::read(err);
    return json::parse(testing::read(out), nullptr, false);
  }

  // A native CPU RMSNorm whose entry runs `prelude` first.
  fs::path solution(const std::string& name, const std::string& prelude) {
    const json sol =
        testing::rmsnorm_native_solution(name, testing::rmsnorm_native_source(prelude));
    const fs::path p = dir_ / (name + ".json");
    std::ofstream(p) << sol.dump(2);
    return p;
  }

  static std::string status(const json& doc, size_t i) {
    return doc.at("results").at(i).at("evaluation").at("status").get<std::string>();
  }
  static std::string launch(const json& workers) {
    std::string s;
    for (const auto& w : workers) s += (s.empty() ? "" : ",") + w.value("launch", std::string("?"));
    return s;
  }

  testing::TempDir tmp_;
  fs::path dir_ = tmp_.path();
  std::string err_;
};

TEST_F(Zygote, EvalForksEveryWorkerFromItsZygote) {
  const json doc = eval("", "-s '" + (kRmsnorm / "solutions/cpp_rowwise/solution.json").string() +
                                "' -w " + kB1 + " -w " + kB2);
  ASSERT_TRUE(doc.is_object()) << err_;
  ASSERT_EQ(doc["results"].size(), 2u);
  EXPECT_EQ(status(doc, 0), "PASSED");
  EXPECT_EQ(status(doc, 1), "PASSED");
  // The solution's worker and the reference worker: both forked, none exec'd.
  EXPECT_EQ(launch(doc["workers"]), "zygote") << doc["workers"].dump();
  EXPECT_EQ(launch(doc["reference_workers"]), "zygote") << doc["reference_workers"].dump();
  // The reference was timed in its worker (the fork inherits nothing of the solution).
  EXPECT_GT(doc["results"][0]["evaluation"]["performance"]["reference_latency_ms"].get<double>(), 0);
}

TEST_F(Zygote, TheTracerForksFromTheZygoteAndBoundsAsAnExecdOne) {
  // T_SOL's tracer process (score/tracer_process.h) is forked from the evaluation's
  // zygote, torch already imported there; with the zygote off it is exec'd. Each
  // run starts with an empty cache, so that each traces.
  const std::string args = "--reference --arch h100_sxm -w " + std::string(kB1);
  auto t_sol = [](const json& doc) {
    return doc["results"][0]["evaluation"].value("solbench_t_sol_ms", json(nullptr));
  };
  const json forked = eval("", args);
  ASSERT_TRUE(forked.is_object()) << err_;
  EXPECT_EQ(status(forked, 0), "PASSED");
  EXPECT_EQ(forked["tracer"].value("launch", ""), "zygote") << forked["tracer"].dump();
  ASSERT_TRUE(t_sol(forked).is_number()) << forked["results"][0].dump();
  EXPECT_GT(t_sol(forked).get<double>(), 0);

  fs::remove_all(dir_ / "cache");
  fs::create_directories(dir_ / "cache");
  const json execd = eval("SOLBENCH_ZYGOTE=0", args);
  ASSERT_TRUE(execd.is_object()) << err_;
  EXPECT_EQ(execd["tracer"].value("launch", ""), "exec") << execd["tracer"].dump();
  EXPECT_EQ(t_sol(execd), t_sol(forked));

  // A bound from the cache starts no tracer.
  const json cached = eval("", args);
  ASSERT_TRUE(cached.is_object()) << err_;
  EXPECT_TRUE(cached["tracer"].is_null()) << cached["tracer"].dump();
  EXPECT_EQ(t_sol(cached), t_sol(forked));
}

TEST_F(Zygote, OffMeansExecedWorkers) {
  const json doc = eval("SOLBENCH_ZYGOTE=0", "-s '" +
                                                 (kRmsnorm / "solutions/cpp_rowwise/solution.json").string() +
                                                 "' -w " + kB1);
  ASSERT_TRUE(doc.is_object()) << err_;
  EXPECT_EQ(status(doc, 0), "PASSED");
  EXPECT_EQ(launch(doc["workers"]), "exec");
  EXPECT_EQ(launch(doc["reference_workers"]), "exec");
}

TEST_F(Zygote, ACrashAndAHangEndTheirWorkloadsThroughTheKeeper) {
  // The keeper relays the worker's end: a segfault is RUNTIME_ERROR naming the
  // signal, a hang is killed at the limit, and the next workload gets a new fork.
  const fs::path crash = solution("crash_b1", "  if (rows == 1) *(volatile int*)nullptr = 1;\n");
  json doc = eval("", "-s '" + crash.string() + "' -w " + kB1 + " -w " + kB2);
  ASSERT_TRUE(doc.is_object()) << err_;
  EXPECT_EQ(status(doc, 0), "RUNTIME_ERROR");
  EXPECT_NE(doc["results"][0]["evaluation"]["log"].get<std::string>().find("SIGSEGV"),
            std::string::npos);
  EXPECT_EQ(status(doc, 1), "PASSED");
  EXPECT_EQ(launch(doc["workers"]), "zygote,zygote");

  const fs::path spin = solution("spin_b1", "  if (rows == 1) for (volatile int i = 0;; i = i + 1) {}\n");
  const auto t0 = std::chrono::steady_clock::now();
  doc = eval("", "-s '" + spin.string() + "' -w " + kB1 + " -w " + kB2 + " --timeout 3");
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(doc.is_object()) << err_;
  EXPECT_EQ(status(doc, 0), "TIMEOUT");
  EXPECT_EQ(status(doc, 1), "PASSED");
  EXPECT_LT(s, 60);
}

TEST_F(Zygote, AWorkerCannotReachTheZygoteItCameFrom) {
  // A zygote of the test's own, named to the evaluation through SOLBENCH_ZYGOTE as
  // `solbench run` and the Python module do; the solution knows its address and
  // tries to connect. Had it connected, it would return 9 (RUNTIME_ERROR).
  const std::string address = "solbench-test-zygote-" + std::to_string(::getpid());
  TestZygote zygote(address);
  ASSERT_GT(zygote.pid, 0);
  const std::string prelude = R"(  {
    int s = socket(AF_UNIX, SOCK_STREAM, 0);
    if (s >= 0) {
      sockaddr_un a{}; a.sun_family = AF_UNIX;
      const char name[] = ")" + address + R"(";
      std::memcpy(a.sun_path + 1, name, sizeof(name) - 1);
      const int r = connect(s, (sockaddr*)&a, (socklen_t)(sizeof(sa_family_t) + sizeof(name)));
      close(s);
      if (r == 0) return 9;
    }
  }
)";
  const fs::path sol = solution("reach_zygote", prelude);
  const json doc = eval("SOLBENCH_ZYGOTE=" + address, "-s '" + sol.string() + "' -w " + kB1);
  ASSERT_TRUE(doc.is_object()) << err_;
  // The worker came from that zygote (so the address was live)...
  EXPECT_EQ(launch(doc["workers"]), "zygote") << doc["workers"].dump();
  // ...and could not connect back to it (private network namespace, or seccomp).
  EXPECT_EQ(status(doc, 0), "PASSED") << doc["results"][0]["evaluation"]["log"];
}

TEST_F(Zygote, SparesMadeAfterOneEvaluationServeTheNextInTheirOwnSandbox) {
  // A zygote of the test's own, as the Python module has one; with
  // SOLBENCH_SPARE_WORKERS=1 each evaluation leaves a spare of each worker's recipe
  // behind (zygote.h, "Spares"), and the next evaluation's workers are those.
  const std::string address = "solbench-test-spares-" + std::to_string(::getpid());
  TestZygote zygote(address);
  ASSERT_GT(zygote.pid, 0);
  const std::string env = "SOLBENCH_ZYGOTE=" + address + " SOLBENCH_SPARE_WORKERS=1";
  const std::string rowwise = (kRmsnorm / "solutions/cpp_rowwise/solution.json").string();
  json doc = eval(env, "-s '" + rowwise + "' -w " + kB1);
  ASSERT_TRUE(doc.is_object()) << err_;
  EXPECT_EQ(status(doc, 0), "PASSED");
  EXPECT_EQ(launch(doc["workers"]), "zygote") << doc["workers"].dump();
  EXPECT_EQ(launch(doc["reference_workers"]), "zygote");

  // Another solution of the same kind: the spares serve it, and the sandbox they
  // entered before it existed still holds: a write outside the worker's scratch
  // folder is refused (had it succeeded, the entry returns 9: RUNTIME_ERROR).
  const fs::path planted = dir_ / "planted.txt";
  const fs::path sol = solution("plant_outside", R"(  {
    FILE* f = std::fopen(")" + planted.string() + R"(", "w");
    if (f) { std::fputs("planted", f); std::fclose(f); return 9; }
  }
)");
  doc = eval(env, "-s '" + sol.string() + "' -w " + kB1 + " -w " + kB2);
  ASSERT_TRUE(doc.is_object()) << err_;
  EXPECT_EQ(launch(doc["workers"]), "spare") << doc["workers"].dump();
  EXPECT_EQ(launch(doc["reference_workers"]), "spare") << doc["reference_workers"].dump();
  EXPECT_EQ(status(doc, 0), "PASSED") << doc["results"][0]["evaluation"]["log"];
  EXPECT_EQ(status(doc, 1), "PASSED") << doc["results"][1]["evaluation"]["log"];
  EXPECT_FALSE(fs::exists(planted));
  EXPECT_EQ(doc["sandbox"].value("spare", false), true) << doc["sandbox"].dump();

  // Without the setting, none is asked for or used; the two left from the last
  // call stay (one per recipe), in scratch folders of their own.
  doc = eval("SOLBENCH_ZYGOTE=" + address, "-s '" + rowwise + "' -w " + kB1);
  ASSERT_TRUE(doc.is_object()) << err_;
  EXPECT_EQ(status(doc, 0), "PASSED");
  EXPECT_EQ(launch(doc["workers"]), "zygote");
  auto worker_folders = [&] {
    int n = 0;
    for (const auto& e : fs::directory_iterator(dir_ / "staging"))
      n += e.path().filename().string().rfind("worker-", 0) == 0;
    return n;
  };
  EXPECT_EQ(worker_folders(), 2);
  // However the zygote ends (here SIGKILL), its spares end with it and leave nothing.
  ::kill(zygote.pid, SIGKILL);
  ::waitpid(zygote.pid, nullptr, 0);
  zygote.pid = -1;
  for (int i = 0; i < 100 && worker_folders() > 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(worker_folders(), 0);
}

TEST_F(Zygote, ASpareKeepsTheTorchFingerprintItTookAndStillSeesAReplacementAtLoad) {
  // A Python solution's spare took torch's fingerprint before it was claimed
  // (WorkerSession::take_torch_baseline_ahead): a solution that replaces a torch
  // function when it is loaded is still found, against that fingerprint.
  const std::string address = "solbench-test-spare-fp-" + std::to_string(::getpid());
  TestZygote zygote(address);
  ASSERT_GT(zygote.pid, 0);
  const std::string env = "SOLBENCH_ZYGOTE=" + address + " SOLBENCH_SPARE_WORKERS=1";
  auto python = [&](const std::string& name, const std::string& prelude) {
    const fs::path p = dir_ / (name + ".json");
    std::ofstream(p) << testing::python_solution_json(name, testing::pytorch_source(prelude, ""))
                            .dump(2);
    return p;
  };
  // Time for the spares to stand by: one claimed before that skips its warm-up
  // and the fingerprint (the requester would wait for them).
  const auto settle = [] { std::this_thread::sleep_for(std::chrono::seconds(3)); };
  const fs::path honest = python("honest", "");
  json doc = eval(env, "-s '" + honest.string() + "' -w " + kB1);
  ASSERT_TRUE(doc.is_object()) << err_;
  EXPECT_EQ(status(doc, 0), "PASSED");
  settle();
  doc = eval(env, "-s '" + honest.string() + "' -w " + kB1);  // a spare's, which kept it
  ASSERT_TRUE(doc.is_object()) << err_;
  EXPECT_EQ(status(doc, 0), "PASSED");
  EXPECT_EQ(launch(doc["workers"]), "spare") << doc["workers"].dump();
  EXPECT_EQ(doc["workers"][0]["phases_ms"].value("torch_fingerprint_by_spare", 0), 1)
      << doc["workers"][0]["phases_ms"].dump();
  // torch.rsqrt, which the reference calls, replaced by a function of the solution's.
  const fs::path hack = python("replace_rsqrt",
                               "_real = torch.rsqrt\n"
                               "def _mine(x, *a, **k):\n"
                               "    return _real(x, *a, **k)\n"
                               "setattr(__import__('to' + 'rch'), 'rs' + 'qrt', _mine)\n");
  settle();
  doc = eval(env, "-s '" + hack.string() + "' -w " + kB1);
  ASSERT_TRUE(doc.is_object()) << err_;
  EXPECT_EQ(launch(doc["workers"]), "spare") << doc["workers"].dump();
  EXPECT_EQ(status(doc, 0), "REWARD_HACK") << doc["results"][0]["evaluation"]["log"];
  EXPECT_NE(doc["results"][0]["evaluation"]["log"].get<std::string>().find("torch.rsqrt"),
            std::string::npos)
      << doc["results"][0]["evaluation"]["log"];
}

TEST_F(Zygote, AJudgeSpareWarmedOnTheFirstWorkloadSkipsItsOwnWarmUp) {
  // A Judge started ahead (SOLBENCH_EARLY_REFERENCE_WORKER=1: on the CPU too) warms
  // up on the evaluation's first workload while the solution runs, holding the GPU's
  // lock step by step. A spare whose own warm-up ran that workload's reference does
  // not do it again; one warmed on another workload does.
  const std::string address = "solbench-test-judge-warm-" + std::to_string(::getpid());
  TestZygote zygote(address);
  ASSERT_GT(zygote.pid, 0);
  const std::string env = "SOLBENCH_ZYGOTE=" + address +
                          " SOLBENCH_SPARE_WORKERS=1 SOLBENCH_EARLY_REFERENCE_WORKER=1";
  const std::string rowwise = (kRmsnorm / "solutions/cpp_rowwise/solution.json").string();
  auto judge_phases = [](const json& doc) {
    const json& r = doc["reference_workers"];
    return r.is_array() && !r.empty() ? r[0].value("phases_ms", json::object()) : json::object();
  };
  json doc = eval(env, "-s '" + rowwise + "' -w " + kB1);
  ASSERT_TRUE(doc.is_object()) << err_;
  EXPECT_EQ(status(doc, 0), "PASSED");
  EXPECT_EQ(launch(doc["reference_workers"]), "zygote");
  EXPECT_TRUE(judge_phases(doc).contains("warm_up_ms")) << doc["reference_workers"].dump();
  EXPECT_FALSE(judge_phases(doc).contains("warm_up_by_spare"));

  // An agent's think time between calls (bench/python_overhead.py --pause-s): a spare
  // claimed before its warm-up began skips it by design (zygote.cc), and a call that
  // follows at once under load (this test beside others on 2 cores) can be that early.
  const auto think = [] { std::this_thread::sleep_for(std::chrono::seconds(2)); };
  think();
  doc = eval(env, "-s '" + rowwise + "' -w " + kB1);
  ASSERT_TRUE(doc.is_object()) << err_;
  EXPECT_EQ(status(doc, 0), "PASSED");
  EXPECT_EQ(launch(doc["reference_workers"]), "spare") << doc["reference_workers"].dump();
  EXPECT_EQ(judge_phases(doc).value("warm_up_by_spare", 0), 1) << doc["reference_workers"].dump();
  EXPECT_FALSE(judge_phases(doc).contains("warm_up_ms"));

  // The spare left by that call warmed kB1; this call's first workload is kB2.
  think();
  doc = eval(env, "-s '" + rowwise + "' -w " + kB2);
  ASSERT_TRUE(doc.is_object()) << err_;
  EXPECT_EQ(status(doc, 0), "PASSED");
  EXPECT_EQ(launch(doc["reference_workers"]), "spare");
  EXPECT_TRUE(judge_phases(doc).contains("warm_up_ms")) << doc["reference_workers"].dump();
  EXPECT_FALSE(judge_phases(doc).contains("warm_up_by_spare"));
}

}  // namespace
}  // namespace solbench
