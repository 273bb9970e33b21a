#include "sol/hardware.h"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "core/diagnostics.h"
#include "core/settings.h"
#include "core/text.h"
#include "sol/calibration.h"

#ifndef SOLBENCH_SOURCE_DIR
#define SOLBENCH_SOURCE_DIR ""
#endif

namespace solbench::sol {

namespace fs = std::filesystem;

const char* math_class_name(MathClass c) {
  switch (c) {
    case MathClass::FP64: return "fp64";
    case MathClass::TF32: return "tf32";
    case MathClass::FP32: return "fp32";
    case MathClass::FP16: return "fp16";
    case MathClass::BF16: return "bf16";
    case MathClass::FP8: return "fp8";
    case MathClass::INT8: return "int8";
    case MathClass::FP4: return "fp4";
    case MathClass::Count: break;
  }
  return "?";
}

namespace {

class Reader {
 public:
  Reader(const json& j, const fs::path& file) : j_(j), file_(file.string()) {
    if (!j.is_object()) fail("", "expected a JSON object");
    const json* s = j.contains("sources") ? &j["sources"] : nullptr;
    if (!s || !s->is_object() || s->empty())
      fail("sources", "expected an object mapping source keys to URLs");
    // A measured model names its own measurements ("measured: solbench hw
    // calibrate ..."); a datasheet number still needs a URL.
    const bool measured = j.contains("calibration") && j["calibration"].is_object();
    for (auto& [k, v] : s->items()) {
      const bool ok = v.is_string() && (v.get<std::string>().rfind("http", 0) == 0 ||
                                        (measured && v.get<std::string>().rfind("measured:", 0) == 0));
      if (!ok)
        fail("sources." + k, measured ? "expected a URL string starting with http or \"measured:\""
                                      : "expected a URL string starting with http");
      sources_[k] = v.get<std::string>();
    }
  }
  [[noreturn]] void fail(const std::string& path, const std::string& msg) const {
    throw InputError(file_, 0, path, msg);
  }
  std::string str(const char* key) const {
    if (!j_.contains(key) || !j_[key].is_string() || j_[key].get<std::string>().empty())
      fail(key, "expected a non-empty string");
    return j_[key].get<std::string>();
  }
  // {"value": positive number, "source": key of "sources"}
  double number(const json& v, const std::string& path, bool required_positive = true) {
    if (!v.is_object() || !v.contains("value") || !v["value"].is_number())
      fail(path, "expected {\"value\": NUMBER, \"source\": KEY}");
    double x = v["value"].get<double>();
    if (required_positive && !(x > 0)) fail(path + ".value", "expected a positive number");
    if (!v.contains("source") || !v["source"].is_string())
      fail(path + ".source", "expected the key of a URL in \"sources\"");
    auto it = sources_.find(v["source"].get<std::string>());
    if (it == sources_.end())
      fail(path + ".source", "\"" + v["source"].get<std::string>() + "\" is not a key of \"sources\"");
    field_sources[path] = it->second;
    return x;
  }
  double field(const char* key) {
    if (!j_.contains(key)) fail(key, "missing; expected {\"value\": NUMBER, \"source\": KEY}");
    return number(j_[key], key);
  }
  std::map<std::string, double> rates(const char* key, std::initializer_list<const char*> allowed,
                                      const char* required) {
    if (!j_.contains(key) || !j_[key].is_object()) fail(key, "expected an object of rates");
    std::map<std::string, double> out;
    for (auto& [k, v] : j_[key].items()) {
      if (std::find_if(allowed.begin(), allowed.end(), [&](const char* a) { return k == a; }) ==
          allowed.end())
        fail(std::string(key) + "." + k, "unknown class; expected one of fp64, tf32, fp32, fp16, bf16, fp8, int8, fp4");
      out[k] = number(v, std::string(key) + "." + k);
    }
    if (required && !out.count(required)) fail(std::string(key) + "." + required, "missing");
    return out;
  }
  std::map<std::string, std::string> field_sources;

