// `solbench eval` end to end through the real binary, on the bundled RMSNorm
// problem, CPU only: every test gets its own build cache and staging folder, uses
// the smallest workloads and short timing budgets so the whole file takes about a
// minute (most of it is Python + torch starting in each worker).
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "core/json.h"
#include "core/trace.h"
#include "rmsnorm_native.h"
#include "test_support.h"

namespace solbench {
namespace {

namespace fs = std::filesystem;

const fs::path kSource = SOLBENCH_SOURCE_DIR;
const fs::path kRmsnorm = kSource / "problems/001_rmsnorm_llama3_8b_h4096";
const char* kDef = "001_rmsnorm_llama3_8b_h4096";
// Workloads of the RMSNorm problem: batch_size 1, 2 and 4.
const char* kB1 = "71630508";
const char* kB2 = "9063bb6e";
const char* kB4 = "15583c5d";
// Fast settings: two correctness rounds, short timing.
const std::string kFast = " --rounds 2 --time-budget-ms 30 ";

struct CliRun {
  int rc = -1;
  std::string out, err;
  double seconds = 0;
  json doc;  // stdout parsed when --json was given
};

using testing::read;

class EvalCli : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(dir_ / "cache");
    fs::create_directories(dir_ / "staging");
  }

  CliRun eval(const std::string& args, bool json_out = true) {
    CliRun r;
    const fs::path out = dir_ / "stdout.txt", err = dir_ / "stderr.txt";
    std::string cmd = "SOLBENCH_CACHE_DIR='" + (dir_ / "cache").string() +
                      "' SOLBENCH_STAGING_DIR='" + (dir_ / "staging").string() + "' '" +
                      SOLBENCH_BINARY + "' eval " + args + (json_out ? " --json" : "") + " >'" +
                      out.string() + "' 2>'" + err.string() + "'";
    const auto t0 = std::chrono::steady_clock::now();
    const int status = std::system(cmd.c_str());
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = read(out);
    r.err = read(err);
    if (json_out && !r.out.empty()) r.doc = json::parse(r.out, nullptr, false);
    return r;
  }

  // A C++ (cpp, native binding, CPU) solution for the RMSNorm problem whose entry
  // runs `prelude` first, then a correct RMSNorm; `writes_weight` false leaves the
  // weight out (a wrong result), `row_limit` writes only that many rows.
  fs::path rmsnorm_solution(const std::string& name, const std::string& prelude,
                            bool use_weight = true, const std::string& row_limit = "rows",
                            const std::string& path = "rms.cc") {
    const json sol = testing::rmsnorm_native_solution(
        name, testing::rmsnorm_native_source(prelude, use_weight, row_limit), path);
    const fs::path p = dir_ / (name + ".json");
    std::ofstream(p) << sol.dump(2);
    return p;
  }

  static std::string status_of(const json& doc, size_t i) {
    return doc.at("results").at(i).at("evaluation").at("status").get<std::string>();
  }
  static std::string log_of(const json& doc, size_t i) {
    return doc.at("results").at(i).at("evaluation").at("log").get<std::string>();
  }

  testing::TempDir tmp_;
  fs::path dir_ = tmp_.path();
};

TEST_F(EvalCli, CorrectCppSolutionPassesEveryWorkloadAndTracesLoad) {
  const fs::path traces = dir_ / "traces.jsonl";
  CliRun r = eval("'" + kRmsnorm.string() + "' --solution '" +
                   (kRmsnorm / "solutions/cpp_rowwise/solution.json").string() +
                   "' --rounds 1 --no-timing -o '" + traces.string() + "'");
  ASSERT_EQ(r.rc, 0) << r.out << r.err;
  ASSERT_TRUE(r.doc.is_object()) << r.out;
  const json& res = r.doc["results"];
  ASSERT_EQ(res.size(), 16u);  // every workload of the problem
  for (size_t i = 0; i < res.size(); ++i) {
    EXPECT_EQ(status_of(r.doc, i), "PASSED") << log_of(r.doc, i);
    EXPECT_EQ(res[i]["workload"]["uuid"], r.doc["results"][i]["workload"]["uuid"]);
  }
  // The trace file is in the public format: load_traces reads it back cleanly.
  Diagnostics d;
  std::vector<Trace> loaded = load_traces(traces, d);
  EXPECT_TRUE(d.empty()) << (d.empty() ? "" : d.items()[0].str());
  ASSERT_EQ(loaded.size(), 16u);
  EXPECT_EQ(loaded[0].definition, kDef);
  EXPECT_EQ(loaded[0].evaluation.status, Status::Passed);
}

