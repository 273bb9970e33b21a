#include "core/workload.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "core/definition.h"
#include "core/resolve.h"
#include "core_test_util.h"

namespace solbench {
namespace {

using testing::TempDir;

const char* kDefinition = R"({
  "name": "scaled_gemm",
  "axes": {
    "m": {"type": "var"},
    "n": {"type": "const", "value": 64},
    "k": {"type": "var"},
    "k2": {"type": "expr", "expression": "k // 2"}
  },
  "inputs": {
    "a": {"shape": ["m", "k"], "dtype": "bfloat16"},
    "b": {"shape": ["n", "k"], "dtype": "bfloat16"},
    "alpha": {"shape": null, "dtype": "float32"},
    "steps": {"shape": null, "dtype": "int8"},
    "transpose": {"shape": null, "dtype": "bool"}
  },
  "outputs": {"c": {"shape": ["m", "n"], "dtype": "float32"}},
  "reference": "def make(axes, device):\n    pass\n\ndef run(a, b, alpha, steps, transpose):\n    return a\n",
  "constraints": ["k % 2 == 0"],
  "custom_inputs_entrypoint": "make"
})";

const char* kWorkload = R"({
  "uuid": "0123456789abcdef",
  "axes": {"m": 16, "k": 128},
  "inputs": {
    "a": {"type": "random"},
    "b": {"type": "safetensors", "path": "blobs/b.safetensors", "tensor_key": "b"},
    "alpha": {"type": "scalar", "value": 0.5},
    "steps": {"type": "scalar", "value": -3},
    "transpose": {"type": "custom"}
  },
  "tolerance": {"max_atol": 0.001, "max_rtol": 0.02, "required_matched_ratio": 0.95,
                "max_error_cap": 4.0, "allow_negative_inf": true},
  "note": {"kept": true}
})";

Definition definition() {
  Diagnostics diags;
  Definition d = parse_definition(json::parse(kDefinition), "definition.json", diags);
  EXPECT_TRUE(diags.empty()) << diags.str();
  return d;
}

// Parses a modified kWorkload and checks it against kDefinition; all diagnostics as text.
std::string errors_of(const std::function<void(json&)>& edit) {
  json j = json::parse(kWorkload);
  edit(j);
  Diagnostics diags;
  Workload w = parse_workload(j, "workload.jsonl", 3, diags);
  if (diags.empty()) check_workload(definition(), w, "workload.jsonl", diags);
  return diags.str();
}

TEST(Workload, ParsesEveryField) {
  Diagnostics diags;
  Workload w = parse_workload(json::parse(kWorkload), "workload.jsonl", 7, diags);
  ASSERT_TRUE(diags.empty()) << diags.str();
  EXPECT_EQ(w.uuid, "0123456789abcdef");
  EXPECT_EQ(w.line, 7);
  ASSERT_EQ(w.axes.size(), 2u);
  EXPECT_EQ(w.axes[0], (std::pair<std::string, int64_t>{"m", 16}));
  EXPECT_EQ(w.axis("k"), 128);
  EXPECT_FALSE(w.axis("n"));
  ASSERT_EQ(w.inputs.size(), 5u);
  EXPECT_EQ(w.input("a")->kind, InputKind::Random);
  const InputSource* b = w.input("b");
  EXPECT_EQ(b->kind, InputKind::Safetensors);
  EXPECT_EQ(b->path, "blobs/b.safetensors");
  EXPECT_EQ(b->tensor_key, "b");
  EXPECT_EQ(w.input("alpha")->kind, InputKind::Scalar);
  EXPECT_EQ(w.input("alpha")->value, json(0.5));
  EXPECT_EQ(w.input("transpose")->kind, InputKind::Custom);
  EXPECT_EQ(w.input("nope"), nullptr);
  ASSERT_TRUE(w.tolerance);
  EXPECT_DOUBLE_EQ(w.tolerance->max_atol, 0.001);
  EXPECT_DOUBLE_EQ(w.tolerance->max_rtol, 0.02);
  EXPECT_DOUBLE_EQ(w.tolerance->required_matched_ratio, 0.95);
  EXPECT_EQ(w.tolerance->max_error_cap, 4.0);
  EXPECT_TRUE(w.tolerance->allow_negative_inf);
  EXPECT_EQ(w.extra, json::parse(R"({"note": {"kept": true}})"));
  EXPECT_EQ(input_kind_name(InputKind::Safetensors), "safetensors");
}

