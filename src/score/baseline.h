// The inputs of the SOL Score beside the kernel's own time (docs/score.md):
//
//   T_b    the scoring baseline: the problem's reference under torch.compile (eager
//          where this torch has no torch.compile or compiling fails, with the
//          reason), timed with the same timer, argument pools and stopping rule as
//          solutions, in a worker of its own that never loads solution code
//          (WorkerPlan kind Reference, role Baseline). Kept in the results
//          store per (definition content, workload, GPU model, driver, torch,
//          timer) and reused from there.
//   T_SOL  the speed-of-light bound of the sol module on a hardware model: the
//          one named by --arch, else the detected GPU's; the CPU has none.
//   published  SOL-ExecBench's B200 numbers (sol_ms, baseline_latency_ms) from a
//          public problem's metadata.json, for side-by-side comparisons.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/json.h"
#include "core/problem.h"
#include "harness/runner.h"
#include "harness/timing/timing.h"
#include "sol/hardware.h"
#include "store/store.h"

namespace solbench::score {

// ------------------------------------------------------------ environment

// The NVIDIA kernel driver's version (/sys/module/nvidia/version) for a
// "cuda:N" device; "" on the CPU or where the file is absent.
std::string driver_version(const std::string& device);

// The environment fields of a baseline key from a worker's environment
// ({hardware, torch, timer}, the "ready" frame's env) and `driver`.
store::BaselineKey baseline_key(const std::string& definition_hash, const std::string& uuid,
                                const json& worker_env, const std::string& driver);

// The environment a worker on `device` will report, predicted without starting
// one (for cache look-ups before measuring): hardware as the worker names it
// (/proc/cpuinfo's model name; NVML's name of the first GPU), torch.__version__
// of the embedded interpreter, the timer's name ("cpu-monotonic"; for GPUs the
// one `timer_options.timer` / SOLBENCH_GPU_TIMER names, "cupti" for auto).
// The measured worker's own environment is what gets stored.
json predicted_worker_env(const std::string& device, const json& timer_options);

// --------------------------------------------------------------- baselines

struct BaselineResult {
  std::string uuid;
  std::optional<double> t_b_ms;  // nullopt: no baseline (see reason)
  std::string method;            // "torch.compile" or "eager"; "" when none
  // Why eager ("torch.compile unavailable (torch 1.13.1)"), or why there is no T_b.
  std::string reason;
  bool cached = false;           // from the results store, not measured now
  std::string recorded;          // when it was measured (cached ones)
  std::string status;            // measured: the baseline worker's status (PASSED, ...)
  json timing = nullptr;         // measured: the timing statistics
  // {uuid, t_b_ms, method, reason (null when empty), cached, recorded?, status?, timing?}
  json to_json() const;
};

// The stored baseline for `key`, or nullopt. An eager one is reused only where
// torch has no torch.compile (< 2.0; the reason is restated for rows stored
// without one): elsewhere it is measured again, since what made it eager (a
// solbench bug, the environment, the reference) may be gone.
std::optional<BaselineResult> cached_baseline(store::Store& db, const store::BaselineKey& key);

struct MeasureOptions {
  std::string device = "cpu";
  json timer_options = json::object();   // as WorkerPlan::timer_options
  harness::TimingOptions timing;         // the solutions' stopping rule
  int rounds = 1;        // correctness rounds of the (compiled) reference against the eager one
  uint64_t seed = 0;  // 0: a secret of its own per evaluation (WorkerPlan::seed)
  std::chrono::duration<double> workload_timeout = std::chrono::seconds(300);
  bool keep_scratch = false;
  bool no_sandbox = false;
  // Called on the runner's thread as each workload's baseline arrives:
  // (position in `indices`, the result, the worker's environment).
  std::function<void(size_t, const BaselineResult&, const json&)> on_result;
  // Progress of the worker (harness::RunnerEvent kinds), for live output.
  std::function<void(const harness::RunnerEvent&)> on_event;
};

struct MeasureRun {
  std::vector<BaselineResult> results;  // aligned with `indices`
  json env = json::object();            // the baseline worker's environment
  json workers = json::array();
};

// Measures T_b of problem.workloads[i] for every i in `indices` (resolved ones)
// in a fresh worker (kind Reference, role Baseline). Never throws for
// problems of the reference: those workloads get no T_b and the reason.
MeasureRun measure_baselines(const Problem& problem, const std::vector<size_t>& indices,
                             const MeasureOptions& options);

// ------------------------------------------------------------------- T_SOL

struct ArchChoice {
  std::optional<sol::HardwareModel> model;  // nullopt: no T_SOL (see reason)
  std::string reason;
  bool explicit_arch = false;   // named by --arch
  bool matches_device = false;  // the model is the evaluating device's own
  std::string note;             // says when the model is not the device's
  // {model, display_name, explicit, matches_device, reason?, note?}
  json to_json() const;
};

// The hardware model for --arch `arch` (explicit) or, when empty, for `device`:
// the detected GPU's on "cuda:N"; none on the CPU (no CPU models exist). Throws
// std::runtime_error for an unknown --arch (the message lists the known ones).
ArchChoice choose_arch(const std::string& arch, const std::string& device);

// Re-checks matches_device against the worker's name for its device (env
// "hardware"), which is exact where NVML's first GPU may not be the device.
void confirm_device(ArchChoice& choice, const std::string& device, const json& worker_env);

struct SolBound {
  std::optional<double> t_sol_ms;  // nullopt: see reason
  std::string reason;
  std::string bottleneck;
  json uncosted = json::object();  // operators costed as nothing (the bound is weaker)
  bool cached = false;
  json to_json() const;  // {t_sol_ms, reason?, bottleneck?, uncosted?}
};

// T_SOL of problem.workloads[index] on `hw` (sol::analyse_workload, its cache).
SolBound sol_bound(const Problem& problem, size_t index, const sol::HardwareModel& hw,
                   bool use_cache = true);

// --------------------------------------------------------------- published

struct Published {
  std::optional<double> sol_ms;
  std::optional<double> baseline_ms;
  json to_json() const;  // {arch: "B200", sol_ms, baseline_latency_ms, source}
};

// SOL-ExecBench's published B200 numbers for each workload of `problem` (aligned
// with problem.workloads) from <problem_dir>/metadata.json; empty when the file is
// absent. An entry is matched by its index and must have the workload's axes
// (else it is left out and `note` says so). Throws InputError for a malformed file.
std::vector<std::optional<Published>> published_b200(const Problem& problem,
                                                     const std::filesystem::path& problem_dir,
                                                     std::string* note = nullptr);

// True when `model` is the B200 (the published numbers' hardware).
bool is_b200(const sol::HardwareModel& model);

}  // namespace solbench::score