TEST_F(EvalCli, TimedWorkloadsReportLatencyStatisticsAndSpeedup) {
  const fs::path traces = dir_ / "traces.jsonl";
  CliRun r = eval("'" + kRmsnorm.string() + "' --solution '" +
                  (kRmsnorm / "solutions/cpp_rowwise/solution.json").string() + "' -w " + kB1 +
                  " -w " + kB4 + kFast + " -o '" + traces.string() + "'");
  ASSERT_EQ(r.rc, 0) << r.out << r.err;
  for (size_t i = 0; i < 2; ++i) {
    const json& ev = r.doc["results"][i]["evaluation"];
    const json& perf = ev["performance"];
    EXPECT_GT(perf["latency_ms"].get<double>(), 0);
    EXPECT_GT(perf["reference_latency_ms"].get<double>(), 0);
    const json& t = ev["solbench_timing"];
    EXPECT_DOUBLE_EQ(t["median_ms"].get<double>(), perf["latency_ms"].get<double>());
    EXPECT_GE(t["count"].get<int>(), 5);
    EXPECT_LE(t["min_ms"].get<double>(), t["median_ms"].get<double>());
    EXPECT_GE(ev["solbench_checks"]["verification"]["checked_calls"].get<int>(), 1);
  }
  Diagnostics d;
  std::vector<Trace> loaded = load_traces(traces, d);
  ASSERT_EQ(loaded.size(), 2u);
  ASSERT_TRUE(loaded[1].evaluation.performance.has_value());
  EXPECT_NEAR(loaded[1].evaluation.performance->speedup_factor,
              loaded[1].evaluation.performance->reference_latency_ms /
                  loaded[1].evaluation.performance->latency_ms,
              1e-9);
}

TEST_F(EvalCli, WrongResultIsIncorrectNumerical) {
  fs::path s = rmsnorm_solution("no_weight", "", /*use_weight=*/false);
  CliRun r = eval("'" + kRmsnorm.string() + "' -s '" + s.string() + "' -w " + kB2 + kFast);
  EXPECT_EQ(r.rc, 1);
  ASSERT_TRUE(r.doc.is_object()) << r.out << r.err;
  EXPECT_EQ(status_of(r.doc, 0), "INCORRECT_NUMERICAL") << log_of(r.doc, 0);
  const json& c = r.doc["results"][0]["evaluation"]["correctness"];
  EXPECT_GT(c["max_absolute_error"].get<double>(), 0.01);
  EXPECT_TRUE(r.doc["results"][0]["evaluation"]["performance"].is_null());
}

TEST_F(EvalCli, UnwrittenOutputFailsThroughThePoison) {
  // Writes only the first half of the rows: the rest keeps the NaN poison.
  fs::path s = rmsnorm_solution("half_rows", "", true, "rows / 2");
  CliRun r = eval("'" + kRmsnorm.string() + "' -s '" + s.string() + "' -w " + kB4 + kFast);
  EXPECT_EQ(r.rc, 1);
  ASSERT_TRUE(r.doc.is_object()) << r.out << r.err;
  EXPECT_EQ(status_of(r.doc, 0), "INCORRECT_NUMERICAL");
  EXPECT_TRUE(r.doc["results"][0]["evaluation"]["correctness"]["has_nan"].get<bool>());
  EXPECT_NE(log_of(r.doc, 0).find("NaN"), std::string::npos) << log_of(r.doc, 0);
}

