#include "core/trace.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <regex>
#include <string>
#include "core_test_util.h"

namespace solbench {
namespace {

using testing::TempDir;

const char* kPassed = R"({
  "definition": "rmsnorm_h4096",
  "solution": "rmsnorm_triton",
  "workload": {"uuid": "u1", "axes": {"batch_size": 8}, "inputs": {"x": {"type": "random"}}},
  "evaluation": {
    "status": "PASSED",
    "log": "ok\n",
    "correctness": {"max_relative_error": 0.001, "max_absolute_error": 0.0002,
                    "has_nan": false, "has_inf": false},
    "performance": {"latency_ms": 0.5, "reference_latency_ms": 1.5, "speedup_factor": 3.0},
    "environment": {"hardware": "NVIDIA B200", "libs": {"torch": "2.8.0", "cuda": "12.9"},
                    "driver": "575"},
    "timestamp": "2026-11-23T10:00:00.123Z",
    "solbench": {"sol_ms": 0.25, "score": 0.66}
  },
  "run_id": 42
})";

TEST(Trace, ParsesEveryField) {
  Diagnostics diags;
  Trace t = parse_trace(json::parse(kPassed), "traces.jsonl", 1, diags);
  ASSERT_TRUE(diags.empty()) << diags.str();
  EXPECT_EQ(t.definition, "rmsnorm_h4096");
  EXPECT_EQ(t.solution, "rmsnorm_triton");
  EXPECT_EQ(t.workload["uuid"], "u1");
  const Evaluation& e = t.evaluation;
  EXPECT_EQ(e.status, Status::Passed);
  EXPECT_EQ(e.log, "ok\n");
  ASSERT_TRUE(e.correctness);
  EXPECT_DOUBLE_EQ(e.correctness->max_relative_error, 0.001);
  EXPECT_DOUBLE_EQ(e.correctness->max_absolute_error, 0.0002);
  EXPECT_FALSE(e.correctness->has_nan);
  ASSERT_TRUE(e.performance);
  EXPECT_DOUBLE_EQ(e.performance->latency_ms, 0.5);
  EXPECT_DOUBLE_EQ(e.performance->reference_latency_ms, 1.5);
  EXPECT_DOUBLE_EQ(e.performance->speedup_factor, 3.0);
  EXPECT_EQ(e.environment.hardware, "NVIDIA B200");
  ASSERT_EQ(e.environment.libs.size(), 2u);
  EXPECT_EQ(e.environment.libs[1], (std::pair<std::string, std::string>{"cuda", "12.9"}));
  EXPECT_EQ(e.environment.extra, json::parse(R"({"driver": "575"})"));
  EXPECT_EQ(e.timestamp, "2026-11-23T10:00:00.123Z");
  EXPECT_EQ(e.extra, json::parse(R"({"solbench": {"sol_ms": 0.25, "score": 0.66}})"));
  EXPECT_EQ(t.extra, json::parse(R"({"run_id": 42})"));
}

TEST(Trace, NullCorrectnessAndPerformance) {
  Diagnostics diags;
  Trace t = parse_trace(json::parse(R"({"definition":"d","solution":"s","workload":{},
      "evaluation":{"status":"COMPILE_ERROR","log":"nvcc: error","correctness":null,
      "performance":null,"environment":{"hardware":"cpu","libs":{}},"timestamp":"2026-11-23T10:00:00Z"}})"),
                        "traces.jsonl", 1, diags);
  ASSERT_TRUE(diags.empty()) << diags.str();
  EXPECT_EQ(t.evaluation.status, Status::CompileError);
  EXPECT_FALSE(t.evaluation.correctness);
  EXPECT_FALSE(t.evaluation.performance);
  json j = to_json(t);
  EXPECT_TRUE(j["evaluation"]["correctness"].is_null());
  EXPECT_TRUE(j["evaluation"]["performance"].is_null());
}

TEST(Trace, StatusNames) {
  const std::vector<std::pair<Status, const char*>> all = {
      {Status::Passed, "PASSED"},
      {Status::IncorrectShape, "INCORRECT_SHAPE"},
      {Status::IncorrectNumerical, "INCORRECT_NUMERICAL"},
      {Status::IncorrectDtype, "INCORRECT_DTYPE"},
      {Status::RuntimeError, "RUNTIME_ERROR"},
      {Status::CompileError, "COMPILE_ERROR"},
      {Status::Timeout, "TIMEOUT"},
      {Status::RewardHack, "REWARD_HACK"},
      {Status::InvalidReference, "INVALID_REFERENCE"},
  };
  for (const auto& [s, name] : all) {
    EXPECT_EQ(status_name(s), name);
    EXPECT_EQ(parse_status(name), s);
  }
  EXPECT_FALSE(parse_status("passed"));
  EXPECT_FALSE(parse_status("FAILED"));
}

