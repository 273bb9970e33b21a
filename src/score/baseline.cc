#include "score/baseline.h"

#include <sys/utsname.h>

#include <cctype>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "bridge/python.h"
#include "core/diagnostics.h"
#include "core/trace.h"
#include "harness/eval_plan.h"
#include "harness/evaluate.h"
#include "harness/timing/timer.h"
#include "sol/analysis.h"

namespace solbench::score {

namespace fs = std::filesystem;

namespace {

std::string trim(std::string s) {
  const size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  const size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

std::string first_line(const std::string& s, size_t max = 200) {
  const size_t start = s.find_first_not_of(" \n");
  if (start == std::string::npos) return "";
  std::string l = s.substr(start, s.find('\n', start) - start);
  return l.size() > max ? l.substr(0, max - 3) + "..." : l;
}

// The line of a failed workload's log that says why: the worker's message comes
// after the process's captured output (torch's warnings...), so a line naming a
// round, the worker or an error is preferred (as eval's table does).
std::string failure_line(const std::string& log) {
  std::vector<std::string> lines;
  std::istringstream in(log);
  for (std::string l; std::getline(in, l);)
    if (!trim(l).empty()) lines.push_back(l);
  for (const char* key : {"round ", "the worker", "did not finish", "error", "Error"})
    for (const auto& l : lines)
      if (l.find(key) != std::string::npos) return first_line(l);
  return lines.empty() ? "" : first_line(lines.back());
}

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

// torch.compile exists from torch 2.0 on ("2.11.0+cu130", "10.0"...).
bool torch_has_compile(const std::string& torch_version) {
  int major = 0;
  size_t i = 0;
  for (; i < torch_version.size() && i < 4; ++i) {
    if (!std::isdigit(static_cast<unsigned char>(torch_version[i]))) break;
    major = major * 10 + (torch_version[i] - '0');
  }
  return i > 0 && major >= 2;
}

// The baseline of one workload from the baseline worker's outcome.
BaselineResult from_outcome(const harness::WorkloadOutcome& o) {
  BaselineResult r;
  r.uuid = o.uuid;
  const json b = o.extra.value("baseline", json::object());
  r.method = b.value("method", "");
  const std::string why_eager = b.value("reason", "");
  if (o.skipped) {
    r.reason = "the baseline cannot run here: " + first_line(o.skip_reason);
    r.status = "SKIPPED";
    return r;
  }
  r.status = std::string(status_name(o.status));
  const std::string under = r.method.empty() ? "" : " (reference under " + r.method + ")";
  if (o.status != Status::Passed) {
    r.reason = fmt::format("the baseline{} failed: {}: {}", under, r.status,
                           failure_line(harness::strip_workload_markers(o.log)));
    return r;
  }
  if (!o.timing || !(o.timing->stats.median_ms > 0)) {
    r.reason = "the baseline" + under + " was not timed" +
               (o.log.empty() ? "" : ": " + first_line(o.log));
    return r;
  }
  r.t_b_ms = o.timing->stats.median_ms;
  r.reason = why_eager;
  json t = o.timing->stats.to_json();
  t["converged"] = o.timing->converged;
  t["stop_reason"] = o.timing->stop_reason;
  r.timing = t;
  return r;
}

json opt(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }

}  // namespace

// ------------------------------------------------------------ environment

std::string driver_version(const std::string& device) {
  if (harness::cuda_ordinal(device) < 0) return "";
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

json predicted_worker_env(const std::string& device, const json& timer_options) {
  json env = json::object();
  if (harness::cuda_ordinal(device) >= 0) {
    env["hardware"] = sol::detect_gpu_name().value_or("");
    std::string kind = "auto";
    if (timer_options.is_object()) kind = timer_options.value("timer", kind);
    if (const char* e = std::getenv("SOLBENCH_GPU_TIMER"); e && *e) kind = e;
    env["timer"] = gpu_timer_name(kind);
  } else {
    env["hardware"] = cpu_model_name();
    env["timer"] = harness::CpuTimer().name();
  }
  env["torch"] = bridge::python_available() ? bridge::torch_version() : "";
  env["driver"] = driver_version(device);
  return env;
}

// --------------------------------------------------------------- baselines

json BaselineResult::to_json() const {
  json j = {{"uuid", uuid},
            {"t_b_ms", opt(t_b_ms)},
            {"method", method.empty() ? json(nullptr) : json(method)},
            {"reason", reason.empty() ? json(nullptr) : json(reason)},
            {"cached", cached}};
  if (!recorded.empty()) j["recorded"] = recorded;
  if (!status.empty()) j["status"] = status;
  if (!timing.is_null()) j["timing"] = timing;
  return j;
}

std::optional<BaselineResult> cached_baseline(store::Store& db, const store::BaselineKey& key) {
  std::optional<store::Baseline> b = db.baseline(key);
  if (!b) return std::nullopt;
  if (b->method == store::BaselineMethod::Eager && torch_has_compile(key.torch))
    return std::nullopt;
  BaselineResult r;
  r.uuid = key.workload_uuid;
  r.t_b_ms = b->t_b_ms;
  r.method = std::string(store::method_name(b->method));
  r.cached = true;
  r.recorded = b->recorded;
  if (b->method == store::BaselineMethod::Eager)
    r.reason = b->reason.empty() ? "torch.compile unavailable (torch " + key.torch + ")" : b->reason;
  return r;
}

MeasureRun measure_baselines(const Problem& problem, const std::vector<size_t>& indices,
                             const MeasureOptions& o) {
  MeasureRun run;
  run.results.resize(indices.size());
  for (size_t k = 0; k < indices.size(); ++k) {
    run.results[k].uuid = problem.workloads.at(indices[k]).uuid;
    run.results[k].reason = "the baseline worker reported nothing for this workload";
  }
  if (indices.empty()) return run;

  harness::HarnessRequest hr;
  hr.role = harness::Role::Baseline;
  hr.definition = to_json(problem.definition);
  for (size_t i : indices) hr.workloads.push_back(harness::workload_spec(problem, i));
  hr.device = o.device;
  hr.rounds = o.rounds;
  hr.seed = o.seed;
  hr.timing = o.timing;
  hr.timer_options = o.timer_options;
  hr.workload_timeout = o.workload_timeout;
  hr.keep_scratch = o.keep_scratch;
  hr.no_sandbox = o.no_sandbox;

  const std::string driver = driver_version(o.device);
  std::vector<bool> delivered(indices.size(), false);
  hr.on_event = [&](const harness::RunnerEvent& e) {
    if (e.kind == harness::EventKind::Ready && e.env) {
      run.env = *e.env;
      run.env["device"] = o.device;
      run.env["driver"] = driver;
    } else if (e.kind == harness::EventKind::Result && e.outcome && e.workload >= 0 &&
               static_cast<size_t>(e.workload) < indices.size() && !delivered[e.workload]) {
      const size_t k = static_cast<size_t>(e.workload);
      delivered[k] = true;
      run.results[k] = from_outcome(*e.outcome);
      if (o.on_result) o.on_result(k, run.results[k], run.env);
    }
    if (o.on_event) o.on_event(e);
  };
  harness::RunnerResult rr = harness::evaluate(hr);
  run.workers = rr.workers;
  if (run.env.empty() && !rr.env.empty()) {
    run.env = rr.env;
    run.env["device"] = o.device;
    run.env["driver"] = driver;
  }
  for (size_t k = 0; k < indices.size() && k < rr.outcomes.size(); ++k)
    if (!delivered[k]) {
      delivered[k] = true;
      run.results[k] = from_outcome(rr.outcomes[k]);
      if (o.on_result) o.on_result(k, run.results[k], run.env);
    }
  return run;
}

// ------------------------------------------------------------------- T_SOL

json ArchChoice::to_json() const {
  json j = {{"model", model ? json(model->name) : json(nullptr)},
            {"display_name", model ? json(model->display_name) : json(nullptr)},
            {"explicit", explicit_arch},
            {"matches_device", matches_device}};
  if (!reason.empty()) j["reason"] = reason;
  if (!note.empty()) j["note"] = note;
  return j;
}

namespace {

void set_note(ArchChoice& c, const std::string& device, const std::string& device_name) {
  c.note.clear();
  if (!c.model || c.matches_device) return;
  const std::string what = device_name.empty() ? device : device + ", " + device_name;
  c.note = fmt::format(
      "T_SOL is for {} ({}), not for this device ({}): the score compares times measured here "
      "with another chip's bound",
      c.model->name, c.model->display_name, what);
}

}  // namespace

ArchChoice choose_arch(const std::string& arch, const std::string& device) {
  ArchChoice c;
  c.explicit_arch = !arch.empty();
  const bool cuda = harness::cuda_ordinal(device) >= 0;
  std::optional<std::string> gpu = cuda ? sol::detect_gpu_name() : std::nullopt;
  if (c.explicit_arch) {
    c.model = sol::select_hardware(arch, gpu);  // throws for an unknown name
  } else if (!cuda) {
    c.reason = "no hardware model for the CPU (solbench hw list has GPU models only); pass "
               "--arch NAME to use a GPU's bound";
    return c;
  } else {
    try {
      c.model = sol::select_hardware("", gpu);  // NVML asked once, above
    } catch (const std::exception& e) {
      c.reason = std::string("no hardware model for this GPU: ") + e.what();
      return c;
    }
  }
  if (cuda && gpu) {
    auto all = sol::load_all_hardware();
    auto local = sol::find_hardware(all, *gpu);
    c.matches_device = local && local->name == c.model->name;
  }
  set_note(c, device, gpu.value_or(""));
  return c;
}

void confirm_device(ArchChoice& c, const std::string& device, const json& worker_env) {
  if (!c.model) return;
  const std::string name = worker_env.value("hardware", "");
  if (name.empty()) return;
  if (harness::cuda_ordinal(device) < 0) {
    set_note(c, device, name);  // never a match: no CPU models; the note names the CPU
    return;
  }
  auto local = sol::find_hardware(sol::load_all_hardware(), name);
  c.matches_device = local && local->name == c.model->name;
  set_note(c, device, name);
}

json SolBound::to_json() const {
  json j = {{"t_sol_ms", opt(t_sol_ms)}};
  if (!reason.empty()) j["reason"] = reason;
  if (!bottleneck.empty()) j["bottleneck"] = bottleneck;
  if (!uncosted.empty()) j["uncosted"] = uncosted;
  j["cached"] = cached;
  return j;
}

SolBound sol_bound(const Problem& problem, size_t index, const sol::HardwareModel& hw,
                   bool use_cache) {
  SolBound b;
  try {
    sol::AnalysisOptions ao;
    ao.use_cache = use_cache;
    const json r = sol::analyse_workload(problem, index, hw, ao);
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
  } catch (const std::exception& e) {
    b.reason = fmt::format("no T_SOL on {}: {}", hw.name, first_line(e.what(), 300));
  }
  return b;
}

// --------------------------------------------------------------- published

json Published::to_json() const {
  return {{"arch", "B200"},
          {"sol_ms", opt(sol_ms)},
          {"baseline_latency_ms", opt(baseline_ms)},
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
