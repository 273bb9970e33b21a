// Hardware models: every bundled file loads, sources are enforced, aliases map.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "core/diagnostics.h"
#include "sol/hardware.h"
#include "sol_test_util.h"

namespace solbench::sol {
namespace {

using testing::model;

TEST(Hardware, AllBundledModelsLoadWithSources) {
  auto all = load_all_hardware(std::string(SOLBENCH_SOURCE_DIR) + "/data/hardware");
  std::vector<std::string> names;
  for (auto& m : all) names.push_back(m.name);
  for (const char* want : {"a100_sxm_80gb", "b200", "gb200", "h100_pcie", "h100_sxm", "h200_sxm",
                           "l40s", "rtx_4090", "rtx_5090"})
    EXPECT_NE(std::find(names.begin(), names.end(), want), names.end()) << want;
  for (auto& m : all) {
    EXPECT_GT(m.sm_count, 0) << m.name;
    EXPECT_GT(m.dram_bandwidth_gbs, 0) << m.name;
    // Every number has a URL: sm, clock, sfu, dram, l2, memory + each rate.
    EXPECT_EQ(m.field_sources.size(), 6 + m.tensor_tflops.size() + m.cuda_core_tflops.size()) << m.name;
    for (auto& [f, url] : m.field_sources) EXPECT_EQ(url.rfind("https://", 0), 0u) << m.name << " " << f;
  }
}

TEST(Hardware, H100SxmRatesAndDerivedSfu) {
  HardwareModel h = model("h100_sxm");
  EXPECT_DOUBLE_EQ(h.tensor_flops(MathClass::BF16), 989.4e12);
  EXPECT_DOUBLE_EQ(h.tensor_flops(MathClass::FP8), 1978.9e12);
  // No FP4 on Hopper: falls back to the FP8 rate.
  EXPECT_DOUBLE_EQ(h.tensor_flops(MathClass::FP4), 1978.9e12);
  // The FP32 class of the model is the TF32 rate (the cost model bounds FP32
  // operands at the 16-bit rate instead; see cost_model.cc).
  EXPECT_DOUBLE_EQ(h.tensor_flops(MathClass::FP32), 494.7e12);
  // SFU: 16 per clock per SM x 132 SMs x 1.98 GHz = 4.18176e12 results/s.
  EXPECT_NEAR(h.sfu_ops(), 4.18176e12, 1e6);
  EXPECT_DOUBLE_EQ(h.dram_bytes(), 3.35e12);
}

TEST(Hardware, AliasesAndOverrides) {
  auto all = load_all_hardware(std::string(SOLBENCH_SOURCE_DIR) + "/data/hardware");
  EXPECT_EQ(find_hardware(all, "NVIDIA H100 80GB HBM3")->name, "h100_sxm");
  EXPECT_EQ(find_hardware(all, "NVIDIA H100 PCIe")->name, "h100_pcie");
  EXPECT_EQ(find_hardware(all, "B200")->name, "b200");
  EXPECT_EQ(find_hardware(all, "h200-sxm")->name, "h200_sxm");
  EXPECT_EQ(find_hardware(all, "NVIDIA A100-SXM4-80GB")->name, "a100_sxm_80gb");
  EXPECT_FALSE(find_hardware(all, "Voodoo 2").has_value());
  EXPECT_EQ(select_hardware("rtx-5090").name, "rtx_5090");
  EXPECT_THROW(select_hardware("no_such_gpu"), std::runtime_error);
}

TEST(Hardware, MissingSourceIsRejectedWithFieldPath) {
  json j = json::parse(model("l40s").content);
  j["dram_bandwidth_gbs"].erase("source");
  try {
    parse_hardware(j, "data/hardware/l40s.json");
    FAIL() << "accepted a number without a source";
  } catch (const InputError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("l40s.json"), std::string::npos) << m;
    EXPECT_NE(m.find("dram_bandwidth_gbs.source"), std::string::npos) << m;
  }
  j = json::parse(model("l40s").content);
  j["tensor_tflops"]["fp8"]["source"] = "nowhere";
  EXPECT_THROW(parse_hardware(j, "data/hardware/l40s.json"), InputError);
  j = json::parse(model("l40s").content);
  j["sm_count"]["value"] = -3;
  EXPECT_THROW(parse_hardware(j, "data/hardware/l40s.json"), InputError);
}

TEST(Hardware, UnknownNameIsNamedWhereTypedWithSuggestions) {
  auto all = load_all_hardware(std::string(SOLBENCH_SOURCE_DIR) + "/data/hardware");
  // One typo: "h300" is one letter from the aliases H100 and H200.
  EXPECT_EQ(similar_hardware_names(all, "h300"), (std::vector<std::string>{"h100_sxm", "h200_sxm"}));
  EXPECT_EQ(similar_hardware_names(all, "RTX 4080"), std::vector<std::string>{"rtx_4090"});
  // The start of a model's name.
  EXPECT_EQ(similar_hardware_names(all, "a100_sxm").front(), "a100_sxm_80gb");
  // Nothing close: no guess; a vendor name alone is not the start of a model's name.
  EXPECT_TRUE(similar_hardware_names(all, "Voodoo 2").empty());
  EXPECT_TRUE(similar_hardware_names(all, "nvidia").empty());
  EXPECT_EQ(unknown_hardware_message(all, "h300", "hw show"),
            "hw show h300: unknown hardware model; did you mean h100_sxm or h200_sxm? Known: "
            "a100_sxm_80gb, b200, gb200, h100_pcie, h100_sxm, h200_sxm, l40s, rtx_4090, rtx_5090");
  EXPECT_EQ(unknown_hardware_message(all, "zzz", "--arch"),
            "--arch zzz: unknown hardware model; known: a100_sxm_80gb, b200, gb200, h100_pcie, "
            "h100_sxm, h200_sxm, l40s, rtx_4090, rtx_5090");
  // select_hardware throws the usage error with the place the name came from;
  // with no name and no GPU it asks for one there too.
  try {
    select_hardware("h300", std::nullopt, "hw show");
    FAIL() << "accepted h300";
  } catch (const HardwareChoiceError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("hw show h300: unknown hardware model", 0), 0u) << e.what();
  }
  try {
    select_hardware("", std::nullopt, "hw show");
    FAIL() << "chose a model without a name or a GPU";
  } catch (const HardwareChoiceError& e) {
    EXPECT_NE(std::string(e.what()).find("(hw show NAME)"), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find("--arch"), std::string::npos) << e.what();
  }
  EXPECT_THROW(select_hardware("h300"), HardwareChoiceError);
}

}  // namespace
}  // namespace solbench::sol
