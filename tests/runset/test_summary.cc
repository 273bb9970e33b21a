// The summary: counts, the mean SOL score rule, the JSON document's structure
// per evaluation, problem, category and in all, the table, and the exit code.
#include <gtest/gtest.h>

#include "runset/summary.h"
#include "runset_test_util.h"

namespace solbench::runset {
namespace {

WorkloadResult res(const std::string& uuid, std::optional<Status> st,
                   std::optional<double> score = std::nullopt, bool resumed = false) {
  WorkloadResult r;
  r.uuid = uuid;
  r.status = st;
  r.sol_score = score;
  r.resumed = resumed;
  if (!st) r.skip_reason = "safetensors: blob missing";
  return r;
}

EvaluationReport evaluation(const std::string& sol, std::vector<std::optional<WorkloadResult>> rs) {
  EvaluationReport e;
  e.solution = sol;
  e.solution_hash = std::string(64, 'a');
  for (size_t k = 0; k < rs.size(); ++k) e.uuids.push_back(rs[k] ? rs[k]->uuid : "u" + std::to_string(k));
  e.results = std::move(rs);
  return e;
}

RunReport sample() {
  RunReport r;
  r.dataset = "/data";
  r.layout = Layout::Categories;
  r.slots = {"cpu", "cpu"};
  r.db = "/tmp/x.db";
  r.recording = "eval";
  ProblemReport a;
  a.where = {"L1", "001_a", "/data/L1/001_a"};
  a.definition = "001_a";
  a.workloads = 2;
  a.evaluations.push_back(evaluation(
      "fast", {res("w1", Status::Passed, 0.8), res("w2", Status::Passed, 0.4, true)}));
  a.evaluations.push_back(
      evaluation("broken", {res("w1", Status::IncorrectNumerical), res("w2", Status::Passed)}));
  ProblemReport b;
  b.where = {"L1", "002_b", "/data/L1/002_b"};
  b.definition = "002_b";
  b.workloads = 2;
  b.evaluations.push_back(evaluation("plain", {res("x1", Status::Passed), res("x2", std::nullopt)}));
  ProblemReport c;
  c.where = {"L2", "003_c", "/data/L2/003_c"};
  c.workloads = 1;
  c.error = "/data/L2/003_c/definition.json: name: expected a string";
  r.problems = {a, b, c};
  return r;
}

TEST(Summary, TallyCountsAndScoreRule) {
  const RunReport r = sample();
  Tally fast, broken, plain;
  fast.add(r.problems[0].evaluations[0]);
  broken.add(r.problems[0].evaluations[1]);
  plain.add(r.problems[1].evaluations[0]);
  EXPECT_EQ(fast.statuses.at("PASSED"), 2u);
  EXPECT_EQ(fast.evaluated, 1u);
  EXPECT_EQ(fast.resumed, 1u);
  ASSERT_TRUE(fast.mean_sol_score());
  EXPECT_DOUBLE_EQ(*fast.mean_sol_score(), 0.6);
  // No result carries a score: null, although one failed.
  EXPECT_FALSE(broken.mean_sol_score());
  EXPECT_EQ(broken.failed(), 1u);
  EXPECT_EQ(plain.skipped, 1u);
  EXPECT_EQ(plain.text(), "1 PASSED, 1 skipped");
  // Together: the failure counts 0, the unscored PASSED are left out.
  Tally both = fast;
  both.add(broken);
  ASSERT_TRUE(both.mean_sol_score());
  EXPECT_DOUBLE_EQ(*both.mean_sol_score(), (0.8 + 0.4 + 0) / 3);
  EXPECT_EQ(both.text(), "3 PASSED, 1 INCORRECT_NUMERICAL");
}

TEST(Summary, JsonPerProblemCategoryAndTotal) {
  const json j = summary_json(sample());
  EXPECT_EQ(j["layout"], "categories");
  EXPECT_EQ(j["slots"].size(), 2u);
  ASSERT_EQ(j["problems"].size(), 3u);
  const json& p0 = j["problems"][0];
  EXPECT_EQ(p0["category"], "L1");
  EXPECT_EQ(p0["problem"], "001_a");
  EXPECT_EQ(p0["workloads"], 2);
  EXPECT_EQ(p0["results"], 4);
  EXPECT_EQ(p0["statuses"]["PASSED"], 3);
  EXPECT_EQ(p0["statuses"]["INCORRECT_NUMERICAL"], 1);
  ASSERT_EQ(p0["solutions"].size(), 2u);
  const json& s0 = p0["solutions"][0];
  EXPECT_EQ(s0["solution"], "fast");
  EXPECT_EQ(s0["workloads"], 2);
  EXPECT_DOUBLE_EQ(s0["mean_sol_score"].get<double>(), 0.6);
  EXPECT_EQ(s0["workload_results"][1]["resumed"], true);
  EXPECT_TRUE(p0["solutions"][1]["mean_sol_score"].is_null());
  EXPECT_EQ(j["problems"][1]["solutions"][0]["workload_results"][1]["skip_reason"],
            "safetensors: blob missing");
  EXPECT_EQ(j["problems"][2]["error"], "/data/L2/003_c/definition.json: name: expected a string");
  EXPECT_EQ(j["problems"][2]["errors"], 1);

  ASSERT_EQ(j["categories"].size(), 2u);
  const json& l1 = j["categories"][0];
  EXPECT_EQ(l1["category"], "L1");
  EXPECT_EQ(l1["problems"], 2);
  EXPECT_EQ(l1["workloads"], 4);
  EXPECT_EQ(l1["evaluations"], 3);
  EXPECT_EQ(l1["results"], 6);
  EXPECT_EQ(l1["statuses"]["PASSED"], 4);
  EXPECT_EQ(l1["skipped"], 1);
  EXPECT_EQ(j["categories"][1]["errors"], 1);
  const json& t = j["total"];
  EXPECT_EQ(t["problems"], 3);
  EXPECT_EQ(t["workloads"], 5);
  EXPECT_EQ(t["results"], 6);
  EXPECT_EQ(t["failed"], 1);
  EXPECT_DOUBLE_EQ(t["mean_sol_score"].get<double>(), (0.8 + 0.4 + 0) / 3);
}

TEST(Summary, TableIsTheSameWhetherResultsWereResumed) {
  RunReport a = sample();
  RunReport b = sample();
  for (auto& p : b.problems)
    for (auto& e : p.evaluations) {
      e.seconds = 99;
      e.device = "cuda:3";
      for (auto& r : e.results)
        if (r) r->resumed = !r->resumed;
    }
  EXPECT_EQ(summary_table(a), summary_table(b));
  const std::string t = summary_table(a);
  EXPECT_HAS(t, "L1/001_a");
  EXPECT_HAS(t, "1 PASSED, 1 INCORRECT_NUMERICAL");
  EXPECT_HAS(t, "invalid: /data/L2/003_c/definition.json");
  EXPECT_HAS(t, "category L2:");
  EXPECT_HAS(t, "total: 3 problem(s), 3 evaluation(s), 6 result(s)");
}

TEST(Summary, EveryFailedRowSaysWhy) {
  RunReport r = sample();
  r.problems[0].evaluations[1].results[0]->reason = "round 2: output: 3% of elements within tolerance";
  const std::string t = summary_table(r);
  EXPECT_HAS(t, "w1 INCORRECT_NUMERICAL: round 2: output: 3% of elements within tolerance");
  EXPECT_EQ(summary_json(r)["problems"][0]["solutions"][1]["workload_results"][0].value("reason", ""),
            "round 2: output: 3% of elements within tolerance");
  // From a trace: the log's telling line.
  Trace tr;
  tr.workload = {{"uuid", "u"}};
  tr.evaluation.status = Status::RuntimeError;
  tr.evaluation.log = "some output\nRuntimeError: the worker died\n";
  EXPECT_EQ(result_of(tr).reason, "RuntimeError: the worker died");
}

TEST(Summary, ExitCode) {
  RunReport r = sample();
  EXPECT_EQ(exit_code(r), 1);  // a failure and an invalid problem
  r.problems.pop_back();
  r.problems[0].evaluations.pop_back();
  EXPECT_EQ(exit_code(r), 0);  // PASSED and skipped only
  r.problems[0].evaluations[0].results[0].reset();  // not run
  EXPECT_EQ(exit_code(r), 1);
  r = sample();
  r.problems.pop_back();
  r.problems[0].evaluations.pop_back();
  r.errors.push_back("x.json: not valid JSON");
  EXPECT_EQ(exit_code(r), 1);
}

TEST(Summary, ScoreFromTraceExtra) {
  Trace t;
  t.workload = {{"uuid", "w"}};
  t.evaluation.status = Status::Passed;
  EXPECT_FALSE(sol_score_of(t));
  t.evaluation.extra["solbench_sol_score"] = nullptr;
  EXPECT_FALSE(sol_score_of(t));
  t.evaluation.extra["solbench_sol_score"] = 0.25;
  ASSERT_TRUE(sol_score_of(t));
  const WorkloadResult r = result_of(t);
  EXPECT_EQ(r.uuid, "w");
  EXPECT_DOUBLE_EQ(*r.sol_score, 0.25);
  EXPECT_FALSE(r.resumed);
}

// A result scored against an eager T_b is a warning in the JSON and the table, read
// from the trace's solbench_score.t_b (live or resumed from the store alike).
TEST(Summary, EagerBaselinesAreWarnedAboutWithTheirReason) {
  Trace t;
  t.workload = {{"uuid", "w1"}};
  t.evaluation.status = Status::Passed;
  t.evaluation.extra = {
      {"solbench_sol_score", 0.7},
      {"solbench_score",
       {{"t_b", {{"t_b_ms", 2.5}, {"method", "eager"}, {"reason", "torch.compile failed: X"}}}}}};
  WorkloadResult eager = result_of(t);
  EXPECT_EQ(eager.t_b_method, "eager");
  EXPECT_EQ(eager.t_b_reason, "torch.compile failed: X");
  t.evaluation.extra["solbench_score"]["t_b"] = {{"t_b_ms", 2.0}, {"method", "torch.compile"},
                                                {"reason", nullptr}};
  WorkloadResult compiled = result_of(t);
  EXPECT_EQ(compiled.t_b_method, "torch.compile");
  EXPECT_EQ(compiled.t_b_reason, "");
  t.evaluation.extra["solbench_score"]["t_b"] = {{"t_b_ms", nullptr}, {"reason", "--no-baseline"}};
  EXPECT_EQ(result_of(t).t_b_method, "");  // no T_b: nothing to warn about

  RunReport r = sample();
  eager.uuid = "w1";
  compiled.uuid = "w2";
  r.problems[0].evaluations[0].results = {eager, compiled};
  Tally tally;
  tally.add(r.problems[0].evaluations[0]);
  EXPECT_EQ(tally.eager_baselines, 1u);
  EXPECT_EQ(tally.eager_reasons.at("torch.compile failed: X"), 1u);

  const json j = summary_json(r);
  const json& s0 = j["problems"][0]["solutions"][0];
  EXPECT_EQ(s0["eager_baselines"], 1);
  EXPECT_EQ(s0["workload_results"][0]["t_b_method"], "eager");
  EXPECT_EQ(s0["workload_results"][0]["t_b_reason"], "torch.compile failed: X");
  EXPECT_EQ(s0["workload_results"][1]["t_b_method"], "torch.compile");
  EXPECT_FALSE(s0["workload_results"][1].contains("t_b_reason"));
  EXPECT_EQ(j["total"]["eager_baselines"], 1);

  const std::string table = summary_table(r);
  EXPECT_HAS(table, "warning: T_b of 1 workload(s) is eager (torch.compile failed: X)");
  EXPECT_HAS(table, "1 result(s) scored against an eager T_b");
  EXPECT_EQ(summary_table(sample()).find("eager"), std::string::npos);
}

// A PASSED result without a score says why in the JSON (the score's reason, and the
// T_b's where there is none) and under the table's total, live or resumed alike.
TEST(Summary, UnscoredResultsSayWhyTheyHaveNoScore) {
  Trace t;
  t.workload = {{"uuid", "w1"}};
  t.evaluation.status = Status::Passed;
  t.evaluation.timestamp = "2026-11-27T07:00:00Z";
  t.evaluation.correctness = Correctness{};
  t.evaluation.performance = Performance{0.5, 0.6, 1.2};
  const std::string missed = "the compiled reference misses the tolerance: 98.96% within, 99% required";
  t.evaluation.extra = {
      {"solbench_sol_score", nullptr},
      {"solbench_score_reason", "no score: " + missed},
      {"solbench_score", {{"t_b", {{"t_b_ms", nullptr}, {"reason", missed}}}}}};
  WorkloadResult no_t_b = result_of(t);
  EXPECT_EQ(no_t_b.t_b_method, "");
  EXPECT_EQ(no_t_b.t_b_reason, missed);
  EXPECT_EQ(no_t_b.score_reason, "no score: " + missed);
  store::StoredTrace st;
  st.workload_uuid = "w2";
  st.status = Status::Passed;
  st.trace_json = to_json(t).dump();
  WorkloadResult resumed = result_of(st);
  EXPECT_TRUE(resumed.resumed);
  EXPECT_EQ(resumed.score_reason, no_t_b.score_reason);
  EXPECT_EQ(resumed.t_b_reason, missed);

  RunReport r = sample();
  r.problems[0].evaluations[0].results = {no_t_b, resumed};
  Tally tally;
  tally.add(r.problems[0].evaluations[0]);
  EXPECT_EQ(tally.unscored, 2u);
  EXPECT_EQ(tally.unscored_reasons.at("no score: " + missed), 2u);
  EXPECT_FALSE(tally.mean_sol_score());

  const json j = summary_json(r);
  const json& w0 = j["problems"][0]["solutions"][0]["workload_results"][0];
  EXPECT_TRUE(w0["t_b_method"].is_null());
  EXPECT_EQ(w0["t_b_reason"], missed);
  EXPECT_EQ(w0["score_reason"], "no score: " + missed);
  EXPECT_GE(j["total"]["unscored"].get<int>(), 2);
  // A scored result carries neither.
  const json& scored = summary_json(sample())["problems"][0]["solutions"][0]["workload_results"][0];
  EXPECT_FALSE(scored.contains("score_reason"));
  EXPECT_FALSE(scored.contains("t_b_reason"));

  const std::string table = summary_table(r);
  EXPECT_HAS(table, "PASSED result(s) have no SOL score and are left out of the means");
  EXPECT_HAS(table, "2 no score: " + missed);
}

}  // namespace
}  // namespace solbench::runset
