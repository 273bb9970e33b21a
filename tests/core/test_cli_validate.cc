// `solbench validate` end to end: runs the built binary and checks exit codes,
// stdout, stderr and the --json document.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "core/json.h"
#include "core_test_util.h"

namespace solbench {
namespace {

using testing::TempDir;
using testing::write;

namespace fs = std::filesystem;

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct CliResult {
  int rc = -1;
  std::string out;
  std::string err;
};

// Runs `solbench ARGS` with stdout and stderr captured in files.
CliResult solbench(const TempDir& tmp, const std::string& args) {
  const fs::path out = tmp.path() / "stdout.txt", err = tmp.path() / "stderr.txt";
  std::string cmd = std::string("'") + SOLBENCH_BINARY + "' " + args + " >'" + out.string() +
                    "' 2>'" + err.string() + "'";
  int status = std::system(cmd.c_str());
  CliResult r;
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

const char* kDefinition = R"({
  "name": "add_one", "op_type": "elementwise",
  "axes": {"n": {"type": "var"}, "d": {"type": "const", "value": 1024},
           "half": {"type": "expr", "expression": "d // 2"}},
  "inputs": {"x": {"shape": ["n", "d"], "dtype": "bfloat16"}, "s": {"shape": null, "dtype": "float32"}},
  "outputs": {"y": {"shape": ["n", "half", "2"], "dtype": "float32"}},
  "reference": "def run(x, s):\n    return x + s\n"
})";

const char* kWorkloads =
    "{\"uuid\":\"1234567890abcdef\",\"axes\":{\"n\":512},\"inputs\":{\"x\":{\"type\":\"random\"},"
    "\"s\":{\"type\":\"scalar\",\"value\":1.0}}}\n"
    "{\"uuid\":\"fedcba0987654321\",\"axes\":{\"n\":1},\"inputs\":{\"x\":{\"type\":\"random\"},"
    "\"s\":{\"type\":\"scalar\",\"value\":2}}}\n";

fs::path make_problem(const fs::path& root, const std::string& rel, const std::string& defs = kDefinition,
                      const std::string& workloads = kWorkloads) {
  write(root / rel / "definition.json", defs);
  write(root / rel / "workload.jsonl", workloads);
  return root / rel;
}

std::string quoted(const fs::path& p) { return "'" + p.string() + "'"; }

TEST(CliValidate, ValidProblem) {
  TempDir tmp;
  fs::path dir = make_problem(tmp.path(), "set/L1/add_one");
  CliResult r = solbench(tmp, "validate " + quoted(dir));
  EXPECT_EQ(r.rc, 0) << r.out << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_HAS(r.out, "add_one [elementwise]");
  EXPECT_HAS(r.out, "axes: n=var d=const/1024 half=expr/\"d // 2\"");
  EXPECT_HAS(r.out, "workloads: 2");
  // 512 x 1024 bf16 = 1 MiB in; 512 x 512 x 2 fp32 = 2 MiB out.
  EXPECT_HAS(r.out, "12345678  n=512  in 1.0 MiB  out 2.0 MiB");
  EXPECT_HAS(r.out, "fedcba09  n=1  in 2.0 KiB  out 4.0 KiB");
  EXPECT_HAS(r.out, "validated 1 problem, 2 workloads: all valid");
}

TEST(CliValidate, InvalidProblem) {
  TempDir tmp;
  fs::path dir = make_problem(tmp.path(), "set/L1/add_one", kDefinition,
                              std::string(kWorkloads) + "{\"uuid\":\"x\",\"axes\":{},\"inputs\":{}}\n");
  CliResult r = solbench(tmp, "validate " + quoted(dir));
  EXPECT_EQ(r.rc, 1);
  EXPECT_HAS(r.err, "workload.jsonl:3: axes.n: missing value for var axis \"n\"");
  EXPECT_HAS(r.err, "workload.jsonl:3: inputs.x: missing source for input \"x\"");
  EXPECT_HAS(r.err, "validated 1 problem, 3 workloads: 3 errors (1 invalid problem)");
  EXPECT_HAS(r.out, "INVALID (3 errors)");
  EXPECT_HAS(r.out, "12345678  n=512  in 1.0 MiB");  // the good workloads are still listed
}

TEST(CliValidate, UsageErrors) {
  TempDir tmp;
  EXPECT_EQ(solbench(tmp, "validate --bogus").rc, 2);
  EXPECT_EQ(solbench(tmp, "validate").rc, 2);
  EXPECT_EQ(solbench(tmp, "frobnicate").rc, 2);
  EXPECT_EQ(solbench(tmp, "validate a b --definition-file x.json").rc, 2);
  CliResult help = solbench(tmp, "validate --help");
  EXPECT_EQ(help.rc, 0);
  EXPECT_HAS(help.out, "--json");
}

TEST(CliValidate, MissingFolderIsInvalidInput) {
  TempDir tmp;
  CliResult r = solbench(tmp, "validate " + quoted(tmp.path() / "nope"));
  EXPECT_EQ(r.rc, 1);
  EXPECT_HAS(r.err, "nope: no such file or folder");
  CliResult r2 = solbench(tmp, "validate " + quoted(tmp.path()));
  EXPECT_EQ(r2.rc, 1);
  EXPECT_HAS(r2.err, "no problem folders");
}

TEST(CliValidate, FolderOfProblems) {
  TempDir tmp;
  make_problem(tmp.path(), "set/L1/a");
  make_problem(tmp.path(), "set/L2/b");
  json bad = json::parse(kDefinition);
  bad["axes"]["half"]["expression"] = "d // missing";
  make_problem(tmp.path(), "set/L2/c", bad.dump());
  CliResult r = solbench(tmp, "validate " + quoted(tmp.path() / "set"));
  EXPECT_EQ(r.rc, 1);
  EXPECT_HAS(r.err, "c/definition.json: axes.half.expression: unknown axis \"missing\"");
  EXPECT_HAS(r.err, "validated 3 problems, 6 workloads: 1 error (1 invalid problem)");
  fs::remove_all(tmp.path() / "set/L2/c");
  CliResult ok = solbench(tmp, "validate " + quoted(tmp.path() / "set"));
  EXPECT_EQ(ok.rc, 0) << ok.err;
  EXPECT_HAS(ok.out, "validated 2 problems, 4 workloads: all valid");
}

TEST(CliValidate, JsonOutput) {
  TempDir tmp;
  fs::path dir = make_problem(tmp.path(), "set/L1/add_one");
  CliResult r = solbench(tmp, "validate --json " + quoted(dir));
  EXPECT_EQ(r.rc, 0) << r.err;
  json doc = json::parse(r.out);
  EXPECT_EQ(doc["valid"], true);
  ASSERT_EQ(doc["problems"].size(), 1u);
  const json& p = doc["problems"][0];
  EXPECT_EQ(p["name"], "add_one");
  EXPECT_EQ(p["op_type"], "elementwise");
  EXPECT_EQ(p["workload_count"], 2);
  EXPECT_EQ(p["axes"][1], json::parse(R"({"name":"d","kind":"const","value":1024})"));
  EXPECT_EQ(p["workloads"][0]["uuid"], "1234567890abcdef");
  EXPECT_EQ(p["workloads"][0]["input_bytes"], 1048576);
  EXPECT_EQ(p["workloads"][0]["output_bytes"], 2097152);
  EXPECT_EQ(p["workloads"][0]["axes"], json::parse(R"({"n":512})"));
  EXPECT_EQ(doc["summary"]["errors"], 0);

  write(dir / "workload.jsonl", std::string(kWorkloads) + "{oops\n");
  CliResult bad = solbench(tmp, "validate --json " + quoted(dir));
  EXPECT_EQ(bad.rc, 1);
  json d2 = json::parse(bad.out);
  EXPECT_EQ(d2["valid"], false);
  ASSERT_EQ(d2["errors"].size(), 1u);
  const json& e = d2["errors"][0];
  EXPECT_EQ(e["file"], (dir / "workload.jsonl").string());
  EXPECT_EQ(e["line"], 3);
  EXPECT_EQ(e["path"], "");
  EXPECT_HAS(e["message"].get<std::string>(), "invalid JSON");
  EXPECT_EQ(d2["problems"][0]["errors"].size(), 1u);
}

TEST(CliValidate, ExplicitFilesAndSolution) {
  TempDir tmp;
  fs::path dir = make_problem(tmp.path(), "p");
  write(tmp.path() / "other.jsonl",
        "{\"uuid\":\"a\",\"axes\":{\"n\":4},\"inputs\":{\"x\":{\"type\":\"random\"},"
        "\"s\":{\"type\":\"scalar\",\"value\":0}}}\n");
  CliResult r = solbench(tmp, "validate --definition-file " + quoted(dir / "definition.json") + " --workload-file " +
                            quoted(tmp.path() / "other.jsonl"));
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_HAS(r.out, "workloads: 1");

  json sol = json::parse(R"({"name":"s1","definition":"add_one","author":"me",
    "spec":{"languages":["cpp"],"target_hardware":["cpu"],"entry_point":"k.cc::run",
            "binding":"native"},
    "sources":[{"path":"k.cc","content":"int run();"}]})");
  write(tmp.path() / "solution.json", sol.dump());
  CliResult s = solbench(tmp, "validate " + quoted(dir) + " --solution " + quoted(tmp.path() / "solution.json"));
  EXPECT_EQ(s.rc, 0) << s.err;
  EXPECT_HAS(s.out, "s1 for add_one [cpp] entry k.cc::run");

