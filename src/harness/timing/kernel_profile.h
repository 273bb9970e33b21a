// The profile of one call (`eval --profile`, issue #30): what the solution's call
// ran on the GPU, kernel by kernel, and what the hardware counters saw.
//
// The worker makes two extra calls after the timed loop, never inside it
// (docs/profile.md): one traced with CUPTI activity records (the GPU timer's own
// conditions: device idle, L2 flushed, launch gate), one with the range profiler's
// counters per kernel (replayed kernel by kernel where a metric needs more than one
// pass). This header holds what both produce as plain data and the arithmetic on
// it, which needs no GPU and is unit-tested without one; the GPU side is in
// timing/gpu/call_profile.h.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/json.h"

namespace solbench::harness {

// One activity record of the traced call.
struct TracedActivity {
  std::string kind = "kernel";  // kernel | memcpy | memset
  std::string name;             // a kernel's mangled name; "memcpy HtoD", "memset"
  uint64_t start_ns = 0, end_ns = 0;
  uint32_t context = 0, stream = 0;
  std::array<uint32_t, 3> grid{}, block{};  // kernels only
  uint64_t bytes = 0;                       // memcpy / memset
};

// The traced call: its activities and the host's clock around it.
struct CallTrace {
  std::vector<TracedActivity> activities;
  double host_wall_ms = 0;     // from before the call to its GPU work finished (host clock)
  double host_enqueue_ms = 0;  // from before the call until it returned to the harness
  std::string timer;           // the timer that bracketed it ("cupti")
};

// One kernel's counters, in the order the kernels ran.
struct KernelCounters {
  std::string name;                     // the range's name (the kernel's, as CUPTI gives it)
  std::map<std::string, double> values; // metric -> value
};

// DRAM bytes while one call ran, from CUPTI's PM sampling (a second pass of the
// call, after the same L2 flush): counted from its first sample to its last, so
// writes the L2 still holds when the call ends are not counted, as ncu does not
// count them (kernel replay counts them: its ranges end after the write-back).
struct SampledDram {
  double read_bytes = 0, write_bytes = 0;
  size_t samples = 0;       // decoded samples of the call's window
  double interval_ns = 0;   // the sampling interval
};

// The counter pass: per kernel, the metrics that could be collected.
struct CallCounters {
  std::vector<std::string> metrics;      // collected
  std::vector<std::string> unavailable;  // asked for, refused by this GPU or CUPTI
  std::vector<KernelCounters> kernels;
  std::string replay;                    // "kernel" (CUPTI replays each kernel per pass)
  int passes = 0;
  std::optional<SampledDram> sampled;    // the PM-sampling pass, where it ran
  std::string sampled_why_not;           // why it did not, where it was tried
};

// The metrics the counter pass asks for (those a GPU lacks are listed as
// unavailable and the rest kept). Tensor-core operations by source dtype, CUDA-core
// FP32 instructions by kind, the SFU's (XU pipe) warp instructions, DRAM bytes and
// the kernel's duration as ncu reports it.
const std::vector<std::string>& profile_metrics();

// The few a single pass can read on every GPU the bound models (duration, DRAM
// bytes read and written): the counter pass's fallback where kernel replay fails.
const std::vector<std::string>& core_profile_metrics();

// The kernel breakdown of a traced call as the trace stores it
// (solbench_profile.kernels, docs/profile.md): each activity in start order with its
// duration, grid and block, the gap before it and its share of T_k; the span, the
// GPU's busy time (union of intervals), the gaps (span - busy) and the host time
// around the GPU work (host wall - busy). `t_k_ms`: the timed loop's median. At most
// 512 activities are listed (the first by start; `activities_omitted` counts the rest).
json kernel_breakdown(const CallTrace& trace, std::optional<double> t_k_ms);

// Per kernel the derived quantities of the counter pass (DRAM bytes read and
// written, tensor-core FLOPs by dtype, FP32 FLOPs, SFU operations, duration and
// achieved rates) and their totals: solbench_profile.counters.
json counter_summary(const CallCounters& counters);

// The profile of a workload when no counters could be read: {"allowed": false, "reason"}.
json counters_not_allowed(const std::string& reason);

}  // namespace solbench::harness
