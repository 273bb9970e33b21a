// The profile pass's GPU side (`eval --profile`, docs/profile.md): one call traced
// with CUPTI activity records, and one with per-kernel hardware counters from the
// CUDA 13 range profiler. Both run after the timed loop, never inside it, with
// timers and profiler sessions of their own. CUDA-free header (the worker includes
// it); a build without CUDA links stubs that throw "built without CUDA".
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "core/json.h"
#include "harness/timing/kernel_profile.h"

namespace solbench::gpu {

// Runs `call` once under the timed loop's conditions (its own CUPTI timer made with
// `timer_options`, forced to the activity timer: device idle, persisting L2 undone,
// L2 flushed, launch gate) and returns every activity record of it with the host's
// clock around it. Throws std::runtime_error with the reason when CUPTI's activity
// API cannot be used here (another profiler owns it, the library refuses), and
// gpu::WorkLeftRunning as the timers do.
harness::CallTrace trace_call(int device, void* stream, const json& timer_options,
                              const std::function<void()>& call);

// Runs `call` once with the range profiler on the current context: auto range (one
// range per kernel, any stream) and kernel replay (CUPTI replays each kernel as many
// times as the metrics need passes, restoring memory in between), the L2 flushed
// first. Returns nullopt with the reason in `why` when counters cannot be read here:
// no profiling rights (CUPTI_ERROR_INSUFFICIENT_PRIVILEGES), an unsupported device
// or configuration, another profiler on the context (ncu, `--timer profiler`).
std::optional<harness::CallCounters> count_call(int device, void* stream, const json& timer_options,
                                                const std::function<void()>& call,
                                                std::string* why);

// Runs `call` once more with CUPTI's PM sampling of DRAM bytes (an interval of
// 1 us, longer for calls expected over 20 ms), after the L2 flush and with the
// device idle before and after, and sums the samples between: the bytes read and
// written while the call ran. Returns nullopt with the reason in `why` where PM
// sampling cannot run (no rights, an unsupported GPU, the buffer overflowed).
std::optional<harness::SampledDram> sample_call_dram(int device, void* stream,
                                                     const json& timer_options, double expected_ms,
                                                     const std::function<void()>& call,
                                                     std::string* why);

}  // namespace solbench::gpu