TEST_F(EvalCli, SegfaultFailsOnlyItsWorkload) {
  fs::path s = rmsnorm_solution("crash_on_two", "  if (rows == 2) *(volatile int*)nullptr = 1;\n");
  CliRun r = eval("'" + kRmsnorm.string() + "' -s '" + s.string() + "' -w " + kB1 + " -w " + kB2 +
               " -w " + kB4 + kFast);
  EXPECT_EQ(r.rc, 1);
  ASSERT_TRUE(r.doc.is_object()) << r.out << r.err;
  ASSERT_EQ(r.doc["results"].size(), 3u);
  EXPECT_EQ(status_of(r.doc, 0), "PASSED") << log_of(r.doc, 0);
  EXPECT_EQ(status_of(r.doc, 1), "RUNTIME_ERROR");
  EXPECT_NE(log_of(r.doc, 1).find("SIGSEGV"), std::string::npos) << log_of(r.doc, 1);
  EXPECT_EQ(status_of(r.doc, 2), "PASSED") << log_of(r.doc, 2);  // in a new worker
  EXPECT_EQ(r.doc["workers"].size(), 2u);
}

TEST_F(EvalCli, InfiniteLoopTimesOutWithinTheLimit) {
  fs::path s = rmsnorm_solution("spin", "  for (volatile int i = 0;; i = i + 1) {}\n");
  CliRun r = eval("'" + kRmsnorm.string() + "' -s '" + s.string() + "' -w " + kB1 +
               " --timeout 3" + kFast);
  EXPECT_EQ(r.rc, 1);
  ASSERT_TRUE(r.doc.is_object()) << r.out << r.err;
  EXPECT_EQ(status_of(r.doc, 0), "TIMEOUT");
  EXPECT_NE(log_of(r.doc, 0).find("within 3 s"), std::string::npos) << log_of(r.doc, 0);
  // 3 s for the workload, plus the build and the worker's start (Python + torch).
  EXPECT_LT(r.seconds, 60);
}

TEST_F(EvalCli, CompileErrorCarriesTheCompilerMessage) {
  fs::path s = rmsnorm_solution("broken", "  this_is_not_declared(42);\n");
  CliRun r = eval("'" + kRmsnorm.string() + "' -s '" + s.string() + "' -w " + kB1 + kFast);
  EXPECT_EQ(r.rc, 1);
  ASSERT_TRUE(r.doc.is_object()) << r.out << r.err;
  EXPECT_EQ(status_of(r.doc, 0), "COMPILE_ERROR");
  EXPECT_NE(log_of(r.doc, 0).find("this_is_not_declared"), std::string::npos) << log_of(r.doc, 0);
  EXPECT_TRUE(r.doc["workers"].empty());  // nothing ran
}

size_t count_of(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t pos = text.find(needle); pos != std::string::npos; pos = text.find(needle, pos + 1)) ++n;
  return n;
}

