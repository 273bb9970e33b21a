// The sample the report tests render: a results store with hand-made traces of
// the bundled RMSNorm problem on an H100 (two solutions, a failing one named
// "<script>alert(1)</script>", the baseline) and of a definition that no
// problem folder holds; T_SOL and the scores are computed as eval records them.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "bridge/python.h"
#include "core/problem.h"
#include "report/report.h"
#include "score/sol_score.h"
#include "sol/analysis.h"
#include "sol/hardware.h"
#include "store/store_test_util.h"

namespace solbench::report::testing {

namespace fs = std::filesystem;
using solbench::testing::TempDir;

inline const std::string kRmsnorm = "001_rmsnorm_llama3_8b_h4096";
inline const std::string kOrphan = "999_definition_without_folder";
inline const std::string kXss = "<script>alert(1)</script>";
inline const std::string kXssLog = "CUDA error: <img src=x onerror=alert(2)> illegal memory access";
// Workloads of the RMSNorm problem in the sample (indices into workload.jsonl).
inline const std::vector<size_t> kWorkloads = {0, 4, 7, 10, 12, 15};

inline fs::path problems_dir() { return fs::path(SOLBENCH_SOURCE_DIR) / "problems"; }

// True where the embedded Python has torch (the SOL analysis needs it).
inline bool analysis_available() {
  return bridge::python_available() && !bridge::torch_version().empty();
}

class ReportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // The SOL analysis's cache: shared by the report tests, apart from the user's.
    setenv("SOLBENCH_CACHE_DIR",
           (fs::temp_directory_path() / "solbench-report-test-cache").c_str(), 1);
    db_ = dir_.path() / "solbench.db";
    store_.emplace(store::Store::open(db_));
    env_ = store_->put_environment(store::testing::h100_env());
    run_ = store_->begin_run({"solbench eval (report test)", problems_dir().string(), env_, ""});
  }

  // Records one trace of `solution` on `workload` with the score eval would give it.
  void record(const std::string& definition, const std::string& solution, const json& workload,
              Status status, double t_k_ms, std::optional<double> t_sol_ms, double t_b_ms,
              const std::string& log = "", const std::string& t_b_method = "torch.compile",
              const std::string& t_b_reason = "", const json& profile = nullptr,
              std::optional<double> t_attainable_ms = std::nullopt) {
    Trace t = store::testing::make_trace(definition, solution, workload["uuid"], status, t_k_ms,
                                         t_b_ms * 1.3);
    t.workload = workload;
    if (!log.empty()) t.evaluation.log = log;
    t.evaluation.extra["solbench_score"] = {{"arch", {{"model", "h100_sxm"}}}};
    if (!profile.is_null()) t.evaluation.extra["solbench_profile"] = profile;  // eval --profile
    const std::string hash =
        store_->put_solution(store::testing::solution_record(solution, definition));
    store::TraceExtras x;
    x.solution_hash = hash;
    x.environment_hash = env_;
    x.t_sol_ms = t_sol_ms;
    x.t_b_ms = t_b_ms;
    const score::WorkloadScore s = score::sol_score(
        status == Status::Passed ? std::optional<double>(t_k_ms) : std::nullopt, t_sol_ms, t_b_ms);
    if (status == Status::Passed) x.sol_score = s.score;
    x.extras = {{"sol_violation", s.sol_violation},
                {"score_reason", s.reason.empty() ? json(nullptr) : json(s.reason)},
                {"t_b_method", t_b_method},
                {"t_b_reason", t_b_reason.empty() ? json(nullptr) : json(t_b_reason)}};
    if (t_attainable_ms) x.extras["t_attainable_ms"] = *t_attainable_ms;  // as eval records it
    store_->record_trace(run_, t, x);
  }

  // The sample: RMSNorm with T_SOL from the SOL analysis on the H100 SXM model,
  // a good and a slower solution, one that fails (but once), the baseline; and
  // two workloads of a definition without a problem folder.
  void record_sample() {
    Diagnostics diags;
    const Problem p = load_problem(problem_paths(problems_dir() / kRmsnorm), diags);
    ASSERT_TRUE(diags.empty()) << diags.str();
    const auto hw = sol::find_hardware(sol::load_all_hardware(), "h100_sxm");
    ASSERT_TRUE(hw);
    for (size_t i : kWorkloads) {
      // T_SOL as eval records it; a made-up one where torch is missing (the tests
      // that place points skip there).
      double t_sol = 1e-5 * double(i + 1);
      if (analysis_available()) {
        const json a = sol::analyse_workload(p, i, *hw, sol::AnalysisOptions{});
        ASSERT_EQ(a.value("status", ""), "ok") << a.dump().substr(0, 500);
        t_sol = a["time_us"]["sol"].get<double>() / 1e3;
      }
      const json w = to_json(p.workloads[i]);
      const double t_b = std::max(0.006, t_sol * 1.8);
      record(kRmsnorm, "cuda_rmsnorm", w, Status::Passed, std::max(0.0035, t_sol * 1.2), t_sol, t_b);
      record(kRmsnorm, "triton_rmsnorm", w, Status::Passed, std::max(0.005, t_sol * 1.5), t_sol, t_b);
      if (i == kWorkloads.front())
        record(kRmsnorm, kXss, w, Status::Passed, 0.02, t_sol, t_b);
      else
        record(kRmsnorm, kXss, w, Status::RuntimeError, 0, t_sol, t_b, kXssLog);
      uuids_.push_back(p.workloads[i].uuid);
    }
    for (const char* uuid : {"0000aaaa-1111-2222-3333-444455556666", "0000bbbb-1111-2222-3333-444455556666"})
      record(kOrphan, "orphan_kernel", {{"uuid", uuid}, {"axes", {{"n", 64}}}, {"inputs", json::object()}},
             Status::Passed, 0.01, 0.004, 0.02);
  }

  ReportOptions options() const {
    ReportOptions o;
    o.problem_dirs = {problems_dir()};
    o.arch = "h100_sxm";
    return o;
  }

  Report collect_sample(const ReportOptions& o) { return collect(*store_, o); }

  TempDir dir_;
  fs::path db_;
  std::optional<store::Store> store_;
  std::string env_;
  int64_t run_ = 0;
  std::vector<std::string> uuids_;
};

// How often `needle` occurs in `text`.
inline size_t count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

}  // namespace solbench::report::testing
