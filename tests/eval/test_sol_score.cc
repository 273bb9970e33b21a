// The SOL Score formula and its means (src/score/sol_score.h), worked by hand:
//   S = 1 / (1 + (T_k - T_SOL) / (T_b - T_SOL))
// and the worker plan's baseline flag (src/harness/protocol.h).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "core/problem.h"
#include "core/settings.h"
#include "harness/protocol.h"
#include "score/arch.h"
#include "score/baseline.h"
#include "score/environment.h"
#include "score/published.h"
#include "score/sol_score.h"
#include "store/store.h"
#include "test_support.h"

namespace solbench {
namespace {

using score::sol_score;

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// One way to print a score in every table: a failure counts 0, a score that
// cannot be computed is n/a (not a dash that reads as worse than 0).
TEST(SolScore, TextSaysFailedZeroAndUnknownApart) {
  EXPECT_EQ(score::score_text(0.41234), "0.412");
  EXPECT_EQ(score::score_text(std::nullopt, /*failed=*/true), "0.000");
  EXPECT_EQ(score::score_text(std::nullopt), "n/a");
}

// A bound from a trace that ran out of its time budget says so beside T_SOL (eval's
// and run's JSON, the store's traces), with the budget and the operators traced.
TEST(SolBound, APartialTraceIsSaidBesideTheBound) {
  Diagnostics diags;
  const Problem p = load_problem(
      problem_paths(std::string(SOLBENCH_SOURCE_DIR) + "/problems/001_rmsnorm_llama3_8b_h4096"), diags);
  ASSERT_TRUE(diags.empty()) << diags.str();
  const sol::HardwareModel hw =
      sol::load_hardware(std::string(SOLBENCH_SOURCE_DIR) + "/data/hardware/h100_sxm.json");
  sol::AnalysisOptions opt;
  opt.use_cache = false;
  opt.trace_budget_s = 3;
  bool partial = true;
  opt.trace = [&](const json& request) {
    sol::OpGraph g;
    g.mode = "hybrid";
    g.raw_op_count = 128;
    if (partial) g.partial_budget_s = request.value("budget_s", 0.0);
    return g;
  };
  const json b = score::sol_bound(p, 0, hw, opt).to_json();
  ASSERT_TRUE(b.contains("partial")) << b.dump();
  EXPECT_EQ(b["partial"]["budget_s"], 3);
  EXPECT_EQ(b["partial"]["ops"], 128);
  EXPECT_FALSE(b["t_sol_ms"].is_null());
  partial = false;
  EXPECT_FALSE(score::sol_bound(p, 0, hw, opt).to_json().contains("partial"));
}

TEST(SolScore, HalfAtTheBaseline) {
  // T_SOL 0.01, T_b 0.05, T_k 0.05: (0.05-0.01)/(0.05-0.01) = 1 -> S = 1/(1+1) = 0.5.
  auto s = sol_score(0.05, 0.01, 0.05);
  ASSERT_TRUE(s.score.has_value()) << s.reason;
  EXPECT_DOUBLE_EQ(*s.score, 0.5);
  EXPECT_FALSE(s.sol_violation);
  EXPECT_FALSE(s.baseline_at_or_below_sol);
  EXPECT_TRUE(s.reason.empty()) << s.reason;
}

TEST(SolScore, OneAtTheSpeedOfLight) {
  // T_k = T_SOL = 0.01: (0.01-0.01)/(0.05-0.01) = 0 -> S = 1/(1+0) = 1, and no violation.
  auto s = sol_score(0.01, 0.01, 0.05);
  ASSERT_TRUE(s.score.has_value()) << s.reason;
  EXPECT_DOUBLE_EQ(*s.score, 1.0);
  EXPECT_FALSE(s.sol_violation);
  EXPECT_TRUE(s.reason.empty()) << s.reason;
}

TEST(SolScore, BetweenAndBeyondTheBaseline) {
  // T_k 0.03: (0.03-0.01)/(0.05-0.01) = 0.5 -> S = 1/1.5 = 2/3.
  EXPECT_NEAR(*sol_score(0.03, 0.01, 0.05).score, 2.0 / 3.0, 1e-12);
  // T_k 0.09, slower than the baseline: (0.09-0.01)/0.04 = 2 -> S = 1/3 (< 0.5).
  EXPECT_NEAR(*sol_score(0.09, 0.01, 0.05).score, 1.0 / 3.0, 1e-12);
  // T_SOL 0 is a bound too: T_k 0.02, T_b 0.04 -> 0.02/0.04 = 0.5 -> S = 2/3.
  EXPECT_NEAR(*sol_score(0.02, 0.0, 0.04).score, 2.0 / 3.0, 1e-12);
}

TEST(SolScore, FasterThanLightIsFlaggedWithBothTimesAndCappedAtOne) {
  // T_k 0.005 < T_SOL 0.01: the formula gives 1/(1 + (-0.005/0.04)) = 1/0.875 = 1.142857.
  auto s = sol_score(0.005, 0.01, 0.05);
  EXPECT_TRUE(s.sol_violation);
  ASSERT_TRUE(s.score.has_value());
  EXPECT_DOUBLE_EQ(*s.score, 1.0);  // never above 1
  EXPECT_TRUE(has(s.reason, "sol_violation")) << s.reason;
  EXPECT_TRUE(has(s.reason, "0.005 ms")) << s.reason;  // T_k
  EXPECT_TRUE(has(s.reason, "0.01 ms")) << s.reason;   // T_SOL
  EXPECT_TRUE(has(s.reason, "capped at 1")) << s.reason;
  EXPECT_TRUE(has(s.reason, "1.14286")) << s.reason;   // what the formula gave
  const json j = s.to_json();
  EXPECT_TRUE(j["sol_violation"].get<bool>());
  EXPECT_DOUBLE_EQ(j["violation"]["t_k_ms"].get<double>(), 0.005);
  EXPECT_DOUBLE_EQ(j["violation"]["t_sol_ms"].get<double>(), 0.01);
}

TEST(SolScore, ViolationIsFlaggedEvenWithoutABaseline) {
  auto s = sol_score(0.005, 0.01, std::nullopt);
  EXPECT_TRUE(s.sol_violation);
  EXPECT_FALSE(s.score.has_value());
  EXPECT_TRUE(has(s.reason, "sol_violation")) << s.reason;
  EXPECT_TRUE(has(s.reason, "no score: T_b")) << s.reason;
}

TEST(SolScore, BaselineAtOrBelowTheBoundFollowsThePublicRuleAndSaysSo) {
  // T_b 0.01 <= T_SOL 0.02: T_b - T_SOL = -0.01, the formula's denominator is not
  // positive; the public rule: 1 if T_k <= T_SOL, else 0. T_k 0.03 > 0.02: 0.
  auto s = sol_score(0.03, 0.02, 0.01);
  ASSERT_TRUE(s.score.has_value());
  EXPECT_EQ(*s.score, 0.0);
  EXPECT_TRUE(s.baseline_at_or_below_sol);
  EXPECT_FALSE(s.sol_violation);
  EXPECT_TRUE(has(s.reason, "T_b 0.01 ms <= T_SOL 0.02 ms")) << s.reason;
  EXPECT_TRUE(has(s.reason, "undefined")) << s.reason;
  EXPECT_TRUE(has(s.reason, "public rule gives 0")) << s.reason;
  // Equal: T_b = T_SOL = 0.02 (division by zero avoided), T_k 0.01 below both: 1,
  // and both flags (a T_k under the bound is a violation whatever the score).
  auto e = sol_score(0.01, 0.02, 0.02);
  ASSERT_TRUE(e.score.has_value());
  EXPECT_EQ(*e.score, 1.0);
  EXPECT_TRUE(e.baseline_at_or_below_sol);
  EXPECT_TRUE(e.sol_violation);
  EXPECT_TRUE(has(e.reason, "public rule gives 1")) << e.reason;
}

TEST(SolScore, MissingOrInvalidTimesGiveNoScoreAndSayWhich) {
  auto no_sol = sol_score(0.03, std::nullopt, 0.05);
  EXPECT_FALSE(no_sol.score.has_value());
  EXPECT_TRUE(has(no_sol.reason, "T_SOL unknown")) << no_sol.reason;
  auto zero_k = sol_score(0.0, 0.01, 0.05);
  EXPECT_FALSE(zero_k.score.has_value());
  EXPECT_TRUE(has(zero_k.reason, "T_k (the kernel's time) is 0 ms (expected a time > 0)"))
      << zero_k.reason;
  auto nan_b = sol_score(0.03, 0.01, std::numeric_limits<double>::quiet_NaN());
  EXPECT_FALSE(nan_b.score.has_value());
  EXPECT_TRUE(has(nan_b.reason, "T_b (the baseline's time) is not finite")) << nan_b.reason;
  auto neg_sol = sol_score(0.03, -1.0, 0.05);
  EXPECT_FALSE(neg_sol.score.has_value());
  EXPECT_TRUE(has(neg_sol.reason, "expected a time >= 0")) << neg_sol.reason;
  EXPECT_TRUE(sol_score(0.03, 0.01, 0.05).to_json()["reason"].is_null());
}

TEST(SolScore, ProblemScoreIsTheMeanOverWorkloadsFailedCountZero) {
  // 0.5, 1.0, a failed workload (0), and a PASSED one without a score (left out):
  // (0.5 + 1.0 + 0) / 3 = 0.5.
  std::vector<score::ScoredWorkload> w = {
      {true, 0.5, false}, {true, 1.0, true}, {false, std::nullopt, false}, {true, std::nullopt, false}};
  auto a = score::problem_score(w);
  ASSERT_TRUE(a.mean.has_value());
  EXPECT_DOUBLE_EQ(*a.mean, 0.5);
  EXPECT_EQ(a.items, 4);
  EXPECT_EQ(a.scored, 3);
  EXPECT_EQ(a.failed, 1);
  EXPECT_EQ(a.unscored, 1);
  EXPECT_EQ(a.violations, 1);
  // Nothing scored: no mean (not 0).
  auto none = score::problem_score({{true, std::nullopt, false}});
  EXPECT_FALSE(none.mean.has_value());
  EXPECT_EQ(none.unscored, 1);
  EXPECT_FALSE(score::problem_score({}).mean.has_value());
}

TEST(SolScore, CategoryScoreIsTheMeanOverProblems) {
  // Problems with means 0.5 (from 4 workloads) and 0.8 (from 1), and one without a
  // mean: (0.5 + 0.8) / 2 = 0.65; problems weigh the same whatever their workload count.
  auto p1 = score::problem_score({{true, 0.25, false}, {true, 0.75, false}, {true, 0.5, false},
                                  {true, 0.5, false}});
  auto p2 = score::problem_score({{true, 0.8, false}});
  auto p3 = score::problem_score({{true, std::nullopt, false}});
  auto c = score::category_score({p1, p2, p3});
  ASSERT_TRUE(c.mean.has_value());
  EXPECT_NEAR(*c.mean, 0.65, 1e-12);
  EXPECT_EQ(c.items, 3);
  EXPECT_EQ(c.scored, 2);
  EXPECT_EQ(c.unscored, 1);
  const json j = c.to_json();
  EXPECT_NEAR(j["mean"].get<double>(), 0.65, 1e-12);
}

// "eager (why)" beside an eager T_b; nothing beside a compiled one.
TEST(EagerNote, SaysEagerAndWhy) {
  EXPECT_EQ(score::eager_note("eager", "torch.compile failed: X"), "eager (torch.compile failed: X)");
  EXPECT_EQ(score::eager_note("eager", ""), "eager (reason unknown)");
  EXPECT_EQ(score::eager_note("torch.compile", ""), "");
  EXPECT_EQ(score::eager_note("", "no baseline"), "");
}

// The store's eager T_b is reused only where torch has no torch.compile: with one,
// whatever made it eager may be gone (the module look-up that broke every compile
// until the store kept reasons, say), so it is measured again.
TEST(CachedBaseline, AnEagerOneIsReusedOnlyWithoutTorchCompile) {
  testing::TempDir dir;
  store::Store db = store::Store::open(dir.path() / "s.db");
  auto key = [](const std::string& uuid, const std::string& torch) {
    return store::BaselineKey{std::string(64, 'd'), uuid, "gpu", "", torch, "cupti"};
  };
  const std::string why = "torch.compile failed on a call: X";
  db.put_baseline({key("a", "2.11.0+cu130"), 1.0, store::BaselineMethod::Eager, "", why});
  db.put_baseline({key("b", "2.11.0+cu130"), 2.0, store::BaselineMethod::TorchCompile, "", ""});
  db.put_baseline({key("c", "1.13.1"), 3.0, store::BaselineMethod::Eager, "", ""});
  db.put_baseline({key("d", "10.0"), 4.0, store::BaselineMethod::Eager, "", why});
  EXPECT_FALSE(score::cached_baseline(db, key("a", "2.11.0+cu130")));
  EXPECT_FALSE(score::cached_baseline(db, key("d", "10.0")));
  const auto b = score::cached_baseline(db, key("b", "2.11.0+cu130"));
  ASSERT_TRUE(b);
  EXPECT_EQ(b->method, "torch.compile");
  EXPECT_EQ(b->reason, "");
  EXPECT_TRUE(b->cached);
  // torch 1.13: eager is all there is; a row stored without a reason restates it.
  const auto c = score::cached_baseline(db, key("c", "1.13.1"));
  ASSERT_TRUE(c);
  EXPECT_EQ(c->method, "eager");
  EXPECT_EQ(c->reason, "torch.compile unavailable (torch 1.13.1)");
  db.put_baseline({key("c", "1.13.1"), 3.5, store::BaselineMethod::Eager, "", "kept reason"});
  EXPECT_EQ(score::cached_baseline(db, key("c", "1.13.1"))->reason, "kept reason");
}

// Holding shares of the GPU's memory for what they put on it
// (harness/timing/memory_shares.h), workers alone wait for memory there: the CPUs
// alone count them.
TEST(BaselineWorkers, HoldingMemorySharesWorkersAloneAreCountedByTheCpus) {
  score::MeasureOptions o;
  o.device = Device::cuda(0);
  o.gpu_memory_bytes = 80'000'000'000ull;
  o.cpus = 16;
  const uint64_t l2_056 = 3379ull << 20;  // the public L2/056's largest workload
  // By the footprint: one (8 x 3.4 GB within 40 GB); by shares: one per 2 CPUs.
  EXPECT_EQ(score::baseline_worker_count(o, 16, l2_056, {.alone = true}), 1u);
  EXPECT_EQ(score::baseline_worker_count(o, 16, l2_056, {.alone = true, .shared_memory = true}),
      8u);
  EXPECT_EQ(score::late_baseline_worker_count(o, 16, l2_056), 1u);
  EXPECT_EQ(score::late_baseline_worker_count(o, 16, l2_056, true), 8u);
  // Still at least 2 workloads each, one per 2 CPUs.
  EXPECT_EQ(score::baseline_worker_count(o, 6, l2_056, {.alone = true, .shared_memory = true}), 3u);
  o.cpus = 6;
  EXPECT_EQ(score::baseline_worker_count(o, 16, l2_056, {.alone = true, .shared_memory = true}),
      3u);
  o.cpus = 16;
  // Beside other evaluations on the GPU the shares are one pool for all of them.
  {
    Settings share;
    share.baseline_gpu_share = 3;
    ScopedSettings scoped(share);
    EXPECT_EQ(score::baseline_worker_count(o, 16, l2_056, {.alone = true, .shared_memory = true}),
        8u);
    EXPECT_EQ(score::baseline_worker_count(o, 16, l2_056, {.alone = true}), 1u);
  }
  // Ahead (beside the evaluation) the shares change nothing: 16 GiB for all of them.
  EXPECT_EQ(score::baseline_worker_count(o, 16, 2800ull << 20, {.shared_memory = true}), 1u);
  EXPECT_EQ(score::baseline_worker_count(o, 16, 64ull << 20, {.shared_memory = true}), 4u);
  // Where they are made: a GPU whose memory is known, unless turned off.
  EXPECT_EQ(score::memory_share_units(o), 44u);
  {
    Settings off;
    off.baseline_memory_shares = false;
    ScopedSettings scoped(off);
    EXPECT_EQ(score::memory_share_units(o), 0u);
  }
  o.gpu_memory_bytes = 0;
  EXPECT_EQ(score::memory_share_units(o), 0u);
  EXPECT_EQ(score::baseline_worker_count(o, 16, l2_056, {.alone = true, .shared_memory = true}),
            1u);  // the GPU's memory unknown: the rule beside the evaluation
  o.gpu_memory_bytes = 80'000'000'000ull;
  o.device = Device::cpu();
  EXPECT_EQ(score::memory_share_units(o), 0u);
}

// How many baseline workers measure side by side (score/baseline.h).
TEST(BaselineWorkers, OneOnTheCpuAndOnAGpuFewerForLargeWorkloads) {
  score::MeasureOptions o;
  EXPECT_EQ(score::baseline_worker_count(o, 0, 0), 0u);
  EXPECT_EQ(score::baseline_worker_count(o, 16, 1 << 20), 1u);  // the CPU: alone
  o.device = Device::cuda(0);
  const size_t small = score::baseline_worker_count(o, 16, 64ull << 20);
  EXPECT_GE(small, 1u);
  EXPECT_LE(small, static_cast<size_t>(score::kMaxBaselineWorkers));
  // At least kMinBaselineWorkloadsPerWorker each: a worker's first compile costs seconds.
  EXPECT_EQ(score::baseline_worker_count(o, 3, 64ull << 20), 1u);
  EXPECT_LE(score::baseline_worker_count(o, 8, 64ull << 20), 2u);
  // 2.8 GB of outputs (the public L1/001): the GPU holds one such worker's sets.
  EXPECT_EQ(score::baseline_worker_count(o, 16, 2800ull << 20), 1u);
  EXPECT_LE(score::baseline_worker_count(o, 16, 1ull << 30), 2u);
  // Alone (after the evaluation's own workers) without the GPU's memory: as before.
  EXPECT_EQ(score::baseline_worker_count(o, 16, 2800ull << 20, {.alone = true}), 1u);
  EXPECT_EQ(score::baseline_worker_count(o, 3, 64ull << 20, {.alone = true}), 1u);
  // With it (80 GB) on 16 CPUs: half of it for their values, one per 2 CPUs up to 8,
  // at least 2 workloads each.
  o.gpu_memory_bytes = 80'000'000'000ull;
  o.cpus = 16;
  EXPECT_EQ(score::baseline_worker_count(o, 16, 64ull << 20, {.alone = true}), 8u);
  EXPECT_EQ(score::baseline_worker_count(o, 64, 64ull << 20, {.alone = true}), 8u);
  EXPECT_EQ(score::baseline_worker_count(o, 3, 64ull << 20, {.alone = true}), 1u);
  EXPECT_EQ(score::baseline_worker_count(o, 4, 64ull << 20, {.alone = true}), 2u);
  // 2.8 GB workloads (x8 = 22.4 GB each): 40 GB hold 1; 700 MB ones (5.6 GB): 7.
  EXPECT_EQ(score::baseline_worker_count(o, 16, 2800ull << 20, {.alone = true}), 1u);
  EXPECT_EQ(score::baseline_worker_count(o, 16, 700'000'000ull, {.alone = true}), 7u);
  o.cpus = 6;  // one per 2 CPUs
  EXPECT_EQ(score::baseline_worker_count(o, 16, 64ull << 20, {.alone = true}), 3u);
  o.cpus = 16;
  // Ahead (beside the evaluation) the GPU's memory changes nothing.
  EXPECT_EQ(score::baseline_worker_count(o, 16, 2800ull << 20), 1u);
  EXPECT_EQ(score::baseline_worker_count(o, 3, 64ull << 20), 1u);
  EXPECT_EQ(score::baseline_worker_count(o, 16, 64ull << 20), 4u);  // one per 4 CPUs
  // Ahead and handing back at "go": one workload each is enough, still one per 4
  // CPUs within the 16 GiB beside the evaluation; alone, handing back changes nothing.
  EXPECT_EQ(score::baseline_worker_count(o, 3, 64ull << 20, {.handing_back = true}), 3u);
  EXPECT_EQ(score::baseline_worker_count(o, 8, 64ull << 20, {.handing_back = true}), 4u);
  EXPECT_EQ(score::baseline_worker_count(o, 16, 2800ull << 20, {.handing_back = true}), 1u);
  EXPECT_EQ(score::baseline_worker_count(o, 3, 64ull << 20, {.alone = true, .handing_back = true}),
      1u);
  o.cpus = 6;
  EXPECT_EQ(score::baseline_worker_count(o, 3, 64ull << 20, {.handing_back = true}), 1u);
  o.cpus = 16;
  // Hand-back's late workers: as alone, but one workload each is enough (what is
  // handed back compiles slowly), still one per 2 CPUs up to 8 within the memory.
  EXPECT_EQ(score::late_baseline_worker_count(o, 3, 64ull << 20), 3u);
  EXPECT_EQ(score::late_baseline_worker_count(o, 6, 64ull << 20), 6u);
  EXPECT_EQ(score::late_baseline_worker_count(o, 16, 64ull << 20), 8u);
  EXPECT_EQ(score::late_baseline_worker_count(o, 16, 700'000'000ull), 7u);
  EXPECT_EQ(score::late_baseline_worker_count(o, 16, 2800ull << 20), 1u);
  EXPECT_EQ(score::late_baseline_worker_count(o, 0, 64ull << 20), 0u);
  o.cpus = 6;
  EXPECT_EQ(score::late_baseline_worker_count(o, 6, 64ull << 20), 3u);
  o.cpus = 16;
  o.gpu_memory_bytes = 0;
  o.cpus = 0;
  // Asked for: as many as asked, at most one per workload; the variable likewise.
  o.workers = 3;
  EXPECT_EQ(score::baseline_worker_count(o, 16, 2800ull << 20), 3u);
  EXPECT_EQ(score::baseline_worker_count(o, 2, 0), 2u);
  o.workers = 0;
  {
    // Under `run` with several slots: the CPUs and the GPU's memory of this share.
    Settings share;
    share.baseline_cpus = 8;
    share.baseline_gpu_share = 4;
    ScopedSettings scoped(share);
    o.gpu_memory_bytes = 80'000'000'000ull;
    EXPECT_EQ(score::baseline_worker_count(o, 16, 64ull << 20), 2u);         // 8 / 4
    EXPECT_EQ(score::baseline_worker_count(o, 16, 64ull << 20, {.alone = true}), 4u);   // 8 / 2
    EXPECT_EQ(score::late_baseline_worker_count(o, 16, 64ull << 20), 4u);
    // 10 GB for the values of all (80 / 2 / 4): 700 MB workloads (5.6 GB each) fit 1.
    EXPECT_EQ(score::baseline_worker_count(o, 16, 700'000'000ull, {.alone = true}), 1u);
    o.cpus = 16;  // the caller's own count of CPUs wins
    EXPECT_EQ(score::baseline_worker_count(o, 16, 64ull << 20, {.alone = true}), 8u);
    o.cpus = 0;
    o.gpu_memory_bytes = 0;
  }
  Settings set;
  set.baseline_workers = 5;
  ScopedSettings scoped(set);
  EXPECT_EQ(score::baseline_worker_count(o, 16, 0), 5u);
  o.device = Device::cpu();
  EXPECT_EQ(score::baseline_worker_count(o, 16, 0), 5u);
}

// The memory the count above shares out: the evaluating GPU's own model only.
TEST(BaselineWorkers, TheGpusMemoryComesFromItsOwnModelOnly) {
  score::ArchChoice c;
  EXPECT_EQ(score::device_memory_bytes(c), 0u);  // no model (the CPU)
  c.model = sol::HardwareModel{};
  c.model->memory_gb = 80;
  EXPECT_EQ(score::device_memory_bytes(c), 0u);  // another GPU's (--arch b200 on an H100)
  c.matches_device = true;
  EXPECT_EQ(score::device_memory_bytes(c), 80'000'000'000ull);
  c.model->memory_gb = 0;  // a model that gives none
  EXPECT_EQ(score::device_memory_bytes(c), 0u);
  // On the CPU eval and baseline find no model: the count keeps its rule without it.
  EXPECT_EQ(score::device_memory_bytes(score::choose_arch("", Device::cpu())), 0u);
}

TEST(BaselinePlan, RoleRoundTripsAndNeedsTheReference) {
  harness::WorkerPlan p;
  p.entry.kind = harness::EntryKind::Reference;
  p.role = harness::WorkerRole::Baseline;
  const harness::WorkerPlan back = harness::WorkerPlan::from_json(p.to_json());
  EXPECT_EQ(back.role, harness::WorkerRole::Baseline);
  EXPECT_NE(harness::WorkerPlan::from_json(harness::WorkerPlan{}.to_json()).role,
            harness::WorkerRole::Baseline);
  // Solution code is never a baseline: the plan is refused, and the message says why.
  json bad = p.to_json();
  bad["kind"] = "python";
  try {
    harness::WorkerPlan::from_json(bad);
    FAIL() << "a python plan with role baseline was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_TRUE(has(e.what(), "\"baseline\"")) << e.what();
    EXPECT_TRUE(has(e.what(), "\"reference\"")) << e.what();
  }
  // A baseline started ahead waits for "go" (WorkerPlan::gpu_after_go); no other
  // role may: a solution's worker that waited would run on after its deadline.
  EXPECT_FALSE(back.gpu_after_go);
  EXPECT_FALSE(p.to_json().contains("gpu_after_go"));  // absent when off: the plan as before
  p.gpu_after_go = true;
  EXPECT_TRUE(harness::WorkerPlan::from_json(p.to_json()).gpu_after_go);
  json other = p.to_json();
  other["role"] = "judge";
  other["judge"] = {{"value_secret", 7}};
  try {
    harness::WorkerPlan::from_json(other);
    FAIL() << "a judge's plan with gpu_after_go was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_TRUE(has(e.what(), "gpu_after_go")) << e.what();
  }
  // Handing workloads back at "go" needs a "go" to answer.
  EXPECT_FALSE(p.to_json().contains("hand_back"));
  p.hand_back = true;
  EXPECT_TRUE(harness::WorkerPlan::from_json(p.to_json()).hand_back);
  p.gpu_after_go = false;
  try {
    harness::WorkerPlan::from_json(p.to_json());
    FAIL() << "a plan with hand_back and no gpu_after_go was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_TRUE(has(e.what(), "hand_back needs gpu_after_go")) << e.what();
  }
  // The GPU's memory shares (harness/timing/memory_shares.h): absent without them,
  // kept with their count, and a baseline's only.
  EXPECT_FALSE(p.to_json().contains("memory_shares"));
  p.hand_back = false;
  p.memory_shares = "/tmp/solbench-locks/GPU-1.lock.mem";
  p.memory_share_units = 55;
  const harness::WorkerPlan shared = harness::WorkerPlan::from_json(p.to_json());
  EXPECT_EQ(shared.memory_shares, p.memory_shares);
  EXPECT_EQ(shared.memory_share_units, 55);
  json solution = p.to_json();
  solution["role"] = "solution";  // the reference timed as a solution
  try {
    harness::WorkerPlan::from_json(solution);
    FAIL() << "a solution's plan with memory shares was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_TRUE(has(e.what(), "memory_shares needs role")) << e.what();
  }
}

// What a worker ahead keeps at "go" (harness::kept_at_go).
TEST(BaselinePlan, AtGoAWorkerKeepsWhatItWillSoonHaveCompiled) {
  using harness::kept_at_go;
  EXPECT_EQ(kept_at_go(0, 0, false, 0, 0), 0u);
  // Nothing compiled ahead (the CPU, an eager baseline) or the first compile in
  // progress: it keeps one.
  EXPECT_EQ(kept_at_go(4, 0, false, 0, 0), 1u);
  EXPECT_EQ(kept_at_go(4, 0, true, 0, 0), 1u);
  // Everything compiled: all of them.
  EXPECT_EQ(kept_at_go(4, 4, false, 7.0, 4.0), 4u);
  // The first compile (Inductor's start-up in it) took 3.5 s, the next one 1 s,
  // the third is in progress: the pace is 1 s, so 5 more; at most all.
  EXPECT_EQ(kept_at_go(16, 2, true, 4.5, 3.5), 3u + 5u);
  EXPECT_EQ(kept_at_go(6, 2, true, 4.5, 3.5), 6u);
  // Only the first done: its time is the pace (2.5 s: 2 more).
  EXPECT_EQ(kept_at_go(16, 1, true, 2.5, 2.5), 2u + 2u);
  // Attention-sized compiles (35 s each): the one in progress and nothing more.
  EXPECT_EQ(kept_at_go(4, 1, true, 35.0, 35.0), 2u);
  EXPECT_EQ(kept_at_go(8, 2, true, 73.0, 38.0), 3u);
  // Instant compiles cannot overflow the count.
  EXPECT_EQ(kept_at_go(8, 3, false, 0.0, 0.0), 8u);
}

// What a worker ahead counts as it tries its workloads in order (harness::AheadTally):
// it keeps a prefix, so compiles past one not compiled do not count.
TEST(BaselinePlan, AWorkerAheadCountsOnlyTheCompilesBeforeItsFirstGap) {
  harness::AheadTally t;
  t.add(true, 3.5);
  t.add(true, 1.0);
  EXPECT_EQ(t.kept(16, true), 3u + 5u);  // as kept_at_go(16, 2, true, 4.5, 3.5)
  // The third stopped in its compile: the fourth compiles, but the worker keeps
  // the first two and no more (the third is at position 2, not the fourth).
  t.add(false, 0.5);
  t.add(true, 1.0);
  EXPECT_EQ(t.compiled, 2u);
  EXPECT_EQ(t.kept(16, true), 2u + 5u);
  EXPECT_EQ(t.kept(16, false), 2u + 5u);
  // Nothing compiled from the first on: it keeps one.
  harness::AheadTally none;
  none.add(false, 1.3);
  none.add(true, 20.0);
  EXPECT_EQ(none.kept(16, true), 1u);
}

TEST(ReferenceWorkerPlan, RoleRoundTripsAndNeedsTheReference) {
  harness::WorkerPlan p;
  p.entry.kind = harness::EntryKind::Reference;
  p.role = harness::WorkerRole::Judge;
  p.judge.value_secret = 7;  // the evaluation's secret (harness/values.h): the judge's alone
  EXPECT_EQ(harness::WorkerPlan::from_json(p.to_json()).role, harness::WorkerRole::Judge);
  EXPECT_NE(harness::WorkerPlan::from_json(harness::WorkerPlan{}.to_json()).role,
            harness::WorkerRole::Judge);
  // A reference worker never loads solution code: a plan that would is refused.
  json bad = p.to_json();
  bad["kind"] = "native";
  EXPECT_THROW(harness::WorkerPlan::from_json(bad), std::runtime_error);
}

}  // namespace
}  // namespace solbench
