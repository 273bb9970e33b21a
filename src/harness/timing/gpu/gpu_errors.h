// Sticky CUDA error detection for the worker (no CUDA headers needed).
//
// After a solution's call the worker asks `poll_cuda_error()`: it reads (and, for a
// recoverable error, clears) the runtime's last error, optionally after waiting for
// the device so that asynchronous faults (illegal address in a kernel) surface. A
// sticky error means the CUDA context is corrupt: the worker reports
// RUNTIME_ERROR for the workload and must exit so a fresh worker continues.
#pragma once

#include <stdexcept>
#include <string>

#include "core/json.h"

namespace solbench::gpu {

// Thrown by the GPU timers (prepare, elapsed_ms, wait_idle) when GPU work a call
// left behind is still running after the bound (device_idle.h): the solution's
// reward hack. what() is the report. The work keeps running until the process
// ends, and the process must end: no later synchronise returns.
class WorkLeftRunning : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// True once a wait for the device has given up in this process (the worker must
// report and exit without touching the device again); `message` gets the report.
bool work_left_running(std::string* message = nullptr);

struct CudaErrorStatus {
  bool ok = true;       // no error pending
  bool sticky = false;  // context unusable: end the process
  // GPU work left running past the bound (device_idle.h): the solution's reward
  // hack; sticky too (the process must end). `message` is the report.
  bool work_left_running = false;
  int code = 0;         // cudaError_t value
  std::string name;     // "cudaErrorIllegalAddress"
  std::string message;  // the runtime's description
};

// `synchronize`: waits for the device first (catches faults of kernels still
// running), through the device's DeviceIdleGuard when a GPU timer made one, so the
// wait is bounded. Never throws; in a build without CUDA answers ok=false with the
// reason.
CudaErrorStatus poll_cuda_error(bool synchronize = true);

// Classification of a raw cudaError_t value (stable across CUDA versions we use).
bool is_sticky_cuda_error(int code);

json to_json(const CudaErrorStatus& s);

}  // namespace solbench::gpu
