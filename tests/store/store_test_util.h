// Helpers shared by the store tests: a temporary folder, hand-made traces, a
// store with one environment and run, and direct SQLite access for checks.
#pragma once

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <stdlib.h>

#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>

#include "core/trace.h"
#include "store/store.h"

#include "test_support.h"  // EXPECT_HAS, TempDir

namespace solbench::store::testing {

// The shared temporary folder (tests/test_support.h).
using solbench::testing::TempDir;

// A trace in the public format. PASSED and INCORRECT_NUMERICAL carry
// correctness; PASSED carries performance (latency, reference latency).
inline Trace make_trace(const std::string& definition, const std::string& solution,
                        const std::string& uuid, Status status, double latency_ms = 0,
                        double reference_ms = 1.0) {
  Trace t;
  t.definition = definition;
  t.solution = solution;
  t.workload = {{"uuid", uuid}, {"axes", {{"n", 8}}}, {"inputs", {{"x", {{"type", "random"}}}}}};
  Evaluation& e = t.evaluation;
  e.status = status;
  e.log = status == Status::Passed ? "" : "failed: " + std::string(status_name(status));
  if (status == Status::Passed || status == Status::IncorrectNumerical)
    e.correctness = Correctness{1e-3, 2e-4, false, false};
  if (status == Status::Passed)
    e.performance = Performance{latency_ms, reference_ms, latency_ms > 0 ? reference_ms / latency_ms : 0};
  e.environment.hardware = "NVIDIA H100 80GB HBM3";
  e.environment.libs = {{"torch", "2.4.0"}, {"cuda", "12.4"}};
  e.environment.extra = {{"solbench_device", "cuda:0"}};
  e.timestamp = "2026-01-01T00:00:00.000Z";
  e.extra = {{"solbench_timer", "cupti"}, {"solbench_timed", status == Status::Passed}};
  return t;
}

inline EnvironmentInfo h100_env() {
  return EnvironmentInfo{"NVIDIA H100 80GB HBM3", "550.54.15", "12.4", "2.4.0", "cupti", "host-a"};
}

inline SolutionRecord solution_record(const std::string& name, const std::string& definition,
                                      const std::string& body = "v1") {
  return SolutionRecord{name, definition,
                        json{{"name", name},
                             {"definition", definition},
                             {"author", "test"},
                             {"spec", {{"languages", {"cuda_cpp"}}, {"entry_point", "k.cu::run"}}},
                             {"sources", {{{"path", "k.cu"}, {"content", body}}}}}};
}

// The message of the StoreError `f` throws ("" and a test failure if none).
template <class F>
std::string store_error(F&& f) {
  try {
    f();
  } catch (const StoreError& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a StoreError";
  return "";
}

// One value from an SQL query on the file, read outside the Store API.
inline std::string sql_value(const std::filesystem::path& db, const std::string& sql) {
  sqlite3* h = nullptr;
  if (sqlite3_open_v2(db.c_str(), &h, SQLITE_OPEN_READWRITE, nullptr) != SQLITE_OK) {
    sqlite3_close(h);
    throw std::runtime_error("cannot open " + db.string());
  }
  sqlite3_busy_timeout(h, 10000);
  sqlite3_stmt* s = nullptr;
  std::string out;
  if (sqlite3_prepare_v2(h, sql.c_str(), -1, &s, nullptr) != SQLITE_OK) {
    const std::string msg = sqlite3_errmsg(h);
    sqlite3_close(h);
    throw std::runtime_error(sql + ": " + msg);
  }
  const int rc = sqlite3_step(s);
  if (rc == SQLITE_ROW && sqlite3_column_text(s, 0))
    out = reinterpret_cast<const char*>(sqlite3_column_text(s, 0));
  const bool ok = rc == SQLITE_ROW || rc == SQLITE_DONE;
  const std::string msg = sqlite3_errmsg(h);
  sqlite3_finalize(s);
  sqlite3_close(h);
  if (!ok) throw std::runtime_error(sql + ": " + msg);
  return out;
}

// A store in a temporary folder with one environment and one open run.
class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = dir_.path() / "solbench.db";
    store_.emplace(Store::open(db_));
    env_ = store_->put_environment(h100_env());
    run_ = store_->begin_run(RunInfo{"solbench eval test", "/data/set", env_, ""});
  }

  // Records `t` under solution `name` (put first); returns the solution's hash.
  std::string record(const Trace& t, std::optional<double> score = std::nullopt,
                     const std::string& body = "v1") {
    const std::string hash = store_->put_solution(solution_record(t.solution, t.definition, body));
    TraceExtras x;
    x.solution_hash = hash;
    x.environment_hash = env_;
    x.sol_score = score;
    if (score) {
      x.t_sol_ms = 0.01;
      x.t_b_ms = 1.0;
    }
    store_->record_trace(run_, t, x);
    return hash;
  }

  TempDir dir_;
  std::filesystem::path db_;
  std::optional<Store> store_;
  std::string env_;
  int64_t run_ = 0;
};

}  // namespace solbench::store::testing
