#include "runset/resume.h"

#include <set>

#include "harness/eval_plan.h"
#include "harness/protocol.h"  // kOutOfGpuMemory

namespace solbench::runset {

bool is_worker_environment(const json& env) {
  return env.is_object() && env.contains("hardware") && env["hardware"].is_string() &&
         !env["hardware"].get_ref<const std::string&>().empty();
}

store::EnvironmentInfo store_environment(const Problem& p, size_t workload_index,
                                         const json& worker_env) {
  const Trace t = harness::make_trace(p, workload_index, "", harness::WorkloadOutcome{}, worker_env);
  return store::environment_from_trace(t);
}

std::shared_ptr<DeviceEnvironments::Entry> DeviceEnvironments::entry(const std::string& device) {
  std::lock_guard lock(m_);
  auto& e = entries_[device];
  if (!e) e = std::make_shared<Entry>();
  return e;
}

std::optional<json> DeviceEnvironments::get(const std::string& device, const Probe& probe) {
  auto e = entry(device);
  std::lock_guard lock(e->m);
  if (!e->env && e->attempts < kMaxProbes) {
    ++e->attempts;
    {
      std::lock_guard count(m_);
      ++probes_;
    }
    std::optional<json> env = probe ? probe() : std::nullopt;
    if (env && is_worker_environment(*env)) e->env = std::move(env);
  }
  return e->env;
}

std::optional<json> DeviceEnvironments::known(const std::string& device) {
  auto e = entry(device);
  std::lock_guard lock(e->m);
  return e->env;
}

void DeviceEnvironments::learn(const std::string& device, const json& env) {
  if (!is_worker_environment(env)) return;
  auto e = entry(device);
  std::lock_guard lock(e->m);
  if (!e->env) e->env = env;
}

int DeviceEnvironments::probes() const {
  std::lock_guard lock(m_);
  return probes_;
}

std::vector<store::StoredTrace> stored_traces(store::Store& db, const std::string& definition,
                                              const std::string& solution_name,
                                              const std::string& solution_hash,
                                              const std::vector<std::string>& uuids) {
  const std::set<std::string> want(uuids.begin(), uuids.end());
  store::Filter f;
  f.definition = definition;
  f.solution = solution_name;
  std::vector<store::StoredTrace> out;
  for (auto& t : db.history(f))
    if (t.solution_hash == solution_hash && want.count(t.workload_uuid)) out.push_back(std::move(t));
  return out;
}

std::map<std::string, store::StoredTrace> resumable(
    store::Store& db, const std::vector<store::StoredTrace>& candidates,
    const std::string& solution_hash, const std::string& environment_hash) {
  std::map<std::string, store::StoredTrace> out;
  std::set<std::string> uuids;
  for (const auto& t : candidates) uuids.insert(t.workload_uuid);
  for (const auto& uuid : uuids) {
    if (!db.has_result(solution_hash, uuid, environment_hash)) continue;
    for (const auto& t : candidates)  // oldest first: the last one in the environment wins
      if (t.workload_uuid == uuid && t.environment_hash == environment_hash) out[uuid] = t;
  }
  return out;
}

bool is_out_of_memory_skip(std::string_view skip_reason) {
  return skip_reason.rfind(harness::kOutOfGpuMemory, 0) == 0;
}

bool stores_skip(std::string_view skip_reason, bool gpu_to_itself) {
  return gpu_to_itself && is_out_of_memory_skip(skip_reason);
}

std::map<std::string, store::Skip> resumable_skips(const std::vector<store::Skip>& skips,
                                                   const std::string& environment_hash) {
  std::map<std::string, store::Skip> out;
  for (const auto& s : skips)  // oldest first: the last one in the environment wins
    if (s.environment_hash == environment_hash && is_out_of_memory_skip(s.reason))
      out[s.workload_uuid] = s;
  return out;
}

}  // namespace solbench::runset
