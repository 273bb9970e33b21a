// The roofs of a roofline chart, from a hardware model (data/hardware/*.json):
// the DRAM roof (bandwidth x intensity) and one compute roof per distinct peak
// rate of the dense tensor cores and the CUDA cores.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "sol/hardware.h"

namespace solbench::report {

// One horizontal roof. Classes of one unit with the same peak share a roof
// ("tensor bf16/fp16"); so do classes of both units with the same peak
// ("tensor fp64 / CUDA fp32").
struct Roof {
  std::string name;     // e.g. "tensor bf16/fp16"
  double flops = 0;     // FLOP/s (operations/s for int8)
  bool used = false;    // the problem's work runs on one of these classes
};

struct Roofs {
  std::string hardware;      // model name, e.g. "h100_sxm"
  std::string display_name;  // "NVIDIA H100 SXM5 80GB"
  double bandwidth = 0;      // DRAM bytes/s
  std::vector<Roof> compute; // highest first
  // The intensity (FLOP/byte) where the DRAM roof meets `r`.
  double ridge(const Roof& r) const { return bandwidth > 0 ? r.flops / bandwidth : 0; }
};

// `used_tensor` / `used_cuda`: the math-class names ("bf16", "fp32") the
// analysed work has on each unit; a class the chip lacks marks the roof its
// rate falls back to (HardwareModel::tensor_flops).
Roofs roofs_of(const sol::HardwareModel& hw, const std::set<std::string>& used_tensor,
               const std::set<std::string>& used_cuda);

}  // namespace solbench::report
