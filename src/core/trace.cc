// Traces: parsing, writing and appending evaluation results (JSONL).
#include "core/trace.h"

#include <array>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>

#include <fmt/format.h>

#include "core/definition.h"

namespace solbench {

namespace {

using detail::describe_json;
using detail::FieldReader;
using detail::join_path;

constexpr std::array<std::pair<Status, std::string_view>, 9> kStatuses{{
    {Status::Passed, "PASSED"},
    {Status::IncorrectShape, "INCORRECT_SHAPE"},
    {Status::IncorrectNumerical, "INCORRECT_NUMERICAL"},
    {Status::IncorrectDtype, "INCORRECT_DTYPE"},
    {Status::RuntimeError, "RUNTIME_ERROR"},
    {Status::CompileError, "COMPILE_ERROR"},
    {Status::Timeout, "TIMEOUT"},
    {Status::RewardHack, "REWARD_HACK"},
    {Status::InvalidReference, "INVALID_REFERENCE"},
}};

// An optional object field; null counts as absent.
const json* optional_object(const json& obj, const std::string& obj_path, std::string_view key,
                            const FieldReader& r) {
  const json* v = r.field(obj, obj_path, key, false);
  if (!v || v->is_null()) return nullptr;
  if (!r.expect_object(*v, join_path(obj_path, key))) return nullptr;
  return v;
}

std::optional<Correctness> parse_correctness(const json& ev, const FieldReader& r) {
  const json* v = optional_object(ev, "evaluation", "correctness", r);
  if (!v) return std::nullopt;
  const std::string p = "evaluation.correctness";
  Correctness c;
  if (auto x = r.number(*v, p, "max_relative_error", false)) c.max_relative_error = *x;
  if (auto x = r.number(*v, p, "max_absolute_error", false)) c.max_absolute_error = *x;
  if (auto x = r.boolean(*v, p, "has_nan", false)) c.has_nan = *x;
  if (auto x = r.boolean(*v, p, "has_inf", false)) c.has_inf = *x;
  return c;
}

std::optional<Performance> parse_performance(const json& ev, const FieldReader& r) {
  const json* v = optional_object(ev, "evaluation", "performance", r);
  if (!v) return std::nullopt;
  const std::string p = "evaluation.performance";
  Performance perf;
  if (auto x = r.number(*v, p, "latency_ms", false)) perf.latency_ms = *x;
  if (auto x = r.number(*v, p, "reference_latency_ms", false)) perf.reference_latency_ms = *x;
  if (auto x = r.number(*v, p, "speedup_factor", false)) perf.speedup_factor = *x;
  return perf;
}

Environment parse_environment(const json& ev, const FieldReader& r) {
  Environment env;
  const json* v = optional_object(ev, "evaluation", "environment", r);
  if (!v) return env;
  const std::string p = "evaluation.environment";
  if (auto x = r.string(*v, p, "hardware", false)) env.hardware = *x;
  if (const json* libs = optional_object(*v, p, "libs", r)) {
    for (auto it = libs->begin(); it != libs->end(); ++it) {
      if (!it.value().is_string()) {
        r.error(join_path(join_path(p, "libs"), it.key()),
                "expected a version string, found " + describe_json(it.value()));
        continue;
      }
      env.libs.emplace_back(it.key(), it.value().get<std::string>());
    }
  }
  env.extra = detail::unknown_keys(*v, {"hardware", "libs"});
  return env;
}

// YYYY-MM-DDTHH:MM:SS, then optional fraction and zone: the shape iso8601_now() writes
// and Python's datetime.isoformat() produces.
bool looks_like_iso8601(const std::string& s) {
  static constexpr std::string_view kShape = "dddd-dd-ddTdd:dd:dd";
  if (s.size() < kShape.size()) return false;
  for (size_t i = 0; i < kShape.size(); ++i) {
    const char want = kShape[i];
    const char c = s[i];
    if (want == 'd' ? (c < '0' || c > '9') : (want == 'T' ? (c != 'T' && c != ' ') : c != want))
      return false;
  }
  return true;
}

// The spec ties the presence of correctness and performance to the status:
// correctness for PASSED and INCORRECT_NUMERICAL, performance for PASSED only.
void check_status_fields(const Evaluation& ev, const FieldReader& r) {
  const std::string_view status = status_name(ev.status);
  const bool wants_correctness =
      ev.status == Status::Passed || ev.status == Status::IncorrectNumerical;
  if (ev.status == Status::Passed) {
    if (!ev.performance)
      r.error("evaluation.performance", "required when status is PASSED (expected an object)");
    if (!ev.correctness)
      r.error("evaluation.correctness", "required when status is PASSED (expected an object)");
  } else if (ev.performance) {
    r.error("evaluation.performance",
            fmt::format("must be null when status is {} (only PASSED has timings)", status));
  }
  if (ev.correctness && !wants_correctness)
    r.error("evaluation.correctness",
            fmt::format("must be null when status is {} (only PASSED and INCORRECT_NUMERICAL "
                        "carry errors)",
                        status));
  if (ev.performance) {
    const auto& p = *ev.performance;
    const std::pair<const char*, double> times[] = {{"latency_ms", p.latency_ms},
                                                     {"reference_latency_ms", p.reference_latency_ms},
                                                     {"speedup_factor", p.speedup_factor}};
    for (const auto& [key, value] : times)
      if (value < 0)
        r.error(std::string("evaluation.performance.") + key,
                fmt::format("{} is negative (expected a time or ratio >= 0)", value));
  }
  if (ev.correctness) {
    if (ev.correctness->max_absolute_error < 0)
      r.error("evaluation.correctness.max_absolute_error", "is negative (expected >= 0)");
    if (ev.correctness->max_relative_error < 0)
      r.error("evaluation.correctness.max_relative_error", "is negative (expected >= 0)");
  }
}

Evaluation parse_evaluation(const json& j, const FieldReader& r) {
  Evaluation ev;
  const json* v = r.field(j, "", "evaluation", true);
  if (!v || !r.expect_object(*v, "evaluation")) return ev;
  bool status_known = false;
  if (auto s = r.string(*v, "evaluation", "status", true)) {
    if (auto st = parse_status(*s)) {
      ev.status = *st;
      status_known = true;
    } else {
      std::string known;
      for (const auto& [id, name] : kStatuses) known += (known.empty() ? "" : ", ") + std::string(name);
      r.error("evaluation.status", fmt::format("unknown status \"{}\" (expected one of {})", *s, known));
    }
  }
  if (const json* log = r.field(*v, "evaluation", "log", false); log && !log->is_null()) {
    if (auto s = r.string(*v, "evaluation", "log", false)) ev.log = *s;
  }
  ev.correctness = parse_correctness(*v, r);
  ev.performance = parse_performance(*v, r);
  ev.environment = parse_environment(*v, r);
  if (auto s = r.string(*v, "evaluation", "timestamp", false)) {
    ev.timestamp = *s;
    if (!looks_like_iso8601(*s))
      r.error("evaluation.timestamp",
              fmt::format("\"{}\" is not an ISO 8601 time (expected e.g. 2026-11-23T10:15:00Z)", *s));
  }
  ev.extra = detail::unknown_keys(
      *v, {"status", "log", "correctness", "performance", "environment", "timestamp"});
  if (status_known) check_status_fields(ev, r);
  return ev;
}

}  // namespace

std::string_view status_name(Status s) {
  for (const auto& [id, name] : kStatuses)
    if (id == s) return name;
  return "?";
}

std::optional<Status> parse_status(std::string_view name) {
  for (const auto& [id, n] : kStatuses)
    if (n == name) return id;
  return std::nullopt;
}

Trace parse_trace(const json& j, const std::string& file, int line, Diagnostics& diags) {
  FieldReader r(file, line, diags);
  Trace t;
  if (!r.expect_object(j, "")) return t;
  if (auto s = r.string(j, "", "definition", true)) t.definition = *s;
  if (const json* s = r.field(j, "", "solution", true); s && !s->is_null()) {
    if (auto x = r.string(j, "", "solution", true)) t.solution = *x;
  }
  if (const json* w = r.field(j, "", "workload", true); w && r.expect_object(*w, "workload"))
    t.workload = *w;
  t.evaluation = parse_evaluation(j, r);
  t.extra = detail::unknown_keys(j, {"definition", "solution", "workload", "evaluation"});
  return t;
}

json to_json(const Trace& t) {
  json j = json::object();
  j["definition"] = t.definition;
  j["solution"] = t.solution;
  j["workload"] = t.workload;
  const Evaluation& e = t.evaluation;
  json ev = json::object();
  ev["status"] = status_name(e.status);
  ev["log"] = e.log;
  if (e.correctness) {
    json c = json::object();
    c["max_relative_error"] = e.correctness->max_relative_error;
    c["max_absolute_error"] = e.correctness->max_absolute_error;
    c["has_nan"] = e.correctness->has_nan;
    c["has_inf"] = e.correctness->has_inf;
    ev["correctness"] = std::move(c);
  } else {
    ev["correctness"] = nullptr;
  }
  if (e.performance) {
    json p = json::object();
    p["latency_ms"] = e.performance->latency_ms;
    p["reference_latency_ms"] = e.performance->reference_latency_ms;
    p["speedup_factor"] = e.performance->speedup_factor;
    ev["performance"] = std::move(p);
  } else {
    ev["performance"] = nullptr;
  }
  json env = json::object();
  env["hardware"] = e.environment.hardware;
  json libs = json::object();
  for (const auto& [name, version] : e.environment.libs) libs[name] = version;
  env["libs"] = std::move(libs);
  for (auto it = e.environment.extra.begin(); it != e.environment.extra.end(); ++it)
    env[it.key()] = it.value();
  ev["environment"] = std::move(env);
  ev["timestamp"] = e.timestamp;
  for (auto it = e.extra.begin(); it != e.extra.end(); ++it) ev[it.key()] = it.value();
  j["evaluation"] = std::move(ev);
  for (auto it = t.extra.begin(); it != t.extra.end(); ++it) j[it.key()] = it.value();
  return j;
}

std::vector<Trace> load_traces(const std::filesystem::path& path, Diagnostics& diags) {
  std::vector<Trace> out;
  const std::string file = path.string();
  for_each_jsonl_record(path, diags, [&](const json& j, int line) {
    const size_t before = diags.size();
    Trace t = parse_trace(j, file, line, diags);
    if (diags.size() == before) out.push_back(std::move(t));
  });
  return out;
}

void append_traces(const std::filesystem::path& path, const std::vector<Trace>& traces) {
  if (path.has_parent_path()) {
    std::error_code ec;
    std::filesystem::create_directories(path.parent_path(), ec);
    if (ec)
      throw InputError(path.string(), 0, "",
                       "cannot create folder " + path.parent_path().string() + ": " + ec.message());
  }
  std::FILE* f = std::fopen(path.c_str(), "a");
  if (!f) throw InputError(path.string(), 0, "", "cannot open for appending");
  for (const auto& t : traces) {
    const std::string line = to_json(t).dump() + "\n";
    if (std::fwrite(line.data(), 1, line.size(), f) != line.size() || std::fflush(f) != 0) {
      std::fclose(f);
      throw InputError(path.string(), 0, "", "cannot write");
    }
  }
  if (std::fclose(f) != 0) throw InputError(path.string(), 0, "", "cannot write");
}

std::string iso8601_now() {
  using namespace std::chrono;
  const auto now = system_clock::now();
  const auto ms = duration_cast<milliseconds>(now.time_since_epoch()).count() % 1000;
  const std::time_t secs = system_clock::to_time_t(now);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  return fmt::format("{}.{:03d}Z", buf, static_cast<int>(ms));
}

}  // namespace solbench