// One failed build, one report: the compiler's first error is printed once (first,
// above the table), not once per workload, while every workload still gets a
// COMPILE_ERROR trace; the first trace carries the log, the others point to it.
TEST_F(EvalCli, CompileErrorIsReportedOnceForAllWorkloads) {
  fs::path s = rmsnorm_solution("broken_once", "  this_is_not_declared(42);\n");
  const fs::path traces = dir_ / "traces.jsonl";
  CliRun r = eval("'" + kRmsnorm.string() + "' -s '" + s.string() + "' -o '" + traces.string() + "'" + kFast,
                  /*json_out=*/false);
  EXPECT_EQ(r.rc, 1);
  // The compiler's error line (gcc quotes the name with ' or with typographic quotes).
  EXPECT_EQ(count_of(r.out, "was not declared in this scope"), 1u) << r.out;
  EXPECT_EQ(count_of(r.out, "compiling rms.cc failed"), 1u) << r.out;
  // ... and it comes first, right under the build line.
  const size_t failed = r.out.find("FAILED\n");
  ASSERT_NE(failed, std::string::npos) << r.out;
  const std::string next_line = r.out.substr(failed + 7, r.out.find('\n', failed + 7) - failed - 7);
  EXPECT_NE(next_line.find("rms.cc:"), std::string::npos) << r.out;
  EXPECT_NE(next_line.find("error"), std::string::npos) << r.out;
  EXPECT_EQ(count_of(r.out, "COMPILE_ERROR "), 16u) << r.out;  // one row per workload
  EXPECT_NE(r.out.find("summary: 16 workload(s): 16 COMPILE_ERROR"), std::string::npos) << r.out;

  // Every workload has its trace, all COMPILE_ERROR; the first holds the log.
  Diagnostics d;
  std::vector<Trace> loaded = load_traces(traces, d);
  EXPECT_TRUE(d.empty()) << (d.empty() ? "" : d.items()[0].str());
  ASSERT_EQ(loaded.size(), 16u);
  for (const auto& t : loaded) EXPECT_EQ(t.evaluation.status, Status::CompileError);
  EXPECT_NE(loaded[0].evaluation.log.find("was not declared"), std::string::npos) << loaded[0].evaluation.log;
  const std::string first_uuid = loaded[0].workload.at("uuid").get<std::string>();
  for (size_t i = 1; i < loaded.size(); ++i) {
    EXPECT_EQ(loaded[i].evaluation.log.find("was not declared"), std::string::npos);
    EXPECT_NE(loaded[i].evaluation.log.find("build log is in the trace of workload " + first_uuid),
              std::string::npos)
        << loaded[i].evaluation.log;
  }

  // --json: the log once (in the first result), its first error under build_error.
  CliRun j = eval("'" + kRmsnorm.string() + "' -s '" + s.string() + "'" + kFast);
  ASSERT_TRUE(j.doc.is_object()) << j.out << j.err;
  ASSERT_EQ(j.doc["results"].size(), 16u);
  for (size_t i = 0; i < 16; ++i) EXPECT_EQ(status_of(j.doc, i), "COMPILE_ERROR");
  EXPECT_EQ(count_of(j.out, "compiling rms.cc failed"), 1u) << j.out;
  EXPECT_NE(j.doc["build_error"].get<std::string>().find("was not declared"), std::string::npos) << j.out;
  EXPECT_EQ(log_of(j.doc, 0).rfind(j.doc["build_error"].get<std::string>(), 0), 0u) << log_of(j.doc, 0);
}

TEST_F(EvalCli, ParentPathInSourcesIsRejectedBeforeAnythingRuns) {
  fs::path s = rmsnorm_solution("escape", "", true, "rows", "../escape.cc");
  const fs::path traces = dir_ / "traces.jsonl";
  CliRun r = eval("'" + kRmsnorm.string() + "' -s '" + s.string() + "' -o '" + traces.string() + "'");
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find(".."), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("sources[0].path"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(traces));
  EXPECT_TRUE(fs::is_empty(dir_ / "cache"));  // no build was attempted
  EXPECT_TRUE(fs::is_empty(dir_ / "staging"));
}

TEST_F(EvalCli, SocketCreationIsRefusedInTheWorker) {
  fs::path s = rmsnorm_solution(
      "net", "  int fd = socket(AF_INET, SOCK_STREAM, 0);\n"
             "  if (fd < 0) { std::fprintf(stderr, \"socket refused: %s\\n\", std::strerror(errno)); return 9; }\n"
             "  close(fd);\n");
  CliRun r = eval("'" + kRmsnorm.string() + "' -s '" + s.string() + "' -w " + kB1 + kFast);
  ASSERT_TRUE(r.doc.is_object()) << r.out << r.err;
  // Had socket() succeeded the solution would compute correctly and PASS.
  EXPECT_EQ(status_of(r.doc, 0), "RUNTIME_ERROR") << log_of(r.doc, 0);
  EXPECT_NE(log_of(r.doc, 0).find("socket refused"), std::string::npos) << log_of(r.doc, 0);
  EXPECT_NE(log_of(r.doc, 0).find("error code 9"), std::string::npos) << log_of(r.doc, 0);
}

