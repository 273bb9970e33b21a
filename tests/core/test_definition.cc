#include "core/definition.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include "core_test_util.h"

namespace solbench {
namespace {

// A grouped-query attention projection in the style of the public set: const,
// var and expr axes (one expr depending on another), a "1" literal dim, a
// scalar input, a 0-d tensor, constraints and a custom inputs function.
const char* kGqa = R"({
  "name": "gqa_proj",
  "op_type": "attention",
  "description": "GQA projection",
  "axes": {
    "batch_size": {"type": "var", "description": "batch"},
    "seq_len": {"type": "var"},
    "num_heads": {"type": "const", "value": 32},
    "num_kv_heads": {"type": "const", "value": 8},
    "head_dim": {"type": "const", "value": 128},
    "group": {"type": "expr", "expression": "num_heads // num_kv_heads"},
    "kv_dim": {"type": "expr", "expression": "num_kv_heads * head_dim"}
  },
  "inputs": {
    "x": {"shape": ["batch_size", "seq_len", "1", "kv_dim"], "dtype": "bfloat16",
          "description": "activations"},
    "w": {"shape": ["kv_dim", 4], "dtype": "float8_e4m3fn"},
    "scale": {"shape": null, "dtype": "float32"},
    "flag": {"shape": [], "dtype": "bool"}
  },
  "outputs": {
    "y": {"shape": ["batch_size", "seq_len", "group"], "dtype": "float16"}
  },
  "reference": "import torch\n\ndef make(axes, device):\n    return {}\n\n@torch.no_grad()\ndef run(x, w, scale, flag):\n    return x\n",
  "constraints": ["num_heads == num_kv_heads * group", "seq_len >= 1"],
  "custom_inputs_entrypoint": "make",
  "hf_id": "meta-llama/Llama-3-8B",
  "tags": ["extra", 1]
})";

Definition parse_text(const std::string& text, Diagnostics& diags) {
  return parse_definition(json::parse(text), "definition.json", diags);
}

// Parses a modified copy of kGqa; returns all diagnostics as text.
std::string errors_of(const std::function<void(json&)>& edit) {
  json j = json::parse(kGqa);
  edit(j);
  Diagnostics diags;
  parse_definition(j, "definition.json", diags);
  return diags.str();
}

TEST(Definition, ParsesEveryField) {
  Diagnostics diags;
  Definition d = parse_text(kGqa, diags);
  ASSERT_TRUE(diags.empty()) << diags.str();
  EXPECT_EQ(d.name, "gqa_proj");
  EXPECT_EQ(d.op_type, "attention");
  EXPECT_EQ(d.description, "GQA projection");
  EXPECT_EQ(d.hf_id, "meta-llama/Llama-3-8B");
  ASSERT_EQ(d.axes.size(), 7u);
  EXPECT_EQ(d.axes[0].name, "batch_size");
  EXPECT_EQ(d.axes[0].kind, AxisKind::Var);
  EXPECT_EQ(d.axes[0].description, "batch");
  EXPECT_EQ(d.axes[2].kind, AxisKind::Const);
  EXPECT_EQ(d.axes[2].value, 32);
  EXPECT_EQ(d.axes[5].kind, AxisKind::Expr);
  EXPECT_EQ(d.axes[5].expression, "num_heads // num_kv_heads");

  ASSERT_EQ(d.inputs.size(), 4u);  // argument order = file order
  EXPECT_EQ(d.inputs[0].name, "x");
  EXPECT_EQ(d.inputs[1].name, "w");
  EXPECT_EQ(d.inputs[2].name, "scale");
  EXPECT_EQ(d.inputs[3].name, "flag");
  const TensorSpec& x = d.inputs[0];
  EXPECT_EQ(x.dtype, DType::BFloat16);
  EXPECT_EQ(x.description, "activations");
  ASSERT_TRUE(x.shape);
  ASSERT_EQ(x.shape->size(), 4u);
  EXPECT_EQ((*x.shape)[0], (Dim{"batch_size", 0}));
  EXPECT_TRUE((*x.shape)[2].is_literal());  // "1" written as a string
  EXPECT_EQ((*x.shape)[2].literal, 1);
  EXPECT_EQ((*d.inputs[1].shape)[1], (Dim{"", 4}));  // a JSON integer literal
  EXPECT_TRUE(d.inputs[2].is_scalar());
  ASSERT_TRUE(d.inputs[3].shape);
  EXPECT_TRUE(d.inputs[3].shape->empty());  // 0-d tensor
  EXPECT_EQ(d.inputs[3].dtype, DType::Bool);
  ASSERT_EQ(d.outputs.size(), 1u);
  EXPECT_EQ(d.outputs[0].dtype, DType::Float16);

  EXPECT_EQ(d.constraints.size(), 2u);
  EXPECT_EQ(d.custom_inputs_entrypoint, "make");
  EXPECT_EQ(d.extra, json::parse(R"({"tags": ["extra", 1]})"));
  EXPECT_EQ(d.find_axis("group"), &d.axes[5]);
  EXPECT_EQ(d.find_input("w"), &d.inputs[1]);
  EXPECT_EQ(d.find_output("y"), &d.outputs[0]);
  EXPECT_EQ(d.find_input("y"), nullptr);
}

