// Resume: which (solution, workload) pairs a run can take from the store
// instead of evaluating them again.
//
// The rule (docs/run.md): a workload is skipped for a solution when the store
// holds a trace of that solution's content hash on that workload's uuid in the
// environment this run's evaluations on that device are recorded in
// (store.has_result). That environment is not guessed: it is the worker
// environment eval reports for the device (hardware name, torch version, timer,
// and whatever else a worker says), mapped to the store's environment exactly as
// recording maps it (harness::make_trace, then store::environment_from_trace,
// which adds this host's name). It is learned from any eval output on the device
// or, when a look-up needs it first, measured once per device by a probe child
// (`eval --reference --smallest 1 --no-timing --rounds 1` on the problem at
// hand, recorded nowhere; tried again on the next problem if it fails, at most
// three times per device).
// A store without any trace of the solution on those workloads needs no probe.
//
// Skips: a workload the worker skipped leaves no trace, so it is evaluated
// again, except one that ran out of GPU memory while its evaluation had the GPU
// to itself (stores_skip): run records that skip (Store::record_skip) under the
// same environment hash, and a later run takes it from the store
// (resumable_skips) unless the store also holds a trace of the pair there, or
// --rerun skipped asks for it again.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/json.h"
#include "core/problem.h"
#include "store/store.h"

namespace solbench::runset {

// A worker's environment as eval reports it ("environment" of eval --json):
// usable when it names the hardware (a failed build reports none).
bool is_worker_environment(const json& env);

// The store environment of the traces eval makes with this worker environment.
store::EnvironmentInfo store_environment(const Problem& p, size_t workload_index,
                                         const json& worker_env);

// Each device's worker environment, learned or probed once, shared by the slots.
class DeviceEnvironments {
 public:
  // Measures a device's worker environment; nullopt when it cannot.
  using Probe = std::function<std::optional<json>()>;

  // The device's environment, calling `probe` when it is not known yet
  // (concurrent callers for one device wait for that probe). A failed probe is
  // tried again by later callers (with their own problem) up to kMaxProbes times.
  static constexpr int kMaxProbes = 3;
  std::optional<json> get(const std::string& device, const Probe& probe);
  // What is known without probing.
  std::optional<json> known(const std::string& device);
  // From an eval output on the device; the first one known is kept.
  void learn(const std::string& device, const json& env);
  int probes() const;  // how many probes ran (tests)

 private:
  struct Entry {
    std::mutex m;
    int attempts = 0;
    std::optional<json> env;
  };
  std::shared_ptr<Entry> entry(const std::string& device);
  mutable std::mutex m_;
  std::map<std::string, std::shared_ptr<Entry>> entries_;
  int probes_ = 0;
};

// The store's traces of this solution (definition, name and content hash) on
// these workloads, in any environment, oldest first. Empty: nothing to resume.
std::vector<store::StoredTrace> stored_traces(store::Store& db, const std::string& definition,
                                              const std::string& solution_name,
                                              const std::string& solution_hash,
                                              const std::vector<std::string>& uuids);

// Of `candidates`, per workload, the latest trace in `environment_hash`, for the
// workloads store.has_result(solution_hash, uuid, environment_hash) confirms.
std::map<std::string, store::StoredTrace> resumable(
    store::Store& db, const std::vector<store::StoredTrace>& candidates,
    const std::string& solution_hash, const std::string& environment_hash);

// A skip_reason of running out of GPU memory (harness::kOutOfGpuMemory first).
bool is_out_of_memory_skip(std::string_view skip_reason);

// Whether run records a workload's skip in the store, so that resume does not try
// it again: only for running out of GPU memory (the other reasons, a missing
// safetensors blob, a dtype the device lacks, a reference unavailable here, are the
// user's to fix and must be tried again), and only when the evaluation had its GPU
// to itself (one slot on the device, or run alone): beside other evaluations it may
// fit alone, which retry_out_of_memory_alone tries.
bool stores_skip(std::string_view skip_reason, bool gpu_to_itself);

// Of `skips` (Store::skips of a solution on its workloads), per workload, the
// latest out-of-memory skip in `environment_hash`.
std::map<std::string, store::Skip> resumable_skips(const std::vector<store::Skip>& skips,
                                                   const std::string& environment_hash);

}  // namespace solbench::runset
