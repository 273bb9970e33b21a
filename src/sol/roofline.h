// The roofline: the speed-of-light time of one workload on one hardware model,
// T_SOL = max(tensor-core time, CUDA-core time, SFU time, DRAM time).
#pragma once

#include <string>

#include "sol/cost_model.h"
#include "sol/hardware.h"

namespace solbench::sol {

struct Bound {
  Work work;                 // totals over the graph
  double boundary_bytes = 0; // every input read once + every output written once
  double min_bytes = 0;      // boundary, inputs at the bytes they touch, outputs at the bytes written
  double unfused_bytes = 0;  // every operator's inputs and outputs through DRAM
  // What must cross DRAM while the kernel runs: min_bytes less the writes the L2
  // can hold when it ends. The L2 writes back; a kernel's last writes, up to the
  // L2's size, reach DRAM after its end, outside any per-kernel timing (measured on
  // the H100: L1/066's compiled baseline wrote 33.5 MB and read 67 MB in 29.5 us,
  // 3.42 TB/s of boundary bytes against a 3.35 TB/s peak). Reads cannot be
  // deferred: every timed call starts with the L2 flushed.
  double dram_bytes = 0;
  double l2_deferred_bytes = 0;
  double t_tensor = 0, t_cuda = 0, t_sfu = 0, t_dram = 0;  // seconds
  double t_sol = 0;
  double t_unfused = 0;      // max(compute terms, unfused_bytes / bandwidth)
  std::string bottleneck;    // tensor | cuda | sfu | dram
  double intensity = 0;      // FLOP (tensor + CUDA-core) per DRAM byte
};

// `output_bytes` and `input_bytes` come from the resolved workload (boundary);
// `min_input_bytes` from the graph's touched-bytes analysis and
// `min_output_bytes` from its written-bytes analysis (negative: `output_bytes`).
Bound roofline(const Work& total, double input_bytes, double min_input_bytes, double output_bytes,
               const HardwareModel& hw, double min_output_bytes = -1);

}  // namespace solbench::sol
