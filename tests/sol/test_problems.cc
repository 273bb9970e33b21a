// Every bundled problem, traced through the embedded Python: finite positive
// T_SOL and no uncosted operators on H100 SXM; and the byte refinements on
// small traced references. Skips where torch is missing.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <span>
#include <sstream>

#include "bridge/python.h"
#include "core/problem.h"
#include "core/safetensors.h"
#include "sol/analysis.h"
#include "sol_test_util.h"

namespace solbench::sol {
namespace {

TEST(BundledProblems, FinitePositiveSolWithoutUncostedOps) {
  if (!bridge::python_available() || bridge::torch_version().empty())
    GTEST_SKIP() << "embedded Python with torch is not available";
  setenv("SOLBENCH_CACHE_DIR", (std::filesystem::temp_directory_path() / "solbench-sol-test").c_str(), 1);
  HardwareModel h = testing::model("h100_sxm");
  auto dirs = find_problem_dirs(std::string(SOLBENCH_SOURCE_DIR) + "/problems");
  ASSERT_GE(dirs.size(), 8u);
  AnalysisOptions opt;
  opt.use_cache = false;
  for (auto& d : dirs) {
    Diagnostics diags;
    Problem p = load_problem(problem_paths(d), diags);
    ASSERT_TRUE(diags.empty()) << diags.str();
    // The smallest and the largest workload of each problem.
    for (size_t i : {size_t(0), p.workloads.size() - 1}) {
      json r = analyse_workload(p, i, h, opt);
      ASSERT_EQ(r["status"], "ok") << d << " " << r.dump().substr(0, 800);
      double t = r["time_us"]["sol"].get<double>();
      EXPECT_TRUE(std::isfinite(t) && t > 0) << d << " T_SOL " << t;
      EXPECT_TRUE(r["uncosted"].empty()) << d << " uncosted " << r["uncosted"].dump();
    }
  }
}

// A one-workload problem in a temporary folder: inputs/outputs as definition
// JSON, axes of the single workload.
Problem temp_problem(const std::string& name, const json& inputs, const json& outputs,
                     const std::string& reference, const json& axes) {
  std::string tmpl = (std::filesystem::temp_directory_path() / ("solbench-sol-" + name + "-XXXXXX")).string();
  std::filesystem::path dir = ::mkdtemp(tmpl.data());
  json ax = json::object();
  for (auto& [k, v] : axes.items()) ax[k] = {{"type", "var"}};
  json def = {{"name", name}, {"op_type", "test"}, {"axes", ax}, {"inputs", inputs},
              {"outputs", outputs}, {"reference", reference}};
  std::ofstream(dir / "definition.json") << def.dump(1);
  json in_src = json::object();
  for (auto& [k, v] : inputs.items()) in_src[k] = {{"type", "random"}};
  std::ofstream(dir / "workload.jsonl")
      << json{{"uuid", name + "-0"}, {"axes", axes}, {"inputs", in_src},
              {"tolerance", {{"max_atol", 0.01}, {"max_rtol", 0.01}}}}
             .dump()
      << "\n";
  Diagnostics diags;
  Problem p = load_problem(problem_paths(dir), diags);
  EXPECT_TRUE(diags.empty()) << diags.str();
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);  // the problem is in memory now
  return p;
}

TEST(TracedBytes, KvCacheUpdatedInPlaceCountsTheWrittenSlot) {
  if (!bridge::python_available() || bridge::torch_version().empty())
    GTEST_SKIP() << "embedded Python with torch is not available";
  // cache[2,4,1024,64] fp32 = 2,097,152 B; new[2,4,1,64] = 2,048 B written
  // into position 7 and the cache returned. Boundary: 2,097,152 (read) + 2,048
  // + 2,097,152 (written) = 4,196,352 B. In place a kernel reads new and writes
  // the slot: 2,048 + 2,048 = 4,096 B -> 0.512 ns on B200 (8 TB/s).
  json shape_c = {"b", "h", "s", "d"}, shape_n = {"b", "h", "one", "d"};
  Problem p = temp_problem(
      "kv_inplace", {{"cache", {{"shape", shape_c}, {"dtype", "float32"}}}, {"new", {{"shape", shape_n}, {"dtype", "float32"}}}},
      {{"cache_out", {{"shape", shape_c}, {"dtype", "float32"}}}},
      "import torch\n\ndef run(cache, new):\n    cache[:, :, 7:8] = new\n    return cache\n",
      {{"b", 2}, {"h", 4}, {"s", 1024}, {"d", 64}, {"one", 1}});
  AnalysisOptions opt;
  opt.use_cache = false;
  json r = analyse_workload(p, 0, testing::model("b200"), opt);
  ASSERT_EQ(r["status"], "ok") << r.dump().substr(0, 800);
  EXPECT_TRUE(r["uncosted"].empty()) << r["uncosted"].dump();
  EXPECT_NEAR(r["bytes"]["boundary_mb"].get<double>(), 4.196352, 1e-9);
  EXPECT_NEAR(r["bytes"]["min_mb"].get<double>(), 0.004096, 1e-9);
  // The written slot (2,048 B) can stay in the L2: DRAM moves the 2,048 B read.
  EXPECT_NEAR(r["bytes"]["l2_deferred_mb"].get<double>(), 0.002048, 1e-9);
  EXPECT_NEAR(r["time_us"]["sol"].get<double>(), 0.000256, 1e-9);
}

TEST(TracedBytes, BroadcastViewOutputCountsDistinctElements) {
  if (!bridge::python_available() || bridge::torch_version().empty())
    GTEST_SKIP() << "embedded Python with torch is not available";
  // out[256,4096] fp32 = (b[4096] * 2).expand(256, 4096): 4,096 distinct values.
  // x[256,4096] only lends its shape (no operator reads it: 0 B). Minimum
  // bytes: b 16,384 + out 16,384 = 32,768 B -> 4.096 ns on B200; boundary
  // 4,194,304 (x) + 16,384 + 4,194,304 = 8,404,992 B.
  Problem p = temp_problem(
      "bcast_out", {{"x", {{"shape", {"n", "d"}}, {"dtype", "float32"}}}, {"b", {{"shape", {"d"}}, {"dtype", "float32"}}}},
      {{"y", {{"shape", {"n", "d"}}, {"dtype", "float32"}}}},
      "import torch\n\ndef run(x, b):\n    return (b * 2).expand(x.shape[0], -1)\n", {{"n", 256}, {"d", 4096}});
  AnalysisOptions opt;
  opt.use_cache = false;
  json r = analyse_workload(p, 0, testing::model("b200"), opt);
  ASSERT_EQ(r["status"], "ok") << r.dump().substr(0, 800);
  EXPECT_NEAR(r["bytes"]["boundary_mb"].get<double>(), 8.404992, 1e-9);
  EXPECT_NEAR(r["bytes"]["min_out_mb"].get<double>(), 0.016384, 1e-9);
  EXPECT_NEAR(r["bytes"]["min_mb"].get<double>(), 0.032768, 1e-9);
  // The 16,384 B written fit in the L2: 16,384 B through DRAM -> 2.048 ns.
  EXPECT_NEAR(r["time_us"]["sol"].get<double>(), 0.002048, 1e-9);
}


// A one-workload problem at <root>/test/<name> with the workload's input
// sources given (inputs not named are random) and files written under the
// data set root first (safetensors blobs); removed with the object.
struct DataSetProblem {
  std::filesystem::path root;
  Problem p;

