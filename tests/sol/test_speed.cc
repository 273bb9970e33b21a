// The mechanisms that keep `solbench sol` fast: one trace per shape signature
// (GraphMemo, the request as the graph key), definite errors cached, and the
// hybrid trace (real integer tensors, meta floating-point tensors) for
// references that read index values.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <map>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "bridge/python.h"
#include "test_support.h"
#include "core/problem.h"
#include "sol/analysis.h"
#include "sol/tracer.h"
#include "sol_test_util.h"

namespace solbench::sol {
namespace {

namespace fs = std::filesystem;

using solbench::testing::TempDir;

// x[n] -> y[n]; axis m appears in no shape. One workload per (uuid, n, m).
Problem problem(const fs::path& dir, const std::vector<std::tuple<std::string, int, int>>& workloads) {
  json def = {{"name", "dedup"},
              {"op_type", "test"},
              {"axes", {{"n", {{"type", "var"}}}, {"m", {{"type", "var"}}}}},
              {"inputs", {{"x", {{"shape", {"n"}}, {"dtype", "float32"}}}}},
              {"outputs", {{"y", {{"shape", {"n"}}, {"dtype", "float32"}}}}},
              {"reference", "import torch\n\ndef run(x):\n    return x * 2\n"}};
  std::ofstream(dir / "definition.json") << def.dump(1);
  std::ofstream wl(dir / "workload.jsonl");
  for (auto& [uuid, n, m] : workloads)
    wl << json{{"uuid", uuid}, {"axes", {{"n", n}, {"m", m}}}, {"inputs", {{"x", {{"type", "random"}}}}},
               {"tolerance", {{"max_atol", 0.01}, {"max_rtol", 0.01}}}}
              .dump()
       << "\n";
  wl.close();
  Diagnostics diags;
  Problem p = load_problem(problem_paths(dir), diags);
  EXPECT_TRUE(diags.empty()) << diags.str();
  return p;
}

// A stand-in tracer: counts calls, answers an empty graph (or an error).
struct CountingTracer {
  std::atomic<int> calls{0};
  std::string error;  // non-empty: answer status "error" with this reason
  TraceFn fn() {
    return [this](const json&) {
      ++calls;
      OpGraph g;
      g.status = error.empty() ? "ok" : "error";
      g.reason = error;
      g.mode = "meta";
      return g;
    };
  }
};

TEST(TraceDedup, OneTracePerShapeSignature) {
  TempDir t;
  // a and b: same shapes; c: same n, another m (in no shape); d: another n.
  Problem p = problem(t.path(), {{"a", 4, 1}, {"b", 4, 1}, {"c", 4, 2}, {"d", 8, 1}});
  ASSERT_EQ(p.workloads.size(), 4u);
  // The request leaves out the axes the tracer does not read: c's equals a's.
  EXPECT_EQ(trace_request(p.definition, p.workloads[0], *p.resolved[0]),
            trace_request(p.definition, p.workloads[2], *p.resolved[2]));
  EXPECT_NE(trace_request(p.definition, p.workloads[0], *p.resolved[0]),
            trace_request(p.definition, p.workloads[3], *p.resolved[3]));
  CountingTracer tracer;
  AnalysisOptions opt;
  opt.use_cache = false;
  opt.trace = tracer.fn();
  opt.memo = std::make_shared<GraphMemo>();
  HardwareModel hw = testing::model("b200");
  std::vector<json> r(4);
  // Two threads, as `solbench sol -j 2`: a duplicate waits for the first trace.
  std::thread other([&] { r[1] = analyse_workload(p, 1, hw, opt); });
  r[0] = analyse_workload(p, 0, hw, opt);
  other.join();
  r[2] = analyse_workload(p, 2, hw, opt);
  r[3] = analyse_workload(p, 3, hw, opt);
  EXPECT_EQ(tracer.calls.load(), 2);
  EXPECT_EQ(opt.memo->traces(), 2u);
  for (auto& x : r) ASSERT_EQ(x["status"], "ok") << x.dump();
  EXPECT_EQ(int(r[0].value("graph_reused", false)) + int(r[1].value("graph_reused", false)), 1);
  EXPECT_TRUE(r[2].value("graph_reused", false));
  EXPECT_FALSE(r[3].value("graph_reused", false));
  EXPECT_EQ(r[0]["time_us"]["sol"], r[2]["time_us"]["sol"]);
  EXPECT_LT(r[0]["time_us"]["sol"].get<double>(), r[3]["time_us"]["sol"].get<double>());
  // Without a memo every workload traces.
  opt.memo.reset();
  for (size_t i = 0; i < 4; ++i) analyse_workload(p, i, hw, opt);
  EXPECT_EQ(tracer.calls.load(), 6);
}

TEST(TraceCache, DefiniteErrorsAreCachedTransientOnesAreNot) {
  TempDir t;
  fs::create_directories(t.path() / "p");
  setenv("SOLBENCH_CACHE_DIR", (t.path() / "cache").c_str(), 1);
  Problem p = problem(t.path() / "p", {{"a", 4, 1}});
  HardwareModel hw = testing::model("b200");
  CountingTracer tracer;
  AnalysisOptions opt;
  opt.trace = tracer.fn();
  // A time limit may not recur: traced again on the next run.
  tracer.error = "the trace did not finish within 1 s (--timeout); the tracer process was killed";
  EXPECT_EQ(analyse_workload(p, 0, hw, opt)["status"], "error");
  EXPECT_EQ(analyse_workload(p, 0, hw, opt)["status"], "error");
  EXPECT_EQ(tracer.calls.load(), 2);
  // An error the reference raised follows from the request: cached.
  tracer.error = "meta: RuntimeError: x; hybrid: RuntimeError: x; cpu: inputs too large";
  EXPECT_EQ(analyse_workload(p, 0, hw, opt)["status"], "error");
  json again = analyse_workload(p, 0, hw, opt);
  EXPECT_EQ(again["status"], "error");
  EXPECT_EQ(again["reason"], tracer.error);
  EXPECT_EQ(tracer.calls.load(), 3);
  unsetenv("SOLBENCH_CACHE_DIR");
}

// A stand-in tracer that answers every request with a partial graph at the
// request's budget (or a complete one), and notes the budgets it was sent.
struct BudgetTracer {
  std::vector<double> budgets;
  bool complete = false;
  TraceFn fn() {
    return [this](const json& request) {
      budgets.push_back(request.value("budget_s", 0.0));
      OpGraph g;
      g.mode = "hybrid";
      g.raw_op_count = 640;
      if (!complete) g.partial_budget_s = budgets.back();
      return g;
    };
  }
};

TEST(TraceBudget, APartialGraphServesOnlyBudgetsNoLargerThanItsOwn) {
  TempDir t;
  fs::create_directories(t.path() / "p");
  setenv("SOLBENCH_CACHE_DIR", (t.path() / "cache").c_str(), 1);
  Problem p = problem(t.path() / "p", {{"a", 1024, 1}});
  HardwareModel hw = testing::model("h100_sxm");
  BudgetTracer tracer;
  AnalysisOptions opt;
  opt.trace = tracer.fn();
  opt.trace_budget_s = 2;
  json first = analyse_workload(p, 0, hw, opt);
  ASSERT_EQ(first["status"], "ok") << first.dump();
  ASSERT_EQ(tracer.budgets, std::vector<double>({2}));
  EXPECT_EQ(first["partial"]["budget_s"], 2);
  EXPECT_EQ(first["partial"]["ops"], 640);
  // The part traced read nothing of x and returned no output: neither is counted
  // (a complete graph that never names x counts it whole, below).
  EXPECT_EQ(first["bytes"]["min_in_mb"], 0);
  EXPECT_EQ(first["bytes"]["min_out_mb"], 0);
  EXPECT_NE(first["notes"].dump().find("partial trace"), std::string::npos) << first["notes"].dump();
  // The same budget or a smaller one: the cached partial graph.
  EXPECT_TRUE(analyse_workload(p, 0, hw, opt)["cached"].get<bool>());
  opt.trace_budget_s = 1;
  EXPECT_TRUE(analyse_workload(p, 0, hw, opt)["cached"].get<bool>());
  EXPECT_EQ(tracer.budgets.size(), 1u);
  // A larger budget, or none, traces again.
  opt.trace_budget_s = 5;
  json further = analyse_workload(p, 0, hw, opt);
  EXPECT_FALSE(further["cached"].get<bool>());
  EXPECT_EQ(further["partial"]["budget_s"], 5);
  tracer.complete = true;
  opt.trace_budget_s = 0;
  json whole = analyse_workload(p, 0, hw, opt);
  EXPECT_FALSE(whole["cached"].get<bool>());
  EXPECT_FALSE(whole.contains("partial"));
  EXPECT_NEAR(whole["bytes"]["min_in_mb"].get<double>(), 4096e-6, 1e-12);
  EXPECT_EQ(tracer.budgets, std::vector<double>({2, 5, 0}));
  // A complete graph serves every budget (the budget is in no cache key).
  opt.trace_budget_s = 0.5;
  EXPECT_TRUE(analyse_workload(p, 0, hw, opt)["cached"].get<bool>());
  EXPECT_EQ(tracer.budgets.size(), 3u);
  unsetenv("SOLBENCH_CACHE_DIR");
}

json ops_without_ids(const OpGraph& g) {
  json ops = json::array();
  for (auto& o : to_json(g)["ops"]) {
    json shapes = json::array();
    for (auto& out : o["outputs"]) shapes.push_back({out["shape"], out["dtype"]});
    ops.push_back({o["op"], o["count"], shapes});
  }
  return ops;
}

TEST(HybridTrace, RealIndexValuesMetaFloats) {
  if (!bridge::python_available() || bridge::torch_version().empty())
    GTEST_SKIP() << "embedded Python with torch is not available";
  // Lengths read with .item() and a boolean mask from integer inputs: meta
  // cannot run it; hybrid runs the integer side for real and every float
  // operator on meta, and records what a full CPU run records.
  std::string ref =
      "import torch\n\n"
      "def run(x, lens):\n"
      "    n = int((lens > 0).sum().item())\n"
      "    assert x.device.type == ('meta' if HYBRID else 'cpu')\n"
      "    y = torch.zeros(n, x.shape[1], device=x.device)\n"
      "    y += x[lens > 0] * 2\n"
      "    return y\n";
  json req = {{"inputs", {{{"name", "x"}, {"dtype", "float32"}, {"source", "random"}, {"shape", {64, 32}}},
                          {{"name", "lens"}, {"dtype", "int32"}, {"source", "random"}, {"shape", {64}}}}},
              {"outputs", {{{"name", "y"}, {"dtype", "float32"}, {"shape", {64, 32}}}}},
              {"axes_and_scalars", json::object()},
              {"seed", 200}};
  json auto_req = req, cpu_req = req;
  auto_req["reference"] = "HYBRID = True\n" + ref;
  auto_req["mode"] = "auto";
  cpu_req["reference"] = "HYBRID = False\n" + ref;
  cpu_req["mode"] = "cpu";
  OpGraph h = trace_reference(auto_req), c = trace_reference(cpu_req);
  ASSERT_EQ(h.status, "ok") << h.reason;
  ASSERT_EQ(c.status, "ok") << c.reason;
  EXPECT_EQ(h.mode, "hybrid");
  EXPECT_NE(h.mode_reason.find("meta trace failed"), std::string::npos) << h.mode_reason;
  EXPECT_EQ(ops_without_ids(h), ops_without_ids(c));
  // About half of 64 random lengths are positive: the mask's count is real.
  json y = to_json(h)["outputs"][0]["shape"];
  EXPECT_GT(y[0].get<int>(), 10);
  EXPECT_LT(y[0].get<int>(), 54);
}


// A request for `ref` with one float32 input x[rows, cols] and output y.
json one_input_request(const std::string& ref, const std::string& mode, int rows, int cols,
                       std::vector<int> out_shape) {
  return {{"reference", ref},
          {"inputs", {{{"name", "x"}, {"dtype", "float32"}, {"source", "random"}, {"shape", {rows, cols}}}}},
          {"outputs", {{{"name", "y"}, {"dtype", "float32"}, {"shape", out_shape}}}},
          {"axes_and_scalars", json::object()},
          {"mode", mode},
          {"seed", 200}};
}

TEST(ScalarsTrace, FloatValuesReadFromMetaTensorsAreStandIns) {
  if (!bridge::python_available() || bridge::torch_version().empty())
    GTEST_SKIP() << "embedded Python with torch is not available";
  // A quantiser's global scale: .item() of a float reduction and a guard on its
  // value. Meta and hybrid cannot read it; the scalars trace answers 1.0 and
  // False (the guard not taken, as with any non-zero data) and records what a
  // CPU trace of random values records. softmax(dtype=) passes a device to
  // _to_copy, which must stay on meta.
  std::string ref =
      "import torch\n\n"
      "def run(x):\n"
      "    amax = x.abs().max()\n"
      "    if amax == 0.0:\n"
      "        amax = torch.ones((), device=x.device)\n"
      "    s = 6.0 / amax.item()\n"
      "    return torch.softmax((x * s).clamp(-6.0, 6.0), -1, dtype=torch.float32)\n";
  OpGraph sc = trace_reference(one_input_request(ref, "auto", 48, 40, {48, 40}));
  OpGraph cpu = trace_reference(one_input_request(ref, "cpu", 48, 40, {48, 40}));
  ASSERT_EQ(sc.status, "ok") << sc.reason;
  ASSERT_EQ(cpu.status, "ok") << cpu.reason;
  EXPECT_EQ(sc.mode, "scalars");
  EXPECT_NE(sc.mode_reason.find("meta trace failed"), std::string::npos) << sc.mode_reason;
  EXPECT_NE(sc.mode_reason.find("hybrid trace failed"), std::string::npos) << sc.mode_reason;
  ASSERT_EQ(sc.notes.size(), 1u);
  EXPECT_NE(sc.notes[0].find("1 truth (False), 1 float (1.0)"), std::string::npos) << sc.notes[0];
  EXPECT_EQ(ops_without_ids(sc), ops_without_ids(cpu));
  // Only a read steers nothing here; a reference that reads an integer count
  // from float data still needs real values (scalars fails, cpu runs).
  std::string count_ref =
      "import torch\n\n"
      "def run(x):\n"
      "    n = int((x > 0).sum().item())\n"
      "    return torch.zeros(n, device=x.device)\n";
  OpGraph c = trace_reference(one_input_request(count_ref, "auto", 16, 4, {32}));
  ASSERT_EQ(c.status, "ok") << c.reason;
  EXPECT_EQ(c.mode, "cpu");
  EXPECT_NE(c.mode_reason.find("scalars trace failed"), std::string::npos) << c.mode_reason;
}

TEST(TraceAggregation, SameCallOnOtherDataIsItsOwnNode) {
  if (!bridge::python_available() || bridge::torch_version().empty())
    GTEST_SKIP() << "embedded Python with torch is not available";
  // Two reshapes of one signature on different intermediates (a quantiser's
  // and a dequantiser's, in the public fp8 references) used to be one node
  // with count 2, the second's output standing for the first's: the matmul
  // then read the quantiser's tensor and lost its operand's provenance. They
  // are two nodes now, and the matmul reads both; a loop still aggregates.
  std::string ref =
      "import torch\n\n"
      "def run(x):\n"
      "    a = (x * 2.0).reshape(8, 64).reshape(16, 32)\n"
      "    b = (x * 2.0 + 1.0).reshape(8, 64).reshape(16, 32)\n"
      "    y = a @ b.t()\n"
      "    for i in range(5):\n"
      "        y = y + (x * 3.0).reshape(8, 64).reshape(16, 32).sum()\n"
      "    return y\n";
  OpGraph g = trace_reference(one_input_request(ref, "meta", 16, 32, {16, 16}));
  ASSERT_EQ(g.status, "ok") << g.reason;
  int reshapes = 0;
  int64_t b_id = -1;
  const OpNode* mm = nullptr;
  auto scalar_other = [](const OpNode& n) {
    return n.args.contains("other") && n.args["other"].is_number() ? n.args["other"].get<double>() : -1.0;
  };
  for (auto& n : g.ops) {
    // (8,64) -> (16,32): `view` on torch 2.x, `_reshape_alias` on 1.13.
    if (n.op != "sum" && n.tensor("self").shape == std::vector<int64_t>{8, 64}) ++reshapes;
    if (n.op == "add" && scalar_other(n) == 1.0) b_id = n.outputs.at(0).id;
    if (n.op == "mm") mm = &n;
    if (n.op == "mul" && scalar_other(n) == 3.0) {
      EXPECT_EQ(n.count, 5);
    }
  }
  ASSERT_NE(mm, nullptr);
  // One node for a, one for b, one for the loop's five (count 5).
  EXPECT_EQ(reshapes, 3);
  // The matmul reads b's own reshapes (b^T is a view of b's storage).
  ASSERT_GE(b_id, 0);
  EXPECT_EQ(mm->tensor("mat2").base, b_id);
  EXPECT_NE(mm->tensor("self").base, b_id);
}

TEST(MetaMemo, RepeatedCallsGiveTheSameGraph) {
  if (!bridge::python_available() || bridge::torch_version().empty())
    GTEST_SKIP() << "embedded Python with torch is not available";
  // Meta outputs are remembered by call signature: the second trace of the
  // same reference runs on remembered metadata and must record the same graph
  // (ids, shapes, counts); views (the slices) are never remembered and keep
  // their base, so provenance through them survives (the sum reads a view of
  // the softmax output).
  std::string ref =
      "import torch\n\n"
      "def run(x):\n"
      "    rows = []\n"
      "    for i in range(37):\n"
      "        h = torch.softmax(x @ x.t(), -1)\n"
      "        rows.append(h[:, :5].sum(-1))\n"
      "    return torch.stack(rows)\n";
  json req = one_input_request(ref, "meta", 29, 13, {37, 29});
  OpGraph first = trace_reference(req), second = trace_reference(req);
  ASSERT_EQ(first.status, "ok") << first.reason;
  ASSERT_EQ(second.status, "ok") << second.reason;
  json a = to_json(first), b = to_json(second);
  a.erase("seconds");
  b.erase("seconds");
  EXPECT_EQ(a, b);
  bool saw_mm = false, saw_view_base = false;
  for (auto& n : second.ops) {
    if (n.op == "mm") {
      saw_mm = true;
      EXPECT_EQ(n.count, 37);
    }
    if (n.op == "sum") saw_view_base = n.tensor("self").base >= 0;
  }
  EXPECT_TRUE(saw_mm);
  EXPECT_TRUE(saw_view_base);
}

TEST(DataDependentReads, PagedPrefillLoopOverTokensAndHeads) {
  if (!bridge::python_available() || bridge::torch_version().empty())
    GTEST_SKIP() << "embedded Python with torch is not available";
  // tests/data/paged_prefill_loop, workload small-2seq: 4 query heads, 2 KV
  // heads, head_dim 8, a pool of 16 pages (page size 1); qo_indptr [0, 3, 7],
  // kv_indptr [0, 2, 5], kv_indices [3, 8, 13, 2, 7]. Sequence 0 has 3 query
  // tokens over 2 keys: token 0 sees none (skipped), tokens 1 and 2 see 1
  // and 2; sequence 1 has 4 over 3: tokens 4, 5, 6 see 1, 2, 3 (token 3
  // none). 5 tokens x 4 heads = 20 (token, head) pairs over 4 x 9 = 36 keys.
  // Per pair of L keys: q k^T and p v, 8 L MACs each (2 x 16 L FLOPs: 576
  // on bf16 operands, 576 on fp32 ones at the 16-bit rate); scale L, a
  // log-sum-exp 3 L + L exp + 1 log, / ln 2 1, softmax 4 L + L exp + 1 rcp
  // (fp32 8 L + 1 = 308 in all); out.to(bf16) 8 conversions (160). Casts of
  // the inputs count their selected part: q 5 of 7 token rows (160), k and v
  // 5 of 16 pages (80 each): 320 more fp32. Gathers k_rows[pages] and
  // v_rows[pages] move 2 x 5 x 16 values (160 address ops) and the page
  // slices are cast to int64 (5). Bytes read: q 5 rows x 64 B = 320, pages
  // 5 x 32 B of k and v = 320, indptrs 12 + 12, kv_indices 20: 684 B;
  // written out 448 + lse 112 = 560 B, held by the L2. DRAM-bound on the
  // H100 SXM: 684 B / 3.35 TB/s = 0.20418 ns.
  Diagnostics diags;
  Problem p = load_problem(problem_paths(std::string(SOLBENCH_SOURCE_DIR) + "/tests/data/paged_prefill_loop"), diags);
  ASSERT_TRUE(diags.empty()) << diags.str();
  ASSERT_EQ(p.workloads[0].uuid, "small-2seq");
  HardwareModel hw = testing::model("h100_sxm");
  AnalysisOptions opt;
  opt.use_cache = false;
  json r = analyse_workload(p, 0, hw, opt);
  ASSERT_EQ(r["status"], "ok") << r.dump().substr(0, 800);
  EXPECT_EQ(r["mode"], "hybrid");
  EXPECT_TRUE(r["uncosted"].empty()) << r["uncosted"].dump();
  const json& w = r["work"];
  EXPECT_NEAR(w["tensor_tflop"]["bf16"].get<double>(), 576e-12, 1e-18);
  EXPECT_NEAR(w["tensor_tflop"]["fp16"].get<double>(), 576e-12, 1e-18);
  EXPECT_NEAR(w["cuda_tflop"]["fp32"].get<double>(), 628e-12, 1e-18);
  EXPECT_NEAR(w["cuda_tflop"]["bf16"].get<double>(), 160e-12, 1e-18);
  EXPECT_NEAR(w["sfu_gop"].get<double>(), 112e-9, 1e-15);
  EXPECT_NEAR(w["int_gop"].get<double>(), 165e-9, 1e-15);
  EXPECT_NEAR(r["bytes"]["min_in_mb"].get<double>(), 684e-6, 1e-12);
  EXPECT_NEAR(r["bytes"]["min_out_mb"].get<double>(), 560e-6, 1e-12);
  EXPECT_NEAR(r["bytes"]["dram_mb"].get<double>(), 684e-6, 1e-12);
  EXPECT_NEAR(r["time_us"]["sol"].get<double>(), 684.0 / 3.35e12 * 1e6, 1e-12);
  EXPECT_EQ(r["bottleneck"], "dram");
}

TEST(TraceBudget, ALoopThatOutrunsItsBudgetIsBoundedByThePartTraced) {
  if (!bridge::python_available() || bridge::torch_version().empty())
    GTEST_SKIP() << "embedded Python with torch is not available";
  // t2048-h32: 2048 query tokens x 32 heads, about 24 operators each, far more
  // than a fraction of a second traces anywhere.
  Diagnostics diags;
  Problem p = load_problem(problem_paths(std::string(SOLBENCH_SOURCE_DIR) + "/tests/data/paged_prefill_loop"), diags);
  ASSERT_TRUE(diags.empty()) << diags.str();
  ASSERT_EQ(p.workloads[1].uuid, "t2048-h32");
  HardwareModel hw = testing::model("h100_sxm");
  AnalysisOptions opt;
  opt.use_cache = false;
  std::vector<json> parts;
  for (double budget : {0.3, 1.2}) {
    opt.trace_budget_s = budget;
    json r = analyse_workload(p, 1, hw, opt);
    ASSERT_EQ(r["status"], "ok") << r.dump().substr(0, 800);
    ASSERT_TRUE(r.contains("partial")) << "the whole loop traced within " << budget << " s";
    EXPECT_EQ(r["partial"]["budget_s"], budget);
    EXPECT_GT(r["raw_op_count"].get<int64_t>(), 0);
    EXPECT_LT(r["raw_op_count"].get<int64_t>(), 2048 * 32 * 24);
    EXPECT_EQ(r["bytes"]["min_out_mb"], 0);
    EXPECT_GT(r["time_us"]["sol"].get<double>(), 0);
    parts.push_back(r);
  }
  // A longer budget traces a longer prefix of the same run: never less of anything.
  EXPECT_GT(parts[1]["raw_op_count"].get<int64_t>(), parts[0]["raw_op_count"].get<int64_t>());
  EXPECT_GE(parts[1]["time_us"]["sol"].get<double>(), parts[0]["time_us"]["sol"].get<double>());
  EXPECT_GE(parts[1]["bytes"]["min_in_mb"].get<double>(), parts[0]["bytes"]["min_in_mb"].get<double>());
  EXPECT_GE(sum_numbers(parts[1]["work"]["tensor_tflop"]), sum_numbers(parts[0]["work"]["tensor_tflop"]));
  // The prefix's page reads are at most the selected pages' (2048 of the pool),
  // never the whole pool of 65536.
  const double page_mb = 4.0 * 128 * 2 / 1e6;  // 4 KV heads x 128 bf16 values
  EXPECT_LE(parts[1]["bytes"]["min_in_mb"].get<double>(), 2 * 2048 * page_mb + 2048 * 32 * 128 * 2 / 1e6 + 0.05);
  // A budget the trace does not reach changes nothing.
  opt.trace_budget_s = 20;
  json small = analyse_workload(p, 0, hw, opt);
  opt.trace_budget_s = 0;
  json unlimited = analyse_workload(p, 0, hw, opt);
  EXPECT_FALSE(small.contains("partial"));
  EXPECT_EQ(small["time_us"], unlimited["time_us"]);
  EXPECT_EQ(small["work"], unlimited["work"]);
}

}  // namespace
}  // namespace solbench::sol
