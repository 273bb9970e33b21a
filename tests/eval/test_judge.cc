// Judged evaluations (docs/harness.md, "Judging"): the solution's worker records
// its calls and decides no verdict on values; a reference worker that never loads
// solution code judges the records. The record format's validation (unit), then
// solutions through the real binary on the CPU: attacks on the reference's values
// or on the harness's copies inside the solution's process, which the in-process
// path (SOLBENCH_REFERENCE_WORKER=0, kept for measuring the cost) lets through,
// and the judge's own guarantees (records checked against their digests, every
// round judged in order, batches within the disk budget, records deleted).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include "harness/protocol.h"
#include "python_solution_eval.h"

namespace solbench {
namespace {

namespace fs = std::filesystem;
using Judge = testing::PythonSolutionEval;
using testing::kB1;
using testing::kB2;
using testing::kFast;
using testing::pytorch_source;

const std::string kTwoRounds = " --rounds 2 --time-budget-ms 20 ";

// `n` results, each PASSED, judged in the reference worker (8 sampled calls checked)
// and with T_ref timed there.
void expect_judged_and_timed(const json& doc, size_t n) {
  ASSERT_EQ(doc["results"].size(), n);
  for (size_t i = 0; i < n; ++i) {
    const json& ev = doc["results"][i]["evaluation"];
    EXPECT_EQ(ev["status"], "PASSED") << ev["log"];
    const json& checks = ev["solbench_checks"];
    EXPECT_EQ(checks.value("reference_timed_in", ""), "reference worker") << checks.dump();
    EXPECT_EQ(checks["verification"].value("checked_calls", 0), 8) << checks.dump();
    EXPECT_GT(ev["performance"].value("reference_latency_ms", 0.0), 0.0);
  }
}

TEST(CallRecordJson, RoundTripsAndRefusesWhatCouldLeaveItsFolder) {
  const std::string sha(64, 'a');
  json ok = {{"rounds", {{{"round", 0}, {"file", "r0.rec"}, {"sha256", sha}},
                         {{"round", 1}, {"file", "r1.rec"}, {"sha256", sha}}}},
             {"samples", {{{"call", 3}, {"pool_call", 6}, {"file", "s0.rec"}, {"sha256", sha}}}},
             {"timed", true},
             {"failed_stage", ""},
             {"dir", "/somewhere"}};
  harness::CallRecord r = harness::CallRecord::from_json(ok);
  EXPECT_EQ(r.rounds.size(), 2u);
  EXPECT_EQ(r.samples.at(0).pool_call, 6);
  EXPECT_EQ(harness::CallRecord::from_json(r.to_json()).to_json(), r.to_json());
  // From a worker's frame the folder is the parent's to say.
  harness::WorkloadOutcome o;
  o.index = 0;
  o.status = Status::Passed;
  o.record = r;
  EXPECT_TRUE(harness::WorkloadOutcome::from_json(o.to_json()).record->dir.empty());

  auto refused = [&](const std::function<void(json&)>& change, const std::string& field) {
    json bad = ok;
    change(bad);
    try {
      harness::CallRecord::from_json(bad);
      ADD_FAILURE() << "accepted: " << bad.dump();
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
    }
  };
  refused([](json& j) { j["rounds"][0]["file"] = "../r0.rec"; }, "record.rounds[0].file");
  refused([](json& j) { j["rounds"][0]["file"] = "/etc/passwd"; }, "record.rounds[0].file");
  refused([](json& j) { j["samples"][0]["file"] = "r1.rec"; }, "twice");
  refused([](json& j) { j["rounds"][1]["round"] = 2; }, "record.rounds[1].round");
  refused([](json& j) { j["rounds"][0]["sha256"] = "abc"; }, "record.rounds[0].sha256");
  refused([](json& j) { j["samples"][0]["pool_call"] = 1; }, "record.samples[0]");
  refused([](json& j) { j["timed"] = false; }, "timed is false");
  refused([](json& j) { j["failed_stage"] = "later"; }, "record.failed_stage");
  refused([](json& j) { j["failed_stage"] = "round"; j["failed_round"] = 0; },
          "record.failed_round");
  refused([](json& j) { j.erase("samples"); }, "record");
  // A plan's records: one per workload, only for a reference worker with the secret.
  harness::WorkerPlan p;
  p.entry.kind = harness::EntryKind::Reference;
  p.role = harness::WorkerRole::Judge;
  p.judge.value_secret = 7;
  p.workloads = {json::object(), json::object()};
  p.judge.records = {r, std::nullopt};
  harness::WorkerPlan back = harness::WorkerPlan::from_json(p.to_json());
  ASSERT_EQ(back.judge.records.size(), 2u);
  EXPECT_EQ(back.judge.records[0]->dir, "/somewhere");
  EXPECT_FALSE(back.judge.records[1].has_value());
  json bad = p.to_json();
  bad["role"] = "solution";
  bad["kind"] = "python";
  EXPECT_THROW(harness::WorkerPlan::from_json(bad), std::runtime_error);
  // A reference worker started ahead: no workloads in its plan, then a work order
  // with them and their records (or a cancel).
  harness::WorkerPlan head = p;
  head.workloads.clear();
  head.judge.records.clear();
  head.judge.work_follows = true;
  EXPECT_TRUE(harness::WorkerPlan::from_json(head.to_json()).judge.work_follows);
  json early_bad = head.to_json();
  early_bad["workloads"] = json::array({json::object()});
  EXPECT_THROW(harness::WorkerPlan::from_json(early_bad), std::runtime_error);  // work too soon
  // Streamed: the work a workload at a time, T_ref after "go"; only with both.
  head.judge.streamed = true;
  EXPECT_THROW(harness::WorkerPlan::from_json(head.to_json()), std::runtime_error);
  head.judge.timing_after_go = true;
  EXPECT_TRUE(harness::WorkerPlan::from_json(head.to_json()).judge.streamed);
  head.judge.streamed = head.judge.timing_after_go = false;
  harness::WorkOrder order;
  order.workloads = p.workloads;
  order.records = p.judge.records;
  harness::WorkOrder order_back = harness::WorkOrder::from_json(order.to_json());
  EXPECT_FALSE(order_back.cancel);
  ASSERT_EQ(order_back.records.size(), 2u);
  EXPECT_EQ(order_back.records[0]->rounds.size(), 2u);
  EXPECT_TRUE(harness::WorkOrder::from_json(json{{"type", "cancel"}}).cancel);
  json order_bad = order.to_json();
  order_bad["records"].erase(1);
  EXPECT_THROW(harness::WorkOrder::from_json(order_bad), std::runtime_error);
  EXPECT_THROW(harness::WorkOrder::from_json(json{{"type", "plan"}}), std::runtime_error);
  // A record in two parts: its rounds (a record of one workload), then its rest
  // (the whole record, or none: withdrawn).
  harness::WorkOrder rounds;
  rounds.part = harness::RecordPart::Rounds;
  rounds.workloads = {json::object()};
  rounds.records = {r};
  EXPECT_EQ(rounds.to_json().value("part", ""), "rounds");
  EXPECT_EQ(harness::WorkOrder::from_json(rounds.to_json()).part, harness::RecordPart::Rounds);
  harness::WorkOrder rest = rounds;
  rest.part = harness::RecordPart::Rest;
  rest.records = {std::nullopt};
  const harness::WorkOrder rest_back = harness::WorkOrder::from_json(rest.to_json());
  EXPECT_EQ(rest_back.part, harness::RecordPart::Rest);
  ASSERT_EQ(rest_back.records.size(), 1u);
  EXPECT_FALSE(rest_back.records[0].has_value());
  EXPECT_FALSE(order.to_json().contains("part"));  // a whole record, as before
  json part_bad = rounds.to_json();
  part_bad["records"] = json::array({nullptr});
  EXPECT_THROW(harness::WorkOrder::from_json(part_bad), std::runtime_error);  // rounds of nothing
  part_bad = order.to_json();
  part_bad["part"] = "rest";
  EXPECT_THROW(harness::WorkOrder::from_json(part_bad), std::runtime_error);  // two workloads
  part_bad = rounds.to_json();
  part_bad["part"] = "samples";
  EXPECT_THROW(harness::WorkOrder::from_json(part_bad), std::runtime_error);
  bad = p.to_json();
  bad["judge"]["records"].erase(1);
  EXPECT_THROW(harness::WorkerPlan::from_json(bad), std::runtime_error);
  harness::WorkerPlan rec;
  rec.role = harness::WorkerRole::Recorder;
  EXPECT_EQ(harness::WorkerPlan::from_json(rec.to_json()).role, harness::WorkerRole::Recorder);
  // The secret of the values is the reference worker's alone.
  json leaked = rec.to_json();
  leaked["judge"] = {{"value_secret", 7}};
  EXPECT_THROW(harness::WorkerPlan::from_json(leaked), std::runtime_error);
  json no_secret = p.to_json();
  no_secret["judge"].erase("value_secret");
  EXPECT_THROW(harness::WorkerPlan::from_json(no_secret), std::runtime_error);
}

// Evaluates in the in-process path: the reference and the checks in the
// solution's own worker (what the judge replaced; for measuring its cost).
json in_process(const std::function<json()>& eval) {
  ::setenv("SOLBENCH_REFERENCE_WORKER", "0", 1);
  json doc = eval();
  ::unsetenv("SOLBENCH_REFERENCE_WORKER");
  return doc;
}

// Evaluates with the reference worker started beside the solution's, as on a GPU
// (streamed: it gets each workload's rounds, then the rest, as they are recorded).
json beside(const std::function<json()>& eval) {
  ::setenv("SOLBENCH_EARLY_REFERENCE_WORKER", "1", 1);
  json doc = eval();
  ::unsetenv("SOLBENCH_EARLY_REFERENCE_WORKER");
  return doc;
}

// A wrong RMSNorm (no normalisation, twice the scale: 2 * x * weight, cheap; the
// inputs' root mean square is about 1) with a TorchFunctionMode entered at import
// that, outside the solution's own calls, makes torch.rsqrt return 2s, so that the
// reference computes the same wrong values wherever it runs in the solution's
// process. No torch function is replaced (the fingerprint
// is silent) and the source names nothing the static look refuses.
const char* kRewritesTheReference =
    "import torch\n"
    "from torch.overrides import TorchFunctionMode\n"
    "_inside = False\n"
    "class _Agree(TorchFunctionMode):\n"
    "    def __torch_function__(self, func, types, args=(), kwargs=None):\n"
    "        out = func(*args, **(kwargs or {}))\n"
    "        if not _inside and getattr(func, '__name__', '') == 'rsqrt':\n"
    "            return torch.full_like(out, 2.0)\n"
    "        return out\n"
    "_Agree().__enter__()\n"
    "def run(hidden_states, weight):\n"
    "    global _inside\n"
    "    _inside = True\n"
    "    try:\n"
    "        return (2 * hidden_states.float() * weight.float()).to(hidden_states.dtype)\n"
    "    finally:\n"
    "        _inside = False\n";

TEST_F(Judge, AModeThatRewritesTheReferencesResultsCannotMakeAWrongSolutionPass) {
  const fs::path sol = solution("agree", kRewritesTheReference);
  // In the solution's process the reference agrees with the wrong solution:
  // PASSED (so this test could fail).
  json shared = in_process([&] { return eval(sol); });
  ASSERT_FALSE(shared.empty());
  EXPECT_EQ(status(shared), "PASSED") << log(shared);
  EXPECT_TRUE(shared["reference_workers"].empty());
  // Judged where the mode never existed: the values are wrong.
  json doc = eval(sol);
  ASSERT_FALSE(doc.empty());
  EXPECT_EQ(status(doc), "INCORRECT_NUMERICAL") << log(doc);
  EXPECT_NE(log(doc).find("round 1 of 1: output:"), std::string::npos) << log(doc);
  EXPECT_EQ(doc["reference_workers"].size(), 1u);
  EXPECT_EQ(doc["results"][0]["evaluation"]["solbench_checks"].value("judged_in", ""),
            "reference worker");
}

TEST_F(Judge, TheReferenceAsTheSolutionIsCheckedInOneWorkerAndItsCodeAsASolutionIsJudged) {
  // --reference loads no solution code: judged, the reference would be compared with
  // itself in a second process. Every check and T_ref run in its one worker.
  json doc = eval({}, std::string(" -w ") + kB1 + " -w " + kB2);
  ASSERT_FALSE(doc.empty());
  ASSERT_EQ(doc["results"].size(), 2u);
  EXPECT_TRUE(doc["reference_workers"].empty()) << doc["reference_workers"].dump();
  for (const json& r : doc["results"]) {
    const json& ev = r["evaluation"];
    EXPECT_EQ(ev["status"], "PASSED") << ev["log"];
    EXPECT_FALSE(ev["solbench_checks"].contains("judged_in")) << ev["solbench_checks"].dump();
    // The reference is the yardstick: 2 of its timed calls are re-checked, a
    // solution's 8 (harness/evaluate.cc kTrustedVerifySamples).
    EXPECT_EQ(ev["solbench_checks"]["verification"].value("checked_calls", 0), 2);
    EXPECT_GT(ev["performance"].value("reference_latency_ms", 0.0), 0.0);
  }
  // The same computation submitted as a solution is judged as every solution is.
  json sol = eval(solution("same", pytorch_source("", "")));
  ASSERT_FALSE(sol.empty());
  EXPECT_EQ(sol["reference_workers"].size(), 1u);
  expect_judged_and_timed(sol, 1);
  EXPECT_EQ(sol["results"][0]["evaluation"]["solbench_checks"].value("judged_in", ""),
            "reference worker");
}

TEST_F(Judge, AModeThatFakesTheHarnesssCopiesOfTheOutputsDoesNotReachTheRecord) {
  // The solution returns zeros at once and remembers its inputs; outside its calls
  // its mode hands any torch function applied to such an output the honest result
  // instead (a lazy output, without a tensor subclass). The in-process check
  // reads the output through torch functions: PASSED. The record is written with
  // the modes taken off (record.harness_only): the zeros are judged.
  const fs::path sol = solution("lazy_mode",
      "import torch\n"
      "from torch.overrides import TorchFunctionMode\n"
      "_inside = False\n"
      "_fake = {}\n"
      "def _honest(h, w):\n"
      "    x = h.float()\n"
      "    return (x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + 1e-5) * w.float()"
      ").to(h.dtype)\n"
      "class _Lazy(TorchFunctionMode):\n"
      "    def __torch_function__(self, func, types, args=(), kwargs=None):\n"
      "        if not _inside and args and isinstance(args[0], torch.Tensor) and "
      "id(args[0]) in _fake:\n"
      "            args = (_honest(*_fake[id(args[0])]),) + tuple(args[1:])\n"
      "        return func(*args, **(kwargs or {}))\n"
      "_Lazy().__enter__()\n"
      "def run(hidden_states, weight):\n"
      "    global _inside\n"
      "    _inside = True\n"
      "    try:\n"
      "        out = torch.zeros_like(hidden_states)\n"
      "        _fake[id(out)] = (hidden_states.clone(), weight.clone())\n"
      "        return out\n"
      "    finally:\n"
      "        _inside = False\n");
  const std::string untimed = kFast + " --no-timing ";
  json shared = in_process([&] { return eval(sol, std::string(" -w ") + testing::kB1, untimed); });
  ASSERT_FALSE(shared.empty());
  EXPECT_EQ(status(shared), "PASSED") << log(shared);
  json doc = eval(sol);
  ASSERT_FALSE(doc.empty());
  EXPECT_EQ(status(doc), "INCORRECT_NUMERICAL") << log(doc);
  EXPECT_NE(log(doc).find("all zeros"), std::string::npos) << log(doc);
}

TEST_F(Judge, ARecordChangedAfterItsCallIsARewardHack) {
  // In its second call the solution flips a byte of the first round's record,
  // still in its scratch folder (judge/<workload>/r0.rec): the judge reads the
  // file against the SHA-256 the worker reported right after writing it.
  json doc = eval(solution("tamper", testing::pytorch_source(
                      "calls = [0]",
                      "    calls[0] += 1\n"
                      "    if calls[0] == 2:\n"
                      "        with open(os.path.join('judge', '0', 'r0.rec'), 'r+b') as f:\n"
                      "            f.seek(-1, 2)\n"
                      "            b = f.read(1)\n"
                      "            f.seek(-1, 2)\n"
                      "            f.write(bytes([b[0] ^ 1]))")),
                  std::string(" -w ") + testing::kB1, " --rounds 2 --time-budget-ms 20 ");
  ASSERT_FALSE(doc.empty());
  EXPECT_EQ(status(doc), "REWARD_HACK") << log(doc);
  EXPECT_NE(log(doc).find("the record of correctness round 1 is not what the solution's worker "
                          "wrote"),
            std::string::npos)
      << log(doc);
}

TEST_F(Judge, AWrongRoundBeforeACrashIsJudgedFirst) {
  // Round 1 wrong, round 2 raises: the solution's worker stops at the exception
  // (it compares nothing); the judge finds round 1 wrong, which decides.
  json doc = eval(solution("wrong_then_crash", testing::pytorch_source(
                      "calls = [0]",
                      "    calls[0] += 1\n"
                      "    if calls[0] == 2:\n"
                      "        raise RuntimeError('boom')",
                      "    if calls[0] == 1:\n        out = out * 2")),
                  std::string(" -w ") + testing::kB1, " --rounds 2 --time-budget-ms 20 ");
  ASSERT_FALSE(doc.empty());
  EXPECT_EQ(status(doc), "INCORRECT_NUMERICAL") << log(doc);
  EXPECT_NE(log(doc).find("round 1 of 2"), std::string::npos) << log(doc);
  // A right round 1 leaves the solution's own failure.
  json crash = eval(solution("crash", testing::pytorch_source(
                        "calls = [0]",
                        "    calls[0] += 1\n"
                        "    if calls[0] == 2:\n"
                        "        raise RuntimeError('boom')")),
                    std::string(" -w ") + testing::kB1, " --rounds 2 --time-budget-ms 20 ");
  ASSERT_FALSE(crash.empty());
  EXPECT_EQ(status(crash), "RUNTIME_ERROR") << log(crash);
  EXPECT_NE(log(crash).find("round 1: the solution failed"), std::string::npos) << log(crash);
}

TEST_F(Judge, BatchesKeepTheRecordsWithinTheDiskBudgetAndNoneAreLeft) {
  // A budget smaller than one workload's records: one batch per workload, each
  // with its own solution worker and reference worker.
  const fs::path sol = solution("honest", testing::pytorch_source("", ""));
  ::setenv("SOLBENCH_RECORD_BUDGET_BYTES", "1", 1);
  ::setenv("SOLBENCH_EARLY_REFERENCE_WORKER", "1", 1);  // as on a GPU
  json doc = eval(sol, std::string(" -w ") + testing::kB1 + " -w " + testing::kB2);
  ::unsetenv("SOLBENCH_RECORD_BUDGET_BYTES");
  ::unsetenv("SOLBENCH_EARLY_REFERENCE_WORKER");
  ASSERT_FALSE(doc.empty());
  expect_judged_and_timed(doc, 2);
  EXPECT_EQ(doc["workers"].size(), 2u);
  ASSERT_EQ(doc["reference_workers"].size(), 2u);
  // Each batch's reference worker started beside its solution's worker and got
  // its work afterwards (JudgeOptions::work_follows).
  // It warmed up on the batch's first workload (the reference and the comparison
  // once) while it waited.
  // The second batch began once the first batch's reference worker had exited.
  EXPECT_EQ(doc["reference_workers"][0].value("exit", ""),
            "done (its exit awaited before the next batch)");
  EXPECT_EQ(doc["reference_workers"][1].value("exit", ""), "done (its exit not awaited)");
  for (const auto& w : doc["reference_workers"]) {
    EXPECT_TRUE(w.value("started_early", false)) << w;
    EXPECT_GT(w["phases_ms"].value("warm_up_ms", 0.0), 0.0) << w;
    EXPECT_EQ(w["phases_ms"].value("warm_up_steps", 0), 3) << w;  // no lock on the CPU
  }
  // Every record was deleted once judged (and the scratch folders with their workers).
  for (const auto& e : fs::directory_iterator(dir_ / "staging"))
    ADD_FAILURE() << "left behind: " << e.path();
  // The default budget holds both: one of each.
  json one = eval(sol, std::string(" -w ") + testing::kB1 + " -w " + testing::kB2);
  ASSERT_FALSE(one.empty());
  EXPECT_EQ(one["workers"].size(), 1u);
  EXPECT_EQ(one["reference_workers"].size(), 1u);
}

TEST_F(Judge, AStreamedJudgeJudgesEachWorkloadWhileTheSolutionsWorkerGoesOn) {
  // As on a GPU, the reference worker starts beside the solution's and gets each
  // workload as soon as its record exists (JudgeOptions::streamed). The solution's
  // first call on the second workload sleeps: the first workload is judged while
  // it does. T_ref is still timed for both, after the solution's worker is gone.
  const fs::path sol = solution(
      "slow_second", testing::pytorch_source("import time\nslept = [False]",
                                             "    if hidden_states.shape[0] == 2 and not slept[0]:\n"
                                             "        slept[0] = True\n"
                                             "        time.sleep(3)"));
  const std::string both = std::string(" -w ") + testing::kB1 + " -w " + testing::kB2;
  ::setenv("SOLBENCH_EARLY_REFERENCE_WORKER", "1", 1);
  json doc = eval(sol, both);
  ::setenv("SOLBENCH_STREAM_JUDGE", "0", 1);
  json after = eval(sol, both);
  ::unsetenv("SOLBENCH_STREAM_JUDGE");
  ::unsetenv("SOLBENCH_EARLY_REFERENCE_WORKER");
  ASSERT_FALSE(doc.empty());
  expect_judged_and_timed(doc, 2);
  ASSERT_EQ(doc["workers"].size(), 1u);
  ASSERT_EQ(doc["reference_workers"].size(), 1u);
  const json& judge = doc["reference_workers"][0];
  EXPECT_TRUE(judge.value("streamed", false)) << judge;
  const json& judged = judge["workloads"];
  const json& recorded = doc["workers"][0]["workloads"];
  ASSERT_EQ(judged.size(), 2u) << judge;
  ASSERT_EQ(recorded.size(), 2u) << doc["workers"][0];
  // The first workload's judging began after its rounds were recorded (before its
  // timed calls: the rounds go ahead) and before the solution's worker was done
  // with the second (its 3 s sleep); every T_ref after.
  const int64_t second_done = recorded[1].value("result_t_ns", int64_t{0});
  const int64_t first_judged = judged[0].value("judged_t_ns", int64_t{0});
  EXPECT_GT(first_judged, recorded[0].value("begin_t_ns", int64_t{0})) << judge;
  EXPECT_LT(first_judged, second_done) << doc["workers"] << judge;
  for (const auto& w : judged) EXPECT_GT(w.value("begin_t_ns", int64_t{0}), second_done) << judge;
  for (const auto& e : fs::directory_iterator(dir_ / "staging"))
    ADD_FAILURE() << "left behind: " << e.path();
  // SOLBENCH_STREAM_JUDGE=0: the work comes once the solution's worker is done.
  ASSERT_EQ(after["reference_workers"].size(), 1u);
  EXPECT_FALSE(after["reference_workers"][0].value("streamed", false));
  EXPECT_FALSE(after["reference_workers"][0]["workloads"][0].contains("judged_t_ns"));
  for (size_t i = 0; i < 2; ++i) EXPECT_EQ(status(after, i), "PASSED") << log(after, i);
}

TEST_F(Judge, AStreamedJudgeJudgesTheRoundsWhileTheSolutionIsTimed) {
  // The solution's first timed call sleeps: its correctness rounds, sent ahead
  // (FrameType::Rounds), are judged meanwhile, and the Judge waits for the rest
  // of the record (its sampled calls) before it goes on.
  const fs::path sol = solution(
      "slow_timing", pytorch_source("import time\ncalls = [0]",
                                    "    calls[0] += 1\n"
                                    "    if calls[0] == 3:\n"
                                    "        time.sleep(2)"));
  json doc = beside([&] { return eval(sol, std::string(" -w ") + kB1, kTwoRounds); });
  ASSERT_FALSE(doc.empty());
  EXPECT_EQ(status(doc), "PASSED") << log(doc);
  const json& checks = doc["results"][0]["evaluation"]["solbench_checks"];
  EXPECT_EQ(checks.value("reference_timed_in", ""), "reference worker") << checks;
  EXPECT_GT(checks["verification"].value("checked_calls", 0), 0) << checks;
  ASSERT_EQ(doc["reference_workers"].size(), 1u);
  const json& judge = doc["reference_workers"][0];
  EXPECT_TRUE(judge.value("streamed", false)) << judge;
  const json& recorded = doc["workers"][0]["workloads"];
  ASSERT_EQ(recorded.size(), 1u);
  const int64_t judged = judge["workloads"][0].value("judged_t_ns", int64_t{0});
  const int64_t result = recorded[0].value("result_t_ns", int64_t{0});
  EXPECT_GT(judged, recorded[0].value("begin_t_ns", int64_t{0})) << judge;
  EXPECT_LT(judged, result - 1'500'000'000) << doc["workers"] << judge;  // during the sleep
  const json& phases = doc["results"][0]["evaluation"]["solbench_phases_ms"];
  EXPECT_GT(phases.value("record_rest_wait_ms", 0.0), 1000.0) << phases;
  for (const auto& e : fs::directory_iterator(dir_ / "staging"))
    ADD_FAILURE() << "left behind: " << e.path();
}

TEST_F(Judge, RoundsSentAheadOfACrashAreWithdrawnAndTheNextWorkloadIsStillStreamed) {
  // The first workload's rounds pass and go to the Judge; its first timed call
  // ends the process. Its record is withdrawn (the crash decides), and the fresh
  // worker's second workload is judged by the same streamed Judge.
  const fs::path sol = solution(
      "crash_in_timing", pytorch_source("calls = [0]",
                                        "    calls[0] += 1\n"
                                        "    if hidden_states.shape[0] == 1 and calls[0] == 3:\n"
                                        "        os._exit(7)"));
  const std::string both = std::string(" -w ") + kB1 + " -w " + kB2;
  json doc = beside([&] { return eval(sol, both, kTwoRounds); });
  ASSERT_FALSE(doc.empty());
  ASSERT_EQ(doc["results"].size(), 2u);
  EXPECT_EQ(status(doc, 0), "RUNTIME_ERROR") << log(doc, 0);
  EXPECT_EQ(status(doc, 1), "PASSED") << log(doc, 1);
  ASSERT_EQ(doc["workers"].size(), 2u) << doc["workers"];
  ASSERT_EQ(doc["reference_workers"].size(), 1u) << doc["reference_workers"];
  const json& judge = doc["reference_workers"][0];
  EXPECT_TRUE(judge.value("streamed", false)) << judge;
  ASSERT_EQ(judge["workloads"].size(), 1u) << judge;  // the second's (the only one it judged)
  EXPECT_EQ(doc["results"][1]["evaluation"]["solbench_checks"].value("judged_in", ""),
            "reference worker");
  for (const auto& e : fs::directory_iterator(dir_ / "staging"))
    ADD_FAILURE() << "left behind: " << e.path();
}

TEST_F(Judge, AStreamedJudgeThatDiesBeforeReportingLeavesItsWorkloadsToAFreshOne) {
  // The reference ends its process on the second workload's real values (the
  // solution's worker never runs it; the SOL tracer's tensors are meta): the
  // streamed reference worker dies while judging ahead, having reported nothing. A
  // fresh one judges both: the first passes, the second fails with the crash.
  const fs::path def_path = problem_ / "definition.json";
  json def = json::parse(testing::read(def_path));
  std::string ref = def["reference"].get<std::string>();
  const std::string at = "    batch_size, hidden_size = hidden_states.shape\n";
  ASSERT_NE(ref.find(at), std::string::npos) << ref;
  ref.replace(ref.find(at), at.size(),
              at + "    if batch_size == 2 and hidden_states.device.type != 'meta':\n"
                   "        import os\n"
                   "        os._exit(3)\n");
  def["reference"] = ref;
  std::ofstream(def_path) << def.dump(2);
  ::setenv("SOLBENCH_EARLY_REFERENCE_WORKER", "1", 1);
  json doc = eval(solution("honest", testing::pytorch_source("", "")),
                  std::string(" -w ") + testing::kB1 + " -w " + testing::kB2);
  ::unsetenv("SOLBENCH_EARLY_REFERENCE_WORKER");
  ASSERT_FALSE(doc.empty());
  ASSERT_EQ(doc["results"].size(), 2u);
  EXPECT_EQ(status(doc, 0), "PASSED") << log(doc, 0);
  EXPECT_EQ(status(doc, 1), "RUNTIME_ERROR") << log(doc, 1);
  EXPECT_NE(log(doc, 1).find("reference worker"), std::string::npos) << log(doc, 1);
  // Its death is seen when the rest of the second record is sent to it (it died
  // judging that record's rounds, sent ahead): it is let go unreported; or, if it
  // was still judging then, after "go", as a reference worker that reported nothing.
  const json& refs = doc["reference_workers"];
  ASSERT_GE(refs.size(), 1u) << refs;
  for (size_t i = 0; i + 1 < refs.size(); ++i) {
    EXPECT_TRUE(refs[i].value("streamed", false)) << refs[i];
    EXPECT_TRUE(refs[i]["workloads"].empty()) << refs[i];
  }
  const json& fresh = refs.back();
  EXPECT_FALSE(fresh.value("streamed", false)) << fresh;
  ASSERT_FALSE(fresh["workloads"].empty()) << fresh;
  EXPECT_EQ(fresh["workloads"][0].value("index", -1), 0) << fresh;
}

TEST_F(Judge, CorrectnessOnlyRunsAreJudgedToo) {
  json doc = eval(solution("wrong", testing::pytorch_source("", "", "    out = out * 2")),
                  std::string(" -w ") + testing::kB1, kFast + " --no-timing ");
  ASSERT_FALSE(doc.empty());
  EXPECT_EQ(status(doc), "INCORRECT_NUMERICAL") << log(doc);
  EXPECT_EQ(doc["reference_workers"].size(), 1u);
  json ok = eval(solution("right", testing::pytorch_source("", "")),
                 std::string(" -w ") + testing::kB1, kFast + " --no-timing ");
  ASSERT_FALSE(ok.empty());
  EXPECT_EQ(status(ok), "PASSED") << log(ok);
  EXPECT_EQ(ok["results"][0]["evaluation"]["solbench_checks"].value("judged_in", ""),
            "reference worker");
}

TEST_F(Judge, AnEarlyReferenceWorkerWithNothingToJudgeIsStoppedAndLeavesNothing) {
  // The solution fails to load: no record to judge. The reference worker started
  // beside it is stopped unused; no reference worker is reported, nothing is left.
  ::setenv("SOLBENCH_EARLY_REFERENCE_WORKER", "1", 1);  // as on a GPU
  json doc = eval(solution("broken", "raise RuntimeError('no import for you')\n"),
                  std::string(" -w ") + testing::kB1);
  ::unsetenv("SOLBENCH_EARLY_REFERENCE_WORKER");
  ASSERT_FALSE(doc.empty());
  EXPECT_EQ(status(doc), "RUNTIME_ERROR") << log(doc);
  EXPECT_NE(log(doc).find("no import for you"), std::string::npos) << log(doc);
  EXPECT_EQ(doc["reference_workers"].size(), 0u);
  for (const auto& e : fs::directory_iterator(dir_ / "staging"))
    ADD_FAILURE() << "left behind: " << e.path();
}

}  // namespace
}  // namespace solbench