  sol["definition"] = "other";
  sol["sources"][0]["path"] = "../k.cc";
  write(tmp.path() / "solution.json", sol.dump());
  CliResult bad = solbench(tmp, "validate " + quoted(dir) + " --solution " + quoted(tmp.path() / "solution.json"));
  EXPECT_EQ(bad.rc, 1);
  EXPECT_HAS(bad.err, "solution.json: sources[0].path: unsafe path \"../k.cc\"");
  EXPECT_HAS(bad.err, "solution.json: definition: solution is for \"other\"");

  // A solution alone.
  CliResult alone = solbench(tmp, "validate --solution " + quoted(tmp.path() / "solution.json"));
  EXPECT_EQ(alone.rc, 1);
  EXPECT_HAS(alone.err, "unsafe path");
}

// tests/data/extra_input/: workload line 2 (uuid 9063bb6e-...) also gives a source
// for "bias", which the definition lacks. SOL-ExecBench ignores it: by default a
// warning (exit 0); with --strict the same message is an error (exit 1).
const fs::path kExtraInputProblem =
    fs::path(SOLBENCH_SOURCE_DIR) / "tests/data/extra_input/rmsnorm_h4096_extra_input";

std::string extra_input_message() {
  return (kExtraInputProblem / "workload.jsonl").string() +
         ":2: inputs.bias: unknown input \"bias\" (expected one of: hidden_states, weight) in "
         "workload \"9063bb6e-2f2a-44ab-bf66-64067e3bd69f\": ignored, since the definition has no "
         "such input";
}

