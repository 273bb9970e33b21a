// Cost-model rules and the roofline on hand-built graphs; every expectation is
// computed by hand in the comments (H100 SXM: BF16 989.4 TFLOP/s, FP8 1978.9,
// FP32 CUDA-core 66.9, BF16 CUDA-core 133.8, SFU 16*132*1.98e9 = 4.18176e12/s,
// DRAM 3.35e12 B/s).
#include <gtest/gtest.h>

#include "core/dtype.h"
#include "sol/analysis.h"
#include "sol_test_util.h"

namespace solbench::sol {
namespace {

using namespace testing;

constexpr double kDram = 3.35e12;

TEST(CostModel, Bf16Gemm4096CubedIsTensorBound) {
  HardwareModel h = model("h100_sxm");
  const int64_t n = 4096;
  OpGraph g = graph({T(0, {n, n}, "bfloat16"), T(1, {n, n}, "bfloat16")}, {T(2, {n, n}, "bfloat16")},
                    {op("mm", {{"self", T(0, {n, n}, "bfloat16")}, {"mat2", T(1, {n, n}, "bfloat16")}},
                        {T(2, {n, n}, "bfloat16")})});
  GraphCost gc = cost_graph(g);
  Bound b = bound(g, gc, h);
  // 2 * 4096^3 = 137,438,953,472 FLOP / 989.4e12 = 138.91 us.
  EXPECT_DOUBLE_EQ(cls(gc.total, MathClass::BF16), 137438953472.0);
  EXPECT_NEAR(b.t_tensor * 1e6, 138.911, 0.01);
  // 3 * 4096^2 * 2 B = 100,663,296 B / 3.35e12 = 30.05 us.
  EXPECT_DOUBLE_EQ(b.min_bytes, 100663296.0);
  EXPECT_NEAR(b.t_dram * 1e6, 30.049, 0.01);
  EXPECT_EQ(b.bottleneck, "tensor");
  EXPECT_DOUBLE_EQ(b.t_sol, b.t_tensor);
  // Intensity: 137.4e9 / 100.66e6 = 1365.3 FLOP/B.
  EXPECT_NEAR(b.intensity, 1365.33, 0.01);
}

TEST(CostModel, SkinnyGemmIsMemoryBound) {
  HardwareModel h = model("h100_sxm");
  // x[1,4096] @ W[4096,4096]^T (linear): 2*4096*4096 = 33,554,432 FLOP -> 0.0339 us;
  // bytes (4096 + 16,777,216 + 4096) * 2 = 33,570,816 B -> 10.021 us.
  OpGraph g = graph({T(0, {1, 4096}, "bfloat16"), T(1, {4096, 4096}, "bfloat16")},
                    {T(2, {1, 4096}, "bfloat16")},
                    {op("linear", {{"input", T(0, {1, 4096}, "bfloat16")}, {"weight", T(1, {4096, 4096}, "bfloat16")}},
                        {T(2, {1, 4096}, "bfloat16")})});
  GraphCost gc = cost_graph(g);
  Bound b = bound(g, gc, h);
  EXPECT_DOUBLE_EQ(cls(gc.total, MathClass::BF16), 33554432.0);
  EXPECT_EQ(b.bottleneck, "dram");
  EXPECT_NEAR(b.t_sol * 1e6, 33570816.0 / kDram * 1e6, 1e-9);
  EXPECT_NEAR(b.t_sol * 1e6, 10.0211, 0.001);
}

TEST(CostModel, Fp8GemmUsesFp8Rate) {
  HardwareModel h = model("h100_sxm");
  const int64_t n = 4096;
  const char* f8 = "float8_e4m3fn";
  OpGraph g = graph({T(0, {n, n}, f8), T(1, {n, n}, f8)}, {T(2, {n, n}, "bfloat16")},
                    {op("_scaled_mm", {{"self", T(0, {n, n}, f8)}, {"mat2", T(1, {n, n}, f8)}},
                        {T(2, {n, n}, "bfloat16")})});
  GraphCost gc = cost_graph(g);
  Bound b = bound(g, gc, h);
  // 137,438,953,472 FLOP / 1978.9e12 = 69.452 us (half the BF16 time).
  EXPECT_DOUBLE_EQ(cls(gc.total, MathClass::FP8), 137438953472.0);
  EXPECT_NEAR(b.t_tensor * 1e6, 69.452, 0.01);
  // bytes: 2 * 16 MiB (fp8) + 32 MiB (bf16 out) = 67,108,864 B.
  EXPECT_DOUBLE_EQ(b.min_bytes, 67108864.0);
  EXPECT_EQ(b.bottleneck, "tensor");
}

TEST(CostModel, UpcastBeforeMatmulKeepsNarrowRate) {
  // bf16 -> float32 -> mm: a kernel may multiply the bf16 values directly, so the
  // bound uses the BF16 rate, not TF32 (which would not be a lower bound).
  OpGraph g = graph({T(0, {64, 64}, "bfloat16"), T(1, {64, 64}, "bfloat16")}, {T(5, {64, 64}, "float32")},
                    {op("_to_copy", {{"self", T(0, {64, 64}, "bfloat16")}, {"dtype", "float32"}}, {T(2, {64, 64}, "float32")}),
                     op("_to_copy", {{"self", T(1, {64, 64}, "bfloat16")}, {"dtype", "float32"}}, {T(3, {64, 64}, "float32")}),
                     op("t", {{"self", T(3, {64, 64}, "float32")}}, {T(4, {64, 64}, "float32")}),
                     op("mm", {{"self", T(2, {64, 64}, "float32")}, {"mat2", T(4, {64, 64}, "float32")}},
                        {T(5, {64, 64}, "float32")})});
  GraphCost gc = cost_graph(g);
  EXPECT_DOUBLE_EQ(cls(gc.total, MathClass::BF16), 2.0 * 64 * 64 * 64);
  EXPECT_DOUBLE_EQ(cls(gc.total, MathClass::TF32), 0.0);
  // Two casts: 4096 conversions each, counted as FP32 CUDA-core work.
  EXPECT_DOUBLE_EQ(cuda(gc.total, MathClass::FP32), 8192.0);
}

TEST(CostModel, RmsNorm) {
  HardwareModel h = model("h100_sxm");
  // rms_norm over x[4096,4096] bf16 with weight[4096]: 4 FLOP/element =
  // 67,108,864 BF16 FLOP -> /133.8e12 = 0.5016 us; 4096 rsqrt (bf16 packs two
  // per SFU op: 2048) -> 0.00049 us; bytes 2*33,554,432 + 8192 = 67,117,056 B
  // -> 20.035 us: memory bound.
  OpGraph g = graph({T(0, {4096, 4096}, "bfloat16"), T(1, {4096}, "bfloat16")},
                    {T(2, {4096, 4096}, "bfloat16")},
                    {op("rms_norm", {{"input", T(0, {4096, 4096}, "bfloat16")}, {"normalized_shape", {4096}},
                                     {"weight", T(1, {4096}, "bfloat16")}, {"eps", 1e-5}},
                        {T(2, {4096, 4096}, "bfloat16")})});
  GraphCost gc = cost_graph(g);
  Bound b = bound(g, gc, h);
  EXPECT_DOUBLE_EQ(cuda(gc.total, MathClass::BF16), 67108864.0);
  EXPECT_DOUBLE_EQ(gc.total.sfu_ops, 2048.0);
  EXPECT_NEAR(b.t_cuda * 1e6, 0.50156, 1e-4);
  EXPECT_DOUBLE_EQ(b.min_bytes, 67117056.0);
  EXPECT_NEAR(b.t_sol * 1e6, 20.0349, 1e-3);
  EXPECT_EQ(b.bottleneck, "dram");
}

TEST(CostModel, SoftmaxHasSfuTerm) {
  HardwareModel h = model("h100_sxm");
  // softmax(x[64,32768] fp32, dim=-1): 2,097,152 exps + 64 reciprocals =
  // 2,097,216 SFU ops / 4.18176e12 = 0.50152 us; 4 FLOP/element = 8,388,608
  // FP32 FLOP / 66.9e12 = 0.12539 us; bytes 2 * 8,388,608 = 16,777,216 B -> 5.0081 us.
  OpGraph g = graph({T(0, {64, 32768}, "float32")}, {T(1, {64, 32768}, "float32")},
                    {op("_softmax", {{"self", T(0, {64, 32768}, "float32")}, {"dim", -1}, {"half_to_float", false}},
                        {T(1, {64, 32768}, "float32")})});
  GraphCost gc = cost_graph(g);
  Bound b = bound(g, gc, h);
  EXPECT_DOUBLE_EQ(gc.total.sfu_ops, 2097216.0);
  EXPECT_NEAR(b.t_sfu * 1e6, 0.501518, 1e-5);
  EXPECT_NEAR(b.t_cuda * 1e6, 0.125391, 1e-5);
  EXPECT_NEAR(b.t_sol * 1e6, 5.00812, 1e-4);
  EXPECT_EQ(b.bottleneck, "dram");
}

TEST(CostModel, GqaCausalAttention) {
  HardwareModel h = model("h100_sxm");
  // q[1,32,4096,128], k/v[1,8,4096,128] bf16, causal. Kept pairs per head:
  // 4096*4097/2 = 8,390,656; scores = 32 * 8,390,656 = 268,500,992.
  // MACs = scores * (128 + 128) -> 2 * 68,736,253,952 = 137,472,507,904 FLOP
  // / 989.4e12 = 138.945 us. SFU: scores + 32*4096 rows = 268,632,064
  // / 4.18176e12 = 64.239 us. Bytes: q,o 33,554,432 each + k,v 8,388,608 each
  // = 83,886,080 B -> 25.041 us. Bottleneck: tensor.
  json q = T(0, {1, 32, 4096, 128}, "bfloat16"), k = T(1, {1, 8, 4096, 128}, "bfloat16"),
       v = T(2, {1, 8, 4096, 128}, "bfloat16"), o = T(3, {1, 32, 4096, 128}, "bfloat16");
  OpGraph g = graph({q, k, v}, {o},
                    {op("scaled_dot_product_attention",
                        {{"query", q}, {"key", k}, {"value", v}, {"attn_mask", nullptr}, {"is_causal", true},
                         {"enable_gqa", true}},
                        {o})});
  GraphCost gc = cost_graph(g);
  Bound b = bound(g, gc, h);
  EXPECT_DOUBLE_EQ(cls(gc.total, MathClass::BF16), 137472507904.0);
  EXPECT_DOUBLE_EQ(gc.total.sfu_ops, 268632064.0);
  EXPECT_NEAR(b.t_tensor * 1e6, 138.945, 0.01);
  EXPECT_NEAR(b.t_sfu * 1e6, 64.239, 0.01);
  EXPECT_DOUBLE_EQ(b.min_bytes, 83886080.0);
  EXPECT_EQ(b.bottleneck, "tensor");
  // Without the causal mask every one of the 4096^2 pairs counts:
  // 32 * 16,777,216 * 256 * 2 = 274,877,906,944 FLOP (just under twice).
  g.ops[0].args["is_causal"] = false;
  EXPECT_DOUBLE_EQ(cls(cost_graph(g).total, MathClass::BF16), 274877906944.0);
}

TEST(CostModel, Conv2dDenseAndDepthwise) {
  // x[8,64,56,56] * w[128,64,3,3], pad 1 -> out[8,128,56,56] = 3,211,264 values;
  // MACs = 3,211,264 * 64 * 9 = 1,849,688,064 -> 3,699,376,128 FLOP.
  json x = T(0, {8, 64, 56, 56}, "bfloat16"), w = T(1, {128, 64, 3, 3}, "bfloat16"),
       o = T(2, {8, 128, 56, 56}, "bfloat16");
  json args = {{"input", x}, {"weight", w}, {"bias", nullptr}, {"stride", {1, 1}}, {"padding", {1, 1}},
               {"dilation", {1, 1}}, {"transposed", false}, {"output_padding", {0, 0}}, {"groups", 1}};
  OpGraph g = graph({x, w}, {o}, {op("convolution", args, {o})});
  EXPECT_DOUBLE_EQ(cls(cost_graph(g).total, MathClass::BF16), 3699376128.0);
  // Depthwise: w[64,1,3,3], groups 64 -> out[8,64,56,56] = 1,605,632 values * 1 * 9
  // = 14,450,688 MACs -> 28,901,376 FLOP.
  json wd = T(1, {64, 1, 3, 3}, "bfloat16"), od = T(2, {8, 64, 56, 56}, "bfloat16");
  args["weight"] = wd;
  args["groups"] = 64;
  OpGraph gd = graph({x, wd}, {od}, {op("convolution", args, {od})});
  EXPECT_DOUBLE_EQ(cls(cost_graph(gd).total, MathClass::BF16), 28901376.0);
}

TEST(CostModel, BroadcastElementwise) {
  // x[1024,4096] + b[4096] (fp32): one FLOP per output element = 4,194,304;
  // unfused bytes (4,194,304 + 4096 + 4,194,304) * 4 = 33,570,816.
  json x = T(0, {1024, 4096}, "float32"), b = T(1, {4096}, "float32"), o = T(2, {1024, 4096}, "float32");
  OpGraph g = graph({x, b}, {o}, {op("add", {{"self", x}, {"other", b}, {"alpha", 1}}, {o})});
  GraphCost gc = cost_graph(g);
  EXPECT_DOUBLE_EQ(cuda(gc.total, MathClass::FP32), 4194304.0);
  EXPECT_DOUBLE_EQ(gc.total.bytes, 33570816.0);
  EXPECT_DOUBLE_EQ(gc.total.sfu_ops, 0.0);
}

TEST(CostModel, HandWrittenCausalMaskHalvesAttentionWork) {
  // arange(4) -> le(row, col) -> bitwise_not -> masked_fill(scores) -> softmax -> bmm:
  // a 4x4 lower triangle keeps 4*5/2 = 10 of 16 scores (0.625). Scores bmm
  // [2,4,8]x[2,8,4]: 2*4*4*8 = 256 MACs -> 512 FLOP * 0.625 = 320; PV bmm
  // [2,4,4]x[2,4,8] likewise 320 (float32 operands: 16-bit tensor rate). Softmax SFU: (32 exps + 8 rows) * 0.625 = 25.
  json q = T(0, {2, 4, 8}, "float32"), kt = T(1, {2, 8, 4}, "float32"), v = T(2, {2, 4, 8}, "float32");
  OpGraph g = graph({q, kt, v}, {T(11, {2, 4, 8}, "float32")},
      {op("arange", {{"end", 4}}, {T(3, {4}, "int64")}),
       op("unsqueeze", {{"self", T(3, {4}, "int64")}, {"dim", 0}}, {T(4, {1, 4}, "int64")}),
       op("unsqueeze", {{"self", T(3, {4}, "int64")}, {"dim", 1}}, {T(5, {4, 1}, "int64")}),
       op("le", {{"self", T(4, {1, 4}, "int64")}, {"other", T(5, {4, 1}, "int64")}}, {T(6, {4, 4}, "bool")}),
       op("bitwise_not", {{"self", T(6, {4, 4}, "bool")}}, {T(7, {4, 4}, "bool")}),
       op("bmm", {{"self", q}, {"mat2", kt}}, {T(8, {2, 4, 4}, "float32")}),
       op("masked_fill", {{"self", T(8, {2, 4, 4}, "float32")}, {"mask", T(7, {4, 4}, "bool")}, {"value", "-inf"}},
          {T(9, {2, 4, 4}, "float32")}),
       op("_softmax", {{"self", T(9, {2, 4, 4}, "float32")}, {"dim", -1}, {"half_to_float", false}},
          {T(10, {2, 4, 4}, "float32")}),
       op("bmm", {{"self", T(10, {2, 4, 4}, "float32")}, {"mat2", v}}, {T(11, {2, 4, 8}, "float32")})});
  GraphCost gc = cost_graph(g);
  // float32 operands: bounded at the 16-bit tensor rate (see tensor_core_class).
  EXPECT_DOUBLE_EQ(cls(gc.total, MathClass::FP16), 640.0);
  EXPECT_DOUBLE_EQ(cls(gc.total, MathClass::TF32), 0.0);
  EXPECT_DOUBLE_EQ(gc.total.sfu_ops, 25.0);
  EXPECT_NE(gc.ops[5].note.find("causal-masked"), std::string::npos) << gc.ops[5].note;
}

TEST(CostModel, DivisionByBroadcastRowSumCostsOneReciprocalPerRow) {
  // x[256,1024] / s[256,1]: 262,144 multiplies, 256 reciprocals.
  json x = T(0, {256, 1024}, "float32"), s = T(1, {256, 1}, "float32"), o = T(2, {256, 1024}, "float32");
  OpGraph g = graph({x, s}, {o}, {op("div", {{"self", x}, {"other", s}}, {o})});
  GraphCost gc = cost_graph(g);
  EXPECT_DOUBLE_EQ(cuda(gc.total, MathClass::FP32), 262144.0);
  EXPECT_DOUBLE_EQ(gc.total.sfu_ops, 256.0);
}

TEST(CostModel, Cast) {
  // bf16[1024,1024] -> float32: 1,048,576 conversions; bytes 1,048,576 * (2 + 4) = 6,291,456.
  json x = T(0, {1024, 1024}, "bfloat16"), o = T(1, {1024, 1024}, "float32");
  OpGraph g = graph({x}, {o}, {op("_to_copy", {{"self", x}, {"dtype", "float32"}}, {o})});
  GraphCost gc = cost_graph(g);
  EXPECT_DOUBLE_EQ(cuda(gc.total, MathClass::FP32), 1048576.0);
  EXPECT_DOUBLE_EQ(gc.total.bytes, 6291456.0);
  // A same-dtype copy moves bytes but does no arithmetic.
  json c = T(2, {1024, 1024}, "bfloat16");
  OpGraph g2 = graph({x}, {c}, {op("clone", {{"self", x}}, {c})});
  GraphCost gc2 = cost_graph(g2);
  EXPECT_DOUBLE_EQ(gc2.total.cuda_total(), 0.0);
  EXPECT_DOUBLE_EQ(gc2.total.bytes, 4194304.0);
}

TEST(CostModel, GatherReadsOnlyTouchedRows) {
  HardwareModel h = model("h100_sxm");
  // embedding(W[128000,4096] bf16, idx[16] int64) -> out[16,4096]:
  // unfused bytes = 128 (idx) + 2 * 131,072 (rows read + written) = 262,272.
  // Minimum bytes: W touched 16 rows = 131,072 (not 1,048,576,000), idx 128,
  // out 131,072 -> 262,272 B.
  json w = T(0, {128000, 4096}, "bfloat16"), idx = T(1, {16}, "int64"), o = T(2, {16, 4096}, "bfloat16");
  OpGraph g = graph({w, idx}, {o}, {op("embedding", {{"weight", w}, {"indices", idx}}, {o})});
  GraphCost gc = cost_graph(g);
  EXPECT_DOUBLE_EQ(gc.total.bytes, 262272.0);
  EXPECT_DOUBLE_EQ(gc.input_touched_bytes.at("in0"), 131072.0);
  EXPECT_DOUBLE_EQ(gc.input_touched_bytes.at("in1"), 128.0);
  Bound b = bound(g, gc, h);
  EXPECT_DOUBLE_EQ(b.min_bytes, 262272.0);
  EXPECT_DOUBLE_EQ(b.boundary_bytes, 1048576000.0 + 128 + 131072);
}

TEST(CostModel, Fp4PackedBytes) {
  // float4_e2m1fn_x2 [128, 64] holds 128*128 FP4 values in 8,192 bytes
  // (half a byte per value); a lone float4_e2m1 value is half a byte too.
  EXPECT_EQ(storage_bytes(DType::Float4E2M1FNx2, 128 * 64), 8192u);
  EXPECT_EQ(storage_bytes(DType::Float4E2M1, 128 * 128), 8192u);
  TensorRef t;
  t.shape = {128, 64};
  t.dtype = "float4_e2m1fn_x2";
  EXPECT_DOUBLE_EQ(t.bytes(), 8192.0);
  // In a roofline: packed A[128,64] (8,192 B) + bf16 out[128,128] (32,768 B).
  HardwareModel h = model("b200");
  Work w;
  Bound b = roofline(w, 8192, 8192, 32768, h);
  EXPECT_DOUBLE_EQ(b.min_bytes, 40960.0);
  EXPECT_NEAR(b.t_sol, 40960.0 / 8e12, 1e-18);
}

TEST(CostModel, ViewChainCostsZero) {
  json x = T(0, {4, 8, 16}, "float32");
  OpGraph g = graph({x}, {T(6, {8, 1, 4, 16}, "float32")},
                    {op("view", {{"self", x}, {"size", {32, 16}}}, {T(1, {32, 16}, "float32")}),
                     op("reshape", {{"self", T(1, {32, 16}, "float32")}, {"shape", {4, 8, 16}}}, {T(2, {4, 8, 16}, "float32")}),
                     op("permute", {{"self", T(2, {4, 8, 16}, "float32")}, {"dims", {1, 0, 2}}}, {T(3, {8, 4, 16}, "float32")}),
                     op("transpose", {{"self", T(3, {8, 4, 16}, "float32")}, {"dim0", 0}, {"dim1", 1}}, {T(4, {4, 8, 16}, "float32")}),
                     op("unsqueeze", {{"self", T(4, {4, 8, 16}, "float32")}, {"dim", 1}}, {T(5, {4, 1, 8, 16}, "float32")}),
                     op("expand", {{"self", T(5, {4, 1, 8, 16}, "float32")}, {"size", {4, 1, 8, 16}}}, {T(6, {4, 1, 8, 16}, "float32")}),
                     op("slice", {{"self", T(6, {4, 1, 8, 16}, "float32")}, {"dim", 0}, {"start", 0}, {"end", 2}}, {T(7, {2, 1, 8, 16}, "float32")})});
  GraphCost gc = cost_graph(g);
  EXPECT_TRUE(gc.uncosted.empty());
  for (auto& oc : gc.ops) EXPECT_TRUE(oc.costed) << oc.op;
  EXPECT_DOUBLE_EQ(gc.total.bytes, 0.0);
  EXPECT_DOUBLE_EQ(gc.total.cuda_total() + gc.total.tensor_total() + gc.total.sfu_ops + gc.total.int_ops, 0.0);
}

TEST(CostModel, UnknownOperatorIsListedAsUncosted) {
  json x = T(0, {16}, "float32"), o = T(1, {16}, "float32");
  OpGraph g = graph({x}, {o},
                    {op("frobnicate", {{"self", x}}, {o}, 3), op("exp", {{"self", x}}, {o})});
  GraphCost gc = cost_graph(g);
  ASSERT_EQ(gc.uncosted.size(), 1u);
  EXPECT_EQ(gc.uncosted.at("frobnicate"), 3);
  EXPECT_FALSE(gc.ops[0].costed);
  EXPECT_NE(gc.ops[0].note.find("no rule"), std::string::npos);
  EXPECT_DOUBLE_EQ(gc.total.sfu_ops, 16.0);  // the exp is still costed
  // The analysis result lists it too.
  ResolvedWorkload r;
  r.inputs.push_back({"in0", DType::Float32, false, {16}, 16, 64});
  r.outputs.push_back({"out0", DType::Float32, false, {16}, 16, 64});
  r.output_bytes = 64;
  json res = analyse_graph(g, r, model("h100_sxm"));
  EXPECT_EQ(res["uncosted"]["frobnicate"], 3);
}

TEST(CostModel, MalformedGraphNamesThePath) {
  json j = {{"status", "ok"}, {"inputs", json::array()}, {"outputs", json::array()},
            {"ops", {{{"op", "aten::mm"}, {"outputs", {{{"id", 1}, {"shape", {2, -1}}, {"dtype", "float32"}}}}}}}};
  try {
    parse_op_graph(j, "graph.json");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("ops[0].outputs[0].shape[1]"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace solbench::sol
