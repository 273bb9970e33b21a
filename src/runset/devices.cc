#include "runset/devices.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "core/device.h"
#include "core/diagnostics.h"
#include "core/settings.h"
#include "core/text.h"
#include "harness/process.h"

namespace solbench::runset {

namespace {

bool all_digits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}

std::vector<std::string> ordinals(size_t n) {
  std::vector<std::string> out;
  for (size_t i = 0; i < n; ++i) out.push_back(Device::cuda(static_cast<int>(i)).str());
  return out;
}

}  // namespace

std::vector<std::string> parse_gpu_list(const std::string& list) {
  std::vector<std::string> out;
  for (const std::string& g : split_trimmed(list, ',')) {
    if (!all_digits(g) || g.size() > 6)
      throw InputError("--gpus", 0, "",
                       fmt::format("\"{}\": \"{}\" is not a GPU number (expected \"all\" or a "
                                   "comma-separated list such as 0,1)",
                                   list, g));
    const std::string dev = Device::cuda(std::stoi(g)).str();
    if (std::find(out.begin(), out.end(), dev) != out.end())
      throw InputError("--gpus", 0, "", fmt::format("\"{}\": GPU {} is listed twice", list, g));
    out.push_back(dev);
  }
  if (out.empty())
    throw InputError("--gpus", 0, "", "empty list (expected \"all\" or GPU numbers such as 0,1)");
  return out;
}

std::optional<std::vector<std::string>> gpus_from_visible_devices(const char* value) {
  if (!value) return std::nullopt;
  // CUDA stops at the first entry it cannot use ("-1", "NoDevFiles", garbage);
  // entries may be numbers or GPU-/MIG- UUIDs.
  size_t n = 0;
  for (const std::string& e : split_trimmed(value, ',')) {
    const bool uuid = e.rfind("GPU-", 0) == 0 || e.rfind("MIG-", 0) == 0;
    if (!uuid && !all_digits(e)) break;
    ++n;
  }
  return ordinals(n);
}

std::vector<std::string> gpus_from_nvidia_smi(const std::string& output) {
  size_t n = 0;
  for (const std::string& line : split_trimmed(output, '\n'))
    if (line.rfind("GPU ", 0) == 0) ++n;
  return ordinals(n);
}

std::vector<std::string> discover_gpus() {
  const std::optional<std::string>& visible = settings().cuda_visible_devices;
  if (auto v = gpus_from_visible_devices(visible ? visible->c_str() : nullptr)) {
    if (v->empty())
      throw InputError("--gpus", 0, "",
                       fmt::format("all: CUDA_VISIBLE_DEVICES=\"{}\" makes no GPU visible", *visible));
    return *v;
  }
  harness::RunOptions ro;
  ro.timeout = std::chrono::seconds(30);
  const harness::CommandResult r = harness::run_command({"nvidia-smi", "-L"}, ro);
  if (!r.ok())
    throw InputError("--gpus", 0, "",
                     fmt::format("all: cannot list the GPUs: `nvidia-smi -L` {} and "
                                 "CUDA_VISIBLE_DEVICES is unset (give the GPUs as --gpus 0,1)",
                                 r.spawn_error.empty() ? r.status.describe() : r.spawn_error));
  auto gpus = gpus_from_nvidia_smi(r.output);
  if (gpus.empty())
    throw InputError("--gpus", 0, "", "all: `nvidia-smi -L` lists no GPU");
  return gpus;
}

std::vector<std::string> resolve_slots(const std::string& device, const std::string& gpus,
                                       int cpu_slots) {
  if (!gpus.empty()) return gpus == "all" ? discover_gpus() : parse_gpu_list(gpus);
  if (cpu_slots > 0) return std::vector<std::string>(static_cast<size_t>(cpu_slots), "cpu");
  const auto d = Device::try_parse(device);
  if (!d) throw InputError("--device", 0, "", fmt::format("\"{}\" is not cpu or cuda:N", device));
  return {d->str()};
}

std::vector<std::string> repeat_gpu_slots(const std::vector<std::string>& slots, int jobs_per_gpu) {
  std::vector<std::string> out;
  for (const auto& s : slots) {
    const int n = Device::parse(s).is_cuda() ? std::max(1, jobs_per_gpu) : 1;
    for (int k = 0; k < n; ++k) out.push_back(s);
  }
  return out;
}

}  // namespace solbench::runset