 private:
  const json& j_;
  std::string file_;
  std::map<std::string, std::string> sources_;
};

std::string normalise(const std::string& s) {
  std::string out;
  for (char c : s)
    if (std::isalnum(static_cast<unsigned char>(c))) out += char(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

HardwareModel parse_hardware(const json& j, const fs::path& file) {
  Reader r(j, file);
  HardwareModel m;
  m.file = file;
  m.name = r.str("name");
  if (m.name != file.stem().string())
    r.fail("name", "expected \"" + file.stem().string() + "\" (the file name without .json)");
  m.display_name = r.str("display_name");
  m.architecture = r.str("architecture");
  if (!j.contains("aliases") || !j["aliases"].is_array())
    r.fail("aliases", "expected an array of device names");
  for (size_t i = 0; i < j["aliases"].size(); ++i) {
    if (!j["aliases"][i].is_string()) r.fail("aliases[" + std::to_string(i) + "]", "expected a string");
    m.aliases.push_back(j["aliases"][i].get<std::string>());
  }
  m.sm_count = int(r.field("sm_count"));
  m.boost_clock_mhz = r.field("boost_clock_mhz");
  m.tensor_tflops = r.rates("tensor_tflops", {"fp64", "tf32", "fp16", "bf16", "fp8", "int8", "fp4"}, "fp16");
  m.cuda_core_tflops = r.rates("cuda_core_tflops", {"fp64", "fp32", "fp16", "bf16"}, "fp32");
  m.sfu_ops_per_clock_per_sm = r.field("sfu_ops_per_clock_per_sm");
  m.dram_bandwidth_gbs = r.field("dram_bandwidth_gbs");
  m.l2_mb = r.field("l2_mb");
  m.memory_gb = r.field("memory_gb");
  if (j.contains("calibration")) {
    if (!j["calibration"].is_object()) r.fail("calibration", "expected an object (provenance)");
    m.calibration = j["calibration"];
    if (j.contains("datasheet")) {
      if (!j["datasheet"].is_string()) r.fail("datasheet", "expected a model name");
      m.datasheet = j["datasheet"].get<std::string>();
    }
    if (j.contains("launch_us")) m.launch_us = r.field("launch_us");
  }
  m.field_sources = std::move(r.field_sources);
  return m;
}

HardwareModel load_hardware(const fs::path& file) {
  std::ifstream in(file);
  if (!in) throw InputError(file.string(), 0, "", "cannot open the hardware model");
  std::stringstream ss;
  ss << in.rdbuf();
  json j;
  try {
    j = json::parse(ss.str());
  } catch (const json::parse_error& e) {
    throw InputError(file.string(), 0, "", std::string("not valid JSON: ") + e.what());
  }
  HardwareModel m = parse_hardware(j, file);
  m.content = ss.str();
  return m;
}

double HardwareModel::tensor_flops(MathClass c) const {
  auto get = [&](const char* k) {
    auto it = tensor_tflops.find(k);
    return it == tensor_tflops.end() ? 0.0 : it->second * 1e12;
  };
  switch (c) {
    case MathClass::FP64: {
      double v = get("fp64");
      return v > 0 ? v : cuda_core_flops(MathClass::FP64);
    }
    case MathClass::TF32:
    case MathClass::FP32: return get("tf32");
    case MathClass::FP16: return get("fp16");
    case MathClass::BF16: {
      double v = get("bf16");
      return v > 0 ? v : get("fp16");
    }
    case MathClass::FP8: {
      double v = get("fp8");
      return v > 0 ? v : tensor_flops(MathClass::FP16);
    }
    case MathClass::INT8: {
      double v = get("int8");
      return v > 0 ? v : tensor_flops(MathClass::FP16);
    }
    case MathClass::FP4: {
      double v = get("fp4");
      return v > 0 ? v : tensor_flops(MathClass::FP8);
    }
    case MathClass::Count: break;
  }
  return 0;
}

double HardwareModel::cuda_core_flops(MathClass c) const {
  auto get = [&](const char* k) {
    auto it = cuda_core_tflops.find(k);
    return it == cuda_core_tflops.end() ? 0.0 : it->second * 1e12;
  };
  double fp32 = get("fp32");
  switch (c) {
    case MathClass::FP64: return get("fp64");
    case MathClass::FP16: return std::max(get("fp16"), fp32);
    case MathClass::BF16: return std::max(get("bf16"), fp32);
    default: return fp32;
  }
}

fs::path hardware_dir() {
  if (const fs::path& dir = settings().hardware_dir; !dir.empty()) return dir;
  fs::path src = fs::path(SOLBENCH_SOURCE_DIR) / "data" / "hardware";
  if (!std::string(SOLBENCH_SOURCE_DIR).empty() && fs::is_directory(src)) return src;
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return exe.parent_path().parent_path() / "share" / "solbench" / "hardware";
}

std::vector<HardwareModel> load_all_hardware(const fs::path& dir) {
  std::vector<HardwareModel> out;
  std::error_code ec;
  for (auto& e : fs::directory_iterator(dir, ec))
    if (e.path().extension() == ".json") out.push_back(load_hardware(e.path()));
  if (ec) throw std::runtime_error("cannot read the hardware folder " + dir.string() + ": " + ec.message());
  std::sort(out.begin(), out.end(), [](auto& a, auto& b) { return a.name < b.name; });
  return out;
}

std::optional<HardwareModel> find_hardware(const std::vector<HardwareModel>& all,
                                           const std::string& name) {
  std::string n = normalise(name);
  if (n.empty()) return std::nullopt;
  for (auto& m : all) {  // exact names first, so "H100" is never ambiguous
    if (normalise(m.name) == n || normalise(m.display_name) == n) return m;
  }
  for (auto& m : all)
    for (auto& a : m.aliases)
      if (normalise(a) == n) return m;
  return std::nullopt;
}

// --- NVML, loaded at run time ------------------------------------------------

std::optional<std::string> detect_gpu_name() {
  void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return std::nullopt;
  using InitFn = int (*)();
  using CountFn = int (*)(unsigned*);
  using HandleFn = int (*)(unsigned, void**);
  using NameFn = int (*)(void*, char*, unsigned);
  auto init = reinterpret_cast<InitFn>(dlsym(lib, "nvmlInit_v2"));
  auto shutdown = reinterpret_cast<InitFn>(dlsym(lib, "nvmlShutdown"));
  auto count = reinterpret_cast<CountFn>(dlsym(lib, "nvmlDeviceGetCount_v2"));
  auto handle = reinterpret_cast<HandleFn>(dlsym(lib, "nvmlDeviceGetHandleByIndex_v2"));
  auto get_name = reinterpret_cast<NameFn>(dlsym(lib, "nvmlDeviceGetName"));
  std::optional<std::string> result;
  if (init && shutdown && count && handle && get_name && init() == 0) {
    unsigned n = 0;
    void* dev = nullptr;
    char buf[96] = {};  // NVML_DEVICE_NAME_V2_BUFFER_SIZE
    if (count(&n) == 0 && n > 0 && handle(0, &dev) == 0 && get_name(dev, buf, sizeof buf) == 0)
      result = std::string(buf);
    shutdown();
  }
  dlclose(lib);
  return result;
}

namespace {

std::string known_names(const std::vector<HardwareModel>& all) {
  std::string known;
  for (const auto& m : all) known += (known.empty() ? "" : ", ") + m.name;
  return known;
}

}  // namespace

std::vector<std::string> similar_hardware_names(const std::vector<HardwareModel>& all,
                                                const std::string& name) {
  const std::string n = normalise(name);
  if (n.empty()) return {};
  // One typo in four characters: "h300" finds "H100" and "H200", "b20" finds "B200"
  // but "x" finds nothing.
  const size_t limit = std::max<size_t>(1, n.size() / 4);
  std::vector<std::pair<size_t, std::string>> found;  // (distance, model name)
  for (const auto& m : all) {
    std::vector<std::string> spellings = {m.name, m.display_name};
    spellings.insert(spellings.end(), m.aliases.begin(), m.aliases.end());
    size_t best = limit + 1;
    for (const auto& s : spellings) best = std::min(best, edit_distance(n, normalise(s)));
    // The start of a model's own name ("a100_sxm" of a100_sxm_80gb); not of the
    // display names, which mostly start with "NVIDIA".
    const std::string own = normalise(m.name);
    if (n.size() >= 4 && own.size() > n.size() && own.compare(0, n.size(), n) == 0) best = 1;
    if (best <= limit) found.emplace_back(best, m.name);
  }
  std::stable_sort(found.begin(), found.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::string> out;
  for (size_t i = 0; i < found.size() && i < 3; ++i) out.push_back(found[i].second);
  return out;
}

std::string unknown_hardware_message(const std::vector<HardwareModel>& all,
                                     const std::string& name, const std::string& where) {
  std::string msg = where + " " + name + ": unknown hardware model";
  const std::vector<std::string> near = similar_hardware_names(all, name);
  for (size_t i = 0; i < near.size(); ++i)
    msg += (i == 0 ? "; did you mean " : i + 1 == near.size() ? " or " : ", ") + near[i];
  return msg + (near.empty() ? "; known: " : "? Known: ") + known_names(all);
}

HardwareModel select_hardware(const std::string& arch_override) {
  return select_hardware(arch_override,
                         arch_override.empty() ? detect_gpu_name() : std::nullopt);
}

HardwareModel select_hardware(const std::string& name, const std::optional<std::string>& gpu,
                              const std::string& where) {
  auto all = load_all_hardware();
  if (!name.empty()) {
    if (auto m = find_hardware(all, name)) return *m;
    // Measured models (sol/calibration.h): "cpu" is this host's calibration; the
    // others answer to their name or their GPU UUID.
    if (normalise(name) == "cpu") {
      if (auto m = find_cpu_calibration()) return *m;
      throw HardwareChoiceError(where + " cpu: this host (" + local_host_name() +
                                ") has no CPU calibration; run `solbench hw calibrate --device cpu`");
    }
    if (auto m = find_hardware(load_calibrations(), name)) return *m;
    throw HardwareChoiceError(unknown_hardware_message(all, name, where));
  }
  const std::string ask = "name a model (" + where + " NAME), one of: " + known_names(all);
  if (!gpu) throw HardwareChoiceError("no GPU detected (NVML absent or no device); " + ask);
  if (auto m = find_hardware(all, *gpu)) return *m;
  throw HardwareChoiceError("the local GPU \"" + *gpu + "\" has no hardware model; " + ask);
}

}  // namespace solbench::sol