TEST(Trace, ReportsErrors) {
  auto errors_of = [](const std::function<void(json&)>& edit) {
    json j = json::parse(kPassed);
    edit(j);
    Diagnostics diags;
    parse_trace(j, "traces.jsonl", 4, diags);
    return diags.str();
  };
  EXPECT_HAS(errors_of([](json& j) { j["evaluation"]["status"] = "FAILED"; }),
             "traces.jsonl:4: evaluation.status: unknown status \"FAILED\" (expected one of PASSED,");
  EXPECT_HAS(errors_of([](json& j) { j["evaluation"].erase("status"); }),
             "traces.jsonl:4: evaluation.status: missing required field");
  EXPECT_HAS(errors_of([](json& j) { j.erase("definition"); }), "traces.jsonl:4: definition: missing required field");
  EXPECT_HAS(errors_of([](json& j) { j["workload"] = 3; }), "workload: expected an object, found 3");
  EXPECT_HAS(errors_of([](json& j) { j["evaluation"]["correctness"]["has_nan"] = "no"; }),
             "evaluation.correctness.has_nan: expected true or false, found \"no\"");
  EXPECT_HAS(errors_of([](json& j) { j["evaluation"]["performance"]["latency_ms"] = "fast"; }),
             "evaluation.performance.latency_ms: expected a number, found \"fast\"");
  EXPECT_HAS(errors_of([](json& j) { j["evaluation"]["environment"]["libs"]["torch"] = 2; }),
             "evaluation.environment.libs.torch: expected a version string, found 2");
  EXPECT_HAS(errors_of([](json& j) { j["evaluation"]["performance"] = json::array(); }),
             "evaluation.performance: expected an object, found an array");
}

TEST(Trace, RoundTrip) {
  Diagnostics diags;
  Trace t = parse_trace(json::parse(kPassed), "traces.jsonl", 1, diags);
  json j = to_json(t);
  Trace again = parse_trace(j, "again", 1, diags);
  ASSERT_TRUE(diags.empty()) << diags.str();
  EXPECT_EQ(t, again);
  // Public keys in the documented order, extras after them.
  std::vector<std::string> keys;
  for (auto it = j["evaluation"].begin(); it != j["evaluation"].end(); ++it) keys.push_back(it.key());
  EXPECT_EQ(keys, (std::vector<std::string>{"status", "log", "correctness", "performance",
                                            "environment", "timestamp", "solbench"}));
  EXPECT_EQ(j, json::parse(kPassed));  // already in the public order: identical
}

TEST(Trace, AppendAndLoad) {
  TempDir dir;
  auto file = dir.path() / "sub" / "traces.jsonl";
  Diagnostics diags;
  Trace t = parse_trace(json::parse(kPassed), "x", 1, diags);
  Trace t2 = t;
  t2.evaluation.status = Status::Timeout;
  t2.evaluation.correctness.reset();
  t2.evaluation.performance.reset();
  append_traces(file, {t});
  append_traces(file, {t2, t});
  {
    std::ofstream(file, std::ios::app) << "\n{not json\n"
                                       << R"({"definition":"d","solution":"s","workload":{},"evaluation":{"status":"NOPE"}})"
                                       << "\n";
  }
  auto loaded = load_traces(file, diags);
  ASSERT_EQ(loaded.size(), 3u) << diags.str();
  EXPECT_EQ(loaded[0], t);
  EXPECT_EQ(loaded[1], t2);
  EXPECT_EQ(loaded[2], t);
  ASSERT_EQ(diags.size(), 2u) << diags.str();
  EXPECT_EQ(diags.items()[0].line, 5);
  EXPECT_HAS(diags.items()[0].message, "invalid JSON");
  EXPECT_EQ(diags.items()[1].line, 6);
  EXPECT_EQ(diags.items()[1].path, "evaluation.status");
}

TEST(Trace, Iso8601Now) {
  std::string now = iso8601_now();
  EXPECT_TRUE(std::regex_match(now, std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)"))) << now;
}

}  // namespace
}  // namespace solbench
