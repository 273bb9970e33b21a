#include "report/roofs.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

namespace solbench::report {

namespace {

bool same_rate(double a, double b) { return std::fabs(a - b) <= 1e-9 * std::max(a, b); }

std::optional<sol::MathClass> class_named(const std::string& name) {
  for (size_t c = 0; c < size_t(sol::MathClass::Count); ++c)
    if (name == sol::math_class_name(sol::MathClass(c))) return sol::MathClass(c);
  return std::nullopt;
}

// The rates (FLOP/s) the used classes run at on one unit.
std::vector<double> used_rates(const sol::HardwareModel& hw, const std::set<std::string>& used,
                               bool tensor) {
  std::vector<double> out;
  for (const auto& name : used)
    if (auto c = class_named(name)) {
      const double r = tensor ? hw.tensor_flops(*c) : hw.cuda_core_flops(*c);
      if (r > 0) out.push_back(r);
    }
  return out;
}

}  // namespace

Roofs roofs_of(const sol::HardwareModel& hw, const std::set<std::string>& used_tensor,
               const std::set<std::string>& used_cuda) {
  Roofs r;
  r.hardware = hw.name;
  r.display_name = hw.display_name;
  r.bandwidth = hw.dram_bytes();

  // Rate -> the class names of each unit that run at it.
  struct Members {
    double flops = 0;
    std::vector<std::string> tensor, cuda;
    bool used = false;
  };
  std::vector<Members> groups;
  const auto add = [&](const std::map<std::string, double>& tflops, bool tensor,
                       const std::vector<double>& used) {
    for (const auto& [cls, tf] : tflops) {
      if (!(tf > 0)) continue;
      const double flops = tf * 1e12;
      auto g = std::find_if(groups.begin(), groups.end(),
                            [&](const Members& m) { return same_rate(m.flops, flops); });
      if (g == groups.end()) {
        groups.push_back({flops, {}, {}, false});
        g = groups.end() - 1;
      }
      (tensor ? g->tensor : g->cuda).push_back(cls);
      for (double u : used) g->used = g->used || same_rate(u, flops);
    }
  };
  add(hw.tensor_tflops, true, used_rates(hw, used_tensor, true));
  add(hw.cuda_core_tflops, false, used_rates(hw, used_cuda, false));

  const auto join = [](const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : "/") + x;
    return s;
  };
  for (auto& g : groups) {
    std::string name;
    if (!g.tensor.empty()) name = "tensor " + join(g.tensor);
    if (!g.cuda.empty()) name += (name.empty() ? "" : " / ") + std::string("CUDA ") + join(g.cuda);
    r.compute.push_back({name, g.flops, g.used});
  }
  std::sort(r.compute.begin(), r.compute.end(),
            [](const Roof& a, const Roof& b) { return a.flops > b.flops; });
  return r;
}

}  // namespace solbench::report
