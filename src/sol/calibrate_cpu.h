// The host's attainable ceilings for `solbench hw calibrate --device cpu`: memory
// bandwidth (STREAM triad and copy over every hardware thread, arrays far larger
// than the last-level cache) and FMA rates (fp32, fp64; AVX-512, AVX2+FMA or plain
// code, chosen at run time so the binary keeps the project's compile flags).
#pragma once

#include "sol/calibration.h"

namespace solbench::sol {

struct CpuCalibrationOptions {
  bool quick = false;  // small arrays and short loops (tests): seconds -> tenths
  int threads = 0;     // 0: std::thread::hardware_concurrency()
};

MeasuredCeilings measure_cpu_ceilings(const CpuCalibrationOptions& options = {});

// calibrate_cpu_fma.cc: `iterations` rounds of independent FMA chains on one
// thread; returns the FLOPs done (2 per FMA lane). `isa` gets the code path
// ("avx512f", "avx2+fma", "generic").
double fma_loop_fp32(long iterations, const char** isa);
double fma_loop_fp64(long iterations, const char** isa);

}  // namespace solbench::sol
