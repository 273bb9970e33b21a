#include "core/problem.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "core/safetensors.h"
#include "core_test_util.h"

namespace solbench {
namespace {

using testing::TempDir;
using testing::write;

namespace fs = std::filesystem;

const char* kReference = "import torch\n\ndef run(x, idx):\n    return x * 2\n";

std::string definition_text(const std::string& name = "double") {
  json j = json::parse(R"({
    "name": "", "op_type": "elementwise",
    "axes": {"n": {"type": "var"}, "d": {"type": "const", "value": 4}},
    "inputs": {"x": {"shape": ["n", "d"], "dtype": "float32"},
               "idx": {"shape": ["n"], "dtype": "int64"}},
    "outputs": {"y": {"shape": ["n", "d"], "dtype": "float32"}},
    "reference": ""})");
  j["name"] = name;
  j["reference"] = kReference;
  return j.dump(2);
}

const char* kWorkloads =
    "{\"uuid\":\"w1\",\"axes\":{\"n\":2},\"inputs\":{\"x\":{\"type\":\"random\"},"
    "\"idx\":{\"type\":\"random\"}}}\n"
    "{\"uuid\":\"w2\",\"axes\":{\"n\":3},\"inputs\":{\"x\":{\"type\":\"random\"},"
    "\"idx\":{\"type\":\"safetensors\",\"path\":\"blobs/idx.safetensors\",\"tensor_key\":\"idx\"}}}\n";

fs::path make_problem(const fs::path& root, const std::string& rel, const std::string& name = "double") {
  fs::path dir = root / rel;
  write(dir / "definition.json", definition_text(name));
  write(dir / "workload.jsonl", kWorkloads);
  return dir;
}

TEST(Problem, Paths) {
  ProblemPaths p = problem_paths("/data/set/L1/001_x");
  EXPECT_EQ(p.definition, fs::path("/data/set/L1/001_x/definition.json"));
  EXPECT_EQ(p.workloads, fs::path("/data/set/L1/001_x/workload.jsonl"));
  EXPECT_EQ(p.dataset_root, fs::path("/data/set"));
  EXPECT_EQ(problem_paths("/data/set/L1/001_x/").dataset_root, fs::path("/data/set"));
  EXPECT_EQ(problem_paths("/data/set/L1/./001_x").dataset_root, fs::path("/data/set"));
  // Relative folders resolve against the working directory.
  EXPECT_EQ(problem_paths("L1/001_x").dataset_root, fs::current_path());
}

TEST(Problem, LoadsAValidProblem) {
  TempDir tmp;
  fs::path dir = make_problem(tmp.path(), "L1/001_double");
  write(dir / "reference.py", std::string(kReference) + "\n\n");  // trailing blank lines are fine
  Diagnostics diags;
  Problem p = load_problem(problem_paths(dir), diags);
  ASSERT_TRUE(diags.empty()) << diags.str();
  EXPECT_EQ(p.definition.name, "double");
  ASSERT_EQ(p.workloads.size(), 2u);
  ASSERT_EQ(p.resolved.size(), 2u);
  ASSERT_TRUE(p.resolved[1]);
  EXPECT_EQ(p.resolved[1]->input_bytes, 3u * 4 * 4 + 3u * 8);
  EXPECT_EQ(p.resolved[1]->output_bytes, 48u);
  EXPECT_EQ(p.paths.dataset_root, tmp.path());
}

TEST(Problem, ReferencePyMustMatch) {
  TempDir tmp;
  fs::path dir = make_problem(tmp.path(), "L1/001_double");
  write(dir / "reference.py", "import torch\n\ndef run(x, idx):\n    return x * 3\n");
  Diagnostics diags;
  load_problem(problem_paths(dir), diags);
  ASSERT_EQ(diags.size(), 1u) << diags.str();
  EXPECT_EQ(diags.items()[0].file, (dir / "reference.py").string());
  EXPECT_HAS(diags.items()[0].message, "differs from \"reference\" in");
}

TEST(Problem, BadWorkloadsDoNotHideGoodOnes) {
  TempDir tmp;
  fs::path dir = make_problem(tmp.path(), "L1/001_double");
  write(dir / "workload.jsonl",
        std::string(kWorkloads) +
            "{\"uuid\":\"w3\",\"axes\":{\"n\":2,\"d\":4},\"inputs\":{\"x\":{\"type\":\"random\"},"
            "\"idx\":{\"type\":\"random\"}}}\n"
            "not json\n");
  Diagnostics diags;
  Problem p = load_problem(problem_paths(dir), diags);
  ASSERT_EQ(diags.size(), 2u) << diags.str();
  EXPECT_HAS(diags.str(), "workload.jsonl:3: axes.d: axis \"d\" is const in the definition");
  EXPECT_HAS(diags.str(), "workload.jsonl:4: invalid JSON");
  ASSERT_EQ(p.workloads.size(), 3u);
  EXPECT_TRUE(p.resolved[0]);
  EXPECT_TRUE(p.resolved[1]);
  EXPECT_FALSE(p.resolved[2]);
}

TEST(Problem, InvalidDefinitionSkipsWorkloadChecks) {
  TempDir tmp;
  fs::path dir = make_problem(tmp.path(), "L1/001_double");
  json d = json::parse(definition_text());
  d["inputs"]["x"]["dtype"] = "float";
  write(dir / "definition.json", d.dump());
  Diagnostics diags;
  Problem p = load_problem(problem_paths(dir), diags);
  ASSERT_EQ(diags.size(), 1u) << diags.str();
  EXPECT_HAS(diags.str(), "inputs.x.dtype: unknown dtype \"float\"");
  EXPECT_EQ(p.workloads.size(), 2u);
  EXPECT_FALSE(p.resolved[0]);
}

TEST(Problem, MissingAndEmptyWorkloadFiles) {
  TempDir tmp;
  fs::path dir = make_problem(tmp.path(), "L1/001_double");
  fs::remove(dir / "workload.jsonl");
  Diagnostics diags;
  load_problem(problem_paths(dir), diags);
  ASSERT_EQ(diags.size(), 1u);
  EXPECT_EQ(diags.items()[0].file, (dir / "workload.jsonl").string());
  EXPECT_HAS(diags.items()[0].message, "cannot read");

  write(dir / "workload.jsonl", "\n\n");
  Diagnostics diags2;
  load_problem(problem_paths(dir), diags2);
  ASSERT_EQ(diags2.size(), 1u);
  EXPECT_HAS(diags2.items()[0].message, "no workloads");
}

TEST(Problem, ChecksSafetensorsBlobsThatArePresent) {
  TempDir tmp;
  fs::path dir = make_problem(tmp.path(), "L1/001_double");
  // Shape [2] where workload w2 needs [3]; dtype int32 where int64 is declared.
  std::vector<int32_t> data{1, 2};
  write_safetensors(tmp.path() / "blobs/idx.safetensors",
                    {{"idx", DType::Int32, {2}, std::as_bytes(std::span(data))}});
  Diagnostics diags;
  load_problem(problem_paths(dir), diags);
  ASSERT_EQ(diags.size(), 2u) << diags.str();
  EXPECT_HAS(diags.str(), "workload.jsonl:2: inputs.idx: tensor \"idx\" in");
  EXPECT_HAS(diags.str(), "has dtype I32 (expected int64)");
  EXPECT_HAS(diags.str(), "has shape [2] (expected [3])");

  std::vector<int64_t> good{1, 2, 3};
  write_safetensors(tmp.path() / "blobs/idx.safetensors",
                    {{"other", DType::Int64, {3}, std::as_bytes(std::span(good))}});
  Diagnostics diags2;
  load_problem(problem_paths(dir), diags2);
  EXPECT_HAS(diags2.str(), "workload.jsonl:2: inputs.idx.tensor_key: no tensor \"idx\" in");

  write_safetensors(tmp.path() / "blobs/idx.safetensors",
                    {{"idx", DType::Int64, {3}, std::as_bytes(std::span(good))}});
  Diagnostics diags3;
  load_problem(problem_paths(dir), diags3);
  EXPECT_TRUE(diags3.empty()) << diags3.str();
}

// tests/data/extra_input/: the bundled RMSNorm problem whose workload line 2 also
// gives a source for "bias", which the definition lacks. SOL-ExecBench ignores it;
// so does load_problem: a warning, no error, and the entry is gone.
TEST(Problem, WorkloadInputTheDefinitionLacksIsAWarningAndDropped) {
  const fs::path dir =
      fs::path(SOLBENCH_SOURCE_DIR) / "tests/data/extra_input/rmsnorm_h4096_extra_input";
  ASSERT_TRUE(is_problem_dir(dir)) << "test problem missing: " << dir;
  Diagnostics diags;
  Problem p = load_problem(problem_paths(dir), diags);
  EXPECT_TRUE(diags.empty()) << "expected no errors, got:\n" << diags.str();
  ASSERT_EQ(diags.warnings().size(), 1u) << diags.str();
  const Diagnostic& w = diags.warnings()[0];
  EXPECT_EQ(w.file, (dir / "workload.jsonl").string());
  EXPECT_EQ(w.line, 2);
  EXPECT_EQ(w.path, "inputs.bias");
  EXPECT_HAS(w.message, "unknown input \"bias\"");
  EXPECT_HAS(w.message, "in workload \"9063bb6e-2f2a-44ab-bf66-64067e3bd69f\"");
  EXPECT_HAS(w.message, "ignored, since the definition has no such input");

  ASSERT_EQ(p.workloads.size(), 3u);
  ASSERT_EQ(p.resolved.size(), 3u);
  for (size_t i = 0; i < 3; ++i) EXPECT_TRUE(p.resolved[i]) << "workload " << i << " unresolved";
  // The loaded workload is as if the entry were not written: no "bias", the
  // definition's inputs in file order, and a trace would not carry it either.
  const Workload& w2 = p.workloads[1];
  EXPECT_EQ(w2.uuid, "9063bb6e-2f2a-44ab-bf66-64067e3bd69f");
  EXPECT_EQ(w2.input("bias"), nullptr);
  ASSERT_EQ(w2.inputs.size(), 2u);
  EXPECT_EQ(w2.inputs[0].first, "hidden_states");
  EXPECT_EQ(w2.inputs[1].first, "weight");
  EXPECT_FALSE(to_json(w2)["inputs"].contains("bias")) << to_json(w2).dump();
  // Equal to line 1 (written without "bias") but for its uuid and axes.
  Workload like_line1 = p.workloads[0];
  like_line1.uuid = w2.uuid;
  like_line1.axes = w2.axes;
  EXPECT_EQ(w2, like_line1) << to_json(w2).dump();
  // Resolution has the definition's inputs only, in argument order.
  ASSERT_EQ(p.resolved[1]->inputs.size(), 2u);
  EXPECT_EQ(p.resolved[1]->inputs[0].name, "hidden_states");
  EXPECT_EQ(p.resolved[1]->inputs[1].name, "weight");
}

TEST(Problem, FindsProblemFoldersRecursively) {
  TempDir tmp;
  make_problem(tmp.path(), "L2/b");
  make_problem(tmp.path(), "L1/a");
  make_problem(tmp.path(), "deep/er/c");
  make_problem(tmp.path(), ".hidden/d");
  fs::create_directories(tmp.path() / "empty");
  auto dirs = find_problem_dirs(tmp.path());
  ASSERT_EQ(dirs.size(), 3u);
  EXPECT_EQ(dirs[0], tmp.path() / "L1/a");
  EXPECT_EQ(dirs[1], tmp.path() / "L2/b");
  EXPECT_EQ(dirs[2], tmp.path() / "deep/er/c");
  EXPECT_TRUE(is_problem_dir(tmp.path() / "L1/a"));
  EXPECT_FALSE(is_problem_dir(tmp.path() / "L1"));
  // A problem folder itself is found too.
  EXPECT_EQ(find_problem_dirs(tmp.path() / "L1/a"), std::vector<fs::path>{tmp.path() / "L1/a"});
  EXPECT_TRUE(find_problem_dirs(tmp.path() / "missing").empty());
}

}  // namespace
}  // namespace solbench
