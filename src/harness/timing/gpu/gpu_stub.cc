// Built instead of the CUDA sources when the toolkit is absent (SOLBENCH_HAVE_CUDA
// off): everything links, GPU entry points report that this build has no CUDA.
#include <stdexcept>

#include "harness/timing/gpu/call_profile.h"
#include "harness/timing/gpu/device.h"
#include "harness/timing/gpu/fingerprint.h"
#include "harness/timing/gpu/gpu_errors.h"
#include "harness/timing/gpu/gpu_timer_factory.h"

namespace solbench::gpu {

namespace {
constexpr const char* kNoCuda = "solbench was built without CUDA (no CUDA toolkit at configure time)";
}

bool built_with_cuda() { return false; }

bool can_fingerprint() { return false; }
void fingerprint(uintptr_t, size_t, uintptr_t, uintptr_t) { throw std::runtime_error(kNoCuda); }

std::unique_ptr<harness::Timer> make_gpu_timer(int, void*, const json&) {
  throw std::runtime_error(kNoCuda);
}

bool work_left_running(std::string*) { return false; }

harness::CallTrace trace_call(int, void*, const json&, const std::function<void()>&) {
  throw std::runtime_error(kNoCuda);
}

std::optional<harness::CallCounters> count_call(int, void*, const json&,
                                                const std::function<void()>&, std::string* why) {
  if (why) *why = kNoCuda;
  return std::nullopt;
}

std::optional<harness::SampledDram> sample_call_dram(int, void*, const json&, double,
                                                     const std::function<void()>&,
                                                     std::string* why) {
  if (why) *why = kNoCuda;
  return std::nullopt;
}

CudaErrorStatus poll_cuda_error(bool) {
  CudaErrorStatus s;
  s.ok = false;
  s.name = "no_cuda";
  s.message = kNoCuda;
  return s;
}

bool is_sticky_cuda_error(int) { return false; }

json to_json(const CudaErrorStatus& s) {
  return {{"ok", s.ok}, {"name", s.name}, {"message", s.message}};
}

DeviceCount device_count() { return {0, kNoCuda}; }

bool gpu_available(std::string* reason) {
  if (reason) *reason = kNoCuda;
  return false;
}

DeviceInfo query_device(int) { throw std::runtime_error(kNoCuda); }
DeviceIdentity identify_device(int) { throw std::runtime_error(kNoCuda); }
std::string device_uuid(int) { return ""; }
void select_device(int) { throw std::runtime_error(kNoCuda); }

}  // namespace solbench::gpu
