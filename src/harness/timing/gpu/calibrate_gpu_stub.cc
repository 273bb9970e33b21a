// Built instead of calibrate_gpu.cu when there is no CUDA compiler.
#include <stdexcept>

#include "harness/timing/gpu/calibrate_gpu.h"

namespace solbench::gpu {

GpuCeilings measure_gpu_ceilings(int, const GpuCalibrationOptions&) {
  throw std::runtime_error("solbench was built without a CUDA compiler: no GPU calibration kernels");
}

}  // namespace solbench::gpu
