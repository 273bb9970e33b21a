// GPU micro-benchmarks for `solbench hw calibrate --device cuda:N`: the
// attainable DRAM bandwidth (a copy and a read of buffers far larger than the
// L2), the FP32 FMA and SFU rates (throughput kernels), the tensor-core rate per
// dtype (cuBLASLt GEMMs at a large square size; libcublasLt is opened with dlopen,
// so solbench does not link it), and the shortest kernel (an empty one). Each is
// timed with CUDA events, repeated for a few hundred ms and reduced to the
// median. Clocks are sampled, never set. Needs no CUDA types in this header;
// without a CUDA compiler measure_gpu_ceilings throws.
#pragma once

#include <map>
#include <string>

#include "core/json.h"

namespace solbench::gpu {

struct GpuCeilings {
  // The device as the runtime reports it.
  std::string name, uuid, compute_capability, driver;
  int sm_count = 0;
  double sm_clock_max_mhz = 0;
  double l2_bytes = 0, memory_bytes = 0;
  double dram_gbs = 0;     // the larger of copy and read
  double fp32_tflops = 0;  // FMA, 2 FLOP each
  double sfu_tops = 0;     // MUFU.RSQ per second
  double launch_us = 0;    // empty kernel, GPU time between events
  std::map<std::string, double> tensor_tflops;  // bf16, fp16, tf32, fp8 where measured
  json detail = json::object();  // per measurement: sizes, repeats, median, clocks; skipped dtypes
  json clocks;  // ClockWatch before/after the whole calibration, with its warnings
};

struct GpuCalibrationOptions {
  bool quick = false;      // small sizes, few repeats (tests, smoke runs)
  double budget_s = 0.3;   // per measurement
};

GpuCeilings measure_gpu_ceilings(int ordinal, const GpuCalibrationOptions& options);

}  // namespace solbench::gpu