TEST(Workload, ToleranceDefaults) {
  Diagnostics diags;
  Workload w = parse_workload(json::parse(R"({"uuid":"u","axes":{},"inputs":{}})"), "f", 1, diags);
  ASSERT_TRUE(diags.empty());
  EXPECT_FALSE(w.tolerance);
  Tolerance t = w.effective_tolerance();
  EXPECT_DOUBLE_EQ(t.max_atol, 1e-2);
  EXPECT_DOUBLE_EQ(t.max_rtol, 1e-2);
  EXPECT_DOUBLE_EQ(t.required_matched_ratio, 0.99);
  EXPECT_FALSE(t.max_error_cap);
  EXPECT_FALSE(t.allow_negative_inf);

  // Fields left out take their defaults; null tolerance and null cap are absent.
  w = parse_workload(json::parse(R"({"uuid":"u","axes":{},"inputs":{},
                                     "tolerance":{"max_atol":1e-5,"max_error_cap":null}})"),
                     "f", 1, diags);
  ASSERT_TRUE(diags.empty()) << diags.str();
  EXPECT_DOUBLE_EQ(w.tolerance->max_atol, 1e-5);
  EXPECT_DOUBLE_EQ(w.tolerance->max_rtol, 1e-2);
  EXPECT_FALSE(w.tolerance->max_error_cap);
  w = parse_workload(json::parse(R"({"uuid":"u","axes":{},"inputs":{},"tolerance":null})"), "f", 1,
                     diags);
  EXPECT_TRUE(diags.empty());
  EXPECT_FALSE(w.tolerance);
}

TEST(Workload, ReadsThePublicSetsRatioSpelling) {
  // The public L2 subset writes "required_match_ratio".
  Diagnostics diags;
  Workload w = parse_workload(
      json::parse(R"({"uuid":"u","axes":{},"inputs":{},"tolerance":{"required_match_ratio":0.98}})"),
      "f", 1, diags);
  ASSERT_TRUE(diags.empty());
  EXPECT_DOUBLE_EQ(w.tolerance->required_matched_ratio, 0.98);
  EXPECT_EQ(to_json(w)["tolerance"]["required_matched_ratio"], 0.98);
}

TEST(Workload, ValidAgainstItsDefinition) {
  Diagnostics diags;
  Workload w = parse_workload(json::parse(kWorkload), "workload.jsonl", 1, diags);
  auto r = check_and_resolve_workload(definition(), w, "workload.jsonl", diags);
  EXPECT_TRUE(diags.empty()) << diags.str();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->axis("k2"), 64);
}

TEST(Workload, ReportsShapeOfLineErrors) {
  EXPECT_HAS(errors_of([](json& j) { j.erase("uuid"); }), "workload.jsonl:3: uuid: missing required field");
  EXPECT_HAS(errors_of([](json& j) { j["uuid"] = ""; }), "workload.jsonl:3: uuid: expected a non-empty string");
  EXPECT_HAS(errors_of([](json& j) { j["axes"]["m"] = "16"; }),
             "workload.jsonl:3: axes.m: expected an integer, found \"16\"");
  EXPECT_HAS(errors_of([](json& j) { j["axes"]["m"] = -1; }), "axes.m: axis value -1 is negative");
  EXPECT_HAS(errors_of([](json& j) { j["inputs"] = json::array(); }), "inputs: expected an object, found an array");
  EXPECT_HAS(errors_of([](json& j) { j["inputs"]["a"]["type"] = "zeros"; }),
             "inputs.a.type: unknown input source type \"zeros\"");
  EXPECT_HAS(errors_of([](json& j) { j["inputs"]["a"] = "random"; }),
             "inputs.a: expected an object, found \"random\"");
  EXPECT_HAS(errors_of([](json& j) { j["inputs"]["alpha"].erase("value"); }),
             "inputs.alpha.value: missing required field");
  EXPECT_HAS(errors_of([](json& j) { j["inputs"]["alpha"]["value"] = "0.5"; }),
             "inputs.alpha.value: expected a number or true/false, found \"0.5\"");
  EXPECT_HAS(errors_of([](json& j) { j["inputs"]["b"].erase("path"); }), "inputs.b.path: missing required field");
  EXPECT_HAS(errors_of([](json& j) { j["inputs"]["b"].erase("tensor_key"); }),
             "inputs.b.tensor_key: missing required field");
  EXPECT_HAS(errors_of([](json& j) { j["inputs"]["b"]["path"] = "../b.safetensors"; }),
             "inputs.b.path: unsafe path \"../b.safetensors\"");
  EXPECT_HAS(errors_of([](json& j) { j["inputs"]["b"]["path"] = "/data/b.safetensors"; }),
             "inputs.b.path: unsafe path \"/data/b.safetensors\": absolute paths are not allowed");
}