TEST(Definition, DefaultsForOptionalFields) {
  Diagnostics diags;
  Definition d = parse_text(R"({
    "name": "n", "axes": {}, "inputs": {},
    "outputs": {"o": {"shape": [], "dtype": "float32"}},
    "reference": "def run():\n    pass\n"})",
                            diags);
  ASSERT_TRUE(diags.empty()) << diags.str();
  EXPECT_EQ(d.op_type, "");
  EXPECT_EQ(d.description, "");
  EXPECT_EQ(d.hf_id, "");
  EXPECT_TRUE(d.constraints.empty());
  EXPECT_FALSE(d.custom_inputs_entrypoint);
  EXPECT_EQ(d.extra, json::object());
}

TEST(Definition, NullOptionalFieldsCountAsAbsent) {
  // FlashInfer-Bench definitions write "description": null.
  Diagnostics diags;
  Definition d = parse_text(R"({
    "name": "n", "description": null, "custom_inputs_entrypoint": null, "constraints": null,
    "axes": {"a": {"type": "var", "description": null}},
    "inputs": {"i": {"shape": ["a"], "dtype": "int32", "description": null}},
    "outputs": {"o": {"shape": ["a"], "dtype": "int64"}},
    "reference": "def run(i):\n    return i\n"})",
                            diags);
  EXPECT_TRUE(diags.empty()) << diags.str();
  EXPECT_FALSE(d.custom_inputs_entrypoint);
}

TEST(Definition, RoundTrip) {
  Diagnostics diags;
  Definition d = parse_text(kGqa, diags);
  ASSERT_TRUE(diags.empty());
  json written = to_json(d);
  Definition again = parse_definition(written, "written", diags);
  ASSERT_TRUE(diags.empty()) << diags.str();
  EXPECT_EQ(d, again);
  EXPECT_EQ(to_json(again), written);
}

