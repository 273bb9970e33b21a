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
  // 3 * 4096^2 * 2 B = 100,663,296 B at the boundary; the 33,554,432 B written fit
  // in the 50 MiB L2 (roofline.h), so DRAM moves 67,108,864 B / 3.35e12 = 20.03 us.
  EXPECT_DOUBLE_EQ(b.min_bytes, 100663296.0);
  EXPECT_NEAR(b.t_dram * 1e6, 20.0325, 0.01);
  EXPECT_EQ(b.bottleneck, "tensor");
  EXPECT_DOUBLE_EQ(b.t_sol, b.t_tensor);
  // Intensity per DRAM byte: 137.4e9 / 67.11e6 = 2048 FLOP/B.
  EXPECT_NEAR(b.intensity, 2048.0, 0.01);
}

TEST(CostModel, SkinnyGemmIsMemoryBound) {
  HardwareModel h = model("h100_sxm");
  // x[1,4096] @ W[4096,4096]^T (linear): 2*4096*4096 = 33,554,432 FLOP -> 0.0339 us;
  // bytes read (4096 + 16,777,216) * 2 = 33,562,624 B -> 10.0187 us (the 8,192 B
  // written can stay in the L2).
  OpGraph g = graph({T(0, {1, 4096}, "bfloat16"), T(1, {4096, 4096}, "bfloat16")},
                    {T(2, {1, 4096}, "bfloat16")},
                    {op("linear", {{"input", T(0, {1, 4096}, "bfloat16")}, {"weight", T(1, {4096, 4096}, "bfloat16")}},
                        {T(2, {1, 4096}, "bfloat16")})});
  GraphCost gc = cost_graph(g);
  Bound b = bound(g, gc, h);
  EXPECT_DOUBLE_EQ(cls(gc.total, MathClass::BF16), 33554432.0);
  EXPECT_EQ(b.bottleneck, "dram");
  EXPECT_NEAR(b.t_sol * 1e6, 33562624.0 / kDram * 1e6, 1e-9);
  EXPECT_NEAR(b.t_sol * 1e6, 10.0187, 0.001);
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

TEST(CostModel, Nvfp4ScaledMmCountsBothPackedValues) {
  // NVFP4 GEMM as the public Quant problems write it: A [M, K/2] and B^T
  // [K/2, N] in packed float4_e2m1fn_x2 (two values per element), 1x16 block
  // scales in float8_e4m3fn, bf16 out. M = 256, N = 512, K = 1024:
  // MACs = 256 * 512 * 1024 = 134,217,728; FLOP = 268,435,456 on the FP4
  // tensor cores: B200 (9,000 TFLOP/s dense) 29.826 ns.
  HardwareModel h = model("b200");
  const char* f4 = "float4_e2m1fn_x2";
  const char* f8 = "float8_e4m3fn";
  json a = T(0, {256, 512}, f4), b = T(1, {512, 512}, f4);
  json sa = T(2, {256 * 64}, f8), sb = T(3, {512 * 64}, f8);
  json out = T(4, {256, 512}, "bfloat16");
  OpGraph g = graph({a, b, sa, sb}, {out},
                    {op("_scaled_mm", {{"self", a}, {"mat2", b}, {"scale_a", sa}, {"scale_b", sb},
                                       {"bias", nullptr}, {"out_dtype", "bfloat16"}},
                        {out})});
  GraphCost gc = cost_graph(g);
  EXPECT_DOUBLE_EQ(cls(gc.total, MathClass::FP4), 268435456.0);
  EXPECT_DOUBLE_EQ(cls(gc.total, MathClass::FP8), 0.0);
  Bound bd = bound(g, gc, h);
  EXPECT_NEAR(bd.t_tensor * 1e9, 268435456.0 / 9000e12 * 1e9, 1e-9);
  EXPECT_NEAR(bd.t_tensor * 1e9, 29.826, 0.001);
  // Bytes: A 131,072 + B 262,144 + scales 16,384 + 32,768 + out 262,144 =
  // 704,512 B: 88.06 ns at 8 TB/s, so DRAM binds.
  EXPECT_DOUBLE_EQ(bd.min_bytes, 704512.0);
  EXPECT_EQ(bd.bottleneck, "dram");
  // On H100 (no FP4 tensor cores) the same MACs run at the FP8 rate.
  Bound hb = bound(g, gc, model("h100_sxm"));
  EXPECT_NEAR(hb.t_tensor * 1e9, 268435456.0 / 1978.9e12 * 1e9, 1e-6);
}

TEST(CostModel, LookupEncodingCostsOneOperationPerCode) {
  // A quantiser written as masked constant writes (the public NVFP4
  // references' E2M1 encoding), traced and aggregated as the tracer records it:
  // X float32 [4, 256] (1,024 values); R = zeros_like(X, uint8);
  // R[(X >= 0) & (X <= 0.25)] = 0, three writes aggregated into one node of
  // count 3 whose later masks (X > 0.25, X < 0.75) have no recorded consumer.
  // A kernel makes each code with one conversion: 1,024 operations, not the
  // 5 compares/ands per value written out. A compare whose mask leaves the
  // region (X > 5 feeding a where) keeps its cost, and R2 with one masked
  // write is no encoding.
  const std::vector<int64_t> s = {4, 256};
  json x = T(0, s, "float32"), r = T(1, s, "uint8"), r2 = T(20, s, "uint8");
  json v = T(5, {}, "uint8");
  auto cmp = [&](const std::string& name, double c, int64_t out) {
    return op(name, {{"self", x}, {"other", c}}, {T(out, s, "bool")});
  };
  std::vector<json> ops = {
      op("zeros_like", {{"self", x}, {"dtype", "uint8"}}, {r}),
      op("scalar_tensor", {{"s", 0}}, {v}),
      cmp("ge", 0.0, 2),
      cmp("le", 0.25, 3),
      op("bitwise_and", {{"self", T(2, s, "bool")}, {"other", T(3, s, "bool")}}, {T(4, s, "bool")}),
      op("index_put_", {{"self", r}, {"indices", json::array({T(4, s, "bool")})}, {"values", v}}, {r}, 3),
      cmp("gt", 0.25, 6),
      cmp("lt", 0.75, 7),
      cmp("gt", 5.0, 8),
      op("where", {{"condition", T(8, s, "bool")}, {"self", x}, {"other", 0.0}}, {T(9, s, "float32")}),
      op("zeros_like", {{"self", x}, {"dtype", "uint8"}}, {r2}),
      op("index_put_", {{"self", r2}, {"indices", json::array({T(8, s, "bool")})}, {"values", v}}, {r2}),
  };
  OpGraph g = graph({x}, {r, T(9, s, "float32"), r2}, ops);
  GraphCost gc = cost_graph(g);
  // Encoding 1,024 + gt(X, 5) 1,024 + where 1,024 + R2's single write 1.
  EXPECT_DOUBLE_EQ(gc.total.int_ops, 3073.0);
  int in_region = 0;
  for (auto& oc : gc.ops) {
    if (oc.family == "encoding") ++in_region;
    if (oc.index == 5) {
      EXPECT_NE(oc.note.find("lookup encoding"), std::string::npos) << oc.note;
    }
    if (oc.index == 8 || oc.index == 11) {
      EXPECT_NE(oc.family, "encoding") << oc.op;
    }
  }
  EXPECT_EQ(in_region, 6);  // ge, le, and, the writes, gt(0.25), lt(0.75)
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
  // per SFU op: 2048) -> 0.00049 us; bytes 2*33,554,432 + 8192 = 67,117,056 B, of
  // which the 33,554,432 written fit in the L2: 33,562,624 B -> 10.0187 us: memory bound.
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
  EXPECT_NEAR(b.t_sol * 1e6, 10.0187, 1e-3);
  EXPECT_EQ(b.bottleneck, "dram");
}

TEST(CostModel, SoftmaxHasSfuTerm) {
  HardwareModel h = model("h100_sxm");
  // softmax(x[64,32768] fp32, dim=-1): 2,097,152 exps + 64 reciprocals =
  // 2,097,216 SFU ops / 4.18176e12 = 0.50152 us; 4 FLOP/element = 8,388,608
  // FP32 FLOP / 66.9e12 = 0.12539 us; bytes read 8,388,608 B (the output fits in the
  // L2) -> 2.5041 us.
  OpGraph g = graph({T(0, {64, 32768}, "float32")}, {T(1, {64, 32768}, "float32")},
                    {op("_softmax", {{"self", T(0, {64, 32768}, "float32")}, {"dim", -1}, {"half_to_float", false}},
                        {T(1, {64, 32768}, "float32")})});
  GraphCost gc = cost_graph(g);
  Bound b = bound(g, gc, h);
  EXPECT_DOUBLE_EQ(gc.total.sfu_ops, 2097216.0);
  EXPECT_NEAR(b.t_sfu * 1e6, 0.501518, 1e-5);
  EXPECT_NEAR(b.t_cuda * 1e6, 0.125391, 1e-5);
  EXPECT_NEAR(b.t_sol * 1e6, 2.50406, 1e-4);
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

TEST(CostModel, HandWrittenCausalAttentionBackwardSkipsMaskedBlocks) {
  // The forward of the test above, then its backward written out by hand (as
  // L2/037 does): dV = P^T dO, dP = dO V^T, dS = P * (dP - D), dQ = dS K,
  // dK = dS^T Q. P is zero in the masked blocks, so are dS and every product
  // with them; dP is only ever multiplied by P. Each of the 6 bmm [2,4,8]x
  // [2,8,4] (or [2,4,4]x[2,4,8]) is 256 MACs = 512 FLOP, kept 10/16:
  // 6 * 320 = 1,920 FLOP at the 16-bit rate. The row sums D = (dP * P).sum(-1)
  // are CUDA-core work and stay in full.
  const char* f = "float32";
  json q = T(0, {2, 4, 8}, f), kt = T(1, {2, 8, 4}, f), v = T(2, {2, 4, 8}, f), dO = T(3, {2, 4, 8}, f);
  json vt = T(4, {2, 8, 4}, f), k = T(5, {2, 4, 8}, f);
  json s44 = T(10, {2, 4, 4}, f), p = T(12, {2, 4, 4}, f);
  std::vector<json> ops = {
      op("arange", {{"end", 4}}, {T(20, {4}, "int64")}),
      op("unsqueeze", {{"self", T(20, {4}, "int64")}, {"dim", 0}}, {T(21, {1, 4}, "int64")}),
      op("unsqueeze", {{"self", T(20, {4}, "int64")}, {"dim", 1}}, {T(22, {4, 1}, "int64")}),
      op("le", {{"self", T(21, {1, 4}, "int64")}, {"other", T(22, {4, 1}, "int64")}}, {T(23, {4, 4}, "bool")}),
      op("bitwise_not", {{"self", T(23, {4, 4}, "bool")}}, {T(24, {4, 4}, "bool")}),
      op("bmm", {{"self", q}, {"mat2", kt}}, {s44}),                                                // 5: QK^T
      op("masked_fill", {{"self", s44}, {"mask", T(24, {4, 4}, "bool")}, {"value", "-inf"}},
         {T(11, {2, 4, 4}, f)}),
      op("_softmax", {{"self", T(11, {2, 4, 4}, f)}, {"dim", -1}, {"half_to_float", false}}, {p}),
      op("bmm", {{"self", p}, {"mat2", v}}, {T(13, {2, 4, 8}, f)}),                               // 8: PV
      op("transpose", {{"self", p}, {"dim0", 1}, {"dim1", 2}}, {T(14, {2, 4, 4}, f)}),
      op("bmm", {{"self", T(14, {2, 4, 4}, f)}, {"mat2", dO}}, {T(15, {2, 4, 8}, f)}),            // 10: dV
      op("bmm", {{"self", dO}, {"mat2", vt}}, {T(16, {2, 4, 4}, f)}),                             // 11: dP
      op("mul", {{"self", T(16, {2, 4, 4}, f)}, {"other", p}}, {T(17, {2, 4, 4}, f)}),
      op("sum", {{"self", T(17, {2, 4, 4}, f)}, {"dim", {-1}}, {"keepdim", true}}, {T(18, {2, 4, 1}, f)}),
      op("sub", {{"self", T(16, {2, 4, 4}, f)}, {"other", T(18, {2, 4, 1}, f)}}, {T(19, {2, 4, 4}, f)}),
      op("mul", {{"self", p}, {"other", T(19, {2, 4, 4}, f)}}, {T(25, {2, 4, 4}, f)}),            // dS
      op("bmm", {{"self", T(25, {2, 4, 4}, f)}, {"mat2", k}}, {T(26, {2, 4, 8}, f)}),             // 16: dQ
      op("transpose", {{"self", T(25, {2, 4, 4}, f)}, {"dim0", 1}, {"dim1", 2}}, {T(27, {2, 4, 4}, f)}),
      op("bmm", {{"self", T(27, {2, 4, 4}, f)}, {"mat2", q}}, {T(28, {2, 4, 8}, f)}),             // 18: dK
  };
  OpGraph g = graph({q, kt, v, dO, vt, k},
                    {T(13, {2, 4, 8}, f), T(15, {2, 4, 8}, f), T(26, {2, 4, 8}, f), T(28, {2, 4, 8}, f)}, ops);
  GraphCost gc = cost_graph(g);
  EXPECT_DOUBLE_EQ(cls(gc.total, MathClass::FP16), 1920.0);
  for (size_t i : {5, 8, 10, 11, 16, 18})
    EXPECT_NE(gc.ops[i].note.find("causal-masked"), std::string::npos) << i << ": " << gc.ops[i].note;
  // If dP is also returned (read unmasked), its matmul computes every block.
  OpGraph g2 = graph({q, kt, v, dO, vt, k},
                     {T(13, {2, 4, 8}, f), T(15, {2, 4, 8}, f), T(26, {2, 4, 8}, f), T(28, {2, 4, 8}, f)},
                     [&] {
                       auto o = ops;
                       o.push_back(op("clone", {{"self", T(16, {2, 4, 4}, f)}}, {T(29, {2, 4, 4}, f)}));
                       o.push_back(op("exp", {{"self", T(29, {2, 4, 4}, f)}}, {T(30, {2, 4, 4}, f)}));
                       return o;
                     }());
  EXPECT_DOUBLE_EQ(cls(cost_graph(g2).total, MathClass::FP16), 1920.0 - 320.0 + 512.0);
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
  // The 32 KiB written fit in the L2 (roofline.h): only the reads bound the time.
  EXPECT_NEAR(b.t_sol, 8192.0 / 8e12, 1e-18);
}

TEST(CostModel, WritesTheL2CanHoldAreNotChargedToDram) {
  // L1/066 (B=1, H=32, T=512, fp32) on the H100 model (3.35 TB/s, 50 MiB L2): reads
  // grad_output + p_attn (2 x 33,554,432 B) + mask (262,144 B) = 67,371,008 B, writes
  // 33,554,432 B. All the writes fit in 52,428,800 B of L2, so DRAM time =
  // 67,371,008 / 3.35e12 = 20.11 us (it was 30.13 us with the writes; the compiled
  // baseline measured 29.5 us).
  HardwareModel h = model("h100_sxm");
  Work w;
  Bound b = roofline(w, 75759616, 67371008, 33554432, h);
  EXPECT_DOUBLE_EQ(b.min_bytes, 67371008.0 + 33554432.0);
  EXPECT_DOUBLE_EQ(b.l2_deferred_bytes, 33554432.0);
  EXPECT_NEAR(b.t_dram, 67371008.0 / 3.35e12, 1e-15);
  // 80 MiB written: 50 MiB of it can wait in the L2, 30 MiB cannot.
  Bound big = roofline(w, 0, 0, 80.0 * 1048576, h);
  EXPECT_DOUBLE_EQ(big.dram_bytes, 30.0 * 1048576);
  EXPECT_NEAR(big.t_sol, 30.0 * 1048576 / 3.35e12, 1e-15);
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

// --- FFTs, pooling, resampling ---------------------------------------------------

TEST(CostModel, FftRealToComplexAndBack) {
  // rfft of x[8,1024] fp32 over dim 1: 8 transforms of N = 1024 with real input,
  // 2.5 * 1024 * log2(1024) = 25,600 FLOP each -> 204,800 FP32 FLOP.
  // Bytes: in 8*1024*4 = 32,768 + out complex64 [8,513] 8*513*8 = 32,832 = 65,600.
  json x = T(0, {8, 1024}, "float32"), X = T(1, {8, 513}, "complex64");
  OpGraph g = graph({x}, {X},
                    {op("_fft_r2c", {{"self", x}, {"dim", {1}}, {"normalization", 0}, {"onesided", true}}, {X})});
  GraphCost gc = cost_graph(g);
  ASSERT_TRUE(gc.uncosted.empty());
  EXPECT_EQ(gc.ops[0].family, "fft");
  EXPECT_DOUBLE_EQ(cuda(gc.total, MathClass::FP32), 204800.0);
  EXPECT_DOUBLE_EQ(gc.total.bytes, 65600.0);
  EXPECT_DOUBLE_EQ(gc.total.int_ops, 0.0);
  // irfft back to [8,1024] with normalization 2 (1/n): the same 204,800 FLOP
  // (the transform length is the real output's, last_dim_size 1024, not the
  // 513 one-sided input points) + one multiply per output value, 8,192 -> 212,992.
  json y = T(2, {8, 1024}, "float32");
  OpGraph g2 = graph({X}, {y},
                     {op("_fft_c2r", {{"self", X}, {"dim", {1}}, {"normalization", 2}, {"last_dim_size", 1024}}, {y})});
  GraphCost gc2 = cost_graph(g2);
  EXPECT_DOUBLE_EQ(cuda(gc2.total, MathClass::FP32), 212992.0);
  EXPECT_DOUBLE_EQ(gc2.total.bytes, 65600.0);
}

TEST(CostModel, FftComplexOverTwoDims) {
  HardwareModel h = model("h100_sxm");
  // fft2 of z[4,64,32] complex64 over dims (1,2): 4 transforms of N = 2048 points,
  // 5 * 2048 * log2(2048) = 5 * 2048 * 11 = 112,640 FLOP each -> 450,560 FP32 FLOP
  // (= per transform 32 length-64 FFTs, 32*5*64*6 = 61,440, plus 64 length-32
  // FFTs, 64*5*32*5 = 51,200). Bytes 2 * 4*2048*8 = 131,072.
  // Time: 450,560 / 66.9e12 = 6.7348 ns; DRAM 131,072 / 3.35e12 = 39.126 ns -> dram.
  json z = T(0, {4, 64, 32}, "complex64"), Z = T(1, {4, 64, 32}, "complex64");
  OpGraph g = graph({z}, {Z},
                    {op("_fft_c2c", {{"self", z}, {"dim", {1, -1}}, {"normalization", 0}, {"forward", true}}, {Z})});
  GraphCost gc = cost_graph(g);
  EXPECT_DOUBLE_EQ(cuda(gc.total, MathClass::FP32), 450560.0);
  EXPECT_DOUBLE_EQ(gc.total.bytes, 131072.0);
  Bound b = bound(g, gc, h);
  EXPECT_NEAR(b.t_cuda * 1e9, 6.7348, 1e-3);
  EXPECT_DOUBLE_EQ(b.min_bytes, 131072.0);
  EXPECT_EQ(b.bottleneck, "dram");
}

TEST(CostModel, ComplexElementwiseCountsRealFlops) {
  // X[8,513] complex64 * K[513] complex64: 4,104 complex products counted as two
  // real FLOPs each = 8,208 FP32 FLOP (a lower bound: a complex multiply is 6),
  // never as integer work. Bytes (4,104 + 513 + 4,104) * 8 = 69,768.
  json X = T(0, {8, 513}, "complex64"), K = T(1, {513}, "complex64"), o = T(2, {8, 513}, "complex64");
  OpGraph g = graph({X, K}, {o}, {op("mul", {{"self", X}, {"other", K}}, {o})});
  GraphCost gc = cost_graph(g);
  EXPECT_DOUBLE_EQ(cuda(gc.total, MathClass::FP32), 8208.0);
  EXPECT_DOUBLE_EQ(gc.total.int_ops, 0.0);
  EXPECT_DOUBLE_EQ(gc.total.bytes, 69768.0);
}

TEST(CostModel, MaxPoolWithIndices) {
  // max_pool2d(x[2,16,32,32] bf16, kernel 2x2, stride 2) -> out [2,16,16,16] =
  // 8,192 values (+ int64 indices): 4 compares per output = 32,768 BF16 FLOP.
  // Bytes: in 65,536 + out 16,384 + indices 65,536 = 147,456.
  json x = T(0, {2, 16, 32, 32}, "bfloat16"), o = T(1, {2, 16, 16, 16}, "bfloat16"),
       idx = T(2, {2, 16, 16, 16}, "int64");
  OpGraph g = graph({x}, {o},
                    {op("max_pool2d_with_indices",
                        {{"self", x}, {"kernel_size", {2, 2}}, {"stride", {2, 2}}, {"padding", {0, 0}},
                         {"dilation", {1, 1}}, {"ceil_mode", false}},
                        {o, idx})});
  GraphCost gc = cost_graph(g);
  ASSERT_TRUE(gc.uncosted.empty());
  EXPECT_EQ(gc.ops[0].family, "pooling");
  EXPECT_DOUBLE_EQ(cuda(gc.total, MathClass::BF16), 32768.0);
  EXPECT_DOUBLE_EQ(gc.total.bytes, 147456.0);
}

TEST(CostModel, AvgAndAdaptivePools) {
  // avg_pool1d(x[4,8,100] fp32, kernel 5, stride 1) -> [4,8,96] = 3,072 outputs
  // * 5 = 15,360 FLOP; bytes (3,200 + 3,072) * 4 = 25,088.
  json x = T(0, {4, 8, 100}, "float32"), o = T(1, {4, 8, 96}, "float32");
  OpGraph g = graph({x}, {o},
                    {op("avg_pool1d", {{"self", x}, {"kernel_size", {5}}, {"stride", {1}}, {"padding", {0}}}, {o})});
  GraphCost gc = cost_graph(g);
  EXPECT_DOUBLE_EQ(cuda(gc.total, MathClass::FP32), 15360.0);
  EXPECT_DOUBLE_EQ(gc.total.bytes, 25088.0);
  // avg_pool2d with a one-element kernel_size [3] means 3x3 = 9 per output:
  // y[1,1,10,10] -> [1,1,8,8] = 64 outputs * 9 = 576 FLOP.
  json y = T(0, {1, 1, 10, 10}, "float32"), yo = T(1, {1, 1, 8, 8}, "float32");
  OpGraph g2 = graph({y}, {yo},
                     {op("avg_pool2d", {{"self", y}, {"kernel_size", {3}}, {"stride", {1}}}, {yo})});
  EXPECT_DOUBLE_EQ(cuda(cost_graph(g2).total, MathClass::FP32), 576.0);
  // Adaptive average to 1x1: z[2,64,14,14] = 25,088 inputs, one add each.
  json z = T(0, {2, 64, 14, 14}, "float32"), zo = T(1, {2, 64, 1, 1}, "float32");
  OpGraph g3 = graph({z}, {zo}, {op("_adaptive_avg_pool2d", {{"self", z}, {"output_size", {1, 1}}}, {zo})});
  EXPECT_DOUBLE_EQ(cuda(cost_graph(g3).total, MathClass::FP32), 25088.0);
}

TEST(CostModel, Upsampling) {
  // upsample_bilinear2d(x[1,3,64,64] fp32 -> [1,3,128,128]): 49,152 outputs, one
  // final-pass lerp (3 FLOP) each = 147,456 FLOP, one address op each = 49,152;
  // bytes (12,288 + 49,152) * 4 = 245,760.
  json x = T(0, {1, 3, 64, 64}, "float32"), o = T(1, {1, 3, 128, 128}, "float32");
  OpGraph g = graph({x}, {o},
                    {op("upsample_bilinear2d", {{"input", x}, {"output_size", {128, 128}},
                                                {"align_corners", false}, {"scale_factors", nullptr}},
                        {o})});
  GraphCost gc = cost_graph(g);
  ASSERT_TRUE(gc.uncosted.empty());
  EXPECT_EQ(gc.ops[0].family, "resample");
  EXPECT_DOUBLE_EQ(cuda(gc.total, MathClass::FP32), 147456.0);
  EXPECT_DOUBLE_EQ(gc.total.int_ops, 49152.0);
  EXPECT_DOUBLE_EQ(gc.total.bytes, 245760.0);
  // upsample_linear1d(y[2,4,100] -> [2,4,50]) downsamples: 400 outputs * 3 = 1,200.
  json y = T(0, {2, 4, 100}, "float32"), yo = T(1, {2, 4, 50}, "float32");
  OpGraph g2 = graph({y}, {yo},
                     {op("upsample_linear1d", {{"self", y}, {"output_size", {50}}, {"align_corners", true}}, {yo})});
  EXPECT_DOUBLE_EQ(cuda(cost_graph(g2).total, MathClass::FP32), 1200.0);
  // bicubic [1,1,8,8] -> [1,1,16,16]: 256 outputs * 7 = 1,792; nearest: 0 FLOP,
  // 256 address ops, bytes (64 + 256) * 4 = 1,280.
  json c = T(0, {1, 1, 8, 8}, "float32"), co = T(1, {1, 1, 16, 16}, "float32");
  OpGraph g3 = graph({c}, {co},
                     {op("upsample_bicubic2d", {{"self", c}, {"output_size", {16, 16}}, {"align_corners", false}}, {co})});
  EXPECT_DOUBLE_EQ(cuda(cost_graph(g3).total, MathClass::FP32), 1792.0);
  OpGraph g4 = graph({c}, {co}, {op("upsample_nearest2d", {{"self", c}, {"output_size", {16, 16}}}, {co})});
  GraphCost gc4 = cost_graph(g4);
  EXPECT_DOUBLE_EQ(gc4.total.cuda_total(), 0.0);
  EXPECT_DOUBLE_EQ(gc4.total.int_ops, 256.0);
  EXPECT_DOUBLE_EQ(gc4.total.bytes, 1280.0);
}

// --- lower-bound fixes: in-place cache updates, slices, broadcast outputs ------

TEST(CostModel, CacheUpdatedInPlaceCountsOnlyTheWrittenSlot) {
  HardwareModel h = model("b200");
  // cache[1,8,4096,128] bf16 (8,388,608 B) gets one new position: slice(dim 2,
  // 100:101) -> copy_(k[1,8,1,128], 2,048 B), and the cache is returned. A kernel
  // reads k and writes the slot: 2,048 + 2,048 = 4,096 B -> 0.512 ns at 8 TB/s.
  // Counting the cache read and written in full gave 8,388,608 * 2 + 2,048 =
  // 16,779,264 B (2.097 us), above what an in-place kernel needs.
  json cache = T(0, {1, 8, 4096, 128}, "bfloat16"), k = T(1, {1, 8, 1, 128}, "bfloat16");
  json slot = T(2, {1, 8, 1, 128}, "bfloat16");
  slot["base"] = 0;
  OpGraph g = graph({cache, k}, {cache},
                    {op("slice", {{"self", cache}, {"dim", 2}, {"start", 100}, {"end", 101}}, {slot}),
                     op("copy_", {{"self", slot}, {"src", k}}, {slot})});
  GraphCost gc = cost_graph(g);
  EXPECT_DOUBLE_EQ(gc.input_touched_bytes.at("in0"), 0.0);
  EXPECT_DOUBLE_EQ(gc.input_touched_bytes.at("in1"), 2048.0);
  EXPECT_DOUBLE_EQ(gc.output_written_bytes.at("out0"), 2048.0);
  Bound b = bound(g, gc, h);
  EXPECT_DOUBLE_EQ(b.boundary_bytes, 16779264.0);
  EXPECT_DOUBLE_EQ(b.min_bytes, 4096.0);
  // 2,048 B read (k); the 2,048 B written can stay in the L2: 0.256 ns at 8 TB/s.
  EXPECT_NEAR(b.t_sol * 1e9, 0.256, 1e-9);
  // index_put_ form: cache.index_put_([pos], v) with v[16,128] fp32 into a
  // cache[4096,128] fp32 writes 16 rows = 8,192 B; an accumulating index_put_
  // reads them too (8,192 read + 8,192 written).
  json c2 = T(0, {4096, 128}, "float32"), pos = T(1, {16}, "int64"), v = T(2, {16, 128}, "float32");
  json args = {{"self", c2}, {"indices", {pos}}, {"values", v}, {"accumulate", false}};
  OpGraph g2 = graph({c2, pos, v}, {c2}, {op("index_put_", args, {c2})});
  GraphCost gc2 = cost_graph(g2);
  EXPECT_DOUBLE_EQ(gc2.input_touched_bytes.at("in0"), 0.0);
  EXPECT_DOUBLE_EQ(gc2.output_written_bytes.at("out0"), 8192.0);
  args["accumulate"] = true;
  OpGraph g3 = graph({c2, pos, v}, {c2}, {op("index_put_", args, {c2})});
  GraphCost gc3 = cost_graph(g3);
  EXPECT_DOUBLE_EQ(gc3.input_touched_bytes.at("in0"), 8192.0);
  EXPECT_DOUBLE_EQ(gc3.output_written_bytes.at("out0"), 8192.0);
}

TEST(CostModel, InputReadThroughASliceCountsTheSlice) {
  // sum(x[0:16]) over x[1024,1024] fp32: the slice holds 16 * 1024 * 4 = 65,536 B
  // of the input's 4,194,304; the full input is counted once something reads all
  // of it (here a second op on x itself).
  json x = T(0, {1024, 1024}, "float32"), rows = T(1, {16, 1024}, "float32"), o = T(2, {1024}, "float32");
  rows["base"] = 0;
  std::vector<json> ops = {op("slice", {{"self", x}, {"dim", 0}, {"start", 0}, {"end", 16}}, {rows}),
                           op("sum", {{"self", rows}, {"dim", {0}}}, {o})};
  GraphCost gc = cost_graph(graph({x}, {o}, ops));
  EXPECT_DOUBLE_EQ(gc.input_touched_bytes.at("in0"), 65536.0);
  ops.push_back(op("neg", {{"self", x}}, {T(3, {1024, 1024}, "float32")}));
  GraphCost full = cost_graph(graph({x}, {o}, ops));
  EXPECT_DOUBLE_EQ(full.input_touched_bytes.at("in0"), 4194304.0);
}

TEST(CostModel, BroadcastViewOutputCountsDistinctElements) {
  HardwareModel h = model("b200");
  // out[1024,4096] fp32 = (b[4096] * 2).expand(1024, -1): stride 0 along dim 0,
  // 4,096 distinct values = 16,384 B written, not 16,777,216. Minimum bytes
  // 16,384 (b) + 16,384 = 32,768 -> 4.096 ns at 8 TB/s (was 16,793,600 B, 2.099 us).
  json b = T(0, {4096}, "float32"), b2 = T(1, {4096}, "float32"), out = T(2, {1024, 4096}, "float32");
  out["base"] = 1;
  out["distinct_numel"] = 4096;
  OpGraph g = graph({b}, {out},
                    {op("mul", {{"self", b}, {"other", 2}}, {b2}),
                     op("expand", {{"self", b2}, {"size", {1024, -1}}}, {out})});
  EXPECT_DOUBLE_EQ(g.outputs[0].distinct_numel, 4096.0);
  GraphCost gc = cost_graph(g);
  EXPECT_DOUBLE_EQ(gc.output_written_bytes.at("out0"), 16384.0);
  Bound bd = bound(g, gc, h);
  EXPECT_DOUBLE_EQ(bd.boundary_bytes, 16793600.0);
  EXPECT_DOUBLE_EQ(bd.min_bytes, 32768.0);
  // DRAM: the 16,384 B read (the output's 16,384 fit in the L2) -> 2.048 ns.
  EXPECT_NEAR(bd.t_sol * 1e9, 2.048, 1e-9);
  // The field survives the JSON round trip (graph cache).
  EXPECT_DOUBLE_EQ(parse_op_graph(to_json(g), "round trip").outputs[0].distinct_numel, 4096.0);
}

TEST(CostModel, ScatterOfAScalarValue) {
  // one_hot on the CPU: zeros(out[4096,8] int64) then scatter_(1, idx[4096,1], value 1):
  // 4,096 elements written, one address op each; bytes: the index 4,096 * 8 =
  // 32,768 + the written elements 4,096 * 8 = 32,768 -> 65,536.
  json out = T(0, {4096, 8}, "int64"), idx = T(1, {4096, 1}, "int64");
  OpGraph g = graph({idx}, {out},
                    {op("scatter_", {{"self", out}, {"dim", 1}, {"index", idx}, {"value", 1}}, {out})});
  GraphCost gc = cost_graph(g);
  ASSERT_TRUE(gc.uncosted.empty()) << gc.ops[0].note;
  EXPECT_DOUBLE_EQ(gc.total.int_ops, 4096.0);
  EXPECT_DOUBLE_EQ(gc.total.bytes, 65536.0);
}

TEST(CostModel, BroadcastProductThenSumIsAContraction) {
  HardwareModel h = model("b200");
  // G = (C[2,64,1,16] * B[2,1,32,16]).sum(-1): the product P[2,64,32,16] has
  // 65,536 elements, each one multiply-accumulate of a batched C @ B^T
  // (M 64, N 32, K 16, batch 2). Tensor cores: 2 * 65,536 = 131,072 FLOP at the
  // 16-bit rate (fp32 operands), no CUDA-core FLOPs. Op by op it was 65,536
  // multiplies + 65,536 adds + 4,096 per-output FLOPs on the CUDA cores.
  // B200: 131,072 / 2.25e15 = 0.0583 ns.
  json c = T(0, {2, 64, 1, 16}, "float32"), b = T(1, {2, 1, 32, 16}, "float32");
  json prod = T(2, {2, 64, 32, 16}, "float32"), gmat = T(3, {2, 64, 32}, "float32");
  std::vector<json> ops = {op("mul", {{"self", c}, {"other", b}}, {prod}),
                           op("sum", {{"self", prod}, {"dim", {-1}}, {"keepdim", false}}, {gmat})};
  OpGraph g = graph({c, b}, {gmat}, ops);
  GraphCost gc = cost_graph(g);
  EXPECT_DOUBLE_EQ(cls(gc.total, MathClass::FP16), 131072.0);
  EXPECT_DOUBLE_EQ(gc.total.cuda_total(), 0.0);
  EXPECT_EQ(gc.ops[0].family, "contraction");
  EXPECT_NEAR(bound(g, gc, h).t_tensor * 1e9, 0.058254, 1e-5);
  // Summing over a dim where C is broadcast (dim 2) is no contraction: it stays
  // 65,536 multiplies + 65,536 adds + 1 per output (2,048) on the CUDA cores.
  json gcol = T(3, {2, 64, 16}, "float32");
  OpGraph g2 = graph({c, b}, {gcol},
                     {ops[0], op("sum", {{"self", prod}, {"dim", {2}}, {"keepdim", false}}, {gcol})});
  GraphCost gc2 = cost_graph(g2);
  EXPECT_DOUBLE_EQ(gc2.total.tensor_total(), 0.0);
  EXPECT_DOUBLE_EQ(cuda(gc2.total, MathClass::FP32), 65536.0 + 65536.0 + 2048.0);
  // A product that is also used elsewhere stays elementwise too.
  ops.push_back(op("neg", {{"self", prod}}, {T(4, {2, 64, 32, 16}, "float32")}));
  EXPECT_DOUBLE_EQ(cost_graph(graph({c, b}, {gmat}, ops)).total.tensor_total(), 0.0);
}

TEST(CostModel, GathersWithRealIndicesReadTheSelectedRows) {
  // A pool p[10, 16] bf16 (320 B, 32 B a row) cast whole to fp32, then
  // gathered twice with real indices whose union the tracer recorded as rows
  // [2, 4) and [7, 8) of the cast (3 of 10 rows): p counts 3 x 32 = 96 B, the
  // index i[4] int64 32 B, and the cast 3/10 of its 160 conversions (48).
  // When the cast is also summed (a use other than a selection), p is read in
  // full: 320 B and 160 conversions, and so it is without the tracer's
  // selection (indices not real: a meta trace).
  auto build = [](bool summed, bool selected) {
    json p = T(0, {10, 16}, "bfloat16"), i = T(1, {4}, "int64"), c = T(2, {10, 16}, "float32");
    json g1 = T(3, {4, 16}, "float32"), g2 = T(4, {4, 16}, "float32"), o = T(5, {4, 16}, "float32");
    json s = T(6, {16}, "float32"), o2 = T(7, {4, 16}, "float32");
    json gather1 = op("index", {{"self", c}, {"indices", {i}}}, {g1});
    json gather2 = op("index", {{"self", c}, {"indices", {i}}}, {g2});
    if (selected) gather1["selects"] = gather2["selects"] = {{"dim", 0}, {"ndims", 1}};
    std::vector<json> ops = {op("_to_copy", {{"self", p}, {"dtype", "float32"}}, {c}), gather1, gather2,
                             op("add", {{"self", g1}, {"other", g2}}, {o})};
    if (summed) {
      ops.push_back(op("sum", {{"self", c}, {"dim", {0}}}, {s}));
      ops.push_back(op("add", {{"self", o}, {"other", s}}, {o2}));
    }
    json j = {{"status", "ok"}, {"mode", "hybrid"}, {"inputs", {p, i}}, {"outputs", {summed ? o2 : o}},
              {"ops", ops}};
    j["inputs"][0]["name"] = "in0";
    j["inputs"][1]["name"] = "in1";
    j["outputs"][0]["name"] = "out0";
    if (selected)
      j["selections"] = {{{"id", 2}, {"shape", {10, 16}}, {"dim", 0}, {"ndims", 1}, {"selected", 3},
                          {"ranges", {{2, 4}, {7, 8}}}}};
    OpGraph g = parse_op_graph(j, "test graph");
    EXPECT_EQ(parse_op_graph(to_json(g), "round trip").selections.size(), selected ? 1u : 0u);
    return g;
  };
  GraphCost sel = cost_graph(build(false, true));
  EXPECT_DOUBLE_EQ(sel.input_touched_bytes.at("in0"), 96.0);
  EXPECT_DOUBLE_EQ(sel.input_touched_bytes.at("in1"), 32.0);
  EXPECT_DOUBLE_EQ(sel.ops[0].work.int_ops + sel.ops[0].work.cuda_total(), 48.0);
  GraphCost full = cost_graph(build(true, true));
  EXPECT_DOUBLE_EQ(full.input_touched_bytes.at("in0"), 320.0);
  EXPECT_DOUBLE_EQ(full.ops[0].work.int_ops + full.ops[0].work.cuda_total(), 160.0);
  EXPECT_DOUBLE_EQ(cost_graph(build(false, false)).input_touched_bytes.at("in0"), 320.0);
}

TEST(CostModel, APartialTraceCountsWhatItsPrefixDemandedOfAConvertedPool) {
  // A pool p[10, 16] bf16 (320 B) cast whole to fp32 (160 conversions), then, in a
  // trace stopped by its time budget, either nothing yet or one gather whose real
  // indices selected rows [2, 4) (2 x 32 = 64 B, 2/10 of the conversions: 32). A
  // complete trace whose cast nobody uses counts the pool read in full (320 B, 160):
  // a partial one may have stopped before the users ran, so it counts what its
  // prefix demanded. No outputs: the partial trace had not returned.
  auto build = [](bool partial, bool gathered) {
    json p = T(0, {10, 16}, "bfloat16"), i = T(1, {4}, "int64"), c = T(2, {10, 16}, "float32");
    json g1 = T(3, {4, 16}, "float32");
    std::vector<json> ops = {op("_to_copy", {{"self", p}, {"dtype", "float32"}}, {c})};
    json j = {{"status", "ok"}, {"mode", "hybrid"}, {"inputs", {p, i}}, {"outputs", json::array()}};
    if (gathered) {
      json gather = op("index", {{"self", c}, {"indices", {i}}}, {g1});
      gather["selects"] = {{"dim", 0}, {"ndims", 1}};
      ops.push_back(gather);
      j["selections"] = {{{"id", 2}, {"shape", {10, 16}}, {"dim", 0}, {"ndims", 1}, {"selected", 2},
                          {"ranges", {{2, 4}}}}};
    }
    j["ops"] = ops;
    j["inputs"][0]["name"] = "in0";
    j["inputs"][1]["name"] = "in1";
    if (partial) j["partial"] = {{"budget_s", 1.0}, {"ops", 2}};
    return parse_op_graph(j, "test graph");
  };
  auto conversions = [](const GraphCost& gc) { return gc.ops[0].work.int_ops + gc.ops[0].work.cuda_total(); };
  GraphCost whole = cost_graph(build(false, false));
  EXPECT_DOUBLE_EQ(whole.input_touched_bytes.at("in0"), 320.0);
  EXPECT_DOUBLE_EQ(conversions(whole), 160.0);
  GraphCost none = cost_graph(build(true, false));
  EXPECT_DOUBLE_EQ(none.input_touched_bytes.at("in0"), 0.0);
  EXPECT_DOUBLE_EQ(conversions(none), 0.0);
  GraphCost some = cost_graph(build(true, true));
  EXPECT_DOUBLE_EQ(some.input_touched_bytes.at("in0"), 64.0);
  EXPECT_DOUBLE_EQ(conversions(some), 32.0);
}

TEST(CostModel, ShapeOnlyOperatorsDoNotReadTheirInput) {
  // zeros_like(x) and empty_like(x) with x[1024,1024] fp32 (4,194,304 B) use x's
  // shape only: x is not read (0 B). Before, zeros_like counted x as read and
  // empty_like (a view) aliased x, so the add reading its result read x too.
  // y[1024,1024] fp32, read by the add, counts 4,194,304 B; ones_like(y) does
  // not change that. Unfused bytes of zeros_like: its output only, 4,194,304 B.
  json x = T(0, {1024, 1024}, "float32"), y = T(1, {1024, 1024}, "float32");
  json z = T(2, {1024, 1024}, "float32"), e = T(3, {1024, 1024}, "float32");
  json s = T(4, {1024, 1024}, "float32"), o = T(5, {1024, 1024}, "float32"), one = T(6, {1024, 1024}, "float32");
  OpGraph g = graph({x, y}, {o},
                    {op("zeros_like", {{"self", x}}, {z}), op("empty_like", {{"self", x}}, {e}),
                     op("ones_like", {{"self", y}}, {one}), op("add", {{"self", z}, {"other", e}}, {s}),
                     op("add", {{"self", s}, {"other", y}}, {o})});
  GraphCost gc = cost_graph(g);
  EXPECT_DOUBLE_EQ(gc.input_touched_bytes.at("in0"), 0.0);
  EXPECT_DOUBLE_EQ(gc.input_touched_bytes.at("in1"), 4194304.0);
  EXPECT_DOUBLE_EQ(gc.ops[0].work.bytes, 4194304.0);
}

TEST(CostModel, MatmulOnACatOfATensorWithItselfFoldsTheWeight) {
  // L1/081's form: cat([x, x], -1) with x[1,128,256] fp32 -> [1,128,512], viewed
  // [128,512], times W^T (W [512,512]: t -> [512,512]). [x, x] W^T = x (W1 + W2)^T:
  // M 128, N 512, K 256 after the fold: 16,777,216 MACs = 33,554,432 FLOP at the
  // 16-bit rate (fp32 operands), half the 67,108,864 written. The fold's 256 * 512
  // adds are not counted (a kernel that does not fold needs none). With y (another
  // tensor) in place of the second x: 67,108,864. With x produced by a node
  // aggregating 2 calls (its id may stand for two tensors): 67,108,864.
  auto build = [](bool same, int64_t producer_count) {
    json in = T(0, {1, 128, 256}, "float32"), y = T(1, {1, 128, 256}, "float32"), w = T(2, {512, 512}, "float32");
    json x = T(3, {1, 128, 256}, "float32"), c = T(4, {1, 128, 512}, "float32"), wt = T(5, {512, 512}, "float32");
    json cv = T(6, {128, 512}, "float32"), o = T(7, {128, 512}, "float32");
    wt["base"] = 2;
    cv["base"] = 4;
    return graph({in, y, w}, {o},
                 {op("neg", {{"self", in}}, {x}, producer_count),
                  op("cat", {{"tensors", {x, same ? x : y}}, {"dim", -1}}, {c}), op("t", {{"self", w}}, {wt}),
                  op("view", {{"self", c}, {"size", {128, 512}}}, {cv}),
                  op("mm", {{"self", cv}, {"mat2", wt}}, {o})});
  };
  EXPECT_DOUBLE_EQ(cls(cost_graph(build(true, 1)).total, MathClass::FP16), 33554432.0);
  EXPECT_DOUBLE_EQ(cls(cost_graph(build(false, 1)).total, MathClass::FP16), 67108864.0);
  EXPECT_DOUBLE_EQ(cls(cost_graph(build(true, 2)).total, MathClass::FP16), 67108864.0);
  // linear(input, weight [N, K]) with the weight's K replicated (repeat(1, 2) of
  // v[512,256] bf16 -> [512,512]) folds the input: a[64,512] bf16, 64 * 512 * 256 =
  // 8,388,608 MACs = 16,777,216 BF16 FLOP.
  json a = T(0, {64, 512}, "bfloat16"), v = T(1, {512, 256}, "bfloat16"), wr = T(2, {512, 512}, "bfloat16");
  json lo = T(3, {64, 512}, "bfloat16");
  GraphCost lin = cost_graph(graph({a, v}, {lo},
                                   {op("repeat", {{"self", v}, {"repeats", {1, 2}}}, {wr}),
                                    op("linear", {{"input", a}, {"weight", wr}}, {lo})}));
  EXPECT_DOUBLE_EQ(cls(lin.total, MathClass::BF16), 16777216.0);
}

TEST(CostModel, ElementwiseWorkOnReplicatedValuesCountsDistinctValues) {
  // Quant/014's form: e = cat([f, f], -1) with f[1024,32] fp32 -> [1024,64]
  // (65,536 values, 32,768 distinct); cos(e) * 1.0 cast to bf16. A kernel takes
  // the cosine of the 32,768 distinct values and writes each twice: 32,768 SFU
  // results (was 65,536), 32,768 fp32 FLOPs for the cos and 32,768 for the mul
  // (1 each per value), 32,768 bf16 conversions.
  json f = T(0, {1024, 32}, "float32"), e = T(1, {1024, 64}, "float32"), c = T(2, {1024, 64}, "float32");
  json m = T(3, {1024, 64}, "float32"), out = T(4, {1024, 64}, "bfloat16");
  std::vector<json> ops = {op("cat", {{"tensors", {f, f}}, {"dim", -1}}, {e}), op("cos", {{"self", e}}, {c}),
                           op("mul", {{"self", c}, {"other", 1.0}}, {m}),
                           op("_to_copy", {{"self", m}, {"dtype", "bfloat16"}}, {out})};
  GraphCost gc = cost_graph(graph({f}, {out}, ops));
  EXPECT_DOUBLE_EQ(gc.total.sfu_ops, 32768.0);
  EXPECT_DOUBLE_EQ(cuda(gc.total, MathClass::FP32), 65536.0);
  EXPECT_DOUBLE_EQ(cuda(gc.total, MathClass::BF16), 32768.0);
  // cat((w[:, :32], w[:, :32]), -1) with w[1024,128] fp32, the two slices one
  // aggregated view node (count 2, one id): the same values, so the same 32,768.
  json w = T(5, {1024, 128}, "float32"), ws = T(6, {1024, 32}, "float32");
  ws["base"] = 5;
  json ec = T(7, {1024, 64}, "float32"), cc = T(8, {1024, 64}, "float32");
  GraphCost gs = cost_graph(graph({w}, {cc},
                                  {op("slice", {{"self", w}, {"dim", 1}, {"start", 0}, {"end", 32}}, {ws}, 2),
                                   op("cat", {{"tensors", {ws, ws}}, {"dim", -1}}, {ec}), op("cos", {{"self", ec}}, {cc})}));
  EXPECT_DOUBLE_EQ(gs.total.sfu_ops, 32768.0);
  // The boundary output is written in full: 65,536 * 2 = 131,072 B.
  EXPECT_EQ(gc.output_written_bytes.count("out0"), 0u);
  // Other ways values repeat, each exp'd (1 SFU + 1 FLOP per distinct value):
  // - f.repeat(1, 2) [1024,64]: 32,768;
  // - g[1024,1].expand(1024, 64): 1,024;
  // - e viewed [1024,2,32] (the 2 halves along a dim of their own): 32,768;
  // - e[:, 16:48] (a run of 32 of a dim with period 32; every value distinct): 32,768;
  // - e + h, h[1024,64] not replicated: 65,536 (an add, then exp);
  // - sum(e, -1): 1 FLOP per input + 1 per output, 65,536 + 1,024 = 66,560, of
  //   which a kernel needs half (a sum of two copies is twice one): 33,280 FLOPs.
  auto sfu_of = [&](std::vector<json> more, std::vector<json> ins) {
    std::vector<json> all = ops;
    all.insert(all.end(), more.begin(), more.end());
    ins.insert(ins.begin(), f);
    GraphCost g2 = cost_graph(graph(ins, {out}, all));
    return g2.total.sfu_ops - 32768.0;
  };
  json r = T(10, {1024, 64}, "float32"), g = T(11, {1024, 1}, "float32"), x = T(12, {1024, 64}, "float32");
  json v = T(13, {1024, 2, 32}, "float32"), sl = T(14, {1024, 32}, "float32"), h = T(15, {1024, 64}, "float32");
  json y = T(16, {1024, 64}, "float32"), ex = T(17, {1024, 64}, "float32");
  v["base"] = 1;
  sl["base"] = 1;
  x["base"] = 11;
  EXPECT_DOUBLE_EQ(sfu_of({op("repeat", {{"self", f}, {"repeats", {1, 2}}}, {r}), op("exp", {{"self", r}}, {ex})}, {}),
                   32768.0);
  EXPECT_DOUBLE_EQ(sfu_of({op("expand", {{"self", g}, {"size", {1024, 64}}}, {x}), op("exp", {{"self", x}}, {ex})}, {g}),
                   1024.0);
  json vex = T(17, {1024, 2, 32}, "float32");
  EXPECT_DOUBLE_EQ(sfu_of({op("view", {{"self", e}, {"size", {1024, 2, 32}}}, {v}), op("exp", {{"self", v}}, {vex})}, {}),
                   32768.0);
  json slex = T(17, {1024, 32}, "float32");
  EXPECT_DOUBLE_EQ(sfu_of({op("slice", {{"self", e}, {"dim", 1}, {"start", 16}, {"end", 48}}, {sl}),
                           op("exp", {{"self", sl}}, {slex})}, {}),
                   32768.0);
  EXPECT_DOUBLE_EQ(sfu_of({op("add", {{"self", e}, {"other", h}}, {y}), op("exp", {{"self", y}}, {ex})}, {h}), 65536.0);
  json rowsum = T(18, {1024}, "float32");
  std::vector<json> summed = ops;
  summed.push_back(op("sum", {{"self", e}, {"dim", {-1}}}, {rowsum}));
  EXPECT_DOUBLE_EQ(cuda(cost_graph(graph({f}, {out}, summed)).total, MathClass::FP32), 65536.0 + 33280.0);
  // An in-place write into the replicated tensor ends its replication: e.add_(h)
  // then exp(e): 65,536; e.mul_(2) keeps it (32,768 multiplies, then 32,768 exp).
  json ea = T(1, {1024, 64}, "float32");
  EXPECT_DOUBLE_EQ(sfu_of({op("add_", {{"self", ea}, {"other", h}}, {ea}), op("exp", {{"self", ea}}, {ex})}, {h}),
                   65536.0);
  EXPECT_DOUBLE_EQ(sfu_of({op("mul_", {{"self", ea}, {"other", 2.0}}, {ea}), op("exp", {{"self", ea}}, {ex})}, {}),
                   32768.0);
}

}  // namespace
}  // namespace solbench::sol