TEST(Workload, ReportsBadTolerances) {
  EXPECT_HAS(errors_of([](json& j) { j["tolerance"]["max_atol"] = -0.1; }),
             "tolerance.max_atol: -0.1 is negative (expected >= 0)");
  EXPECT_HAS(errors_of([](json& j) { j["tolerance"]["max_rtol"] = "0.1"; }),
             "tolerance.max_rtol: expected a number, found \"0.1\"");
  EXPECT_HAS(errors_of([](json& j) { j["tolerance"]["required_matched_ratio"] = 1.5; }),
             "tolerance.required_matched_ratio: 1.5 is outside [0, 1]");
  EXPECT_HAS(errors_of([](json& j) { j["tolerance"]["max_error_cap"] = -1; }),
             "tolerance.max_error_cap: -1 is negative");
  EXPECT_HAS(errors_of([](json& j) { j["tolerance"]["allow_negative_inf"] = 1; }),
             "tolerance.allow_negative_inf: expected true or false, found 1");
  EXPECT_HAS(errors_of([](json& j) { j["tolerance"] = 0.01; }), "tolerance: expected an object, found 0.01");
}

TEST(Workload, ChecksAxesAgainstTheDefinition) {
  EXPECT_HAS(errors_of([](json& j) { j["axes"].erase("k"); }),
             "workload.jsonl:3: axes.k: missing value for var axis \"k\"");
  EXPECT_HAS(errors_of([](json& j) { j["axes"]["q"] = 3; }),
             "workload.jsonl:3: axes.q: unknown axis \"q\" (expected a var axis of the definition: m, k");
  EXPECT_HAS(errors_of([](json& j) { j["axes"]["n"] = 64; }),
             "axes.n: axis \"n\" is const in the definition (workloads set only var axes: m, k)");
  EXPECT_HAS(errors_of([](json& j) { j["axes"]["k2"] = 64; }), "axes.k2: axis \"k2\" is expr in the definition");
  EXPECT_HAS(errors_of([](json& j) { j["axes"]["k"] = 127; }),
             "workload.jsonl:3: constraints[0]: constraint \"k % 2 == 0\" does not hold (with k=127)");
  // A scalar input's value may sit among the axes (public L2 set, for custom inputs).
  EXPECT_EQ(errors_of([](json& j) { j["axes"]["steps"] = 1; }), "");
}

TEST(Workload, AxesAndScalarsHoldEveryAxisAndScalarValue) {
  json j = json::parse(kWorkload);
  j["axes"]["steps"] = 2;  // given under "axes" too, as in the public L2 set
  j["inputs"]["steps"] = json::parse(R"({"type":"custom"})");
  Diagnostics diags;
  Workload w = parse_workload(j, "workload.jsonl", 3, diags);
  std::optional<ResolvedWorkload> r = resolve_workload(definition(), w, "workload.jsonl", diags);
  ASSERT_TRUE(r) << diags.str();
  const json a = axes_and_scalars(w, *r);
  EXPECT_EQ(a, json::parse(R"({"m":16,"n":64,"k":128,"k2":64,"steps":2,"alpha":0.5})")) << a.dump();
}

TEST(Workload, ChecksInputsAgainstTheDefinition) {
  EXPECT_HAS(errors_of([](json& j) { j["inputs"].erase("b"); }),
             "workload.jsonl:3: inputs.b: missing source for input \"b\"");
  EXPECT_HAS(errors_of([](json& j) { j["inputs"]["a"] = json::parse(R"({"type":"scalar","value":1})"); }),
             "inputs.a.type: a scalar source is only for scalar inputs (shape null)");
  EXPECT_HAS(errors_of([](json& j) { j["inputs"]["alpha"] = json::parse(R"({"type":"random"})"); }),
             "inputs.alpha.type: \"alpha\" is a scalar input (shape null): expected a \"scalar\" or "
             "\"custom\" source, found \"random\"");
}

