// One checking path for every CUDA runtime, driver and CUPTI call: a failed call
// throws CudaError carrying the call's text, where it was made and the error's
// name, and says whether the error is sticky (the context is unusable and the
// process must end: illegal address, launch failure, ...).
#pragma once

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cupti_result.h>

#include <stdexcept>
#include <string>

namespace solbench::gpu {

// Which API a failed call belongs to.
enum class CudaApi { Runtime, Driver, Cupti };

class CudaError : public std::runtime_error {
 public:
  CudaError(CudaApi api, int code, std::string error_name, std::string call,
            std::string file, int line, bool sticky);

  CudaApi api() const { return api_; }
  int code() const { return code_; }                      // the API's own error code
  const std::string& error_name() const { return error_name_; }  // e.g. "cudaErrorIllegalAddress"
  const std::string& call() const { return call_; }       // the call's source text
  const std::string& file() const { return file_; }
  int line() const { return line_; }
  // True when the CUDA context is corrupted: every later call fails the same way
  // and only ending the process recovers the device.
  bool is_sticky() const { return sticky_; }

 private:
  CudaApi api_;
  int code_;
  std::string error_name_;
  std::string call_;
  std::string file_;
  int line_;
  bool sticky_;
};

// True for runtime errors that leave the context unusable (the CUDA documentation's
// "the process must be terminated and relaunched" list, plus uncorrectable ECC/NVLink).
bool is_sticky(cudaError_t err);
bool is_sticky(CUresult err);

// A driver API function, reached through the runtime's entry-point lookup so that
// nothing links libcuda directly (binaries then load where no driver exists).
// Null when the driver lacks it.
// `cuda_version`: the CUDA version whose form of the function to return (0: this
// runtime's); a function whose signature changed takes the version it is called as.
void* driver_entry_point(const char* symbol, int cuda_version = 0);

// Name of an error ("cudaErrorIllegalAddress"), never null.
std::string error_name(cudaError_t err);
std::string error_name(CUresult err);
std::string error_name(CUptiResult err);

namespace detail {
// Throw CudaError when `err` is not success. Runtime: also clears the non-sticky
// last error so that it does not resurface at an unrelated later call.
void check(cudaError_t err, const char* call, const char* file, int line);
void check(CUresult err, const char* call, const char* file, int line);
void check(CUptiResult err, const char* call, const char* file, int line);
}  // namespace detail

}  // namespace solbench::gpu

// Checks any runtime (cudaError_t), driver (CUresult) or CUPTI (CUptiResult) call.
#define SB_CUDA_CHECK(call) ::solbench::gpu::detail::check((call), #call, __FILE__, __LINE__)