TEST(CliValidate, WorkloadInputTheDefinitionLacksIsAWarning) {
  TempDir tmp;
  CliResult r = solbench(tmp, "validate " + quoted(kExtraInputProblem));
  EXPECT_EQ(r.rc, 0) << r.out << r.err;
  EXPECT_HAS(r.err, "warning: " + extra_input_message());
  EXPECT_EQ(r.err.find("error"), std::string::npos) << r.err;
  EXPECT_HAS(r.out, "rmsnorm_llama3_8b_h4096 [rmsnorm]  (1 warning)");
  EXPECT_HAS(r.out, "9063bb6e  batch_size=2  in ");  // the workload itself is valid
  EXPECT_HAS(r.out, "validated 1 problem, 3 workloads: all valid, 1 warning (ignored; --strict "
                    "makes them errors)");
}

TEST(CliValidate, StrictMakesTheWarningAnError) {
  TempDir tmp;
  CliResult r = solbench(tmp, "validate --strict " + quoted(kExtraInputProblem));
  EXPECT_EQ(r.rc, 1) << r.out << r.err;
  EXPECT_HAS(r.err, extra_input_message());
  EXPECT_EQ(r.err.find("warning"), std::string::npos) << "expected errors only:\n" << r.err;
  EXPECT_HAS(r.err, "validated 1 problem, 3 workloads: 1 error (1 invalid problem)");
  EXPECT_HAS(r.out, "INVALID (1 error)");
  EXPECT_HAS(r.out, "9063bb6e  batch_size=2  (invalid)");
  EXPECT_HAS(r.out, "71630508  batch_size=1  in ");  // the other lines stay valid

  // --strict changes nothing for a clean problem.
  fs::path clean = make_problem(tmp.path(), "set/L1/add_one");
  CliResult ok = solbench(tmp, "validate --strict " + quoted(clean));
  EXPECT_EQ(ok.rc, 0) << ok.err;
  EXPECT_HAS(ok.out, "validated 1 problem, 2 workloads: all valid");
}

