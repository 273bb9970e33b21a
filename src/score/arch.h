// T_SOL's side of the score (docs/score.md): the hardware model the bound is for
// (the one named by --arch, else the detected GPU's; the CPU has none) and the
// speed-of-light bound of one workload on it (the sol module, its cache).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/device.h"
#include "core/json.h"
#include "core/problem.h"
#include "sol/analysis.h"
#include "sol/hardware.h"

namespace solbench::score {

struct ArchChoice {
  std::optional<sol::HardwareModel> model;  // nullopt: no T_SOL (see reason)
  std::string reason;
  bool explicit_arch = false;   // named by --arch
  bool matches_device = false;  // the model is the evaluating device's own
  std::string note;             // says when the model is not the device's
  // The measured model T_attainable is computed on (sol/calibration.h): the
  // calibration of the evaluating GPU where `model` is its own datasheet model,
  // or `model` itself where --arch named a measured one (--arch cpu). The score
  // never uses it.
  std::optional<sol::HardwareModel> measured;
  // {model, display_name, explicit, matches_device, reason?, note?}
  json to_json() const;
  // The model is looked up by name among the hardware models (none if unknown).
  static ArchChoice from_json(const json& j);
};

// The hardware model for --arch `arch` (explicit) or, when empty, for `device`:
// the detected GPU's on "cuda:N"; none on the CPU (no CPU models exist). Throws
// std::runtime_error for an unknown --arch (the message lists the known ones).
ArchChoice choose_arch(const std::string& arch, const Device& device);

// The evaluating GPU's memory in bytes from its own datasheet model (memory_gb),
// never another GPU's: 0 where the model is not the device's or gives none.
uint64_t device_memory_bytes(const ArchChoice& choice);

// Re-checks matches_device against the worker's name for its device (env
// "hardware"), which is exact where NVML's first GPU may not be the device.
void confirm_device(ArchChoice& choice, const Device& device, const json& worker_env);

struct SolBound {
  std::optional<double> t_sol_ms;  // nullopt: see reason
  std::optional<double> t_attainable_ms;  // measured ceilings + one launch; nullopt: no calibration
  std::string reason;
  std::string bottleneck;
  json uncosted = json::object();  // operators costed as nothing (the bound is weaker)
  // {budget_s, ops} where the trace ran out of its time budget: the bound is the
  // traced prefix's (weaker; sol/analysis.h); null otherwise.
  json partial = nullptr;
  bool cached = false;
  // The bound's own counts (the analysis's work, bytes, time_us): what `--profile`
  // compares the achieved counters with. In memory only: not in to_json().
  json counts = nullptr;
  json to_json() const;  // {t_sol_ms, reason?, bottleneck?, uncosted?, partial?}
};

// T_SOL of problem.workloads[index] on `hw` (sol::analyse_workload, its cache;
// `options.trace` traces where the cache misses: a TracerProcess's, or this
// process's embedded Python when empty).
// With `measured` (ArchChoice::measured) also T_attainable from the same analysis.
SolBound sol_bound(const Problem& problem, size_t index, const sol::HardwareModel& hw,
                   const sol::AnalysisOptions& options = {},
                   const sol::HardwareModel* measured = nullptr);

}  // namespace solbench::score
