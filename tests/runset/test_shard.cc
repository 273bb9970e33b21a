// Sharding (`run --shard I/N`, runset/shard.h): parsing I/N, the cost
// predictor (bytes, published T_SOL from metadata.json), the greedy plan
// (every pair once, balanced, a problem's cheap workloads kept together,
// deterministic), and end to end: two shards' stores merged hold exactly what
// one unsharded run records.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <set>

#include "core/diagnostics.h"
#include "runset/run.h"
#include "runset/shard.h"
#include "runset_test_util.h"
#include "store/store.h"

namespace solbench::runset {
namespace {

using namespace testing;

std::string shard_error(const std::string& text) {
  try {
    parse_shard(text);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(Shard, ParsesIOfNZeroBased) {
  const ShardSpec a = parse_shard("0/1");
  EXPECT_EQ(a.index, 0);
  EXPECT_EQ(a.count, 1);
  const ShardSpec b = parse_shard("3/8");
  EXPECT_EQ(b.index, 3);
  EXPECT_EQ(b.count, 8);
  for (const char* bad : {"2/2", "-1/2", "1", "a/2", "1/b", "0/0", "1/2/3", " 1/2", ""}) {
    const std::string e = shard_error(bad);
    EXPECT_HAS(e, "--shard");
    EXPECT_HAS(e, "expected I/N");
  }
  EXPECT_HAS(shard_error("2/2"), "0..1");
}

// `n` pairs over `problems` problems with costs from a fixed formula.
std::vector<PairCost> synthetic(size_t n, size_t problems) {
  std::vector<PairCost> out;
  for (size_t i = 0; i < n; ++i) {
    PairCost c;
    c.problem = i % problems;
    c.workload = i / problems;
    c.evaluations = 1;
    c.seconds = 1.0 + double((i * 7919) % 97) / 10.0;  // 1 .. 10.6 s, scattered
    out.push_back(c);
  }
  return out;
}

TEST(Shard, EveryPairGoesToExactlyOneShardAndLoadsAddUp) {
  const CostModel m;
  const auto pairs = synthetic(200, 13);
  for (int n : {1, 2, 3, 8}) {
    const ShardPlan p = plan_shards(pairs, n, m);
    ASSERT_EQ(p.shard_of.size(), pairs.size());
    ASSERT_EQ(p.load_s.size(), size_t(n));
    std::vector<size_t> per(n, 0);
    for (int s : p.shard_of) {
      ASSERT_GE(s, 0);
      ASSERT_LT(s, n);
      ++per[s];
    }
    EXPECT_EQ(per, p.pairs);
    // Each shard's load is its pairs plus one set-up per problem it holds.
    for (int s = 0; s < n; ++s) {
      double sum = 0;
      std::set<size_t> problems;
      for (size_t i = 0; i < pairs.size(); ++i)
        if (p.shard_of[i] == s) {
          sum += pairs[i].seconds;
          problems.insert(pairs[i].problem);
        }
      EXPECT_NEAR(p.load_s[s], sum + double(problems.size()) * m.child_setup_s, 1e-9);
      EXPECT_EQ(p.setups[s], problems.size());
    }
    // Many small pairs: greedy gets within one pair (and set-up) of the mean.
    const double total = std::accumulate(p.load_s.begin(), p.load_s.end(), 0.0);
    const double largest = 10.6 + m.child_setup_s;
    EXPECT_LE(*std::max_element(p.load_s.begin(), p.load_s.end()), total / n + largest) << n;
    EXPECT_GE(p.max_over_mean(), 1.0);
    // Deterministic: the same pairs give the same plan.
    EXPECT_EQ(plan_shards(pairs, n, m).shard_of, p.shard_of);
  }
}

TEST(Shard, CheapWorkloadsOfAProblemStayTogetherExpensiveOnesSpread) {
  CostModel m;
  m.child_setup_s = 5;
  std::vector<PairCost> cheap;
  for (size_t prob = 0; prob < 2; ++prob)
    for (size_t w = 0; w < 10; ++w) cheap.push_back({prob, w, 0, 0, false, 1, 0.1});
  const ShardPlan p = plan_shards(cheap, 2, m);
  for (size_t i = 0; i < cheap.size(); ++i)
    EXPECT_EQ(p.shard_of[i], p.shard_of[cheap[i].problem * 10]) << i;  // one shard per problem
  EXPECT_NE(p.shard_of[0], p.shard_of[10]);

  std::vector<PairCost> dear;  // one problem, workloads far dearer than a set-up
  for (size_t w = 0; w < 4; ++w) dear.push_back({0, w, 0, 0, false, 1, 100.0});
  const ShardPlan q = plan_shards(dear, 2, m);
  EXPECT_EQ(q.pairs[0], 2u);
  EXPECT_EQ(q.pairs[1], 2u);
}

// The bundled RMSNorm problem, loaded as a run loads it.
LoadedProblem rmsnorm(const fs::path& dir, int max_workloads = 0) {
  ProblemDir where{"", dir.filename().string(), dir};
  return load_for_run(where, first_n(max_workloads));
}

// What the predictor counts as calls in a reference (T_b's compile grows with them).
TEST(Shard, ReferenceCallsCountCallsNotDefinitionsKeywordsOrComments) {
  EXPECT_EQ(reference_calls(""), 0u);
  const std::string src =
      "import torch  # torch.nn.functional.gelu(x) is not called here\n"
      "def run(x, w):\n"
      "    y = torch.matmul(x, w)\n"
      "    if (y > 0).all():\n"
      "        return (y * 2)\n"
      "    return torch.nn.functional.gelu (y).sum(-1)\n"
      "class M(torch.nn.Module):\n"
      "    pass\n";
  // torch.matmul, .all, torch.nn.functional.gelu, .sum; not run, if, return, M.
  EXPECT_EQ(reference_calls(src), 4u);
}

TEST(Shard, PredictsFromBytesAndThePublishedSol) {
  TempDir tmp;
  const fs::path dir = tmp.path() / kRms;
  fs::create_directories(dir);
  for (const char* f : {"definition.json", "workload.jsonl", "reference.py"})
    fs::copy_file(kProblems / kRms / f, dir / f);
  const LoadedProblem lp = rmsnorm(dir);
  ASSERT_TRUE(lp.problem) << lp.error;
  const size_t n = lp.selected.size();
  ASSERT_GE(n, 2u);

  CostModel m;
  std::vector<std::string> notes;
  const auto plain = predict_costs({lp}, {2}, m, notes);
  ASSERT_EQ(plain.size(), n);
  EXPECT_TRUE(notes.empty());
  for (const PairCost& c : plain) {
    EXPECT_GT(c.bytes, 0u);
    EXPECT_FALSE(c.t_sol_published);
    EXPECT_DOUBLE_EQ(c.t_sol_ms, double(c.bytes) / m.fallback_bytes_per_s * 1e3);
    EXPECT_EQ(c.evaluations, 2u);
  }
  // More bytes, more cost (nothing else differs between them here).
  const auto [lo, hi] = std::minmax_element(plain.begin(), plain.end(), [](auto& a, auto& b) {
    return a.bytes < b.bytes;
  });
  ASSERT_LT(lo->bytes, hi->bytes);
  EXPECT_LT(lo->seconds, hi->seconds);
  // No evaluation: no pair to share out.
  EXPECT_TRUE(predict_costs({lp}, {0}, m, notes).empty());
  // T_b's compile, once per pair whatever the evaluations: per call in the reference.
  const size_t calls = reference_calls(lp.problem->definition.reference);
  EXPECT_GT(calls, 0u);
  const auto one = predict_costs({lp}, {1}, m, notes);
  CostModel no_compile = m;
  no_compile.compile_s_per_call = 0;
  const auto without = predict_costs({lp}, {1}, no_compile, notes);
  for (size_t k = 0; k < n; ++k) {
    EXPECT_EQ(one[k].reference_calls, calls);
    EXPECT_NEAR(one[k].seconds - without[k].seconds, m.compile_s_per_call * double(calls), 1e-9);
    EXPECT_NEAR(plain[k].seconds - 2 * without[k].seconds,
                m.compile_s_per_call * double(calls), 1e-9);
  }

  // A published T_SOL per workload (the public data set's metadata.json).
  json per = json::array();
  for (size_t i = 0; i < lp.problem->workloads.size(); ++i)
    per.push_back({{"index", i}, {"sol_ms", 10.0 * double(i + 1)}});
  write(dir / "metadata.json", json{{"sol", {{"available", true}, {"per_workload", per}}}}.dump());
  const auto published = predict_costs({lp}, {2}, m, notes);
  EXPECT_TRUE(notes.empty());
  for (size_t k = 0; k < n; ++k) {
    EXPECT_TRUE(published[k].t_sol_published);
    EXPECT_DOUBLE_EQ(published[k].t_sol_ms, 10.0 * double(lp.selected[k] + 1));
    EXPECT_GT(published[k].seconds, plain[k].seconds);
  }

  // Another revision's file (other workload count) is not used, and says why.
  per.erase(per.size() - 1);
  write(dir / "metadata.json", json{{"sol", {{"per_workload", per}}}}.dump());
  const auto stale = predict_costs({lp}, {2}, m, notes);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_HAS(notes[0], (dir / "metadata.json").string());
  EXPECT_HAS(notes[0], "sol.per_workload");
  for (const PairCost& c : stale) EXPECT_FALSE(c.t_sol_published);
  // A bad entry: a note naming it; the others are used.
  per.push_back({{"index", per.size()}, {"sol_ms", "fast"}});
  write(dir / "metadata.json", json{{"sol", {{"per_workload", per}}}}.dump());
  notes.clear();
  const auto partial = predict_costs({lp}, {1}, m, notes);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_HAS(notes[0], "sol_ms");
  EXPECT_HAS(notes[0], "expected a number > 0");
  EXPECT_TRUE(partial[0].t_sol_published);
}

const std::string kFast = " --max-workloads 2 --rounds 1 --time-budget-ms 20 --no-baseline ";

std::set<std::pair<std::string, std::string>> keys_of(const json& doc) {
  std::set<std::pair<std::string, std::string>> out;
  for (const auto& p : doc["problems"])
    for (const auto& e : p["solutions"])
      for (const auto& w : e["workload_results"])
        out.insert({e["solution_hash"].get<std::string>() + " " + w["status"].dump(),
                    w["uuid"].get<std::string>()});
  return out;
}

TEST(ShardCli, PlanSplitsEveryPairAndTwoShardsMergedEqualOneRun) {
  TempDir tmp;
  const fs::path ds = make_dataset(tmp.path() / "ds", {{"", kRms}, {"", kSwiglu}, {"", kSoftmax}});
  const fs::path sols = tmp.path() / "sols";
  for (const char* p : {kRms, kSwiglu, kSoftmax}) add_solution(sols, p, "pytorch_simple");
  const std::string set = "run '" + ds.string() + "' --solutions '" + sols.string() + "'" + kFast;

  CliRun plan = solbench(tmp.path(), set + " --shard 1/2 --plan --json");
  ASSERT_EQ(plan.rc, 0) << plan.err;
  EXPECT_EQ(plan.doc["count"], 2);
  EXPECT_EQ(plan.doc["pairs_total"], 6);  // 3 problems x 2 workloads
  std::set<int> shards;
  for (const auto& p : plan.doc["pairs"]) shards.insert(p["shard"].get<int>());
  EXPECT_EQ(shards, (std::set<int>{0, 1}));
  EXPECT_GE(plan.doc["max_over_mean"].get<double>(), 1.0);
  EXPECT_FALSE(fs::exists(tmp.path() / "cache" / "solbench.db"));  // --plan opens no store

  CliRun table = solbench(tmp.path(), set + " --shard 0/2 --plan");
  ASSERT_EQ(table.rc, 0) << table.err;
  EXPECT_HAS(table.out, "balance (max/mean predicted cost)");

  CliRun bad = solbench(tmp.path(), set + " --shard 2/2");
  EXPECT_EQ(bad.rc, 2);
  EXPECT_HAS(bad.err, "--shard");

  std::vector<CliRun> parts;
  for (int i = 0; i < 2; ++i) {
    parts.push_back(solbench(tmp.path(), set + " --shard " + std::to_string(i) + "/2 --db '" +
                                             (tmp.path() / ("s" + std::to_string(i) + ".db")).string() +
                                             "' --json"));
    ASSERT_EQ(parts.back().rc, 0) << parts.back().err;
    EXPECT_EQ(parts.back().doc["shard"]["index"], i);
    EXPECT_GT(parts.back().doc["shard"]["pairs"].get<int>(), 0);
  }
  CliRun one = solbench(tmp.path(), set + " --db '" + (tmp.path() / "one.db").string() + "' --json");
  ASSERT_EQ(one.rc, 0) << one.err;

  const auto k0 = keys_of(parts[0].doc), k1 = keys_of(parts[1].doc), all = keys_of(one.doc);
  std::set<std::pair<std::string, std::string>> both = k0;
  both.insert(k1.begin(), k1.end());
  EXPECT_EQ(both.size(), k0.size() + k1.size());  // disjoint
  EXPECT_EQ(both, all);

  CliRun merged = solbench(tmp.path(), "db merge '" + (tmp.path() / "m.db").string() + "' '" +
                                           (tmp.path() / "s0.db").string() + "' '" +
                                           (tmp.path() / "s1.db").string() + "' --json");
  ASSERT_EQ(merged.rc, 0) << merged.err;
  EXPECT_EQ(merged.doc["traces"].get<size_t>(), all.size());
  EXPECT_EQ(merged.doc["conflicts"], 0);
}

}  // namespace
}  // namespace solbench::runset