TEST_F(EvalCli, ASolutionForAnotherDeviceIsSkippedNotFailed) {
  // CUDA C++ on a CPU run (and host C++ on a GPU run): the solution is not wrong,
  // it is for another device (a data set's solutions for several devices).
  CliRun r = eval("'" + kRmsnorm.string() + "' -s '" +
                  (kRmsnorm / "solutions/cuda_rmsnorm.json").string() + "' -w " + kB1 + kFast);
  EXPECT_EQ(r.rc, 0) << r.out << r.err;
  ASSERT_TRUE(r.doc.is_object()) << r.out << r.err;
  ASSERT_EQ(r.doc["results"].size(), 1u);
  EXPECT_TRUE(r.doc["results"][0].value("skipped", false)) << r.doc["results"].dump();
  EXPECT_NE(r.doc["results"][0].dump().find("needs a GPU"), std::string::npos)
      << r.doc["results"].dump();
  EXPECT_TRUE(r.doc["workers"].empty());
  // A PyTorch solution whose target_hardware names only GPUs: skipped on the CPU too,
  // with the reason, rather than failed by its first torch.cuda call.
  r = eval("'" + kRmsnorm.string() + "' -s '" +
           (kRmsnorm / "solutions/torch_gpu_rmsnorm.json").string() + "' -w " + kB1 + kFast);
  EXPECT_EQ(r.rc, 0) << r.out << r.err;
  ASSERT_TRUE(r.doc.is_object()) << r.out << r.err;
  ASSERT_EQ(r.doc["results"].size(), 1u);
  EXPECT_TRUE(r.doc["results"][0].value("skipped", false)) << r.doc["results"].dump();
  EXPECT_NE(r.doc["results"][0].dump().find("target_hardware [cuda]"), std::string::npos)
      << r.doc["results"].dump();
}

