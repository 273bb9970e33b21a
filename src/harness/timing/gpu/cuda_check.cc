#include "harness/timing/gpu/cuda_check.h"

#include <cupti.h>

#include <fmt/format.h>

namespace solbench::gpu {

namespace {

std::string describe(CudaApi api) {
  switch (api) {
    case CudaApi::Runtime: return "CUDA runtime";
    case CudaApi::Driver: return "CUDA driver";
    case CudaApi::Cupti: return "CUPTI";
  }
  return "CUDA";
}

std::string message(CudaApi api, int code, const std::string& name, const std::string& call,
                    const std::string& file, int line, bool sticky) {
  return fmt::format("{} error {} ({}) in `{}` at {}:{}{}", describe(api), name, code, call,
                     file, line, sticky ? " [sticky: the CUDA context is no longer usable]" : "");
}

}  // namespace

CudaError::CudaError(CudaApi api, int code, std::string error_name, std::string call,
                     std::string file, int line, bool sticky)
    : std::runtime_error(message(api, code, error_name, call, file, line, sticky)),
      api_(api),
      code_(code),
      error_name_(std::move(error_name)),
      call_(std::move(call)),
      file_(std::move(file)),
      line_(line),
      sticky_(sticky) {}

bool is_sticky(cudaError_t err) {
  switch (err) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorLaunchTimeout:
    case cudaErrorAssert:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorTensorMemoryLeak:
    case cudaErrorContained:
    case cudaErrorMpsClientTerminated:
    case cudaErrorExternalDevice:
    case cudaErrorECCUncorrectable:
    case cudaErrorNvlinkUncorrectable:
      return true;
    default:
      return false;
  }
}

bool is_sticky(CUresult err) {
  switch (err) {
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_TENSOR_MEMORY_LEAK:
    case CUDA_ERROR_CONTAINED:
    case CUDA_ERROR_MPS_CLIENT_TERMINATED:
    case CUDA_ERROR_EXTERNAL_DEVICE:
    case CUDA_ERROR_ECC_UNCORRECTABLE:
    case CUDA_ERROR_NVLINK_UNCORRECTABLE:
      return true;
    default:
      return false;
  }
}

std::string error_name(cudaError_t err) {
  const char* name = cudaGetErrorName(err);
  return name ? name : fmt::format("cudaError({})", static_cast<int>(err));
}

void* driver_entry_point(const char* symbol, int cuda_version) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult status{};
  if (cudaGetDriverEntryPointByVersion(symbol, &fn, cuda_version > 0 ? cuda_version : CUDART_VERSION,
                                       cudaEnableDefault, &status) != cudaSuccess ||
      status != cudaDriverEntryPointSuccess) {
    (void)cudaGetLastError();
    return nullptr;
  }
  return fn;
}

std::string error_name(CUresult err) {
  using GetName = CUresult (*)(CUresult, const char**);
  static auto get_name = reinterpret_cast<GetName>(driver_entry_point("cuGetErrorName"));
  const char* name = nullptr;
  if (get_name && get_name(err, &name) == CUDA_SUCCESS && name) return name;
  return fmt::format("CUresult({})", static_cast<int>(err));
}

std::string error_name(CUptiResult err) {
  const char* text = nullptr;
  if (cuptiGetResultString(err, &text) == CUPTI_SUCCESS && text) return text;
  return fmt::format("CUptiResult({})", static_cast<int>(err));
}

namespace detail {

void check(cudaError_t err, const char* call, const char* file, int line) {
  if (err == cudaSuccess) return;
  const bool sticky = is_sticky(err);
  // A non-sticky error also sits in the runtime's last-error slot: clear it so it
  // is not reported again by the next cudaGetLastError/cudaPeekAtLastError.
  if (!sticky) (void)cudaGetLastError();
  throw CudaError(CudaApi::Runtime, static_cast<int>(err), error_name(err), call, file, line,
                  sticky);
}

void check(CUresult err, const char* call, const char* file, int line) {
  if (err == CUDA_SUCCESS) return;
  throw CudaError(CudaApi::Driver, static_cast<int>(err), error_name(err), call, file, line,
                  is_sticky(err));
}

void check(CUptiResult err, const char* call, const char* file, int line) {
  if (err == CUPTI_SUCCESS) return;
  throw CudaError(CudaApi::Cupti, static_cast<int>(err), error_name(err), call, file, line,
                  false);
}

}  // namespace detail
}  // namespace solbench::gpu