TEST(CliValidate, JsonReportsWarnings) {
  TempDir tmp;
  CliResult r = solbench(tmp, "validate --json " + quoted(kExtraInputProblem));
  EXPECT_EQ(r.rc, 0) << r.err;
  json doc = json::parse(r.out);
  EXPECT_EQ(doc["valid"], true);
  EXPECT_EQ(doc["strict"], false);
  EXPECT_EQ(doc["errors"], json::array());
  ASSERT_EQ(doc["warnings"].size(), 1u) << doc.dump(2);
  const json& w = doc["warnings"][0];
  EXPECT_EQ(w["file"], (kExtraInputProblem / "workload.jsonl").string());
  EXPECT_EQ(w["line"], 2);
  EXPECT_EQ(w["path"], "inputs.bias");
  EXPECT_EQ(w["severity"], "warning");
  EXPECT_HAS(w["message"].get<std::string>(), "9063bb6e-2f2a-44ab-bf66-64067e3bd69f");
  EXPECT_EQ(doc["summary"]["warnings"], 1);
  EXPECT_EQ(doc["summary"]["errors"], 0);
  const json& p = doc["problems"][0];
  EXPECT_EQ(p["valid"], true);
  EXPECT_EQ(p["warnings"], doc["warnings"]);
  EXPECT_EQ(p["workloads"][1]["valid"], true);

  CliResult s = solbench(tmp, "validate --json --strict " + quoted(kExtraInputProblem));
  EXPECT_EQ(s.rc, 1) << s.err;
  json sdoc = json::parse(s.out);
  EXPECT_EQ(sdoc["valid"], false);
  EXPECT_EQ(sdoc["strict"], true);
  EXPECT_EQ(sdoc["warnings"], json::array());
  ASSERT_EQ(sdoc["errors"].size(), 1u) << sdoc.dump(2);
  EXPECT_EQ(sdoc["errors"][0]["severity"], "error");
  EXPECT_EQ(sdoc["errors"][0]["message"], w["message"]);  // the same message
  EXPECT_EQ(sdoc["summary"]["errors"], 1);
  EXPECT_EQ(sdoc["problems"][0]["valid"], false);
  EXPECT_EQ(sdoc["problems"][0]["workloads"][1]["valid"], false);
  EXPECT_EQ(sdoc["problems"][0]["workloads"][0]["valid"], true);
}

}  // namespace
}  // namespace solbench

