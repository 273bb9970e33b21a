// Sticky CUDA error detection for the worker (no CUDA headers needed).
//
// After a solution's call the worker asks `poll_cuda_error()`: it reads (and, for a
// recoverable error, clears) the runtime's last error, optionally after waiting for
// the device so that asynchronous faults (illegal address in a kernel) surface. A
// sticky error means the CUDA context is corrupt: the worker reports
// RUNTIME_ERROR for the workload and must exit so a fresh worker continues.
#pragma once

#include <string>

#include "core/json.h"

namespace solbench::gpu {

struct CudaErrorStatus {
  bool ok = true;       // no error pending
  bool sticky = false;  // context unusable: end the process
  int code = 0;         // cudaError_t value
  std::string name;     // "cudaErrorIllegalAddress"
  std::string message;  // the runtime's description
};

// `synchronize`: cudaDeviceSynchronize() first (catches faults of kernels still
// running). Never throws; in a build without CUDA answers ok=false with the reason.
CudaErrorStatus poll_cuda_error(bool synchronize = true);

// Classification of a raw cudaError_t value (stable across CUDA versions we use).
bool is_sticky_cuda_error(int code);

json to_json(const CudaErrorStatus& s);

}  // namespace solbench::gpu
