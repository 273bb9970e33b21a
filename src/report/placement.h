// Where a time goes on a roofline chart: at the workload's arithmetic
// intensity (FLOP per minimum DRAM byte, from the SOL analysis), at the
// achieved rate work / time. T_SOL, the baseline and every solution of one
// workload share the intensity, so they stand on one vertical line.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "core/json.h"

namespace solbench::report {

// What the SOL analysis (sol::analyse_workload) says about one workload.
struct WorkloadWork {
  double flop = 0;      // tensor-core + CUDA-core FLOP (what the intensity counts)
  double bytes = 0;     // the minimum DRAM bytes
  double t_sol_ms = 0;  // T_SOL on the analysed hardware model
  std::string bottleneck;
  std::set<std::string> tensor_classes, cuda_classes;  // classes with work ("bf16")
  double intensity() const { return bytes > 0 ? flop / bytes : 0; }
};

struct WorkOrReason {
  std::optional<WorkloadWork> work;
  std::string reason;  // why there is none (the analysis's status and reason)
};

// Reads an analysis result ({status, work, bytes, time_us, bottleneck, ...}).
WorkOrReason work_from_analysis(const json& analysis);

struct Placement {
  double intensity = 0;    // FLOP/byte
  double flops_per_s = 0;  // achieved: work / time
  std::string reason;      // empty when placed; else why the point is not on the chart
  bool placed() const { return reason.empty(); }
};

// The point of a time `t_ms` on `w`. `missing` is the reason given when
// there is no time (e.g. "status RUNTIME_ERROR: no latency").
Placement place(const WorkloadWork& w, std::optional<double> t_ms, std::string_view missing);

}  // namespace solbench::report