namespace solbench {
namespace {

// A problem y[n, 8192] = run(x[n, 8192]) (float32) with one workload (n = 4).
fs::path probe_problem(const fs::path& root, const std::string& name, const std::string& reference) {
  json def = {{"name", name},
              {"axes", {{"n", {{"type", "var"}}}, {"d", {{"type", "const"}, {"value", 8192}}}}},
              {"inputs", {{"x", {{"shape", json::array({"n", "d"})}, {"dtype", "float32"}}}}},
              {"outputs", {{"y", {{"shape", json::array({"n", "d"})}, {"dtype", "float32"}}}}},
              {"reference", reference}};
  return make_problem(root, "set/" + name, def.dump(2),
                      "{\"uuid\":\"0123456789abcdef\",\"axes\":{\"n\":4},"
                      "\"inputs\":{\"x\":{\"type\":\"random\"}}}\n");
}

TEST(CliValidate, ProbeToleranceWarnsWhereAnOutputComputingNothingPasses) {
  TempDir tmp;
  // Probed in folder order; the slow one first, so the others show that the probe
  // process is started again after a timeout.
  probe_problem(tmp.path(), "a_slow", "import time\ndef run(x):\n    time.sleep(60)\n    return x\n");
  probe_problem(tmp.path(), "b_softmax",
                "import torch\ndef run(x):\n    return torch.softmax(x, dim=-1)\n");
  probe_problem(tmp.path(), "c_copy",  // written for a GPU: "cuda" is mapped to the CPU
                "import torch\ndef run(x):\n    return x * torch.ones(1, device='cuda') * 1.001\n");
  probe_problem(tmp.path(), "d_zero", "import torch\ndef run(x):\n    return torch.zeros_like(x)\n");
  probe_problem(tmp.path(), "e_strong", "def run(x):\n    return x * 2.0 + 1.0\n");
  probe_problem(tmp.path(), "f_gpu_only",
                "import torch\ndef run(x):\n    torch.cuda.get_device_name(0)\n    return x\n");
  const fs::path set = tmp.path() / "set";
  CliResult r = solbench(tmp, "validate --json --probe-tolerance --probe-timeout 5 " + quoted(set));
  if (r.out.find("built without embedded Python") != std::string::npos)
    GTEST_SKIP() << "solbench was built without embedded Python";
  ASSERT_EQ(r.rc, 0) << r.out << r.err;  // warnings only
  json doc = json::parse(r.out);
  ASSERT_EQ(doc["problems"].size(), 6u);
  auto probe_of = [&](size_t i) { return doc["problems"][i]["tolerance_probe"]["workloads"][0]; };
  auto warnings_of = [&](size_t i) { return probe_of(i)["warnings"].dump(); };

  EXPECT_EQ(probe_of(0)["status"], "not_checked");
  EXPECT_HAS(probe_of(0)["reason"].get<std::string>(), "did not finish within 5 s");
  // Softmax rows of 8192 are ~1e-4 each: below atol, so anything near zero passes,
  // though not exactly zero (the all-zero rule).
  EXPECT_EQ(probe_of(1)["status"], "checked");
  EXPECT_EQ(probe_of(1)["weak"], true);
  EXPECT_HAS(warnings_of(1), "weak tolerance: output 'y' passes the correctness check as every "
                             "element 1.18e-38 (zeros that are not all zero)");
  EXPECT_EQ(warnings_of(1).find("all zeros ("), std::string::npos) << warnings_of(1);
  EXPECT_HAS(warnings_of(2), "passes the correctness check as a copy of input 'x'");
  EXPECT_EQ(probe_of(2)["cuda_mapped_to_cpu"], true);
  EXPECT_EQ(probe_of(2)["all_outputs_weak"], true);
  EXPECT_HAS(warnings_of(3), "passes the correctness check as all zeros");
  EXPECT_EQ(probe_of(4)["status"], "checked");
  EXPECT_EQ(probe_of(4)["weak"], false) << probe_of(4).dump(2);
  EXPECT_EQ(probe_of(5)["status"], "not_checked");
  EXPECT_HAS(probe_of(5)["reason"].get<std::string>(), "needs a GPU");
  EXPECT_EQ(doc["summary"]["probed_workloads"], 4);
  EXPECT_EQ(doc["summary"]["weak_workloads"], 3);
  // Each weak workload is a validation warning at its workload line.
  ASSERT_EQ(doc["warnings"].size(), 3u) << doc["warnings"].dump(2);
  EXPECT_EQ(doc["warnings"][0]["path"], "tolerance");
  EXPECT_EQ(doc["warnings"][0]["line"], 1);
  EXPECT_EQ(doc["warnings"][0]["file"], (set / "b_softmax" / "workload.jsonl").string());

  // Text: the summary and the warning under the problem; --strict fails it.
  CliResult t = solbench(tmp, "validate --probe-tolerance --strict " + quoted(set / "c_copy"));
  EXPECT_EQ(t.rc, 1) << t.out << t.err;
  EXPECT_HAS(t.out, "tolerance probe: 1 checked (1 weak)");
  EXPECT_HAS(t.err, "workload.jsonl:1: tolerance: weak tolerance: output 'y' passes the "
                    "correctness check as a copy of input 'x': 100% of elements within atol "
                    "0.01, rtol 0.01 (99% required)");
  // Without the flag nothing runs.
  CliResult plain = solbench(tmp, "validate --json " + quoted(set / "c_copy"));
  EXPECT_EQ(plain.rc, 0);
  EXPECT_FALSE(json::parse(plain.out)["problems"][0].contains("tolerance_probe"));
}

TEST(CliValidate, ProbeToleranceChoosesWorkloadsBySize) {
  TempDir tmp;
  fs::path dir = probe_problem(tmp.path(), "sizes", "def run(x):\n    return x * 2.0 + 1.0\n");
  std::string lines;
  for (int n : {64, 1, 16, 4, 256})  // 2 MiB each of input and output at n = 64
    lines += "{\"uuid\":\"w" + std::to_string(n) + "\",\"axes\":{\"n\":" + std::to_string(n) +
             "},\"inputs\":{\"x\":{\"type\":\"random\"}}}\n";
  write(dir / "workload.jsonl", lines);
  CliResult r = solbench(tmp, "validate --json --probe-tolerance --probe-workloads 3 "
                              "--probe-max-mib 5 " + quoted(dir));
  if (r.out.find("built without embedded Python") != std::string::npos)
    GTEST_SKIP() << "solbench was built without embedded Python";
  ASSERT_EQ(r.rc, 0) << r.out << r.err;
  const json probe = json::parse(r.out)["problems"][0]["tolerance_probe"];
  std::map<std::string, std::string> status;
  for (const auto& w : probe["workloads"]) status[w["uuid"]] = w["status"].get<std::string>();
  // n = 256 (16 MiB) is above the limit; of the other four by size, the smallest,
  // the largest and one between.
  EXPECT_EQ(status["w256"], "skipped");
  EXPECT_EQ(status["w1"], "checked");
  EXPECT_EQ(status["w64"], "checked");
  EXPECT_EQ(status["w4"], "checked");
  EXPECT_EQ(status["w16"], "skipped");
  EXPECT_EQ(probe["checked"], 3);
  EXPECT_EQ(probe["skipped"], 2);
  EXPECT_HAS(probe["workloads"][4]["reason"].get<std::string>(),
             "above --probe-max-mib: inputs and outputs take 16 MiB, the limit is 5 MiB");
  EXPECT_HAS(probe["workloads"][2]["reason"].get<std::string>(),
             "not chosen: --probe-workloads 3 of 4 per problem");
}

}  // namespace
}  // namespace solbench
