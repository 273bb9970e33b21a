#include "report/placement.h"

#include <cmath>

#include <fmt/format.h>

namespace solbench::report {

namespace {

double sum_tflop(const json& by_class, std::set<std::string>& classes) {
  double s = 0;
  if (!by_class.is_object()) return 0;
  for (const auto& [cls, v] : by_class.items())
    if (v.is_number() && v.get<double>() > 0) {
      s += v.get<double>();
      classes.insert(cls);
    }
  return s * 1e12;
}

}  // namespace

WorkOrReason work_from_analysis(const json& a) {
  const std::string status = a.value("status", "");
  if (status != "ok") {
    const std::string reason = a.contains("reason") && a["reason"].is_string()
                                   ? a["reason"].get<std::string>()
                                   : std::string("no reason given");
    return {std::nullopt, fmt::format("the SOL analysis has no result (status {}: {})",
                                      status.empty() ? "unknown" : status, reason)};
  }
  if (!a.contains("work") || !a.contains("bytes") || !a.contains("time_us"))
    return {std::nullopt, "the SOL analysis result lacks work, bytes or time_us"};
  WorkloadWork w;
  w.flop = sum_tflop(a["work"].value("tensor_tflop", json::object()), w.tensor_classes) +
           sum_tflop(a["work"].value("cuda_tflop", json::object()), w.cuda_classes);
  // The bytes the DRAM term counts (writes the L2 can hold left out: sol/roofline.h),
  // so that T_SOL stands on or under the roof; analyses cached before that field
  // existed fall back to the boundary minimum.
  w.bytes = a["bytes"].value("dram_mb", a["bytes"].value("min_mb", 0.0)) * 1e6;
  w.t_sol_ms = a["time_us"].value("sol", 0.0) / 1e3;
  w.bottleneck = a.value("bottleneck", "");
  return {w, ""};
}

Placement place(const WorkloadWork& w, std::optional<double> t_ms, std::string_view missing) {
  Placement p;
  if (!(w.flop > 0)) {
    p.reason = "the workload does no floating-point work (0 FLOP), so it has no place on a "
               "FLOP/byte axis";
    return p;
  }
  if (!(w.bytes > 0)) {
    p.reason = "the SOL analysis counts no DRAM bytes, so the intensity is undefined";
    return p;
  }
  if (!t_ms) {
    p.reason = std::string(missing);
    return p;
  }
  if (!(*t_ms > 0) || !std::isfinite(*t_ms)) {
    p.reason = fmt::format("time {} ms: no rate (untimed, --no-timing?)", *t_ms);
    return p;
  }
  p.intensity = w.intensity();
  p.flops_per_s = w.flop / (*t_ms * 1e-3);
  return p;
}

}  // namespace solbench::report
