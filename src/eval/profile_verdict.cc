#include "eval/profile_verdict.h"

#include <cmath>
#include <vector>

#include <fmt/format.h>

namespace solbench::eval {

namespace {

// The counter's dtype names (kernel_profile.cc) as the hardware model's classes.
std::optional<sol::MathClass> math_class(const std::string& dtype) {
  if (dtype == "fp16") return sol::MathClass::FP16;
  if (dtype == "bf16") return sol::MathClass::BF16;
  if (dtype == "tf32") return sol::MathClass::TF32;
  if (dtype == "fp8") return sol::MathClass::FP8;
  if (dtype == "int8") return sol::MathClass::INT8;
  if (dtype == "fp64") return sol::MathClass::FP64;
  return std::nullopt;
}

std::optional<double> ratio(std::optional<double> a, std::optional<double> b) {
  if (!a || !b || !(*b > 0)) return std::nullopt;
  return *a / *b;
}

// "2.7x", "12x", "0.43x": two significant digits at most, never scientific.
std::string times(double r) {
  if (r >= 10) return fmt::format("{:.0f}x", r);
  if (r >= 0.995) return fmt::format("{:.1f}x", r);
  return fmt::format("{:.2f}x", r);
}

std::string pct(double f) {
  const double p = f * 100;
  return p < 1 ? fmt::format("{:.1f}%", p) : fmt::format("{:.0f}%", p);
}

}  // namespace

json roofline_position(const json& profile, std::optional<double> t_k_ms,
                       std::optional<double> t_sol_ms, const json& counts,
                       const sol::HardwareModel* hw) {
  const json& kernels = profile;  // the breakdown's keys are at the profile's top level
  json r = json::object();
  r["t_k_us"] = t_k_ms ? json(*t_k_ms * 1e3) : json(nullptr);
  r["t_sol_us"] = t_sol_ms ? json(*t_sol_ms * 1e3) : json(nullptr);
  r["t_k_over_t_sol"] = or_null(ratio(t_k_ms, t_sol_ms));
  r["gaps_share_of_t_k"] = kernels.value("gaps_share_of_t_k", json(nullptr));
  r["hardware"] = hw ? json(hw->name) : json(nullptr);

  // The bound's own counts, in bytes and FLOPs.
  const std::optional<double> b_dram = number_at(counts, {"bytes", "dram_mb"});
  const std::optional<double> b_min = number_at(counts, {"bytes", "min_mb"});
  json b_tensor = json::object();
  double b_tensor_total = 0;
  if (auto it = counts.find("work"); counts.is_object() && it != counts.end())
    if (auto tc = it->find("tensor_tflop"); it->is_object() && tc != it->end() && tc->is_object())
      for (const auto& [cls, v] : tc->items())
        if (v.is_number()) {
          b_tensor[cls] = v.get<double>() * 1e12;
          b_tensor_total += v.get<double>() * 1e12;
        }
  const double b_cuda = sum_numbers(counts.is_object() && counts.contains("work")
                                       ? counts["work"].value("cuda_tflop", json::object())
                                       : json::object()) * 1e12;
  const std::optional<double> b_sfu = number_at(counts, {"work", "sfu_gop"});
  r["bound"] = {{"dram_bytes", b_dram ? json(*b_dram * 1e6) : json(nullptr)},
                {"min_bytes", b_min ? json(*b_min * 1e6) : json(nullptr)},
                {"tensor_flops", b_tensor},
                {"cuda_core_flops", b_cuda},
                {"sfu_ops", b_sfu ? json(*b_sfu * 1e9) : json(nullptr)}};

  const json counters = profile.value("counters", json::object());
  const bool allowed = counters.value("allowed", false);
  r["counters"] = allowed;
  if (!allowed) return r;
  const json total = counters.value("total", json::object());
  const std::optional<double> rd = number_at(total, {"dram_read_bytes"});
  const std::optional<double> wr = number_at(total, {"dram_write_bytes"});
  std::optional<double> a_dram;
  if (rd && wr) a_dram = *rd + *wr;
  const json a_tensor = total.value("tensor_flops", json::object());
  const double a_tensor_total = sum_numbers(a_tensor);
  const std::optional<double> a_fp32 = number_at(total, {"fp32_flops"});
  const std::optional<double> a_sfu = number_at(total, {"sfu_ops"});
  r["achieved"] = {{"dram_bytes", or_null(a_dram)},
                   {"tensor_flops", a_tensor},
                   {"fp32_flops", or_null(a_fp32)},
                   {"sfu_ops", or_null(a_sfu)}};
  // Against the bound's bytes: the DRAM term's (what T_SOL divides by the
  // bandwidth) and the minimum the data must cross at all.
  r["bytes_over_bound"] =
      or_null(ratio(a_dram, b_dram ? std::optional<double>(*b_dram * 1e6) : std::nullopt));
  r["bytes_over_min"] =
      or_null(ratio(a_dram, b_min ? std::optional<double>(*b_min * 1e6) : std::nullopt));
  r["tensor_flops_over_bound"] =
      b_tensor_total > 0 ? json(a_tensor_total / b_tensor_total) : json(nullptr);
  // Rates over T_k, the time the call is scored by, against the model's peaks.
  const double t_k_s = t_k_ms ? *t_k_ms / 1e3 : 0;
  json tensor_pct = json::object();
  std::string main_dtype;
  double main_flops = 0;
  if (hw && t_k_s > 0) {
    for (const auto& [dtype, v] : a_tensor.items()) {
      const auto cls = math_class(dtype);
      if (!cls || !v.is_number()) continue;
      const double peak = hw->tensor_flops(*cls);
      if (peak > 0) tensor_pct[dtype] = v.get<double>() / t_k_s / peak;
      if (v.get<double>() > main_flops) {
        main_flops = v.get<double>();
        main_dtype = dtype;
      }
    }
    r["dram_share_of_peak"] =
        a_dram && hw->dram_bytes() > 0 ? json(*a_dram / t_k_s / hw->dram_bytes()) : json(nullptr);
    const double fp32_peak = hw->cuda_core_flops(sol::MathClass::FP32);
    r["fp32_share_of_peak"] =
        a_fp32 && fp32_peak > 0 ? json(*a_fp32 / t_k_s / fp32_peak) : json(nullptr);
    r["sfu_share_of_peak"] =
        a_sfu && hw->sfu_ops() > 0 ? json(*a_sfu / t_k_s / hw->sfu_ops()) : json(nullptr);
  }
  r["tensor_share_of_peak"] = tensor_pct;
  r["tensor_dtype"] = main_dtype.empty() ? json(nullptr) : json(main_dtype);
  // Arithmetic intensity (FLOP per DRAM byte): where the call sits on the roofline
  // chart, beside where the bound puts the workload.
  const double a_flops = a_tensor_total + a_fp32.value_or(0);
  r["intensity"] = {
      {"achieved", a_dram && *a_dram > 0 ? json(a_flops / *a_dram) : json(nullptr)},
      {"bound", b_dram && *b_dram > 0 ? json((b_tensor_total + b_cuda) / (*b_dram * 1e6))
                                      : json(nullptr)}};
  return r;
}

std::string verdict_line(const json& profile, const json& roofline) {
  if (!profile.value("available", false))
    return "no profile: " + profile.value("reason", std::string("unknown"));
  std::vector<std::string> parts;
  if (auto r = number_at(roofline, {"t_k_over_t_sol"}))
    parts.push_back(fmt::format("T_k is {} T_SOL", times(*r)));
  const int kernels = profile.value("kernel_count", 0);
  if (auto g = number_at(roofline, {"gaps_share_of_t_k"}); g && *g >= 0.05)
    parts.push_back(fmt::format("{} of T_k is gaps between its {} kernels", pct(*g), kernels));
  else
    parts.push_back(fmt::format("{} kernel{}", kernels, kernels == 1 ? "" : "s"));
  if (!roofline.value("counters", false)) {
    const json c = profile.value("counters", json::object());
    parts.push_back("counters not allowed: " + c.value("reason", std::string("unknown")));
  } else {
    if (auto b = number_at(roofline, {"bytes_over_bound"})) {
      std::string s = fmt::format("moves {} the minimum bytes", times(*b));
      if (auto d = number_at(roofline, {"dram_share_of_peak"}))
        s += fmt::format(" (DRAM at {} of peak)", pct(*d));
      parts.push_back(s);
    }
    const json tp = roofline.value("tensor_share_of_peak", json::object());
    const std::string dtype = roofline.value("tensor_dtype", json(nullptr)).is_string()
                                  ? roofline["tensor_dtype"].get<std::string>()
                                  : "";
    if (!dtype.empty() && tp.contains(dtype))
      parts.push_back(fmt::format("tensor cores at {} of peak ({})", pct(tp[dtype].get<double>()),
                                  dtype));
    else if (number_at(roofline, {"tensor_flops_over_bound"}).value_or(-1) == 0)
      parts.push_back("no tensor-core work, where the bound counts some");
    if (auto f = number_at(roofline, {"fp32_share_of_peak"}); f && *f >= 0.01)
      parts.push_back(fmt::format("FP32 at {} of peak", pct(*f)));
  }
  std::string line;
  for (const auto& p : parts) line += (line.empty() ? "" : "; ") + p;
  return line;
}

std::string reference_verdict(const json& reference, const json& roofline) {
  if (!reference.value("available", false))
    return "no profile: " + reference.value("reason", std::string("unknown"));
  const int kernels = reference.value("kernel_count", 0);
  std::string s = fmt::format("{} kernel{}", kernels, kernels == 1 ? "" : "s");
  if (auto g = number_at(roofline, {"gaps_share_of_t_k"}); g && *g >= 0.05)
    s += fmt::format(" ({} of T_ref in gaps)", pct(*g));
  if (auto b = number_at(roofline, {"bytes_over_bound"}); b && roofline.value("counters", false))
    s += fmt::format(", moves {} the minimum bytes", times(*b));
  return s;
}

void add_profile_verdict(Trace& t, const ScoreState& st, const score::ArchChoice& arch) {
  json& x = t.evaluation.extra;
  auto it = x.find("solbench_profile");
  if (it == x.end() || !it->is_object()) return;
  json& p = *it;
  const bool passed = t.evaluation.status == Status::Passed && t.evaluation.performance;
  std::optional<double> t_k, t_ref;
  if (passed && t.evaluation.performance->latency_ms > 0)
    t_k = t.evaluation.performance->latency_ms;
  if (passed && t.evaluation.performance->reference_latency_ms > 0)
    t_ref = t.evaluation.performance->reference_latency_ms;
  const sol::HardwareModel* hw = arch.model ? &*arch.model : nullptr;
  if (p.value("available", false)) {
    p["roofline"] = roofline_position(p, t_k, st.bound.t_sol_ms, st.bound.counts, hw);
    p["verdict"] = verdict_line(p, p["roofline"]);
  } else {
    p["verdict"] = verdict_line(p, json::object());
  }
  // The reference's profile (made where T_ref was timed): the same position with
  // T_ref for T_k, and a short part of the line. Where neither call could be
  // profiled (no GPU) the line says so once.
  auto r = p.find("reference");
  if (r == p.end() || !r->is_object()) return;
  json& ref = *r;
  const bool available = ref.value("available", false);
  if (available) ref["roofline"] = roofline_position(ref, t_ref, st.bound.t_sol_ms, st.bound.counts, hw);
  ref["verdict"] = reference_verdict(ref, ref.value("roofline", json::object()));
  if (available || p.value("available", false))
    p["verdict"] = p["verdict"].get<std::string>() + "; reference: " + ref["verdict"].get<std::string>();
}

}  // namespace solbench::eval