// A source for a name the definition has no input for (or for an output) is
// ignored by SOL-ExecBench: a warning here, not an error, and the workload still
// resolves; drop_unknown_inputs removes exactly those entries.
TEST(Workload, UnknownInputsAreWarningsNotErrors) {
  json j = json::parse(kWorkload);
  j["inputs"]["bias"] = json::parse(R"({"type":"random"})");
  j["inputs"]["c"] = json::parse(R"({"type":"scalar","value":1})");
  Diagnostics diags;
  Workload w = parse_workload(j, "workload.jsonl", 3, diags);
  ASSERT_TRUE(diags.empty()) << diags.str();
  const Definition def = definition();
  auto r = check_and_resolve_workload(def, w, "workload.jsonl", diags);
  EXPECT_TRUE(diags.empty()) << "expected no errors, got:\n" << diags.str();
  ASSERT_TRUE(r) << "a workload whose only problem is an extra input must still resolve";
  EXPECT_EQ(r->inputs.size(), 5u);  // the definition's inputs only
  ASSERT_EQ(diags.warnings().size(), 2u) << diags.str();
  const Diagnostic& bias = diags.warnings()[0];
  EXPECT_EQ(bias.file, "workload.jsonl");
  EXPECT_EQ(bias.line, 3);
  EXPECT_EQ(bias.path, "inputs.bias");
  EXPECT_EQ(bias.message,
            "unknown input \"bias\" (expected one of: a, b, alpha, steps, transpose) in workload "
            "\"0123456789abcdef\": ignored, since the definition has no such input");
  EXPECT_EQ(diags.warnings()[1].path, "inputs.c");
  EXPECT_HAS(diags.warnings()[1].message, "\"c\" is an output, not an input");
  EXPECT_HAS(diags.warnings()[1].message, "ignored, since the definition has no such input");
  // str() shows them as warnings.
  EXPECT_HAS(diags.str(), "warning: workload.jsonl:3: inputs.bias: unknown input \"bias\"");

  EXPECT_EQ(drop_unknown_inputs(def, w), (std::vector<std::string>{"bias", "c"}));
  std::vector<std::string> names;
  for (const auto& [name, src] : w.inputs) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"a", "b", "alpha", "steps", "transpose"}));
  EXPECT_TRUE(drop_unknown_inputs(def, w).empty());  // nothing left to drop
  // Checked again without them: no warning at all.
  Diagnostics again;
  check_workload(def, w, "workload.jsonl", again);
  EXPECT_TRUE(again.empty() && again.warnings().empty()) << again.str();
}

// An extra entry does not hide real errors on the same line.
TEST(Workload, UnknownInputWarningKeepsOtherErrors) {
  json j = json::parse(kWorkload);
  j["inputs"]["bias"] = json::parse(R"({"type":"random"})");
  j["inputs"].erase("a");
  Diagnostics diags;
  Workload w = parse_workload(j, "workload.jsonl", 3, diags);
  EXPECT_FALSE(check_and_resolve_workload(definition(), w, "workload.jsonl", diags));
  ASSERT_EQ(diags.size(), 1u) << diags.str();
  EXPECT_EQ(diags.items()[0].path, "inputs.a");
  ASSERT_EQ(diags.warnings().size(), 1u) << diags.str();
  EXPECT_EQ(diags.warnings()[0].path, "inputs.bias");
}

TEST(Workload, ChecksScalarValuesAgainstTheirDtype) {
  EXPECT_HAS(errors_of([](json& j) { j["inputs"]["steps"]["value"] = 1.5; }),
             "inputs.steps.value: expected an integer for int8 input \"steps\", found 1.5");
  EXPECT_HAS(errors_of([](json& j) { j["inputs"]["steps"]["value"] = 300; }),
             "inputs.steps.value: 300 does not fit int8 (range [-128, 127])");
  EXPECT_HAS(errors_of([](json& j) { j["inputs"]["steps"]["value"] = true; }),
             "expected an integer for int8 input \"steps\", found true");
  EXPECT_HAS(errors_of([](json& j) { j["inputs"]["transpose"] = json::parse(R"({"type":"scalar","value":1})"); }),
             "inputs.transpose.value: expected true or false for bool input \"transpose\", found 1");
  EXPECT_HAS(errors_of([](json& j) { j["inputs"]["alpha"]["value"] = false; }),
             "expected a number for float32 input \"alpha\", found false");
  EXPECT_EQ(errors_of([](json& j) { j["inputs"]["alpha"]["value"] = 2; }), "");  // ints are floats too
}

