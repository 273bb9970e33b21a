// The environment a T_b belongs to (docs/score.md): the keys under which the
// results store keeps a baseline, and the environment a worker will report,
// predicted without starting one (for cache look-ups before measuring).
#pragma once

#include <string>

#include "core/device.h"
#include "core/json.h"
#include "store/store.h"

namespace solbench::score {

// The NVIDIA kernel driver's version (/sys/module/nvidia/version) for a
// "cuda:N" device; "" on the CPU or where the file is absent.
std::string driver_version(const Device& device);

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
json predicted_worker_env(const Device& device, const json& timer_options);

}  // namespace solbench::score
