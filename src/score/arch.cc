#include "score/arch.h"

#include <fmt/format.h>

#include "core/text.h"
#include "harness/timing/gpu/device.h"
#include "harness/timing/timer.h"
#include "sol/analysis.h"
#include "sol/calibration.h"

namespace solbench::score {

json ArchChoice::to_json() const {
  json j = {{"model", model ? json(model->name) : json(nullptr)},
            {"display_name", model ? json(model->display_name) : json(nullptr)},
            {"explicit", explicit_arch},
            {"matches_device", matches_device}};
  if (!reason.empty()) j["reason"] = reason;
  if (!note.empty()) j["note"] = note;
  if (measured)
    j["measured"] = {{"model", measured->name},
                     {"date", measured->calibration.value("date", "")},
                     {"file", measured->file.string()}};
  return j;
}

ArchChoice ArchChoice::from_json(const json& j) {
  ArchChoice c;
  if (!j.is_object()) return c;
  if (j.contains("model") && j["model"].is_string()) {
    c.model = sol::find_hardware(sol::load_all_hardware(), j["model"].get<std::string>());
    if (!c.model) c.model = sol::find_hardware(sol::load_calibrations(), j["model"].get<std::string>());
  }
  c.explicit_arch = j.value("explicit", false);
  c.matches_device = j.value("matches_device", false);
  c.reason = j.value("reason", "");
  c.note = j.value("note", "");
  return c;
}

namespace {

void set_note(ArchChoice& c, const Device& device, const std::string& device_name) {
  c.note.clear();
  if (!c.model || c.matches_device) return;
  const std::string what = device_name.empty() ? device.str() : device.str() + ", " + device_name;
  c.note = fmt::format(
      "T_SOL is for {} ({}), not for this device ({}): the score compares times measured here "
      "with another chip's bound",
      c.model->name, c.model->display_name, what);
}

}  // namespace

ArchChoice choose_arch(const std::string& arch, const Device& device) {
  ArchChoice c;
  c.explicit_arch = !arch.empty();
  const bool cuda = device.is_cuda();
  std::optional<std::string> gpu = cuda ? sol::detect_gpu_name() : std::nullopt;
  if (c.explicit_arch) {
    c.model = sol::select_hardware(arch, gpu);  // throws for an unknown name
  } else if (!cuda) {
    c.reason = "no hardware model for the CPU; pass --arch cpu for this host's measured one "
               "(solbench hw calibrate --device cpu) or --arch NAME for a GPU's bound";
    return c;
  } else {
    try {
      c.model = sol::select_hardware("", gpu);  // NVML asked once, above
    } catch (const std::exception& e) {
      c.reason = std::string("no hardware model for this GPU: ") + e.what();
      return c;
    }
  }
  // A CPU calibration of this host is the CPU's own model.
  if (!cuda && c.model->measured() && c.model->calibration.value("kind", "") == "cpu" &&
      c.model->calibration.value("key", "") == sol::local_host_name())
    c.matches_device = true;
  if (cuda && gpu) {
    auto all = sol::load_all_hardware();
    auto local = sol::find_hardware(all, *gpu);
    c.matches_device = local && local->name == c.model->name;
  }
  set_note(c, device, gpu.value_or(""));
  if (c.model->measured()) {
    c.measured = c.model;
  } else if (cuda && c.matches_device) {
    // This GPU's calibration (by UUID), where it measured the chip of the model; no
    // identity, no calibration: T_attainable is simply absent.
    auto m = sol::find_gpu_calibration(gpu::device_uuid(device.ordinal()));
    if (m && m->datasheet == c.model->name) c.measured = std::move(m);
  }
  return c;
}

uint64_t device_memory_bytes(const ArchChoice& c) {
  if (!c.matches_device || !c.model || c.model->memory_gb <= 0) return 0;
  return static_cast<uint64_t>(c.model->memory_gb * 1e9);
}

void confirm_device(ArchChoice& c, const Device& device, const json& worker_env) {
  if (!c.model) return;
  const std::string name = worker_env.value("hardware", "");
  if (name.empty()) return;
  if (!device.is_cuda()) {
    set_note(c, device, name);  // never a match: no CPU models; the note names the CPU
    return;
  }
  auto local = sol::find_hardware(sol::load_all_hardware(), name);
  c.matches_device = local && local->name == c.model->name;
  set_note(c, device, name);
}

json SolBound::to_json() const {
  json j = {{"t_sol_ms", or_null(t_sol_ms)}};
  if (!reason.empty()) j["reason"] = reason;
  if (!bottleneck.empty()) j["bottleneck"] = bottleneck;
  if (!uncosted.empty()) j["uncosted"] = uncosted;
  if (!partial.is_null()) j["partial"] = partial;
  if (t_attainable_ms) j["t_attainable_ms"] = *t_attainable_ms;
  j["cached"] = cached;
  return j;
}

SolBound sol_bound(const Problem& problem, size_t index, const sol::HardwareModel& hw,
                   const sol::AnalysisOptions& options, const sol::HardwareModel* measured) {
  SolBound b;
  try {
    const json r = sol::analyse_workload(problem, index, hw, options);
    b.cached = r.value("cached", false);
    const std::string status = r.value("status", "");
    if (status != "ok") {
      b.reason = fmt::format("no T_SOL on {}: the analysis is {}: {}", hw.name, status,
                             first_line(r.value("reason", ""), 300));
      return b;
    }
    const double us = r.at("time_us").at("sol").get<double>();
    b.t_sol_ms = us / 1000.0;
    b.bottleneck = r.value("bottleneck", "");
    b.uncosted = r.value("uncosted", json::object());
    if (r.contains("partial")) b.partial = r["partial"];
    b.counts = {{"work", r.value("work", json::object())},
                {"bytes", r.value("bytes", json::object())},
                {"time_us", r.value("time_us", json::object())}};
    if (measured)
      if (auto t = sol::attainable_from_analysis(r, *measured)) b.t_attainable_ms = *t * 1e3;
  } catch (const std::exception& e) {
    b.reason = fmt::format("no T_SOL on {}: {}", hw.name, first_line(e.what(), 300));
  }
  return b;
}

}  // namespace solbench::score