TEST(Workload, CustomSourcesNeedAnEntrypoint) {
  json jd = json::parse(kDefinition);
  jd["custom_inputs_entrypoint"] = nullptr;
  Diagnostics diags;
  Definition d = parse_definition(jd, "definition.json", diags);
  Workload w = parse_workload(json::parse(kWorkload), "workload.jsonl", 2, diags);
  ASSERT_TRUE(diags.empty()) << diags.str();
  check_workload(d, w, "workload.jsonl", diags);
  EXPECT_HAS(diags.str(),
             "workload.jsonl:2: inputs.transpose.type: a \"custom\" source needs the definition's "
             "custom_inputs_entrypoint, which is null");
}

TEST(Workload, LoadKeepsGoodLinesAndNumbersBadOnes) {
  TempDir dir;
  auto file = dir.write("workload.jsonl",
                        "{\"uuid\":\"a\",\"axes\":{},\"inputs\":{}}\n"
                        "\n"
                        "{\"uuid\":\"b\",\"axes\":{\"m\":\"x\"},\"inputs\":{}}\n"
                        "{\"uuid\":\"c\",\"axes\":{},\"inputs\":{}\n"
                        "   \r\n"
                        "{\"uuid\":\"d\",\"axes\":{},\"inputs\":{}}\r\n"
                        "{\"uuid\":\"a\",\"axes\":{},\"inputs\":{}}\n"
                        "{\"uuid\":\"e\",\"axes\":{},\"inputs\":{}}");
  Diagnostics diags;
  auto ws = load_workloads(file, diags);
  ASSERT_EQ(ws.size(), 3u) << diags.str();
  EXPECT_EQ(ws[0].uuid, "a");
  EXPECT_EQ(ws[0].line, 1);
  EXPECT_EQ(ws[1].uuid, "d");
  EXPECT_EQ(ws[1].line, 6);
  EXPECT_EQ(ws[2].uuid, "e");
  EXPECT_EQ(ws[2].line, 8);
  ASSERT_EQ(diags.size(), 3u) << diags.str();
  EXPECT_EQ(diags.items()[0].line, 3);
  EXPECT_EQ(diags.items()[0].path, "axes.m");
  EXPECT_EQ(diags.items()[1].line, 4);
  EXPECT_HAS(diags.items()[1].message, "invalid JSON");
  EXPECT_EQ(diags.items()[2].line, 7);
  EXPECT_EQ(diags.items()[2].message, "duplicate uuid \"a\" (first used on line 1)");
}

TEST(Workload, LoadReportsMissingFile) {
  Diagnostics diags;
  EXPECT_TRUE(load_workloads("/nonexistent/workload.jsonl", diags).empty());
  ASSERT_EQ(diags.size(), 1u);
  EXPECT_EQ(diags.items()[0].file, "/nonexistent/workload.jsonl");
}

TEST(Workload, RoundTrip) {
  Diagnostics diags;
  Workload w = parse_workload(json::parse(kWorkload), "workload.jsonl", 1, diags);
  json j = to_json(w);
  Workload again = parse_workload(j, "again", 9, diags);
  ASSERT_TRUE(diags.empty()) << diags.str();
  EXPECT_EQ(w, again);  // equality ignores the line
  std::vector<std::string> keys;
  for (auto it = j.begin(); it != j.end(); ++it) keys.push_back(it.key());
  EXPECT_EQ(keys, (std::vector<std::string>{"uuid", "axes", "inputs", "tolerance", "note"}));
  EXPECT_EQ(j["inputs"]["b"],
            json::parse(R"({"type":"safetensors","path":"blobs/b.safetensors","tensor_key":"b"})"));

  // to_jsonl writes one line each, and load_workloads reads them back.
  TempDir dir;
  Workload w2 = w;
  w2.uuid = "second";
  w2.tolerance.reset();
  auto file = dir.write("w.jsonl", to_jsonl({w, w2}));
  auto loaded = load_workloads(file, diags);
  ASSERT_TRUE(diags.empty()) << diags.str();
  ASSERT_EQ(loaded.size(), 2u);
  EXPECT_EQ(loaded[0], w);
  EXPECT_EQ(loaded[1], w2);
  EXPECT_FALSE(to_json(w2).contains("tolerance"));
}

}  // namespace
}  // namespace solbench
