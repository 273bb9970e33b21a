// What a user meets at `solbench sol` and `solbench hw`, through the binary: a
// problem that does not load, --workload as `eval -w` takes it, unknown hardware
// models (exit 2, named where they were typed), the table's units and columns,
// and `hw list` in 100 columns.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "core/json.h"
#include "sol/hardware.h"
#include "sol/sol_cli_util.h"
#include "test_support.h"

namespace solbench::sol {
namespace {

namespace fs = std::filesystem;
using solbench::testing::TempDir;

using solbench::sol::testing::CliRun;
using solbench::sol::testing::solbench;

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

// A problem whose reference is `op` (torch.exp unless said) over n fp32 values,
// workloads n = 1024 and 4096 with uuids NAME-1024, NAME-4096.
void write_problem(const fs::path& dir, const std::string& name,
                   const std::string& op = "torch.exp") {
  json def = {{"name", name},
              {"op_type", "test"},
              {"axes", {{"n", {{"type", "var"}}}}},
              {"inputs", {{"x", {{"shape", {"n"}}, {"dtype", "float32"}}}}},
              {"outputs", {{"y", {{"shape", {"n"}}, {"dtype", "float32"}}}}},
              {"reference", "import torch\n\ndef run(x):\n    return " + op + "(x)\n"}};
  solbench::testing::write(dir / "definition.json", def.dump(4));
  std::string wl;
  for (int n : {1024, 4096})
    wl += json{{"uuid", name + "-" + std::to_string(n)},
               {"axes", {{"n", n}}},
               {"inputs", {{"x", {{"type", "random"}}}}}}
              .dump() +
          "\n";
  solbench::testing::write(dir / "workload.jsonl", wl);
}

TEST(SolCli, ProblemThatDoesNotLoadShowsTheLoaderErrorOnceAndTheOthersGoOn) {
  TempDir t;
  write_problem(t.path() / "set" / "900_broken", "900_broken");
  write_problem(t.path() / "set" / "901_exp", "901_exp");
  // A doubled comma after the name: invalid JSON on the name's line.
  const fs::path broken = t.path() / "set" / "900_broken" / "definition.json";
  std::string def = solbench::testing::read(broken);
  const size_t at = def.find("\"900_broken\",");
  ASSERT_NE(at, std::string::npos) << def;
  def.insert(at + 13, ",");
  solbench::testing::write(broken, def);
  const std::string where = "900_broken/definition.json:" +
                            std::to_string(std::count(def.begin(), def.begin() + long(at), '\n') + 1) +
                            ": invalid JSON at column";
  const std::string set = "'" + (t.path() / "set").string() + "'";

  const CliRun validate = solbench("validate " + set, t.path());
  EXPECT_HAS(validate.out + validate.err, where);

  const CliRun r = solbench("sol " + set + " --arch b200", t.path());
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  // The error validate shows, with file and line, once; no line per workload.
  EXPECT_EQ(count(r.err, where), 1u) << r.err;
  EXPECT_EQ(r.err.find("does not resolve"), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("does not resolve"), std::string::npos) << r.out;
  // The next problem is bounded (or says why not) all the same.
  EXPECT_HAS(r.out, "901_exp");
  EXPECT_HAS(r.out, "901_exp-");
  EXPECT_HAS(r.out, "1 problem(s) did not load in full");

  const CliRun j = solbench("sol " + set + " --arch b200 --json", t.path());
  EXPECT_EQ(j.exit_code, 1);
  const json doc = json::parse(j.out);
  ASSERT_EQ(doc["problems"].size(), 2u) << j.out;
  EXPECT_EQ(doc["problems"][0]["errors"].size(), 1u) << doc["problems"][0].dump();
  EXPECT_EQ(doc["problems"][0]["workloads"].size(), 0u);
  EXPECT_EQ(doc["problems"][1]["workloads"].size(), 2u);
  EXPECT_EQ(doc["summary"]["not_loaded"], 1);
}

TEST(SolCli, SlotsForkTheirTracersFromOneZygoteAndBoundAsExecdOnes) {
  // Two problems of two workloads each, with different references (no request is
  // shared), traced by two slots.
  TempDir t;
  write_problem(t.path() / "set" / "910_exp", "910_exp");
  write_problem(t.path() / "set" / "911_sin", "911_sin", "torch.sin");
  const std::string cmd = "sol '" + (t.path() / "set").string() + "' --arch b200 -j 2 --json";
  auto bounds = [](const json& doc) {
    std::vector<double> us;
    for (const auto& p : doc["problems"])
      for (const auto& w : p["workloads"]) us.push_back(w.value("time_us", json::object()).value("sol", -1.0));
    return us;
  };

  const CliRun forked = solbench(cmd, t.path());  // an empty cache, which it fills
  ASSERT_EQ(forked.exit_code, 0) << forked.err;
  const json f = json::parse(forked.out);
  EXPECT_EQ(f["summary"]["bounded"], 4) << forked.out;
  EXPECT_EQ(f["summary"]["tracer_launches"], (json{{"zygote", 2}})) << f["summary"].dump();

  ::setenv("SOLBENCH_ZYGOTE", "0", 1);  // the zygote off: every tracer exec'd
  const CliRun execd = solbench(cmd + " --no-cache", t.path());
  ::unsetenv("SOLBENCH_ZYGOTE");
  ASSERT_EQ(execd.exit_code, 0) << execd.err;
  const json e = json::parse(execd.out);
  EXPECT_EQ(e["summary"]["tracer_launches"], (json{{"exec", 2}})) << e["summary"].dump();
  EXPECT_EQ(bounds(e), bounds(f));
  EXPECT_EQ(bounds(f).size(), 4u);

  // From the cache (the first run wrote it): no tracer, so no zygote either.
  const CliRun cached = solbench(cmd, t.path());
  ASSERT_EQ(cached.exit_code, 0) << cached.err;
  const json c = json::parse(cached.out);
  EXPECT_EQ(c["summary"]["cached"], 4) << c["summary"].dump();
  EXPECT_EQ(c["summary"]["tracer_launches"], json::object());
  EXPECT_EQ(bounds(c), bounds(f));
}

TEST(SolCli, WorkloadIsAUuidOrAUniquePrefixAndElseAUsageError) {
  TempDir t;
  write_problem(t.path() / "set" / "900_a", "900_a");
  write_problem(t.path() / "set" / "901_b", "901_b");
  const std::string set = "sol '" + (t.path() / "set").string() + "' --arch b200 --json";

  CliRun r = solbench(set + " --workload deadbeef", t.path());
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_HAS(r.err, "--workload: no workload with uuid (or uuid prefix) \"deadbeef\"");
  EXPECT_EQ(r.out, "");  // refused before anything was bounded
  // "90" starts all four uuids; a prefix must be unique over all the problems.
  r = solbench(set + " --workload 90", t.path());
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_HAS(r.err, "uuid prefix \"90\" is ambiguous");

  // A unique prefix and a whole uuid, each in its own problem (-w as in eval;
  // --timeout 0 is no limit).
  r = solbench(set + " -w 901_b-4 --workload 900_a-1024 --timeout 0", t.path());
  ASSERT_NE(r.exit_code, 2) << r.err;
  const json doc = json::parse(r.out);
  EXPECT_EQ(doc["summary"]["timeout_s"], 0.0);
  std::vector<std::string> chosen;
  for (const auto& p : doc["problems"])
    for (const auto& w : p["workloads"]) chosen.push_back(w["uuid"]);
  EXPECT_EQ(chosen, (std::vector<std::string>{"900_a-1024", "901_b-4096"}));
}

TEST(SolCli, UnknownHardwareIsAUsageErrorNamedWhereItWasTyped) {
  TempDir t;
  // Checked before anything else: the folder does not even exist.
  CliRun r = solbench("sol /no/such/folder --arch h300", t.path());
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.err.rfind("error: --arch h300: unknown hardware model; did you mean h100_sxm or "
                        "h200_sxm? Known: a100_sxm_80gb, ",
                        0),
            0u)
      << r.err;

