#include "harness/protocol.h"

#include <chrono>
#include <stdexcept>

namespace solbench::harness {

namespace {

constexpr std::pair<EntryKind, std::string_view> kKinds[] = {
    {EntryKind::Native, "native"},
    {EntryKind::TorchExtension, "torch_extension"},
    {EntryKind::Python, "python"},
    {EntryKind::Reference, "reference"},
};

json timing_json(const std::optional<TimingResult>& t) {
  return t ? t->to_json() : json(nullptr);
}

std::optional<TimingResult> timing_from(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  if (!it->is_object()) throw std::runtime_error(std::string(key) + " is not an object");
  TimingResult t;
  t.stats = TimingStats::from_json(*it);
  t.converged = it->value("converged", false);
  t.stop_reason = it->value("stop_reason", "");
  t.warmup_calls = it->value("warmup_calls", 0);
  t.wall_ms = it->value("wall_ms", 0.0);
  return t;
}

}  // namespace

std::string_view entry_kind_name(EntryKind k) {
  for (auto& [kind, name] : kKinds)
    if (kind == k) return name;
  return "?";
}

std::optional<EntryKind> parse_entry_kind(std::string_view s) {
  for (auto& [kind, name] : kKinds)
    if (name == s) return kind;
  return std::nullopt;
}

std::string workload_log_marker(size_t index) {
  return std::string(kWorkloadLogMarker) + std::to_string(index) + "\n";
}

std::string strip_workload_markers(std::string text) {
  for (size_t at = text.find(kWorkloadLogMarker); at != std::string::npos;
       at = text.find(kWorkloadLogMarker, at)) {
    const size_t nl = text.find('\n', at);
    text.erase(at, nl == std::string::npos ? std::string::npos : nl + 1 - at);
  }
  return text;
}

int64_t monotonic_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

json WorkerPlan::to_json() const {
  json j = json::object();
  j["type"] = "plan";
  j["definition"] = definition;
  j["solution_name"] = solution_name;
  j["kind"] = entry_kind_name(kind);
  j["library"] = library;
  j["module_name"] = module_name;
  j["entry"] = entry;
  j["entry_file"] = entry_file;
  j["sources"] = sources;
  j["dps"] = dps;
  j["languages"] = languages;
  j["workloads"] = workloads;
  j["device"] = device;
  j["rounds"] = rounds;
  j["seed"] = seed;
  j["input_sets"] = input_sets;
  j["verify_samples"] = verify_samples;
  j["time_solution"] = time_solution;
  j["time_reference"] = time_reference;
  j["timing"] = timing.to_json();
  j["timer_options"] = timer_options;
  j["timing_lock"] = timing_lock;
  j["sandbox"] = sandbox;
  j["baseline_compile"] = baseline_compile;
  j["reference_role"] = reference_role;
  return j;
}

WorkerPlan WorkerPlan::from_json(const json& j) {
  try {
    WorkerPlan p;
    p.definition = j.at("definition");
    p.solution_name = j.at("solution_name").get<std::string>();
    auto kind = parse_entry_kind(j.at("kind").get<std::string>());
    if (!kind) throw std::runtime_error("unknown entry kind");
    p.kind = *kind;
    p.library = j.value("library", "");
    p.module_name = j.value("module_name", "");
    p.entry = j.value("entry", "");
    p.entry_file = j.value("entry_file", "");
    p.sources = j.value("sources", json::array());
    p.dps = j.value("dps", true);
    p.languages = j.value("languages", std::vector<std::string>{});
    for (const auto& w : j.at("workloads")) p.workloads.push_back(w);
    p.device = j.value("device", "cpu");
    p.rounds = j.value("rounds", 5);
    p.seed = j.value("seed", uint64_t{200});
    p.input_sets = j.value("input_sets", 4);
    p.verify_samples = j.value("verify_samples", 8);
    p.time_solution = j.value("time_solution", true);
    p.time_reference = j.value("time_reference", true);
    p.timing = TimingOptions::from_json(j.value("timing", json::object()));
    p.timer_options = j.value("timer_options", json::object());
    p.timing_lock = j.value("timing_lock", "");
    p.sandbox = j.value("sandbox", json::object());
    p.baseline_compile = j.value("baseline_compile", false);
    p.reference_role = j.value("reference_role", false);
    if (p.reference_role && p.kind != EntryKind::Reference)
      throw std::runtime_error("malformed worker plan: reference_role needs kind \"reference\"");
    if (p.baseline_compile && p.kind != EntryKind::Reference)
      throw std::runtime_error("malformed worker plan: baseline_compile is true but kind is \"" +
                               std::string(entry_kind_name(p.kind)) +
                               "\" (expected \"reference\": only the reference is a baseline)");
    return p;
  } catch (const json::exception& e) {
    throw std::runtime_error(std::string("malformed worker plan: ") + e.what());
  }
}

json WorkloadOutcome::to_json() const {
  json j = json::object();
  j["type"] = "result";
  j["t_ns"] = monotonic_ns();
  j["index"] = index;
  j["uuid"] = uuid;
  j["status"] = status_name(status);
  j["skipped"] = skipped;
  if (skipped) j["skip_reason"] = skip_reason;
  j["log"] = log;
  if (correctness) {
    j["correctness"] = {{"max_relative_error", correctness->max_relative_error},
                        {"max_absolute_error", correctness->max_absolute_error},
                        {"has_nan", correctness->has_nan},
                        {"has_inf", correctness->has_inf}};
  } else {
    j["correctness"] = nullptr;
  }
  j["timing"] = timing_json(timing);
  j["reference_timing"] = timing_json(reference_timing);
  j["phases_ms"] = phases_ms;
  j["extra"] = extra;
  return j;
}

WorkloadOutcome WorkloadOutcome::from_json(const json& j) {
  try {
    WorkloadOutcome o;
    o.index = j.at("index").get<int>();
    o.uuid = j.value("uuid", "");
    auto st = parse_status(j.at("status").get<std::string>());
    if (!st) throw std::runtime_error("unknown status");
    o.status = *st;
    o.skipped = j.value("skipped", false);
    o.skip_reason = j.value("skip_reason", "");
    o.log = j.value("log", "");
    if (auto it = j.find("correctness"); it != j.end() && it->is_object()) {
      Correctness c;
      c.max_relative_error = it->value("max_relative_error", 0.0);
      c.max_absolute_error = it->value("max_absolute_error", 0.0);
      c.has_nan = it->value("has_nan", false);
      c.has_inf = it->value("has_inf", false);
      o.correctness = c;
    }
    o.timing = timing_from(j, "timing");
    o.reference_timing = timing_from(j, "reference_timing");
    o.phases_ms = j.value("phases_ms", json::object());
    o.extra = j.value("extra", json::object());
    return o;
  } catch (const json::exception& e) {
    throw std::runtime_error(std::string("malformed result frame: ") + e.what());
  }
}

}  // namespace solbench::harness