// A workload whose safetensors blob is not here (a data set copied without its
// blobs) is skipped by the parent, in the worker's words, once: no worker starts for
// it, and the other workloads are evaluated as usual.
TEST_F(EvalCli, AMissingSafetensorsBlobIsSkippedBeforeAnyWorker) {
  const fs::path prob = dir_ / "rmsnorm_blob";
  fs::create_directories(prob);
  fs::copy_file(kRmsnorm / "definition.json", prob / "definition.json");
  std::ifstream in(kRmsnorm / "workload.jsonl");
  std::string first, second;
  std::getline(in, first);
  std::getline(in, second);
  json blob = json::parse(second);
  blob["inputs"]["hidden_states"] = {
      {"type", "safetensors"}, {"path", "blobs/absent.safetensors"}, {"tensor_key", "x"}};
  std::ofstream(prob / "workload.jsonl") << first << "\n" << blob.dump() << "\n";
  const std::string sol = (kRmsnorm / "solutions/cpp_rowwise/solution.json").string();

  CliRun r = eval("'" + prob.string() + "' -s '" + sol + "'" + kFast);
  ASSERT_TRUE(r.doc.is_object()) << r.out << r.err;
  ASSERT_EQ(r.doc["results"].size(), 2u);
  EXPECT_EQ(status_of(r.doc, 0), "PASSED") << log_of(r.doc, 0);
  const json& skipped = r.doc["results"][1];
  EXPECT_TRUE(skipped.value("skipped", false)) << skipped.dump();
  const std::string why = skipped.value("skip_reason", "");
  EXPECT_EQ(why.find("safetensors blob missing: "), 0u) << why;
  EXPECT_EQ(why.find("safetensors blob missing", 1), std::string::npos) << "said twice: " << why;
  EXPECT_NE(why.find("blobs/absent.safetensors"), std::string::npos) << why;
  // Its worker plan held only the first workload.
  ASSERT_EQ(r.doc["workers"].size(), 1u) << r.doc["workers"].dump();
  EXPECT_EQ(r.doc["workers"][0]["workloads"].size(), 1u) << r.doc["workers"].dump();

  // Only that workload, with a hardware model: no worker at all, and no trace for
  // T_SOL (nothing in the bounds' cache); the other workload's bound leaves one.
  const auto traced = [&] {
    size_t n = 0;
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(dir_ / "cache" / "sol", ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
      n += it->is_regular_file();
    return n;
  };
  const std::string arch = " --arch h100_sxm --no-baseline";
  r = eval("'" + prob.string() + "' -s '" + sol + "' -w " + blob["uuid"].get<std::string>() +
           arch + kFast);
  ASSERT_TRUE(r.doc.is_object()) << r.out << r.err;
  ASSERT_EQ(r.doc["results"].size(), 1u);
  EXPECT_TRUE(r.doc["results"][0].value("skipped", false)) << r.doc["results"].dump();
  EXPECT_TRUE(r.doc["workers"].empty()) << r.doc["workers"].dump();
  EXPECT_TRUE(r.doc["reference_workers"].empty()) << r.doc["reference_workers"].dump();
  EXPECT_EQ(traced(), 0u);
  r = eval("'" + prob.string() + "' -s '" + sol + "' -w " + json::parse(first)["uuid"].get<std::string>() +
           arch + kFast);
  ASSERT_TRUE(r.doc.is_object()) << r.out << r.err;
  EXPECT_EQ(status_of(r.doc, 0), "PASSED") << log_of(r.doc, 0);
  EXPECT_GT(traced(), 0u);
}

TEST_F(EvalCli, PytorchCpuSolutionPasses) {
  CliRun r = eval("'" + kRmsnorm.string() + "' --solution '" +
               (kRmsnorm / "solutions/pytorch_simple/solution.json").string() + "' --smallest 3" +
               kFast);
  ASSERT_EQ(r.rc, 0) << r.out << r.err;
  ASSERT_EQ(r.doc["results"].size(), 3u);
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(status_of(r.doc, i), "PASSED") << log_of(r.doc, i);
  EXPECT_TRUE(r.doc["build"].is_null());  // Python family: nothing compiled
}

TEST_F(EvalCli, SecondEvaluationHitsTheBuildCache) {
  const std::string args = "'" + kRmsnorm.string() + "' --solution '" +
                           (kRmsnorm / "solutions/cpp_rowwise/solution.json").string() +
                           "' -w " + kB1 + " --no-timing --rounds 1";
  CliRun first = eval(args);
  ASSERT_EQ(first.rc, 0) << first.out << first.err;
  EXPECT_FALSE(first.doc["build"]["cache_hit"].get<bool>());
  CliRun second = eval(args);
  ASSERT_EQ(second.rc, 0) << second.out << second.err;
  EXPECT_TRUE(second.doc["build"]["cache_hit"].get<bool>());
  EXPECT_EQ(first.doc["build"]["cache_key"], second.doc["build"]["cache_key"]);
  EXPECT_EQ(status_of(second.doc, 0), "PASSED");
}

TEST_F(EvalCli, TableOutputHasAStatusLinePerWorkloadAndASummary) {
  CliRun r = eval("'" + kRmsnorm.string() + "' --solution '" +
                   (kRmsnorm / "solutions/cpp_rowwise/solution.json").string() + "' -w " + kB1 +
                   " -w " + kB2 + kFast,
               /*json_out=*/false);
  ASSERT_EQ(r.rc, 0) << r.out << r.err;
  // One time unit in every table, named in the header (the JSON keeps ms).
  for (const char* column : {"latency_us", "ref_us", "T_SOL_us", "T_b_us"})
    EXPECT_NE(r.out.find(column), std::string::npos) << column << "\n" << r.out;
  EXPECT_EQ(r.out.find("_ms"), std::string::npos) << r.out;
  // No hardware model for a CPU: no score, and the line says what would give one.
  EXPECT_NE(r.out.find("SOL score: n/a (no T_SOL"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--arch"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(std::string(kB1) + "  batch_size=1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("summary: 2 workload(s): 2 PASSED"), std::string::npos) << r.out;
}

TEST_F(EvalCli, CudaArchReachesTheBuild) {
  // An explicit target is checked and used by the build ("auto" asks the GPU; on a
  // CPU there is none, and nvcc's default stands).
  CliRun bad = eval("'" + kRmsnorm.string() + "' --solution '" +
                    (kRmsnorm / "solutions/cpp_rowwise/solution.json").string() + "' -w " + kB1 +
                    " --no-timing --rounds 1 --cuda-arch 9x");
  ASSERT_TRUE(bad.doc.is_object()) << bad.out << bad.err;
  EXPECT_EQ(status_of(bad.doc, 0), "COMPILE_ERROR");
  EXPECT_NE(log_of(bad.doc, 0).find("invalid CUDA arch '9x'"), std::string::npos) << log_of(bad.doc, 0);
  CliRun ok = eval("'" + kRmsnorm.string() + "' --solution '" +
                   (kRmsnorm / "solutions/cpp_rowwise/solution.json").string() + "' -w " + kB1 +
                   " --no-timing --rounds 1 --cuda-arch 90a");
  ASSERT_EQ(ok.rc, 0) << ok.out << ok.err;
  EXPECT_EQ(status_of(ok.doc, 0), "PASSED");
}

TEST_F(EvalCli, UnknownWorkloadIsAUsageError) {
  // Asking for a workload that does not exist is a usage error (exit 2), as an
  // unknown --arch is, in every command (sol, eval, baseline, run).
  CliRun r = eval("'" + kRmsnorm.string() + "' --reference -w ffffffff");
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("--workload"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("ffffffff"), std::string::npos) << r.err;
}

TEST_F(EvalCli, AMistypedOptionOrCommandGetsASuggestion) {
  CliRun r = eval("'" + kRmsnorm.string() + "' --reference --smalest 1", /*json_out=*/false);
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("--smalest: did you mean --smallest?"), std::string::npos) << r.err;
  const fs::path err = dir_ / "typo.txt";
  const int status =
      std::system(("'" + std::string(SOLBENCH_BINARY) + "' evl 2>'" + err.string() + "'").c_str());
  EXPECT_EQ(WEXITSTATUS(status), 2);
  EXPECT_NE(read(err).find("evl: did you mean eval?"), std::string::npos) << read(err);
}

TEST_F(EvalCli, BuildOnlyBuildsAndEvaluatesNothing) {
  const fs::path traces = dir_ / "traces.jsonl", db = dir_ / "results.db";
  CliRun r = eval("'" + kRmsnorm.string() + "' -s '" +
                  (kRmsnorm / "solutions/cpp_rowwise/solution.json").string() +
                  "' --smallest 2 --build-only -o '" + traces.string() + "' --db '" +
                  db.string() + "'");
  ASSERT_EQ(r.rc, 0) << r.out << r.err;
  ASSERT_TRUE(r.doc.is_object()) << r.out;
  EXPECT_EQ(r.doc["build"]["status"], "ok") << r.doc["build"].dump();
  ASSERT_EQ(r.doc["results"].size(), 2u);
  for (const auto& w : r.doc["results"]) {
    EXPECT_TRUE(w.value("skipped", false)) << w.dump();
    EXPECT_NE(w.dump().find("--build-only"), std::string::npos) << w.dump();
  }
  EXPECT_TRUE(r.doc["workers"].empty());
  EXPECT_FALSE(fs::exists(traces));  // nothing evaluated: nothing traced or recorded
  EXPECT_FALSE(fs::exists(db));
  // A failed build still fails (exit 1), with the compiler's message.
  const fs::path bad = rmsnorm_solution("bad_build", "this is not C++;");
  CliRun b = eval("'" + kRmsnorm.string() + "' -s '" + bad.string() + "' --smallest 1 --build-only --no-db");
  EXPECT_EQ(b.rc, 1) << b.out << b.err;
  EXPECT_EQ(status_of(b.doc, 0), "COMPILE_ERROR");
}

TEST_F(EvalCli, ACudaDeviceThatIsNotHereIsAUsageError) {
  // Before: every workload was skipped and the evaluation exited 0.
  CliRun r = eval("'" + kRmsnorm.string() + "' --reference --smallest 1 --device cuda:7 --no-db");
  if (r.rc == 0) GTEST_SKIP() << "this machine has a cuda:7";
  EXPECT_EQ(r.rc, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("--device cuda:7: no such CUDA device here"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--build-only"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;  // refused before anything ran
}

TEST_F(EvalCli, TimeoutZeroMeansNoLimitAsInSol) {
  CliRun r = eval("'" + kRmsnorm.string() + "' -s '" +
                  (kRmsnorm / "solutions/cpp_rowwise/solution.json").string() + "' -w " + kB1 +
                  " --timeout 0 --compile-timeout 0 --no-timing --rounds 1 --no-db");
  EXPECT_EQ(r.rc, 0) << r.out << r.err;
  EXPECT_EQ(status_of(r.doc, 0), "PASSED") << r.err;
}

}  // namespace
}  // namespace solbench
