#include "sol/calibration.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <fstream>

#include "core/settings.h"

namespace solbench::sol {

namespace fs = std::filesystem;

namespace {

constexpr const char* kMeasuredSource = "measured";

std::string sanitise(const std::string& s) {
  std::string out;
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    out += (std::isalnum(u) || c == '-' || c == '_') ? char(std::tolower(u)) : '_';
  }
  return out;
}

json value(double v, const std::string& source) { return {{"value", v}, {"source", source}}; }

}  // namespace

std::string local_host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0 || buf[0] == 0) return "localhost";
  return buf;
}

std::string calibration_name(const std::string& kind, const std::string& key) {
  return sanitise(kind + "_" + key);
}

fs::path calibration_dir() {
  const fs::path home = settings().cache_home();
  return (home.empty() ? fs::path("/tmp/.cache/solbench") : home) / "hardware";
}

json calibration_json(const MeasuredCeilings& c) {
  const std::string name = calibration_name(c.kind, c.key);
  json sources = {{kMeasuredSource, "measured: solbench hw calibrate on " + c.display_name +
                                        " (" + c.key + ")"}};
  // A datasheet URL keeps its own key, so a copied number still says where it is from.
  std::map<std::string, std::string> url_keys;
  auto copied = [&](const std::string& field, double v) {
    const auto it = c.datasheet->field_sources.find(field);
    if (it == c.datasheet->field_sources.end()) return value(v, kMeasuredSource);
    auto [k, fresh] = url_keys.emplace(it->second, "datasheet_" + std::to_string(url_keys.size() + 1));
    if (fresh) sources[k->second] = it->second;
    return value(v, k->second);
  };
  json j = {{"name", name},
            {"display_name", c.display_name + " (measured)"},
            {"architecture", c.architecture},
            {"aliases", json::array({c.key})},
            {"calibration", c.provenance}};
  j["calibration"]["kind"] = c.kind;
  j["calibration"]["key"] = c.key;
  j["calibration"]["device_name"] = c.display_name;
  if (c.datasheet) j["datasheet"] = c.datasheet->name;
  j["sm_count"] = value(c.units, kMeasuredSource);
  j["boost_clock_mhz"] = value(c.clock_mhz, kMeasuredSource);
  // Rates: measured where measured, else the datasheet's (with its URL).
  json tensor = json::object(), cuda = json::object();
  if (c.datasheet) {
    for (const auto& [k, v] : c.datasheet->tensor_tflops) tensor[k] = copied("tensor_tflops." + k, v);
    for (const auto& [k, v] : c.datasheet->cuda_core_tflops)
      cuda[k] = copied("cuda_core_tflops." + k, v);
  }
  for (const auto& [k, v] : c.tensor_tflops) tensor[k] = value(v, kMeasuredSource);
  for (const auto& [k, v] : c.cuda_core_tflops) cuda[k] = value(v, kMeasuredSource);
  j["tensor_tflops"] = tensor;
  j["cuda_core_tflops"] = cuda;
  // The model stores SFU ops per clock per SM; a measured rate is divided back so
  // that sfu_ops() returns it.
  const double per_clock = c.units > 0 && c.clock_mhz > 0 ? c.sfu_tops * 1e12 / (c.units * c.clock_mhz * 1e6) : 0;
  if (per_clock > 0)
    j["sfu_ops_per_clock_per_sm"] = value(per_clock, kMeasuredSource);
  else if (c.datasheet)
    j["sfu_ops_per_clock_per_sm"] = copied("sfu_ops_per_clock_per_sm", c.datasheet->sfu_ops_per_clock_per_sm);
  j["dram_bandwidth_gbs"] = value(c.dram_gbs, kMeasuredSource);
  j["l2_mb"] = value(c.l2_mb, kMeasuredSource);
  j["memory_gb"] = value(c.memory_gb, kMeasuredSource);
  if (c.launch_us > 0) j["launch_us"] = value(c.launch_us, kMeasuredSource);
  j["sources"] = sources;
  return j;
}