  DataSetProblem(const std::string& name, json def, const json& axes, json sources,
                 const std::map<std::string, std::string>& files) {
    std::string tmpl = (std::filesystem::temp_directory_path() / ("solbench-sol-" + name + "-XXXXXX")).string();
    root = ::mkdtemp(tmpl.data());
    std::filesystem::path dir = root / "test" / name;
    std::filesystem::create_directories(dir);
    for (auto& [rel, bytes] : files) {
      std::filesystem::create_directories((root / rel).parent_path());
      std::ofstream(root / rel, std::ios::binary) << bytes;
    }
    json ax = json::object();
    for (auto& [k, v] : axes.items()) ax[k] = {{"type", "var"}};
    def["name"] = name;
    def["op_type"] = "test";
    def["axes"] = ax;
    std::ofstream(dir / "definition.json") << def.dump(1);
    for (auto& [k, v] : def["inputs"].items())
      if (!sources.contains(k)) sources[k] = {{"type", "random"}};
    std::ofstream(dir / "workload.jsonl")
        << json{{"uuid", name + "-0"}, {"axes", axes}, {"inputs", sources},
                {"tolerance", {{"max_atol", 0.01}, {"max_rtol", 0.01}}}}
               .dump()
        << "\n";
    Diagnostics diags;
    p = load_problem(problem_paths(dir), diags);
    EXPECT_TRUE(diags.empty()) << diags.str();
  }
  ~DataSetProblem() {
    std::error_code ec;
    std::filesystem::remove_all(root, ec);
  }
};

// A safetensors file of int32 tensors, as bytes.
std::string safetensors_int32(const std::vector<std::pair<std::string, std::vector<int32_t>>>& tensors) {
  std::vector<SafetensorsWriteEntry> entries;
  for (auto& [name, v] : tensors)
    entries.push_back({name, DType::Int32, {int64_t(v.size())},
                       std::as_bytes(std::span<const int32_t>(v.data(), v.size()))});
  std::string tmpl = (std::filesystem::temp_directory_path() / "solbench-blob-XXXXXX").string();
  int fd = ::mkstemp(tmpl.data());
  ::close(fd);
  write_safetensors(tmpl, entries);
  std::ifstream in(tmpl, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  std::filesystem::remove(tmpl);
  return ss.str();
}

TEST(DataDependentReads, PagedDecodeReadsTheSelectedPages) {
  if (!bridge::python_available() || bridge::torch_version().empty())
    GTEST_SKIP() << "embedded Python with torch is not available";
  // Paged decode, page size 4: q [2, 8, 64] bf16; k_cache and v_cache
  // [32 pages, 4, 2, 64] bf16, 32,768 B each, 1,024 B a page; kv_indptr
  // [0, 3, 5] and kv_indices [7, 2, 9, 9, 30] from a safetensors blob. The
  // reference casts both pools to fp32 (every page), then each sequence
  // gathers its pages: {7, 2, 9} and {9, 30}, 4 distinct pages of 32.
  // A kernel reads q 2,048 + 4 pages of k and of v 2 x 4,096 + kv_indptr 12 +
  // kv_indices 20 = 10,272 B and writes the output [2, 8, 64] bf16, 2,048 B
  // (held by the L2). Before, the cast read both pools: 67,616 B. DRAM-bound:
  // 10,272 B / 8 TB/s = 1.284 ns on B200. The casts count 4/32 of their
  // 16,384 conversions each.
  json def = {
      {"inputs",
       {{"q", {{"shape", {"b", "h", "d"}}, {"dtype", "bfloat16"}}},
        {"k_cache", {{"shape", {"p", "s", "hk", "d"}}, {"dtype", "bfloat16"}}},
        {"v_cache", {{"shape", {"p", "s", "hk", "d"}}, {"dtype", "bfloat16"}}},
        {"kv_indptr", {{"shape", {"b1"}}, {"dtype", "int32"}}},
        {"kv_indices", {{"shape", {"n"}}, {"dtype", "int32"}}}}},
      {"outputs", {{"out", {{"shape", {"b", "h", "d"}}, {"dtype", "bfloat16"}}}}},
      {"reference",
       "import math\nimport torch\n\n"
       "def run(q, k_cache, v_cache, kv_indptr, kv_indices):\n"
       "    B, H, D = q.shape\n"
       "    Hk = k_cache.shape[2]\n"
       "    kf = k_cache.to(torch.float32)\n"
       "    vf = v_cache.to(torch.float32)\n"
       "    out = torch.zeros(B, H, D, dtype=torch.bfloat16, device=q.device)\n"
       "    for b in range(B):\n"
       "        pages = kv_indices[int(kv_indptr[b].item()):int(kv_indptr[b + 1].item())].long()\n"
       "        k = kf[pages].reshape(-1, Hk, D)\n"
       "        v = vf[pages].reshape(-1, Hk, D)\n"
       "        qb = q[b].float().reshape(Hk, H // Hk, D)\n"
       "        p = torch.softmax(torch.einsum('gqd,tgd->gqt', qb, k) / math.sqrt(D), -1)\n"
       "        out[b] = torch.einsum('gqt,tgd->gqd', p, v).reshape(H, D).to(torch.bfloat16)\n"
       "    return out\n"}};
  json blob = {{"type", "safetensors"}, {"path", "blobs/decode.safetensors"}};
  json sources = {{"kv_indptr", blob}, {"kv_indices", blob}};
  sources["kv_indptr"]["tensor_key"] = "kv_indptr";
  sources["kv_indices"]["tensor_key"] = "kv_indices";
  DataSetProblem dp("paged_decode", def,
                    {{"b", 2}, {"h", 8}, {"d", 64}, {"p", 32}, {"s", 4}, {"hk", 2}, {"b1", 3}, {"n", 5}},
                    sources,
                    {{"blobs/decode.safetensors",
                      safetensors_int32({{"kv_indptr", {0, 3, 5}}, {"kv_indices", {7, 2, 9, 9, 30}}})}});
  AnalysisOptions opt;
  opt.use_cache = false;
  json r = analyse_workload(dp.p, 0, testing::model("b200"), opt);
  ASSERT_EQ(r["status"], "ok") << r.dump().substr(0, 800);
  EXPECT_TRUE(r["uncosted"].empty()) << r["uncosted"].dump();
  EXPECT_NEAR(r["bytes"]["boundary_mb"].get<double>(), 0.069664, 1e-9);
  EXPECT_NEAR(r["bytes"]["min_in_mb"].get<double>(), 0.010272, 1e-9) << r["notes"].dump();
  EXPECT_NEAR(r["bytes"]["dram_mb"].get<double>(), 0.010272, 1e-9);
  EXPECT_NEAR(r["time_us"]["sol"].get<double>(), 0.001284, 1e-9);
  EXPECT_EQ(r["bottleneck"], "dram");
  int casts = 0;
  for (auto& o : r["ops"])
    if (o["op"] == "_to_copy" && o.value("note", std::string()).find("selected elements only: 0.125") != std::string::npos)
      ++casts;
  EXPECT_EQ(casts, 2) << r["ops"].dump();
}

TEST(DataDependentReads, RaggedPrefillReadsTheSlices) {
  if (!bridge::python_available() || bridge::torch_version().empty())
    GTEST_SKIP() << "embedded Python with torch is not available";
  // Ragged prefill over a KV buffer with room to spare: q [12, 4, 32] fp32,
  // k and v [64, 2, 32] bf16 (8,192 B each, 128 B a row); qo_indptr [0, 4, 12]
  // and kv_indptr [0, 10, 30] from the custom inputs entry point (called with
  // the worker's seed). The reference casts k and v whole to fp32, then each
  // sequence slices rows [0, 10) and [10, 30) of the casts: 30 of 64 rows.
  // A kernel reads q 6,144 + k and v 2 x 3,840 + qo_indptr 12 + kv_indptr 12
  // = 13,848 B and writes out [12, 4, 32] fp32, 6,144 B (held by the L2).
  // Before: the casts read k and v in full, 6,144 + 2 x 8,192 + 24 = 22,552 B.
  // 13,848 B / 8 TB/s = 1.731 ns on B200.
  json def = {
      {"inputs",
       {{"q", {{"shape", {"tq", "h", "d"}}, {"dtype", "float32"}}},
        {"k", {{"shape", {"tk", "hk", "d"}}, {"dtype", "bfloat16"}}},
        {"v", {{"shape", {"tk", "hk", "d"}}, {"dtype", "bfloat16"}}},
        {"qo_indptr", {{"shape", {"b1"}}, {"dtype", "int32"}}},
        {"kv_indptr", {{"shape", {"b1"}}, {"dtype", "int32"}}}}},
      {"outputs", {{"out", {{"shape", {"tq", "h", "d"}}, {"dtype", "float32"}}}}},
      {"custom_inputs_entrypoint", "make_inputs"},
      {"reference",
       "import torch\n\n"
       "def make_inputs(axes, device):\n"
       "    return {'qo_indptr': torch.tensor([0, 4, 12], dtype=torch.int32, device=device),\n"
       "            'kv_indptr': torch.tensor([0, 10, 30], dtype=torch.int32, device=device)}\n\n"
       "def run(q, k, v, qo_indptr, kv_indptr):\n"
       "    g = q.shape[1] // k.shape[1]\n"
       "    kf, vf = k.float(), v.float()\n"
       "    out = torch.zeros_like(q)\n"
       "    for b in range(qo_indptr.shape[0] - 1):\n"
       "        qs, qe = int(qo_indptr[b].item()), int(qo_indptr[b + 1].item())\n"
       "        ks, ke = int(kv_indptr[b].item()), int(kv_indptr[b + 1].item())\n"
       "        kb = kf[ks:ke].repeat_interleave(g, dim=1)\n"
       "        vb = vf[ks:ke].repeat_interleave(g, dim=1)\n"
       "        p = torch.softmax(torch.einsum('qhd,khd->qhk', q[qs:qe], kb), -1)\n"
       "        out[qs:qe] = torch.einsum('qhk,khd->qhd', p, vb)\n"
       "    return out\n"}};
  json custom = {{"type", "custom"}};
  DataSetProblem dp("ragged_prefill", def,
                    {{"tq", 12}, {"h", 4}, {"d", 32}, {"tk", 64}, {"hk", 2}, {"b1", 3}},
                    {{"qo_indptr", custom}, {"kv_indptr", custom}}, {});
  AnalysisOptions opt;
  opt.use_cache = false;
  json r = analyse_workload(dp.p, 0, testing::model("b200"), opt);
  ASSERT_EQ(r["status"], "ok") << r.dump().substr(0, 800);
  EXPECT_TRUE(r["uncosted"].empty()) << r["uncosted"].dump();
  EXPECT_NEAR(r["bytes"]["boundary_mb"].get<double>(), 0.028696, 1e-9);
  EXPECT_NEAR(r["bytes"]["min_in_mb"].get<double>(), 0.013848, 1e-9) << r["notes"].dump();
  EXPECT_NEAR(r["time_us"]["sol"].get<double>(), 0.001731, 1e-9);
}

TEST(TracedBytes, MaterialisedBroadcastOutputCountsDistinctElements) {
  if (!bridge::python_available() || bridge::torch_version().empty())
    GTEST_SKIP() << "embedded Python with torch is not available";
  // An attention mask expanded over heads and query rows and materialised:
  // m [4, 512] bool -> (1.0 - m[:, None, None, :].expand(4, 8, 512, 512)
  // .float()).contiguous() * -1e4, fp32 [4, 8, 512, 512] = 33,554,432 B as
  // written by the reference. Its values depend on (batch, key) only: a kernel
  // returns them as a broadcast view of 4 x 512 fp32 = 8,192 B. (Returned in
  // a dict by name: the tracer used to name no output then.) Read m
  // 2,048 B. Minimum 10,240 B; the 8,192 B written fit in the L2: DRAM
  // 2,048 B -> 0.256 ns on B200.
  Problem p = temp_problem(
      "mask_out", {{"m", {{"shape", {"b", "s"}}, {"dtype", "bool"}}}},
      {{"mask", {{"shape", {"b", "h", "s", "s"}}, {"dtype", "float32"}}}},
      "import torch\n\ndef run(m):\n"
      "    e = m[:, None, None, :].expand(m.shape[0], 8, m.shape[1], m.shape[1]).float()\n"
      "    return {'mask': (1.0 - e).contiguous() * -1e4}\n",
      {{"b", 4}, {"h", 8}, {"s", 512}});
  AnalysisOptions opt;
  opt.use_cache = false;
  json r = analyse_workload(p, 0, testing::model("b200"), opt);
  ASSERT_EQ(r["status"], "ok") << r.dump().substr(0, 800);
  EXPECT_NEAR(r["bytes"]["boundary_mb"].get<double>(), 33.556480, 1e-9);
  EXPECT_NEAR(r["bytes"]["min_out_mb"].get<double>(), 0.008192, 1e-9);
  EXPECT_NEAR(r["bytes"]["min_mb"].get<double>(), 0.010240, 1e-9);
  EXPECT_NEAR(r["time_us"]["dram"].get<double>(), 0.000256, 1e-9);
}

}  // namespace
}  // namespace solbench::sol
