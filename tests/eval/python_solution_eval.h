// A Python (pytorch-language) solution of the bundled RMSNorm problem, written by a
// test and evaluated through the real binary on the CPU, with its own cache,
// staging folder and copy of the problem. Shared by the sandbox and reward-hack
// tests: each solution computes a correct RMSNorm around what it probes, so a
// probe that wrongly succeeded would read PASSED.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/json.h"
#include "harness/worker/landlock.h"
#include "test_support.h"

namespace solbench::testing {

namespace fs = std::filesystem;

inline const char* kRmsnormDef = "001_rmsnorm_llama3_8b_h4096";
// Workloads of the RMSNorm problem: batch_size 1 and 2.
inline const char* kB1 = "71630508";
inline const char* kB2 = "9063bb6e";
inline const std::string kFast = " --rounds 1 --time-budget-ms 20 ";

// A correct RMSNorm after `prelude` (module level) and `in_call` (inside run(),
// before the computation); `after` runs on `out` before it is returned.
inline std::string pytorch_source(const std::string& prelude, const std::string& in_call,
                                  const std::string& after = "") {
  return "import os, subprocess, sys, torch\n" + prelude +
         "\n\ndef run(hidden_states, weight):\n" + in_call +
         "\n    x = hidden_states.float()\n"
         "    inv = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + 1e-5)\n"
         "    out = (x * inv * weight.float()).to(hidden_states.dtype)\n" + after +
         "\n    return out\n";
}

// The solution document of a pytorch-language RMSNorm whose main.py is `code`.
inline json python_solution_json(const std::string& name, const std::string& code) {
  return {{"name", name},
          {"definition", kRmsnormDef},
          {"author", "test"},
          {"spec",
           {{"languages", {"pytorch"}},
            {"target_hardware", {"cpu"}},
            {"entry_point", "main.py::run"},
            {"destination_passing_style", false}}},
          {"sources", {{{"path", "main.py"}, {"content", code}}}}};
}

class PythonSolutionEval : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(dir_ / "cache");
    fs::create_directories(dir_ / "staging");
    // A copy of the problem: the tests check that it stays unchanged.
    problem_ = dir_ / "problem";
    fs::create_directories(problem_);
    for (const char* f : {"definition.json", "workload.jsonl"})
      fs::copy_file(fs::path(SOLBENCH_SOURCE_DIR) / "problems" / kRmsnormDef / f, problem_ / f);
  }

  fs::path solution(const std::string& name, const std::string& code) {
    const fs::path p = dir_ / (name + ".json");
    std::ofstream(p) << python_solution_json(name, code).dump(2);
    return p;
  }

  // `sol` empty: the definition's reference as the solution (--reference).
  json eval(const fs::path& sol, const std::string& workloads = std::string(" -w ") + kB1,
            const std::string& flags = kFast) {
    const fs::path out = dir_ / "stdout.txt", err = dir_ / "stderr.txt";
    std::string cmd = "SOLBENCH_CACHE_DIR='" + (dir_ / "cache").string() +
                      "' SOLBENCH_STAGING_DIR='" + (dir_ / "staging").string() + "' '" +
                      SOLBENCH_BINARY + "' eval '" + problem_.string() + "'" +
                      (sol.empty() ? std::string(" --reference") : " -s '" + sol.string() + "'") +
                      workloads + flags + " --json >'" + out.string() + "' 2>'" +
                      err.string() + "'";
    (void)std::system(cmd.c_str());
    json doc = json::parse(read(out), nullptr, false);
    EXPECT_TRUE(doc.is_object()) << read(out) << read(err);
    return doc.is_object() ? doc : json::object();
  }

  static std::string status(const json& doc, size_t i = 0) {
    return doc.at("results").at(i).at("evaluation").at("status").get<std::string>();
  }
  static std::string log(const json& doc, size_t i = 0) {
    return doc.at("results").at(i).at("evaluation").at("log").get<std::string>();
  }
  static bool landlock() { return harness::landlock_abi() > 0; }

  TempDir tmp_;
  fs::path dir_ = tmp_.path();
  fs::path problem_;
};

}  // namespace solbench::testing
