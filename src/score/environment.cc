#include "score/environment.h"

#include <sys/utsname.h>

#include <cstdlib>
#include <fstream>

#include "bridge/python.h"
#include "core/settings.h"
#include "core/text.h"
#include "harness/timing/timer.h"
#include "sol/hardware.h"

namespace solbench::score {

namespace {

// The CPU's name as runtime.hardware_name() gives it (the "model name" line).
std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("model name", 0) == 0) {
      const size_t colon = line.find(':');
      if (colon != std::string::npos) return trim(line.substr(colon + 1));
    }
  utsname u{};
  return ::uname(&u) == 0 ? std::string(u.machine) : "";
}

// The GPU timer's name (harness Timer::name()) for a timer kind.
std::string gpu_timer_name(const std::string& kind) {
  if (kind == "events") return "cuda-events";
  if (kind == "profiler") return "cupti-profiler";
  return "cupti";  // "cupti", and "auto" where CUPTI works
}

}  // namespace

std::string driver_version(const Device& device) {
  if (!device.is_cuda()) return "";
  std::ifstream in("/sys/module/nvidia/version");
  std::string v;
  std::getline(in, v);
  return trim(v);
}

store::BaselineKey baseline_key(const std::string& definition_hash, const std::string& uuid,
                                const json& worker_env, const std::string& driver) {
  store::BaselineKey k;
  k.definition_hash = definition_hash;
  k.workload_uuid = uuid;
  k.gpu_model = worker_env.value("hardware", "");
  k.driver = driver;
  k.torch = worker_env.value("torch", "");
  k.timer = worker_env.value("timer", "");
  return k;
}

json predicted_worker_env(const Device& device, const json& timer_options) {
  json env = json::object();
  if (device.is_cuda()) {
    env["hardware"] = sol::detect_gpu_name().value_or("");
    std::string kind = "auto";
    if (timer_options.is_object()) kind = timer_options.value("timer", kind);
    if (const std::string& e = settings().gpu_timer; !e.empty()) kind = e;
    env["timer"] = gpu_timer_name(kind);
  } else {
    env["hardware"] = cpu_model_name();
    env["timer"] = harness::CpuTimer().name();
  }
  env["torch"] = bridge::python_available() ? bridge::torch_version() : "";
  env["driver"] = driver_version(device);
  return env;
}

}  // namespace solbench::score