  r = solbench("hw show h300", t.path());
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.err.rfind("error: hw show h300: unknown hardware model; did you mean", 0), 0u) << r.err;
  EXPECT_EQ(r.err.find("--arch"), std::string::npos) << r.err;  // not given, so not blamed
  EXPECT_EQ(r.out, "");

  // eval and report say the same through the same function.
  const std::string problem = "'" SOLBENCH_SOURCE_DIR "/problems/002_swiglu_activation_llama3_8b'";
  r = solbench("eval " + problem + " --reference --no-db --arch h300", t.path());
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_HAS(r.err, "--arch h300: unknown hardware model; did you mean h100_sxm or h200_sxm?");
  r = solbench("report -o '" + (t.path() / "report.html").string() + "' --arch h300", t.path());
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_HAS(r.err, "--arch h300: unknown hardware model; did you mean h100_sxm or h200_sxm?");
}

TEST(SolCli, TableTimesInMicrosecondsAndBytesAreTheDramTermsBytes) {
  TempDir t;
  const HardwareModel hw =
      load_hardware(std::string(SOLBENCH_SOURCE_DIR) + "/data/hardware/h100_sxm.json");
  const CliRun r = solbench("sol '" SOLBENCH_SOURCE_DIR "/problems/002_swiglu_activation_llama3_8b' --arch h100_sxm",
                         t.path());
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_HAS(r.out, "T_SOL_us");
  EXPECT_HAS(r.out, "DRAM_MB");
  EXPECT_HAS(r.out, "TC_GFLOP");
  // A bound in microseconds: 4 significant digits in fixed notation (more for
  // integers of 5 digits and up).
  const std::regex four_digits(
      R"(0\.0*[1-9]\d{3}|[1-9]\.\d{3}|[1-9]\d\.\d{2}|[1-9]\d{2}\.\d|[1-9]\d{3,})");
  const double tbs = hw.dram_bandwidth_gbs / 1000;  // MB / us = TB/s
  size_t memory_bound = 0;
  for (const std::string& line : lines(r.out)) {
    if (line.rfind("  ", 0) != 0) continue;  // rows are indented; the legend is not
    std::istringstream in(line);
    std::vector<std::string> cells;
    for (std::string c; in >> c;) cells.push_back(c);
    // ... TC_GFLOP CC_GFLOP SFU_Gop DRAM_MB T_SOL_us bound mode
    size_t b = 0;
    while (b < cells.size() && cells[b] != "dram" && cells[b] != "tensor" && cells[b] != "cuda" &&
           cells[b] != "sfu")
      ++b;
    if (b < 5 || b == cells.size() || cells[0] == "workload") continue;
    const std::string& mb = cells[b - 2];
    const std::string& us = cells[b - 1];
    EXPECT_TRUE(std::regex_match(us, four_digits)) << line;
    EXPECT_EQ(cells[b - 5], "-") << "no tensor-core work in a SwiGLU: " << line;
    if (cells[b] != "dram") continue;
    ++memory_bound;
    // T_SOL is the DRAM term: bytes / bandwidth. The printed bytes over the
    // printed time is the bandwidth, within the rounding of 4 digits each.
    const double implied = std::stod(mb) / std::stod(us);
    EXPECT_LE(implied, tbs * 1.001) << line;
    EXPECT_GE(implied, tbs * 0.999) << line;
  }
  EXPECT_GT(memory_bound, 10u) << r.out;
}

TEST(HwCli, ListFitsIn100ColumnsAndJsonKeepsEveryName) {
  TempDir t;
  const CliRun r = solbench("hw list", t.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const std::string& line : lines(r.out)) EXPECT_LE(line.size(), 100u) << line;
  EXPECT_HAS(r.out, "NVIDIA GB200 (Blackwell GPU i...");  // cut, marked
  EXPECT_HAS(r.out, "TFLOP/s");
  const CliRun j = solbench("hw list --json", t.path());
  ASSERT_EQ(j.exit_code, 0) << j.err;
  EXPECT_HAS(j.out, "NVIDIA GB200 (Blackwell GPU in GB200 NVL72, 1200 W)");
}

TEST(SolCli, HelpSaysTheUnits) {
  TempDir t;
  const CliRun sol = solbench("sol --help", t.path());
  EXPECT_HAS(sol.out, "microseconds");
  EXPECT_HAS(sol.out, "GFLOP");
  EXPECT_HAS(sol.out, "Seconds one workload's trace may take");
  const CliRun hw = solbench("hw list --help", t.path());
  EXPECT_HAS(hw.out, "TFLOP/s");
}

}  // namespace
}  // namespace solbench::sol