HardwareModel write_calibration(const MeasuredCeilings& c, const fs::path& dir) {
  const json j = calibration_json(c);
  fs::create_directories(dir);
  const fs::path file = dir / (j["name"].get<std::string>() + ".json");
  // Write-then-rename: a concurrent reader sees the old model or the new one.
  const fs::path tmp = file.string() + ".tmp" + std::to_string(getpid());
  {
    std::ofstream out(tmp);
    out << j.dump(1) << "\n";
    if (!out) throw std::runtime_error("cannot write " + tmp.string());
  }
  fs::rename(tmp, file);
  return load_hardware(file);
}

std::vector<HardwareModel> load_calibrations(const fs::path& dir) {
  std::vector<HardwareModel> out;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return out;
  for (auto& e : fs::directory_iterator(dir, ec)) {
    if (e.path().extension() != ".json") continue;
    try {
      HardwareModel m = load_hardware(e.path());
      if (m.measured()) out.push_back(std::move(m));
    } catch (const std::exception& err) {
      std::fprintf(stderr, "warning: skipping the calibration %s: %s\n", e.path().c_str(), err.what());
    }
  }
  std::sort(out.begin(), out.end(), [](auto& a, auto& b) { return a.name < b.name; });
  return out;
}

namespace {
std::optional<HardwareModel> load_if_present(const fs::path& file) {
  std::error_code ec;
  if (!fs::is_regular_file(file, ec)) return std::nullopt;
  try {
    HardwareModel m = load_hardware(file);
    if (m.measured()) return m;
  } catch (const std::exception& err) {
    std::fprintf(stderr, "warning: ignoring the calibration %s: %s\n", file.c_str(), err.what());
  }
  return std::nullopt;
}
}  // namespace

std::optional<HardwareModel> find_gpu_calibration(const std::string& uuid, const fs::path& dir) {
  if (uuid.empty()) return std::nullopt;
  return load_if_present(dir / (calibration_name("gpu", uuid) + ".json"));
}

std::optional<HardwareModel> find_cpu_calibration(const std::string& host, const fs::path& dir) {
  return load_if_present(dir / (calibration_name("cpu", host) + ".json"));
}

double attainable_seconds(const Bound& sol, const HardwareModel& measured) {
  // The same work and DRAM bytes (L2 deferral already taken off) on the measured
  // rates: as min_input_bytes with no boundary or written bytes, roofline() keeps
  // them as they are.
  const Bound b = roofline(sol.work, 0, sol.dram_bytes, 0, measured, 0);
  return b.t_sol + measured.launch_us * 1e-6;
}

std::optional<double> attainable_from_analysis(const json& r, const HardwareModel& measured) {
  if (r.value("status", "") != "ok" || !r.contains("work") || !r.contains("bytes")) return std::nullopt;
  const json& w = r["work"];
  Bound b;
  // analysis.cc's work_json in reverse (TFLOP, GOP, MB back to units).
  for (size_t c = 0; c < kClasses; ++c) {
    const char* k = math_class_name(MathClass(c));
    if (w.contains("tensor_tflop") && w["tensor_tflop"].contains(k))
      b.work.tensor_flops[c] = w["tensor_tflop"][k].get<double>() * 1e12;
    if (w.contains("cuda_tflop") && w["cuda_tflop"].contains(k))
      b.work.cuda_flops[c] = w["cuda_tflop"][k].get<double>() * 1e12;
  }
  b.work.sfu_ops = w.value("sfu_gop", 0.0) * 1e9;
  b.work.int_ops = w.value("int_gop", 0.0) * 1e9;
  b.work.bytes = w.value("unfused_mb", 0.0) * 1e6;
  b.dram_bytes = r["bytes"].value("dram_mb", 0.0) * 1e6;
  return attainable_seconds(b, measured);
}

}  // namespace solbench::sol