TEST(Definition, WritesThePublicForm) {
  Diagnostics diags;
  json j = to_json(parse_text(kGqa, diags));
  std::vector<std::string> keys;
  for (auto it = j.begin(); it != j.end(); ++it) keys.push_back(it.key());
  EXPECT_EQ(keys, (std::vector<std::string>{"name", "op_type", "description", "axes", "inputs",
                                            "outputs", "reference", "constraints",
                                            "custom_inputs_entrypoint", "hf_id", "tags"}));
  // Literal dims are written as digit strings, as in the public set.
  EXPECT_EQ(j["inputs"]["x"]["shape"], json::parse(R"(["batch_size","seq_len","1","kv_dim"])"));
  EXPECT_EQ(j["inputs"]["w"]["shape"], json::parse(R"(["kv_dim","4"])"));
  EXPECT_TRUE(j["inputs"]["scale"]["shape"].is_null());
  EXPECT_EQ(j["axes"]["num_heads"], json::parse(R"({"type":"const","value":32})"));
  EXPECT_EQ(j["axes"]["group"],
            json::parse(R"({"type":"expr","expression":"num_heads // num_kv_heads"})"));
  // The input order survives (ordered JSON).
  EXPECT_EQ(j["inputs"].begin().key(), "x");

  // custom_inputs_entrypoint is written explicitly, null when absent.
  Definition d;
  d.name = "n";
  json minimal = to_json(d);
  ASSERT_TRUE(minimal.contains("custom_inputs_entrypoint"));
  EXPECT_TRUE(minimal["custom_inputs_entrypoint"].is_null());
  EXPECT_FALSE(minimal.contains("constraints"));
}

TEST(Definition, ReportsMissingAndMistypedFields) {
  EXPECT_HAS(errors_of([](json& j) { j.erase("name"); }), "definition.json: name: missing required field");
  EXPECT_HAS(errors_of([](json& j) { j["name"] = 3; }), "name: expected a string, found 3");
  EXPECT_HAS(errors_of([](json& j) { j["axes"] = json::array(); }), "axes: expected an object, found an array");
  EXPECT_HAS(errors_of([](json& j) { j.erase("outputs"); }), "outputs: missing required field");
  EXPECT_HAS(errors_of([](json& j) { j["outputs"] = json::object(); }), "outputs: expected at least one output");
  EXPECT_HAS(errors_of([](json& j) { j["op_type"] = json::array(); }), "op_type: expected a string");
}

TEST(Definition, ReportsBadAxes) {
  EXPECT_HAS(errors_of([](json& j) { j["axes"]["num_heads"]["value"] = "32"; }),
             "axes.num_heads.value: expected an integer, found \"32\"");
  EXPECT_HAS(errors_of([](json& j) { j["axes"]["num_heads"]["value"] = 32.5; }),
             "axes.num_heads.value: expected an integer, found 32.5");
  EXPECT_HAS(errors_of([](json& j) { j["axes"]["num_heads"]["value"] = -1; }),
             "axes.num_heads.value: axis size -1 is negative");
  EXPECT_HAS(errors_of([](json& j) { j["axes"]["num_heads"].erase("value"); }),
             "axes.num_heads.value: missing required field");
  EXPECT_HAS(errors_of([](json& j) { j["axes"]["seq_len"]["type"] = "dynamic"; }),
             "axes.seq_len.type: unknown axis type \"dynamic\"");
  EXPECT_HAS(errors_of([](json& j) { j["axes"]["group"]["expression"] = "num_heads //"; }),
             "axes.group.expression: ");
  EXPECT_HAS(errors_of([](json& j) { j["axes"]["group"]["expression"] = "heads // 2"; }),
             "axes.group.expression: unknown axis \"heads\"");
  EXPECT_HAS(errors_of([](json& j) { j["axes"]["2x"] = json::parse(R"({"type":"var"})"); }),
             "axes.2x: axis name \"2x\" is not an identifier");
}

TEST(Definition, ReportsExpressionCycles) {
  std::string e = errors_of([](json& j) {
    j["axes"]["group"]["expression"] = "kv_dim // 2";
    j["axes"]["kv_dim"]["expression"] = "group * 2";
  });
  EXPECT_HAS(e, "axis expressions form a cycle: group -> kv_dim -> group");
  EXPECT_HAS(errors_of([](json& j) { j["axes"]["group"]["expression"] = "group + 1"; }),
             "axes.group.expression: axis expressions form a cycle: group -> group");
}

TEST(Definition, ReportsBadTensors) {
  EXPECT_HAS(errors_of([](json& j) { j["inputs"]["x"]["shape"][1] = "seqlen"; }),
             "inputs.x.shape[1]: unknown axis \"seqlen\"");
  EXPECT_HAS(errors_of([](json& j) { j["inputs"]["x"]["shape"][1] = 1.5; }),
             "inputs.x.shape[1]: expected an axis name or an integer literal, found 1.5");
  EXPECT_HAS(errors_of([](json& j) { j["inputs"]["x"]["shape"][0] = -2; }),
             "inputs.x.shape[0]: dimension -2 is negative");
  EXPECT_HAS(errors_of([](json& j) { j["inputs"]["x"]["shape"] = "batch_size"; }),
             "inputs.x.shape: expected an array of axis names or null");
  EXPECT_HAS(errors_of([](json& j) { j["inputs"]["x"].erase("shape"); }),
             "inputs.x.shape: missing required field");
  EXPECT_HAS(errors_of([](json& j) { j["outputs"]["y"]["dtype"] = "float128"; }),
             "outputs.y.dtype: unknown dtype \"float128\" (expected one of float64, float32");
  EXPECT_HAS(errors_of([](json& j) { j["outputs"]["x"] = j["outputs"]["y"]; }),
             "outputs.x: duplicate tensor name \"x\" (also an input");
}

TEST(Definition, ReportsBadReferenceAndEntrypoint) {
  EXPECT_HAS(errors_of([](json& j) { j.erase("reference"); }), "reference: missing required field");
  EXPECT_HAS(errors_of([](json& j) { j["reference"] = "  \n"; }),
             "reference: expected Python source defining run(...), found an empty string");
  EXPECT_HAS(errors_of([](json& j) { j["reference"] = "def make(a, d):\n  pass\ndef running(x):\n  pass\n"; }),
             "reference: expected a top-level `def run(`");
  EXPECT_HAS(errors_of([](json& j) { j["custom_inputs_entrypoint"] = "get_inputs"; }),
             "custom_inputs_entrypoint: function \"get_inputs\" is not defined in reference");
  EXPECT_HAS(errors_of([](json& j) { j["custom_inputs_entrypoint"] = 1; }),
             "custom_inputs_entrypoint: expected a function name or null, found 1");
}

TEST(Definition, ReportsBadConstraints) {
  EXPECT_HAS(errors_of([](json& j) { j["constraints"][1] = "seq_len >="; }), "constraints[1]: ");
  EXPECT_HAS(errors_of([](json& j) { j["constraints"][0] = "heads == 2"; }),
             "constraints[0]: unknown axis \"heads\" in \"heads == 2\"");
  EXPECT_HAS(errors_of([](json& j) { j["constraints"] = "seq_len > 0"; }),
             "constraints: expected an array of strings");
  EXPECT_HAS(errors_of([](json& j) { j["constraints"][0] = 5; }),
             "constraints[0]: expected a string, found 5");
}

TEST(Definition, CollectsAllErrorsInOnePass) {
  Diagnostics diags;
  parse_definition(json::parse(R"({
    "axes": {"a": {"type": "bad"}},
    "inputs": {"i": {"shape": ["zz"], "dtype": "f32"}},
    "outputs": {"o": {"shape": [], "dtype": "float32"}},
    "reference": "x = 1"})"),
                   "d.json", diags);
  EXPECT_EQ(diags.size(), 5u) << diags.str();  // name, axis type, shape, dtype, reference
}

TEST(Definition, NonObjectDocument) {
  Diagnostics diags;
  parse_definition(json::array(), "d.json", diags);
  EXPECT_EQ(diags.str(), "d.json: expected an object, found an array");
}

TEST(Definition, LoadReportsUnreadableAndInvalidFiles) {
  Diagnostics diags;
  load_definition("/nonexistent/definition.json", diags);
  ASSERT_EQ(diags.size(), 1u);
  EXPECT_EQ(diags.items()[0].file, "/nonexistent/definition.json");
}

TEST(DefinitionDetail, Helpers) {
  using namespace detail;
  EXPECT_EQ(join_path("", "name"), "name");
  EXPECT_EQ(join_path("inputs", "x"), "inputs.x");
  EXPECT_EQ(join_path("inputs", "a b"), "inputs[\"a b\"]");
  EXPECT_EQ(index_path("inputs.x.shape", 1), "inputs.x.shape[1]");
  EXPECT_EQ(describe_json(json("s")), "\"s\"");
  EXPECT_EQ(describe_json(json(nullptr)), "null");
  EXPECT_EQ(describe_json(json::array()), "an array");
  EXPECT_EQ(describe_json(json(2.5)), "2.5");
  EXPECT_EQ(describe_json(json(true)), "true");
  EXPECT_TRUE(defines_python_function("import x\n@deco\ndef run(a):\n  pass", "run"));
  EXPECT_TRUE(defines_python_function("def run (a):", "run"));
  EXPECT_TRUE(defines_python_function("async def run(a):", "run"));
  EXPECT_FALSE(defines_python_function("def runner(a):", "run"));
  EXPECT_FALSE(defines_python_function("    def run(a):", "run"));  // a method, not top-level
  EXPECT_FALSE(defines_python_function("# def run(", "run"));
  json extra = unknown_keys(json::parse(R"({"a":1,"b":2,"c":3})"), {"b"});
  EXPECT_EQ(extra.dump(), R"({"a":1,"c":3})");
}

}  // namespace
}  // namespace solbench
