// The GPU timer for the measurement loop: the one entry point the worker uses.
// Needs no CUDA headers, so every build can include it; a build without the CUDA
// toolkit (SOLBENCH_HAVE_CUDA off) links a stub that throws "built without CUDA".
#pragma once

#include <array>
#include <memory>
#include <string_view>

#include "core/json.h"
#include "harness/timing/timer.h"

namespace solbench::gpu {

// The GPU timers by name: what options "timer", SOLBENCH_GPU_TIMER and
// `solbench eval --timer` accept.
inline constexpr std::array<std::string_view, 4> kGpuTimerKinds = {"auto", "cupti", "events",
                                                                   "profiler"};

// A timer for CUDA device `device`, measuring calls launched on `stream` (a
// cudaStream_t; nullptr is the legacy default stream).
//
// `options` (all optional; unknown keys are refused with std::invalid_argument):
//   "timer": "auto" (default: CUPTI, else CUDA events with the reason in details()),
//            "cupti" (throws when CUPTI is unavailable), "events", "profiler"
//            (each kernel's gpu__time_duration, ncu's counter: profiler_timer.h;
//            throws when the profiler is unavailable);
//   "flush_l2": bool (default true; prepare() writes a buffer >= 2 x L2);
//   "l2_flush_mode": "write-then-read" (default) or "write";
//   "events_crosscheck": bool (default true; CUPTI timer also records CUDA events);
//   "block_launch": bool (default true; the cupti and events timers hold the stream with a
//            blocking kernel while the call is queued, as nvbench does: launch_gate.h);
//   "idle_timeout_s": seconds (default 2) the device may stay busy after a call's work on
//            the measured stream has finished (device_idle.h); past it: WorkLeftRunning.
// Environment: SOLBENCH_GPU_TIMER=<timer> overrides "timer";
// SOLBENCH_GPU_BLOCK_LAUNCH=0 or 1 overrides "block_launch";
// SOLBENCH_GPU_IDLE_TIMEOUT_S=<seconds> overrides "idle_timeout_s".
// Throws std::runtime_error when the device cannot be used or the build has no CUDA.
std::unique_ptr<harness::Timer> make_gpu_timer(int device, void* stream, const json& options);

// True when this build was compiled with the CUDA toolkit.
bool built_with_cuda();

}  // namespace solbench::gpu
