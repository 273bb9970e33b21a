// `solbench hw list` and `solbench hw show NAME`: the hardware models of
// data/hardware/ and the measured ones of <cache>/hardware/, as tables or JSON;
// `solbench hw calibrate`: measures this GPU's or this host's ceilings and writes
// them as a measured model (sol/calibration.h).
#include <cstdio>
#include <ctime>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/chrono.h>
#include <fmt/format.h>

#include "cli/commands.h"
#include "core/device.h"
#include "core/json.h"
#include "harness/timing/gpu/calibrate_gpu.h"
#include "harness/timing/gpu/device.h"
#include "sol/calibrate_cpu.h"
#include "sol/calibration.h"
#include "sol/hardware.h"

namespace solbench::cli {

namespace {

json model_json(const sol::HardwareModel& m) {
  json j = {{"name", m.name},
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
  if (m.measured()) {
    j["calibration"] = m.calibration;
    j["datasheet"] = m.datasheet.empty() ? json(nullptr) : json(m.datasheet);
    j["launch_us"] = m.launch_us;
  }
  return j;
}

// A rate of `m` as a table cell: as written in the model file, or with
// `digits` significant digits (measured rates); "-" where the model has none.
std::string rate(const std::map<std::string, double>& m, const char* k, int digits = 0) {
  auto it = m.find(k);
  if (it == m.end()) return "-";
  return digits > 0 ? fmt::format("{:.{}g}", it->second, digits) : fmt::format("{:g}", it->second);
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

// Measured models: the full name (what --arch takes; a GPU's holds its UUID), the
// date and the measured rates, in at most 100 columns.
constexpr const char* kMeasuredRow = "{:<45} {:<10} {:>4} {:>6} {:>6} {:>6} {:>5} {:>6}\n";

void print_measured_list(const std::vector<sol::HardwareModel>& measured) {
  fmt::print("\nmeasured (solbench hw calibrate) in {}:\n", sol::calibration_dir().string());
  if (measured.empty()) {
    fmt::print("  none\n");
    return;
  }
  fmt::print(kMeasuredRow, "name", "date", "SMs", "BF16", "FP8", "FP32", "GB/s", "launch");
  for (const auto& m : measured)
    fmt::print(kMeasuredRow, m.name, m.calibration.value("date", std::string("?")).substr(0, 10),
               m.sm_count, rate(m.tensor_tflops, "bf16", 3), rate(m.tensor_tflops, "fp8", 3),
               fmt::format("{:.3g}", m.cuda_core_flops(sol::MathClass::FP32) / 1e12),
               fmt::format("{:.0f}", m.dram_bandwidth_gbs),
               m.launch_us > 0 ? fmt::format("{:.2f}us", m.launch_us) : "-");
}

// The newest calibration of a chip whose datasheet model is `name` (hw show of a
// datasheet model shows it beside).
std::optional<sol::HardwareModel> newest_calibration_of(const std::string& name) {
  std::optional<sol::HardwareModel> best;
  for (auto& m : sol::load_calibrations())
    if (m.datasheet == name &&
        (!best || m.calibration.value("date", "") > best->calibration.value("date", "")))
      best = m;
  return best;
}

// The bundled model a measured one was taken beside, if any.
std::optional<sol::HardwareModel> datasheet_of(const sol::HardwareModel& measured) {
  if (measured.datasheet.empty()) return std::nullopt;
  return sol::find_hardware(sol::load_all_hardware(), measured.datasheet);
}

std::string cell(double v, const char* unit) {
  return v > 0 ? fmt::format("{:.4g} {}", v, unit) : "-";
}

// Datasheet and measured numbers side by side, with their ratio and the measured
// number's source (measured, or the datasheet URL it was copied from).
void print_side_by_side(const sol::HardwareModel* ds, const sol::HardwareModel& ms) {
  const auto& cal = ms.calibration;
  std::printf("%s: measured %s on %s (%s)\nfile: %s\n", ms.name.c_str(),
              cal.value("date", "?").c_str(), cal.value("device_name", "?").c_str(),
              cal.value("key", "?").c_str(), ms.file.string().c_str());
  if (cal.contains("driver")) std::printf("driver: %s\n", cal.value("driver", "?").c_str());
  if (cal.contains("clocks") && cal["clocks"].contains("warnings"))
    for (const auto& w : cal["clocks"]["warnings"]) std::printf("clock warning: %s\n", w.get<std::string>().c_str());
  if (!ds) std::printf("no datasheet model for this device: the measured numbers alone\n");
  std::printf("\n%-26s %16s %16s %7s  %s\n", "field", ds ? ds->name.c_str() : "datasheet",
              "measured", "ratio", "source of the measured number");
  auto row = [&](const std::string& field, double d, double m, const char* unit) {
    auto it = ms.field_sources.find(field);
    std::string src = it == ms.field_sources.end() ? "" : it->second;
    if (src.rfind("measured:", 0) == 0) src = "measured";
    std::printf("%-26s %16s %16s %7s  %s\n", field.c_str(), cell(d, unit).c_str(), cell(m, unit).c_str(),
                d > 0 && m > 0 ? fmt::format("{:.2f}", m / d).c_str() : "", src.c_str());
  };
  auto get = [](const std::map<std::string, double>& r, const std::string& k) {
    auto it = r.find(k);
    return it == r.end() ? 0.0 : it->second;
  };
  row("sm_count", ds ? ds->sm_count : 0, ms.sm_count, "");
  row("boost_clock_mhz", ds ? ds->boost_clock_mhz : 0, ms.boost_clock_mhz, "MHz");
  std::map<std::string, double> tensor = ms.tensor_tflops, cuda = ms.cuda_core_tflops;
  if (ds) tensor.insert(ds->tensor_tflops.begin(), ds->tensor_tflops.end());
  if (ds) cuda.insert(ds->cuda_core_tflops.begin(), ds->cuda_core_tflops.end());
  for (auto& [k, v] : tensor)
    row("tensor_tflops." + k, ds ? get(ds->tensor_tflops, k) : 0, get(ms.tensor_tflops, k), "TFLOP/s");
  for (auto& [k, v] : cuda)
    row("cuda_core_tflops." + k, ds ? get(ds->cuda_core_tflops, k) : 0, get(ms.cuda_core_tflops, k), "TFLOP/s");
  row("sfu_ops_per_clock_per_sm", ds ? ds->sfu_ops_per_clock_per_sm : 0, ms.sfu_ops_per_clock_per_sm, "");
  std::printf("%-26s %16s %16s  (derived: SFU/clk/SM x SMs x clock)\n", "sfu_rate",
              ds ? cell(ds->sfu_ops() / 1e12, "Tops/s").c_str() : "-", cell(ms.sfu_ops() / 1e12, "Tops/s").c_str());
  row("dram_bandwidth_gbs", ds ? ds->dram_bandwidth_gbs : 0, ms.dram_bandwidth_gbs, "GB/s");
  row("l2_mb", ds ? ds->l2_mb : 0, ms.l2_mb, "MB");
  row("memory_gb", ds ? ds->memory_gb : 0, ms.memory_gb, "GB");
  if (ms.launch_us > 0) row("launch_us", 0, ms.launch_us, "us");
}


struct CalibrateOptions {
  std::string device;  // "": cuda:0 where a GPU is usable, else cpu
  bool force = false;
  bool json = false;
  bool quick = false;  // hidden: small sizes (tests)
};

// Runs in the CLI process: the micro-benchmarks are solbench's own kernels and
// cuBLASLt from the toolkit; no solution code is loaded, so there is nothing a
// sandboxed child would protect against.
int run_calibrate(const CalibrateOptions& o) {
  std::string text = o.device;
  if (text.empty()) text = gpu::gpu_available() ? "cuda:0" : "cpu";
  const std::optional<Device> device = Device::try_parse(text);
  if (!device) {
    std::fprintf(stderr, "error: hw calibrate --device %s: expected cpu or cuda:N\n", text.c_str());
    return 2;
  }
  std::optional<sol::HardwareModel> cached;
  std::string uuid;
  if (device->is_cuda()) {
    const gpu::DeviceCount n = gpu::device_count();
    if (device->ordinal() >= n.count) {
      std::fprintf(stderr,
                   "error: hw calibrate --device %s: no such GPU here (%s); "
                   "--device cpu measures this host instead\n",
                   text.c_str(),
                   n.count == 0 ? n.reason.c_str() : fmt::format("{} GPU(s)", n.count).c_str());
      return 1;
    }
    uuid = gpu::identify_device(device->ordinal()).uuid;
    cached = sol::find_gpu_calibration(uuid);
  } else {
    cached = sol::find_cpu_calibration();
  }
  // One calibration per device: a second call reuses it unless --force.
  sol::HardwareModel model;
  if (cached && !o.force) {
    model = *cached;
    if (!o.json)
      std::printf("cached: %s (measured %s; --force measures again)\n\n", model.file.c_str(),
                  model.calibration.value("date", "?").c_str());
  } else {
    const auto all = sol::load_all_hardware();
    sol::MeasuredCeilings c;
    if (device->is_cuda()) {
      gpu::GpuCalibrationOptions go;
      go.quick = o.quick;
      if (o.quick) go.budget_s = 0.05;
      if (!o.json) std::fprintf(stderr, "measuring %s (a few seconds; clocks watched, not set)...\n", text.c_str());
      const gpu::GpuCeilings g = gpu::measure_gpu_ceilings(device->ordinal(), go);
      const auto ds = sol::find_hardware(all, g.name);
      c.kind = "gpu";
      c.key = uuid.empty() ? g.uuid : uuid;  // the key the lookup above (and eval) uses
      c.display_name = g.name;
      c.architecture = ds ? ds->architecture : "sm_" + g.compute_capability;
      c.datasheet = ds ? &*ds : nullptr;
      c.units = g.sm_count;
      c.clock_mhz = g.sm_clock_max_mhz > 0 ? g.sm_clock_max_mhz : ds ? ds->boost_clock_mhz : 1000;
      c.l2_mb = g.l2_bytes / (1024.0 * 1024.0);
      c.memory_gb = g.memory_bytes / 1e9;
      c.dram_gbs = g.dram_gbs;
      c.tensor_tflops = g.tensor_tflops;
      c.cuda_core_tflops = {{"fp32", g.fp32_tflops}};
      c.sfu_tops = g.sfu_tops;
      c.launch_us = g.launch_us;
      c.provenance = {{"date", fmt::format("{:%Y-%m-%dT%H:%M:%SZ}", fmt::gmtime(std::time(nullptr)))},
                      {"device", text},
                      {"uuid", c.key},
                      {"compute_capability", g.compute_capability},
                      {"driver", g.driver},
                      {"clocks", g.clocks},
                      {"quick", o.quick},
                      {"measurements", g.detail}};
      model = sol::write_calibration(c);
    } else {
      if (!o.json) std::fprintf(stderr, "measuring this host's CPU (memory bandwidth, FMA rates)...\n");
      sol::CpuCalibrationOptions co;
      co.quick = o.quick;
      model = sol::write_calibration(sol::measure_cpu_ceilings(co));
    }
    if (!o.json) std::printf("wrote %s\n\n", model.file.c_str());
  }
  const std::optional<sol::HardwareModel> ds = datasheet_of(model);
  if (o.json) {
    json out = model_json(model);
    out["cached"] = cached && !o.force;
    std::printf("%s\n", out.dump(2).c_str());
  } else {
    print_side_by_side(ds ? &*ds : nullptr, model);
    std::printf("\nuse it: --arch %s\n", device->is_cpu() ? "cpu" : model.name.c_str());
  }
  return 0;
}

void add_calibrate_command(CLI::App& hw) {
  auto o = std::make_shared<CalibrateOptions>();
  auto* cal = hw.add_subcommand(
      "calibrate",
      "Measure this GPU's (or host's) attainable ceilings: DRAM bandwidth, tensor-core GEMM rates, "
      "FP32/SFU rates, the shortest launch; written as a measured hardware model (cached per device)");
  cal->add_option("--device", o->device, "cpu or cuda:N (default: cuda:0 where a GPU is usable, else cpu)");
  cal->add_flag("--force", o->force, "Measure again even where a calibration of this device exists");
  cal->add_flag("--json", o->json, "Print the measured model as JSON");
  cal->add_flag("--quick", o->quick, "Small sizes (tests)")->group("");
  cal->callback([o] { exit_code() = run_calibrate(*o); });
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
    auto measured = sol::load_calibrations();
    if (*json_flag) {
      json out = {{"detected_gpu", gpu ? json(*gpu) : json(nullptr)},
                  {"detected_model", local ? json(local->name) : json(nullptr)},
                  {"models", json::array()},
                  {"measured", json::array()}};
      for (auto& m : all) out["models"].push_back(model_json(m));
      for (auto& m : measured) out["measured"].push_back(model_json(m));
      std::printf("%s\n", out.dump(2).c_str());
      return;
    }
    print_list(all, gpu, local);
    print_measured_list(measured);
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
    // A measured model beside its datasheet model, and a datasheet model beside
    // its newest calibration.
    std::optional<sol::HardwareModel> ds, ms;
    if (m.measured()) {
      ms = m;
      ds = datasheet_of(m);
    } else {
      ds = m;
      ms = newest_calibration_of(m.name);
    }
    if (*json_flag) {
      json out = model_json(m);
      if (!m.measured() && ms) out["measured"] = model_json(*ms);
      if (m.measured() && ds) out["datasheet_model"] = model_json(*ds);
      std::printf("%s\n", out.dump(2).c_str());
      return;
    }
    if (ms) {
      print_side_by_side(ds ? &*ds : nullptr, *ms);
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

  add_calibrate_command(*hw);
}

}  // namespace solbench::cli
