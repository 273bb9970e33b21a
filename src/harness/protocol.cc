#include "harness/protocol.h"

#include <algorithm>
#include <set>
#include <stdexcept>

#include <fmt/format.h>

#include "core/dtype.h"

namespace solbench::harness {

namespace {

constexpr std::pair<EntryKind, std::string_view> kKinds[] = {
    {EntryKind::Native, "native"},
    {EntryKind::TorchExtension, "torch_extension"},
    {EntryKind::Python, "python"},
    {EntryKind::Reference, "reference"},
};

constexpr std::pair<WorkerRole, std::string_view> kRoles[] = {
    {WorkerRole::Solution, "solution"},
    {WorkerRole::Recorder, "recorder"},
    {WorkerRole::Judge, "judge"},
    {WorkerRole::Baseline, "baseline"},
};

constexpr std::pair<WorkloadPhase, const char*> kPhases[] = {
    {WorkloadPhase::None, ""},
    {WorkloadPhase::Correctness, "correctness"},
    {WorkloadPhase::Timing, "timing"},
    {WorkloadPhase::Judging, "judging"},
    {WorkloadPhase::ReferenceTiming, "reference_timing"},
};

// The name `key` has in `table`, or `fallback`.
template <typename Key, typename Name, size_t N>
Name name_in(const std::pair<Key, Name> (&table)[N], Key key, Name fallback) {
  for (const auto& [k, name] : table)
    if (k == key) return name;
  return fallback;
}
template <typename Key, typename Name, size_t N>
std::optional<Key> key_in(const std::pair<Key, Name> (&table)[N], std::string_view name) {
  for (const auto& [k, n] : table)
    if (std::string_view(n) == name) return k;
  return std::nullopt;
}

// With each call's time: the parent checks them against its own clock (values.h).
json timing_json(const std::optional<TimingResult>& t) {
  return t ? t->to_json(/*with_samples=*/true) : json(nullptr);
}

std::optional<TimingResult> timing_from(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  return TimingResult::from_json(*it, key);
}

// r<N>.rec or s<N>.rec: the only names a record's files have (record.py), so a
// name from an untrusted worker can never leave the record's folder.
bool record_file_name(const std::string& s) {
  if (s.size() < 6 || s.size() > 16 || (s[0] != 'r' && s[0] != 's')) return false;
  if (s.compare(s.size() - 4, 4, ".rec") != 0) return false;
  return std::all_of(s.begin() + 1, s.end() - 4, [](char c) { return c >= '0' && c <= '9'; });
}

bool hex_digest(const std::string& s) {
  return s.size() == 64 && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

RecordedCall recorded_call(const json& j, const std::string& where) {
  if (!j.is_object()) throw std::runtime_error(where + " is not an object");
  RecordedCall c;
  c.round = j.value("round", -1);
  c.call = j.value("call", -1);
  c.pool_call = j.value("pool_call", -1);
  c.file = j.value("file", "");
  c.sha256 = j.value("sha256", "");
  if (!record_file_name(c.file))
    throw std::runtime_error(where + ".file: \"" + c.file.substr(0, 40) +
                             "\" is not a record file name (r<N>.rec or s<N>.rec)");
  if (!hex_digest(c.sha256))
    throw std::runtime_error(where + ".sha256: not 64 lowercase hex digits");
  return c;
}

json call_json(const RecordedCall& c) {
  json j = {{"file", c.file}, {"sha256", c.sha256}};
  if (c.round >= 0) j["round"] = c.round;
  if (c.call >= 0) j["call"] = c.call;
  if (c.pool_call >= 0) j["pool_call"] = c.pool_call;
  return j;
}

}  // namespace

json CallRecord::to_json() const {
  json j = json::object();
  j["rounds"] = json::array();
  for (const auto& c : rounds) j["rounds"].push_back(call_json(c));
  j["samples"] = json::array();
  for (const auto& c : samples) j["samples"].push_back(call_json(c));
  j["timed"] = timed;
  j["failed_stage"] = failed_stage;
  if (failed_round >= 0) j["failed_round"] = failed_round;
  if (!dir.empty()) j["dir"] = dir;
  return j;
}

CallRecord CallRecord::from_json(const json& j) {
  if (!j.is_object()) throw std::runtime_error("record: not an object");
  try {
    CallRecord r;
    const json& rounds = j.at("rounds");
    const json& samples = j.at("samples");
    if (!rounds.is_array() || rounds.size() > 1000)
      throw std::runtime_error("record.rounds: not an array of at most 1000 calls");
    if (!samples.is_array() || samples.size() > 10000)
      throw std::runtime_error("record.samples: not an array of at most 10000 calls");
    std::set<std::string> files;
    for (size_t i = 0; i < rounds.size(); ++i) {
      RecordedCall c = recorded_call(rounds[i], fmt::format("record.rounds[{}]", i));
      if (c.round != static_cast<int>(i))
        throw std::runtime_error(fmt::format("record.rounds[{}].round: {} (rounds are recorded "
                                             "in order from 0)", i, c.round));
      if (!files.insert(c.file).second)
        throw std::runtime_error(fmt::format("record.rounds[{}].file: {} twice", i, c.file));
      r.rounds.push_back(std::move(c));
    }
    std::set<int> pool_calls;
    for (size_t i = 0; i < samples.size(); ++i) {
      RecordedCall c = recorded_call(samples[i], fmt::format("record.samples[{}]", i));
      // call: the index among the timed calls, -1 for a warm-up call.
      if (c.pool_call < 0 || c.call < -1 || c.pool_call < c.call)
        throw std::runtime_error(fmt::format("record.samples[{}]: call {} / pool_call {}", i,
                                             c.call, c.pool_call));
      if (!pool_calls.insert(c.pool_call).second)
        throw std::runtime_error(fmt::format("record.samples[{}].pool_call: {} sampled twice", i,
                                             c.pool_call));
      if (!files.insert(c.file).second)
        throw std::runtime_error(fmt::format("record.samples[{}].file: {} twice", i, c.file));
      r.samples.push_back(std::move(c));
    }
    r.timed = j.value("timed", false);
    r.failed_stage = j.value("failed_stage", "");
    r.failed_round = j.value("failed_round", -1);
    if (r.failed_stage != "" && r.failed_stage != "round" && r.failed_stage != "timing" &&
        r.failed_stage != "after")
      throw std::runtime_error("record.failed_stage: \"" + r.failed_stage.substr(0, 20) +
                               "\" (expected \"\", round, timing or after)");
    if (r.failed_stage == "round" && r.failed_round != static_cast<int>(r.rounds.size()))
      throw std::runtime_error(fmt::format("record.failed_round: {} after {} recorded rounds",
                                           r.failed_round, r.rounds.size()));
    if (!r.samples.empty() && !r.timed)
      throw std::runtime_error("record.samples: sampled calls but timed is false");
    r.dir = j.value("dir", "");
    return r;
  } catch (const json::exception& e) {
    throw std::runtime_error(std::string("record: ") + e.what());
  }
}

uint64_t workload_input_bytes(const json& spec) {
  uint64_t total = 0;
  for (const auto& o : spec.at("inputs")) {
    if (!o.at("shape").is_array()) continue;  // a scalar
    uint64_t n = 1;
    for (const auto& d : o.at("shape")) n *= d.get<uint64_t>();
    auto dt = parse_dtype(o.at("dtype").get<std::string>());
    total += dt ? storage_bytes(*dt, n) : n * 8;
  }
  return total;
}

uint64_t workload_output_bytes(const json& spec) {
  uint64_t total = 0;
  for (const auto& o : spec.at("outputs")) {
    uint64_t n = 1;
    if (o.at("shape").is_array())
      for (const auto& d : o.at("shape")) n *= d.get<uint64_t>();
    auto dt = parse_dtype(o.at("dtype").get<std::string>());
    total += dt ? storage_bytes(*dt, n) : n * 8;
  }
  return total;
}

bool fits_beside_evaluation(const json& spec) {
  return kValuesFootprint * (workload_input_bytes(spec) + workload_output_bytes(spec)) <=
         kBesideEvaluationBytes;
}

int sampled_calls(int verify_samples, const json& spec) {
  const uint64_t out_bytes = std::max<uint64_t>(1, workload_output_bytes(spec));
  return static_cast<int>(std::min<uint64_t>(static_cast<uint64_t>(std::max(0, verify_samples)),
                                             std::max<uint64_t>(1, (256ull << 20) / out_bytes)));
}

std::string_view entry_kind_name(EntryKind k) { return name_in(kKinds, k, std::string_view("?")); }

std::optional<EntryKind> parse_entry_kind(std::string_view s) { return key_in(kKinds, s); }

std::string_view worker_role_name(WorkerRole r) {
  return name_in(kRoles, r, std::string_view("?"));
}

std::optional<WorkerRole> parse_worker_role(std::string_view s) { return key_in(kRoles, s); }

const char* phase_name(WorkloadPhase p) { return name_in(kPhases, p, ""); }

WorkloadPhase parse_phase(std::string_view s) {
  return key_in(kPhases, s).value_or(WorkloadPhase::None);
}

std::string_view frame_name(FrameType t) {
  for (const FrameSpec& f : kFrames)
    if (f.type == t) return f.name;
  return "?";
}

std::optional<FrameType> frame_type(const json& frame) {
  if (!frame.is_object()) return std::nullopt;
  auto it = frame.find("type");
  if (it == frame.end() || !it->is_string()) return std::nullopt;
  const std::string& name = it->get_ref<const std::string&>();
  for (const FrameSpec& f : kFrames)
    if (f.name == name) return f.type;
  return std::nullopt;
}

json make_frame(FrameType t, json fields) {
  json j = {{"type", frame_name(t)}};
  for (const FrameSpec& f : kFrames)
    if (f.type == t && f.from == FrameFrom::Worker) j["t_ns"] = monotonic_ns();
  if (fields.is_object())
    for (auto& [k, v] : fields.items()) j[k] = std::move(v);
  return j;
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

namespace {

json records_json(const std::vector<std::optional<CallRecord>>& records) {
  json rs = json::array();
  for (const auto& r : records) rs.push_back(r ? r->to_json() : json(nullptr));
  return rs;
}

// j["records"]: absent or null (none), else one entry (a record or null) per workload.
std::vector<std::optional<CallRecord>> records_from_json(const json& j, size_t workloads,
                                                         const char* what) {
  std::vector<std::optional<CallRecord>> out;
  auto it = j.find("records");
  if (it == j.end() || it->is_null()) return out;
  if (!it->is_array() || it->size() != workloads)
    throw std::runtime_error(std::string("malformed ") + what +
                             ": records must have one entry per workload");
  for (const auto& r : *it)
    out.push_back(r.is_null() ? std::nullopt : std::optional<CallRecord>(CallRecord::from_json(r)));
  return out;
}

}  // namespace

json WorkOrder::to_json() const {
  if (cancel) return make_frame(FrameType::Cancel);
  json j = make_frame(FrameType::Work, {{"workloads", workloads}});
  if (!records.empty()) j["records"] = records_json(records);
  if (part != RecordPart::Whole) j["part"] = part == RecordPart::Rounds ? "rounds" : "rest";
  return j;
}

WorkOrder WorkOrder::from_json(const json& j) {
  try {
    WorkOrder w;
    const std::optional<FrameType> type = frame_type(j);
    if (type == FrameType::Cancel) {
      w.cancel = true;
      return w;
    }
    if (type != FrameType::Work) throw std::runtime_error("expected a \"work\" or \"cancel\" frame");
    for (const auto& x : j.at("workloads")) w.workloads.push_back(x);
    w.records = records_from_json(j, w.workloads.size(), "work order");
    const std::string part = j.value("part", "");
    if (part == "rounds" || part == "rest") {
      w.part = part == "rounds" ? RecordPart::Rounds : RecordPart::Rest;
      if (w.workloads.size() != 1 || w.records.size() != 1)
        throw std::runtime_error("malformed work order: a part of a record is one workload's");
      if (w.part == RecordPart::Rounds && !w.records[0])
        throw std::runtime_error("malformed work order: its rounds without a record");
    } else if (!part.empty()) {
      throw std::runtime_error("malformed work order: part \"" + part.substr(0, 20) +
                               "\" (expected rounds or rest)");
    }
    return w;
  } catch (const json::exception& e) {
    throw std::runtime_error(std::string("malformed work order: ") + e.what());
  }
}

EntryPoint EntryPoint::reference() {
  EntryPoint e;
  e.kind = EntryKind::Reference;
  e.symbol = "run";
  e.dps = false;
  return e;
}

namespace {

json judge_json(const JudgeOptions& o) {
  json j = {{"value_secret", o.value_secret}};
  if (!o.records.empty()) j["records"] = records_json(o.records);
  if (o.work_follows) j["work_follows"] = true;
  if (!o.warm_up.is_null()) j["warm_up"] = o.warm_up;
  if (o.timing_after_go) j["timing_after_go"] = true;
  if (o.streamed) j["streamed"] = true;
  return j;
}

JudgeOptions judge_from_json(const json& j, size_t workloads) {
  if (!j.is_object()) throw std::runtime_error("malformed worker plan: judge is not an object");
  JudgeOptions o;
  o.value_secret = j.value("value_secret", uint64_t{0});
  o.records = records_from_json(j, workloads, "worker plan");
  o.work_follows = j.value("work_follows", false);
  o.warm_up = j.value("warm_up", json(nullptr));
  o.timing_after_go = j.value("timing_after_go", false);
  o.streamed = j.value("streamed", false);
  return o;
}

// What each role needs of the rest of the plan (the reasons in the messages).
void check_role(const WorkerPlan& p) {
  const bool reference = p.entry.kind == EntryKind::Reference;
  if (p.role == WorkerRole::Baseline && !reference)
    throw std::runtime_error("malformed worker plan: role \"baseline\" but kind is \"" +
                             std::string(entry_kind_name(p.entry.kind)) +
                             "\" (expected \"reference\": only the reference is a baseline)");
  if (p.gpu_after_go && p.role != WorkerRole::Baseline)
    throw std::runtime_error("malformed worker plan: gpu_after_go needs role \"baseline\" (is \"" +
                             std::string(worker_role_name(p.role)) + "\")");
  if (p.hand_back && !p.gpu_after_go)
    throw std::runtime_error("malformed worker plan: hand_back needs gpu_after_go");
  // Shares of the GPU's memory are T_b's: a solution's worker that waited for them
  // would only wait.
  if (!p.memory_shares.empty() && p.role != WorkerRole::Baseline)
    throw std::runtime_error("malformed worker plan: memory_shares needs role \"baseline\" (is \"" +
                             std::string(worker_role_name(p.role)) + "\")");
  if (p.role != WorkerRole::Judge) return;
  if (!reference)
    throw std::runtime_error("malformed worker plan: role \"judge\" needs kind \"reference\" (it "
                             "never loads solution code)");
  // The secret of the values is the judge's alone: a worker that may load
  // solution code asks the parent for each seed (values.h).
  if (p.judge.value_secret == 0)
    throw std::runtime_error("malformed worker plan: role \"judge\" needs judge.value_secret");
  if (p.judge.work_follows && !p.workloads.empty())
    throw std::runtime_error("malformed worker plan: judge.work_follows needs no workloads yet");
  if (p.judge.streamed && !(p.judge.work_follows && p.judge.timing_after_go))
    throw std::runtime_error(
        "malformed worker plan: judge.streamed needs judge.work_follows and judge.timing_after_go");
}

}  // namespace

json WorkerPlan::to_json() const {
  json j = make_frame(FrameType::Plan);
  j["role"] = worker_role_name(role);
  j["definition"] = definition;
  j["solution_name"] = solution_name;
  j["kind"] = entry_kind_name(entry.kind);
  j["library"] = entry.library;
  j["module_name"] = entry.module_name;
  j["entry"] = entry.symbol;
  j["entry_file"] = entry.entry_file;
  j["sources"] = entry.sources;
  j["dps"] = entry.dps;
  j["languages"] = entry.languages;
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
  if (profile) j["profile"] = true;  // absent when off: the plan as before
  j["timing_lock"] = timing_lock;
  if (!memory_shares.empty()) {  // absent without shares: the plan as before
    j["memory_shares"] = memory_shares;
    j["memory_share_units"] = memory_share_units;
  }
  if (gpu_after_go) j["gpu_after_go"] = true;
  if (hand_back) j["hand_back"] = true;
  j["sandbox"] = sandbox;
  if (role == WorkerRole::Judge) j["judge"] = judge_json(judge);
  return j;
}

WorkerPlan WorkerPlan::from_json(const json& j) {
  try {
    WorkerPlan p;
    const std::string role = j.value("role", "solution");
    auto r = parse_worker_role(role);
    if (!r)
      throw std::runtime_error("malformed worker plan: unknown role \"" + role.substr(0, 20) +
                               "\" (expected solution, recorder, judge or baseline)");
    p.role = *r;
    p.definition = j.at("definition");
    p.solution_name = j.at("solution_name").get<std::string>();
    auto kind = parse_entry_kind(j.at("kind").get<std::string>());
    if (!kind) throw std::runtime_error("unknown entry kind");
    p.entry.kind = *kind;
    p.entry.library = j.value("library", "");
    p.entry.module_name = j.value("module_name", "");
    p.entry.symbol = j.value("entry", "");
    p.entry.entry_file = j.value("entry_file", "");
    p.entry.sources = j.value("sources", json::array());
    p.entry.dps = j.value("dps", true);
    p.entry.languages = j.value("languages", std::vector<std::string>{});
    for (const auto& w : j.at("workloads")) p.workloads.push_back(w);
    p.device = Device::parse(j.value("device", "cpu"));
    p.rounds = j.value("rounds", 5);
    p.seed = j.value("seed", uint64_t{0});
    p.input_sets = j.value("input_sets", 4);
    p.verify_samples = j.value("verify_samples", 8);
    p.time_solution = j.value("time_solution", true);
    p.time_reference = j.value("time_reference", true);
    p.timing = TimingOptions::from_json(j.value("timing", json::object()));
    p.timer_options = j.value("timer_options", json::object());
    p.profile = j.value("profile", false);
    p.timing_lock = j.value("timing_lock", "");
    p.memory_shares = j.value("memory_shares", "");
    p.memory_share_units = j.value("memory_share_units", 0);
    p.gpu_after_go = j.value("gpu_after_go", false);
    p.hand_back = j.value("hand_back", false);
    p.sandbox = j.value("sandbox", json::object());
    if (auto it = j.find("judge"); it != j.end() && !it->is_null()) {
      // The records, the secret and the early start are a Judge's alone.
      if (p.role != WorkerRole::Judge)
        throw std::runtime_error("malformed worker plan: judge options need role \"judge\" (is \"" +
                                 role + "\")");
      p.judge = judge_from_json(*it, p.workloads.size());
    }
    check_role(p);
    return p;
  } catch (const json::exception& e) {
    throw std::runtime_error(std::string("malformed worker plan: ") + e.what());
  }
}

json WorkloadOutcome::to_json() const {
  json j = make_frame(FrameType::Result);
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
  if (!profile.is_null()) j["profile"] = profile;
  if (!reference_profile.is_null()) j["reference_profile"] = reference_profile;
  if (record) j["record"] = record->to_json();
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
    if (auto it = j.find("profile"); it != j.end()) o.profile = *it;
    if (auto it = j.find("reference_profile"); it != j.end()) o.reference_profile = *it;
    if (auto it = j.find("record"); it != j.end() && !it->is_null()) {
      o.record = CallRecord::from_json(*it);
      o.record->dir.clear();  // the parent says where the files are, not the worker
    }
    return o;
  } catch (const json::exception& e) {
    throw std::runtime_error(std::string("malformed result frame: ") + e.what());
  }
}

size_t kept_at_go(size_t n, size_t compiled, bool compiling, double compiled_seconds,
                  double first_seconds) {
  size_t keep = std::max<size_t>(compiled + (compiling ? 1 : 0), 1);
  if (compiled > 0) {
    const double pace = compiled > 1 ? (compiled_seconds - first_seconds) / double(compiled - 1)
                                     : compiled_seconds;
    keep += static_cast<size_t>(std::min(kKeepAheadSeconds / std::max(pace, 1e-9), double(n)));
  }
  return std::min(keep, n);
}

void AheadTally::add(bool done, double seconds) {
  if (!done) gap = true;
  if (!done || gap) return;
  if (compiled++ == 0) first_s = seconds;
  compiled_s += seconds;
}

}  // namespace solbench::harness
