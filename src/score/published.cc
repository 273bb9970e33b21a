#include "score/published.h"

#include <fmt/format.h>

namespace solbench::score {

namespace fs = std::filesystem;

json Published::to_json() const {
  return {{"arch", "B200"},
          {"sol_ms", or_null(sol_ms)},
          {"baseline_latency_ms", or_null(baseline_ms)},
          {"source", "metadata.json (SOL-ExecBench)"}};
}

bool is_b200(const sol::HardwareModel& model) { return model.name == "b200"; }

std::vector<std::optional<Published>> published_b200(const Problem& problem,
                                                     const fs::path& problem_dir,
                                                     std::string* note) {
  std::vector<std::optional<Published>> out;
  const fs::path file = problem_dir / "metadata.json";
  if (!fs::exists(file)) return out;
  const json meta = load_json_file(file);
  out.resize(problem.workloads.size());
  if (!meta.is_object() || !meta.contains("sol") || !meta["sol"].is_object())
    throw InputError(file.string(), 0, "sol", "expected an object with per_workload times");
  const json& sol = meta["sol"];
  if (!sol.value("available", true)) {
    if (note) *note = file.string() + ": sol.available is false (no published times)";
    return out;
  }
  const json per = sol.value("per_workload", json::array());
  if (!per.is_array())
    throw InputError(file.string(), 0, "sol.per_workload", "expected an array");
  int mismatched = 0;
  auto number = [&](const json& e, const char* key, size_t n) -> std::optional<double> {
    if (!e.contains(key) || e[key].is_null()) return std::nullopt;
    if (!e[key].is_number())
      throw InputError(file.string(), 0, fmt::format("sol.per_workload[{}].{}", n, key),
                       "expected a number (milliseconds)");
    return e[key].get<double>();
  };
  for (size_t n = 0; n < per.size(); ++n) {
    const json& e = per[n];
    if (!e.is_object() || !e.contains("index") || !e["index"].is_number_integer())
      throw InputError(file.string(), 0, fmt::format("sol.per_workload[{}].index", n),
                       "expected an integer workload index");
    const int64_t idx = e["index"].get<int64_t>();
    if (idx < 0 || static_cast<size_t>(idx) >= problem.workloads.size()) {
      ++mismatched;
      continue;
    }
    const Workload& w = problem.workloads[static_cast<size_t>(idx)];
    const json axes = e.value("axes", json::object());
    bool same = axes.is_object();
    for (const auto& [name, value] : w.axes)
      if (!same || !axes.contains(name) || axes[name] != value) same = false;
    if (!same) {
      ++mismatched;
      continue;
    }
    Published p;
    p.sol_ms = number(e, "sol_ms", n);
    p.baseline_ms = number(e, "baseline_latency_ms", n);
    out[static_cast<size_t>(idx)] = p;
  }
  if (mismatched && note)
    *note = fmt::format("{}: {} per-workload entr{} left out (index out of range, or axes that "
                        "differ from workload.jsonl's)",
                        file.string(), mismatched, mismatched == 1 ? "y" : "ies");
  return out;
}

}  // namespace solbench::score
