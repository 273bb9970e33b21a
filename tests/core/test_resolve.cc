#include "core/resolve.h"

#include <gtest/gtest.h>

#include <string>

#include "core/definition.h"
#include "core/workload.h"
#include "core_test_util.h"

namespace solbench {
namespace {

Definition def_of(const std::string& text) {
  Diagnostics diags;
  Definition d = parse_definition(json::parse(text), "definition.json", diags);
  EXPECT_TRUE(diags.empty()) << diags.str();
  return d;
}

Workload workload_of(const std::string& text, int line = 5) {
  Diagnostics diags;
  Workload w = parse_workload(json::parse(text), "workload.jsonl", line, diags);
  EXPECT_TRUE(diags.empty()) << diags.str();
  return w;
}

// Expression axes listed before the axes they use, a "1" literal, FP4 and a scalar.
const char* kDef = R"({
  "name": "nvfp4_gemm",
  "axes": {
    "k_packed": {"type": "expr", "expression": "k // 2"},
    "k_scales": {"type": "expr", "expression": "k_packed * 2 // block"},
    "m": {"type": "var"},
    "n": {"type": "const", "value": 256},
    "k": {"type": "var"},
    "block": {"type": "const", "value": 16}
  },
  "inputs": {
    "a": {"shape": ["m", "k_packed"], "dtype": "float4_e2m1fn_x2"},
    "a_scale": {"shape": ["m", "k_scales"], "dtype": "float8_e4m3fn"},
    "b": {"shape": ["n", "1", "k"], "dtype": "float4_e2m1"},
    "alpha": {"shape": null, "dtype": "float32"},
    "step": {"shape": [], "dtype": "int64"}
  },
  "outputs": {"c": {"shape": ["m", "n"], "dtype": "bfloat16"}},
  "reference": "def run(a, a_scale, b, alpha, step):\n    pass\n",
  "constraints": ["k % block == 0", "m >= 1 and m <= 65536"]
})";

std::optional<ResolvedWorkload> resolve(const std::string& def, const std::string& w,
                                        Diagnostics& diags) {
  return resolve_workload(def_of(def), workload_of(w), "workload.jsonl", diags);
}

TEST(Resolve, AxesShapesAndBytes) {
  Diagnostics diags;
  auto r = resolve(kDef, R"({"uuid":"u","axes":{"m":3,"k":64},"inputs":{}})", diags);
  ASSERT_TRUE(r) << diags.str();
  EXPECT_TRUE(diags.empty());
  // Every axis, in definition order.
  ASSERT_EQ(r->axes.size(), 6u);
  EXPECT_EQ(r->axes[0], (std::pair<std::string, int64_t>{"k_packed", 32}));
  EXPECT_EQ(r->axis("k_scales"), 4);
  EXPECT_EQ(r->axis("n"), 256);
  EXPECT_EQ(r->axis("m"), 3);
  EXPECT_FALSE(r->axis("zz"));

  ASSERT_EQ(r->inputs.size(), 5u);
  const ResolvedTensor& a = r->inputs[0];
  EXPECT_EQ(a.name, "a");
  EXPECT_EQ(a.shape, (std::vector<int64_t>{3, 32}));
  EXPECT_EQ(a.elements, 96u);
  EXPECT_EQ(a.bytes, 96u);  // FP4x2: the shape counts bytes
  const ResolvedTensor& scale = r->inputs[1];
  EXPECT_EQ(scale.bytes, 12u);
  const ResolvedTensor& b = r->inputs[2];
  EXPECT_EQ(b.shape, (std::vector<int64_t>{256, 1, 64}));  // literal "1"
  EXPECT_EQ(b.elements, 256u * 64u);
  EXPECT_EQ(b.bytes, 256u * 64u / 2);  // one FP4 value: half a byte
  const ResolvedTensor& alpha = r->inputs[3];
  EXPECT_TRUE(alpha.scalar);
  EXPECT_TRUE(alpha.shape.empty());
  EXPECT_EQ(alpha.elements, 0u);
  EXPECT_EQ(alpha.bytes, 0u);
  const ResolvedTensor& step = r->inputs[4];
  EXPECT_FALSE(step.scalar);
  EXPECT_TRUE(step.shape.empty());
  EXPECT_EQ(step.elements, 1u);  // 0-d tensor
  EXPECT_EQ(step.bytes, 8u);
  EXPECT_EQ(r->input_bytes, 96u + 12u + 8192u + 0u + 8u);
  ASSERT_EQ(r->outputs.size(), 1u);
  EXPECT_EQ(r->outputs[0].bytes, 3u * 256u * 2u);
  EXPECT_EQ(r->output_bytes, 1536u);

  auto args = r->dps_arguments();
  ASSERT_EQ(args.size(), 6u);
  EXPECT_EQ(args[0]->name, "a");
  EXPECT_EQ(args[5]->name, "c");
}

TEST(Resolve, OddFp4ElementCountRoundsUp) {
  Diagnostics diags;
  auto r = resolve(R"({"name":"f","axes":{"n":{"type":"var"}},"inputs":{},
                      "outputs":{"o":{"shape":["n"],"dtype":"float4_e2m1"}},
                      "reference":"def run():\n  pass"})",
                   R"({"uuid":"u","axes":{"n":7},"inputs":{}})", diags);
  ASSERT_TRUE(r) << diags.str();
  EXPECT_EQ(r->outputs[0].bytes, 4u);
}

