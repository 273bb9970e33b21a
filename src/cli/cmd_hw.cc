// `solbench hw list` and `solbench hw show NAME`: the hardware models of
// data/hardware/, as tables or JSON.
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli/commands.h"
#include "core/json.h"
#include "sol/hardware.h"

namespace solbench::cli {

namespace {

json model_json(const sol::HardwareModel& m) {
  return {{"name", m.name},
          {"display_name", m.display_name},
          {"architecture", m.architecture},
          {"aliases", m.aliases},
          {"sm_count", m.sm_count},
          {"boost_clock_mhz", m.boost_clock_mhz},
          {"tensor_tflops", m.tensor_tflops},
          {"cuda_core_tflops", m.cuda_core_tflops},
          {"sfu_tops", m.sfu_ops() / 1e12},
          {"dram_bandwidth_gbs", m.dram_bandwidth_gbs},
          {"l2_mb", m.l2_mb},
          {"memory_gb", m.memory_gb},
          {"sources", m.field_sources},
          {"file", m.file.string()}};
}

std::string rate(const std::map<std::string, double>& m, const char* k) {
  auto it = m.find(k);
  return it == m.end() ? "-" : fmt::format("{:g}", it->second);
}

// `s` in at most `width` characters; a cut ends in "...".
std::string fit(const std::string& s, size_t width) {
  return s.size() <= width ? s : s.substr(0, width - 3) + "...";
}

// One row of `hw list`: 98 columns with the widest names (--json has everything
// in full).
constexpr const char* kListRow = "{:<14} {:<32} {:>4} {:>5} {:>6} {:>6} {:>6} {:>6} {:>5} {:>5}\n";

void print_list(const std::vector<sol::HardwareModel>& all, const std::optional<std::string>& gpu,
                const std::optional<sol::HardwareModel>& local) {
  fmt::print("peak rates (dense) in TFLOP/s: tensor cores BF16, FP8, FP4; CUDA cores FP32\n");
  fmt::print(kListRow, "name", "display name", "SMs", "MHz", "BF16", "FP8", "FP4", "FP32", "GB/s",
             "L2_MB");
  for (const auto& m : all) {
    const bool here = local && local->name == m.name;
    fmt::print(kListRow, m.name + (here ? "*" : ""), fit(m.display_name, 32), m.sm_count,
               fmt::format("{:g}", m.boost_clock_mhz), rate(m.tensor_tflops, "bf16"),
               rate(m.tensor_tflops, "fp8"), rate(m.tensor_tflops, "fp4"),
               rate(m.cuda_core_tflops, "fp32"), fmt::format("{:g}", m.dram_bandwidth_gbs),
               fmt::format("{:g}", m.l2_mb));
  }
  fmt::print("detected GPU: {}\n", gpu ? *gpu + (local ? " -> " + local->name + " (*)" : " (no model)")
                                         : "none (NVML absent or no device)");
}

}  // namespace

void add_hw_command(CLI::App& app) {
  auto* hw = app.add_subcommand("hw", "List or show the hardware models used for SOL bounds");
  hw->require_subcommand(1);
  auto json_flag = std::make_shared<bool>(false);
  auto name = std::make_shared<std::string>();

  auto* list = hw->add_subcommand(
      "list", "List the hardware models (and the detected GPU): peak TFLOP/s, DRAM GB/s, L2 MB");
  list->add_flag("--json", *json_flag, "Print JSON");
  list->callback([json_flag] {
    auto all = sol::load_all_hardware();
    auto gpu = sol::detect_gpu_name();
    std::optional<sol::HardwareModel> local;
    if (gpu) local = sol::find_hardware(all, *gpu);
    if (*json_flag) {
      json out = {{"detected_gpu", gpu ? json(*gpu) : json(nullptr)},
                  {"detected_model", local ? json(local->name) : json(nullptr)},
                  {"models", json::array()}};
      for (auto& m : all) out["models"].push_back(model_json(m));
      std::printf("%s\n", out.dump(2).c_str());
      return;
    }
    print_list(all, gpu, local);
  });

  auto* show = hw->add_subcommand(
      "show", "Show one hardware model with the unit and source of every number");
  show->add_option("name", *name, "Model name or alias (e.g. h100_sxm, \"NVIDIA H100 80GB HBM3\"); "
                                  "default: the detected GPU");
  show->add_flag("--json", *json_flag, "Print JSON");
  show->callback([json_flag, name] {
    // An unknown name is a usage error, named as given ("hw show h300: ...").
    sol::HardwareModel m;
    try {
      m = sol::select_hardware(*name, name->empty() ? sol::detect_gpu_name() : std::nullopt,
                               "hw show");
    } catch (const sol::HardwareChoiceError& e) {
      std::fprintf(stderr, "error: %s\n", e.what());
      exit_code() = 2;
      return;
    }
    if (*json_flag) {
      std::printf("%s\n", model_json(m).dump(2).c_str());
      return;
    }
    std::printf("%s (%s, %s)\nfile: %s\naliases:", m.display_name.c_str(), m.name.c_str(),
                m.architecture.c_str(), m.file.string().c_str());
    for (auto& a : m.aliases) std::printf(" \"%s\"", a.c_str());
    std::printf("\n\n%-28s %12s  %s\n", "field", "value", "source");
    auto row = [&](const std::string& field, double v, const char* unit) {
      auto it = m.field_sources.find(field);
      std::printf("%-28s %12s  %s\n", field.c_str(), fmt::format("{:g} {}", v, unit).c_str(),
                  it == m.field_sources.end() ? "" : it->second.c_str());
    };
    row("sm_count", m.sm_count, "");
    row("boost_clock_mhz", m.boost_clock_mhz, "MHz");
    for (auto& [k, v] : m.tensor_tflops) row("tensor_tflops." + k, v, "TFLOP/s");
    for (auto& [k, v] : m.cuda_core_tflops) row("cuda_core_tflops." + k, v, "TFLOP/s");
    row("sfu_ops_per_clock_per_sm", m.sfu_ops_per_clock_per_sm, "");
    std::printf("%-28s %12s  (derived: SFU/clk/SM x SMs x clock)\n", "sfu_rate",
                fmt::format("{:.2f} Tops/s", m.sfu_ops() / 1e12).c_str());
    row("dram_bandwidth_gbs", m.dram_bandwidth_gbs, "GB/s");
    row("l2_mb", m.l2_mb, "MB");
    row("memory_gb", m.memory_gb, "GB");
  });
}

}  // namespace solbench::cli