TEST(Resolve, ZeroSizedAxesAreAllowed) {
  Diagnostics diags;
  auto r = resolve(kDef, R"({"uuid":"u","axes":{"m":1,"k":0},"inputs":{}})", diags);
  ASSERT_TRUE(r) << diags.str();
  EXPECT_EQ(r->inputs[0].bytes, 0u);
}

TEST(Resolve, ReportsConstraintsThatFail) {
  Diagnostics diags;
  auto r = resolve(kDef, R"({"uuid":"u","axes":{"m":0,"k":72},"inputs":{}})", diags);
  EXPECT_FALSE(r);
  ASSERT_EQ(diags.size(), 2u) << diags.str();
  EXPECT_EQ(diags.items()[0].str(),
            "workload.jsonl:5: constraints[0]: constraint \"k % block == 0\" does not hold (with "
            "k=72, block=16)");
  EXPECT_HAS(diags.items()[1].str(), "constraints[1]: constraint \"m >= 1 and m <= 65536\" does not hold (with m=0)");
}

TEST(Resolve, ReportsMissingAndUnknownAxes) {
  Diagnostics diags;
  auto r = resolve(kDef, R"({"uuid":"u","axes":{"mm":3,"k":64},"inputs":{}})", diags);
  EXPECT_FALSE(r);
  EXPECT_HAS(diags.str(), "workload.jsonl:5: axes.mm: unknown axis \"mm\"");
  EXPECT_HAS(diags.str(), "workload.jsonl:5: axes.m: missing value for var axis \"m\"");
  // Tensors and constraints using m are not reported again.
  EXPECT_EQ(diags.size(), 2u) << diags.str();
}

TEST(Resolve, ReportsNegativeExpressionAxes) {
  const char* def = R"({"name":"d","axes":{"a":{"type":"var"},"b":{"type":"var"},
    "d":{"type":"expr","expression":"a - b"}},
    "inputs":{"x":{"shape":["d"],"dtype":"float32"}},
    "outputs":{"y":{"shape":["a"],"dtype":"float32"}},"reference":"def run(x):\n  pass"})";
  Diagnostics diags;
  auto r = resolve(def, R"({"uuid":"u","axes":{"a":2,"b":5},"inputs":{}})", diags);
  EXPECT_FALSE(r);
  ASSERT_EQ(diags.size(), 1u) << diags.str();
  EXPECT_EQ(diags.items()[0].str(),
            "workload.jsonl:5: axes.d: axis \"d\" = a - b evaluates to -3 (expected >= 0) (with a=2, b=5)");
}

TEST(Resolve, ReportsInexactDivisionAndDivisionByZero) {
  const char* def = R"({"name":"d","axes":{"a":{"type":"var"},"b":{"type":"var"},
    "d":{"type":"expr","expression":"a / b"}},
    "inputs":{"x":{"shape":["d"],"dtype":"float32"}},
    "outputs":{"y":{"shape":["a"],"dtype":"float32"}},"reference":"def run(x):\n  pass"})";
  Diagnostics diags;
  EXPECT_FALSE(resolve(def, R"({"uuid":"u","axes":{"a":7,"b":2},"inputs":{}})", diags));
  EXPECT_HAS(diags.str(), "axes.d: cannot evaluate axis \"d\" = a / b: ");
  Diagnostics diags2;
  EXPECT_FALSE(resolve(def, R"({"uuid":"u","axes":{"a":7,"b":0},"inputs":{}})", diags2));
  EXPECT_HAS(diags2.str(), "axes.d: cannot evaluate axis \"d\"");
  Diagnostics diags3;
  auto r = resolve(def, R"({"uuid":"u","axes":{"a":8,"b":2},"inputs":{}})", diags3);
  ASSERT_TRUE(r) << diags3.str();
  EXPECT_EQ(r->axis("d"), 4);
}

TEST(Resolve, ReportsOverflowingShapes) {
  const char* def = R"({"name":"d","axes":{"a":{"type":"var"},"b":{"type":"var"}},
    "inputs":{"x":{"shape":["a","b","b"],"dtype":"float32"}},
    "outputs":{"y":{"shape":["a"],"dtype":"float32"}},"reference":"def run(x):\n  pass"})";
  Diagnostics diags;
  EXPECT_FALSE(resolve(def, R"({"uuid":"u","axes":{"a":1024,"b":4294967296},"inputs":{}})", diags));
  EXPECT_EQ(diags.str(),
            "workload.jsonl:5: inputs.x.shape: shape [a=1024, b=4294967296, b=4294967296] "
            "overflows: the element count exceeds 2^63-1");

  // Elements fit in int64 but bytes would not fit in 64 bits.
  Diagnostics diags2;
  EXPECT_FALSE(resolve(def, R"({"uuid":"u","axes":{"a":4,"b":1073741824},"inputs":{}})", diags2));
  EXPECT_HAS(diags2.str(), "inputs.x.shape: shape [a=4, b=1073741824, b=1073741824] overflows");

  // Expression overflow is reported by the expression evaluator.
  const char* def2 = R"({"name":"d","axes":{"a":{"type":"var"},
    "sq":{"type":"expr","expression":"a * a * a"}},
    "inputs":{"x":{"shape":["sq"],"dtype":"float32"}},
    "outputs":{"y":{"shape":["a"],"dtype":"float32"}},"reference":"def run(x):\n  pass"})";
  Diagnostics diags3;
  EXPECT_FALSE(resolve(def2, R"({"uuid":"u","axes":{"a":4294967296},"inputs":{}})", diags3));
  EXPECT_HAS(diags3.str(), "axes.sq: cannot evaluate axis \"sq\" = a * a * a");
}

}  // namespace
}  // namespace solbench
