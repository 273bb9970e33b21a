#include "harness/timing/gpu/gpu_timer_factory.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/settings.h"
#include "harness/timing/gpu/cuda_check.h"
#include "harness/timing/gpu/cupti_timer.h"
#include "harness/timing/gpu/device.h"
#include "harness/timing/gpu/device_idle.h"
#include "harness/timing/gpu/event_timer.h"
#include "harness/timing/gpu/gpu_errors.h"
#include "harness/timing/gpu/profiler_timer.h"

namespace solbench::gpu {

namespace {

// One flush buffer per device, shared by every timer alive on it (the solution's
// and the reference's): 2 x L2 of device memory is not free on small GPUs.
std::shared_ptr<L2Flush> shared_flush(int device, L2FlushMode mode) {
  static std::mutex mu;
  static std::map<std::pair<int, int>, std::weak_ptr<L2Flush>> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto& slot = cache[{device, static_cast<int>(mode)}];
  if (auto p = slot.lock()) return p;
  auto p = std::make_shared<L2Flush>(query_device(device).l2_bytes, mode);
  slot = p;
  return p;
}

bool known_timer(std::string_view k) {
  return std::find(kGpuTimerKinds.begin(), kGpuTimerKinds.end(), k) != kGpuTimerKinds.end();
}

// "one of "auto", "cupti", ..." for error messages.
std::string timer_kinds_text() {
  return fmt::format("one of \"{}\"", fmt::join(kGpuTimerKinds, "\", \""));
}

GpuTimerOptions parse_options(const json& o, std::string* timer_kind) {
  GpuTimerOptions opt;
  *timer_kind = "auto";
  if (o.is_null()) return opt;
  if (!o.is_object())
    throw std::invalid_argument("GPU timer options: expected a JSON object, got " + o.dump());
  for (const auto& [key, v] : o.items()) {
    auto want_bool = [&](bool* dst) {
      if (!v.is_boolean())
        throw std::invalid_argument(
            fmt::format("GPU timer options: `{}` must be true or false, got {}", key, v.dump()));
      *dst = v.get<bool>();
    };
    if (key == "timer") {
      if (!v.is_string() || !known_timer(v.get<std::string>()))
        throw std::invalid_argument(fmt::format(
            "GPU timer options: `timer` must be {}, got {}", timer_kinds_text(), v.dump()));
      *timer_kind = v.get<std::string>();
    } else if (key == "flush_l2") {
      want_bool(&opt.flush_l2);
    } else if (key == "l2_flush_mode") {
      if (v == "write")
        opt.l2_mode = L2FlushMode::Write;
      else if (v == "write-then-read")
        opt.l2_mode = L2FlushMode::WriteThenRead;
      else
        throw std::invalid_argument(fmt::format(
            "GPU timer options: `l2_flush_mode` must be \"write\" or \"write-then-read\", got {}",
            v.dump()));
    } else if (key == "events_crosscheck") {
      want_bool(&opt.events_crosscheck);
    } else if (key == "block_launch") {
      want_bool(&opt.block_launch);
    } else if (key == "idle_timeout_s") {
      if (!v.is_number() || !(v.get<double>() > 0) || v.get<double>() > 3600)
        throw std::invalid_argument(fmt::format(
            "GPU timer options: `idle_timeout_s` must be a number of seconds in (0, 3600], got {}",
            v.dump()));
      opt.idle.idle_s = v.get<double>();
    } else {
      throw std::invalid_argument(fmt::format(
          "GPU timer options: unknown key `{}` (expected timer, flush_l2, l2_flush_mode, "
          "events_crosscheck, block_launch, idle_timeout_s)",
          key));
    }
  }
  return opt;
}

}  // namespace

bool built_with_cuda() { return true; }

std::unique_ptr<harness::Timer> make_gpu_timer(int device, void* stream, const json& options) {
  std::string kind;
  GpuTimerOptions opt = parse_options(options, &kind);
  const Settings& env = settings();
  if (!env.gpu_timer.empty()) {
    if (!known_timer(env.gpu_timer))
      throw std::invalid_argument(fmt::format("SOLBENCH_GPU_TIMER must be {}, got \"{}\"",
                                              timer_kinds_text(), env.gpu_timer));
    kind = env.gpu_timer;
  }
  if (env.gpu_block_launch) opt.block_launch = *env.gpu_block_launch;
  if (const Parsed<double>& idle = env.gpu_idle_timeout_s; idle.set()) {
    if (!idle.value || !(*idle.value > 0) || *idle.value > 3600)
      throw std::invalid_argument(fmt::format(
          "SOLBENCH_GPU_IDLE_TIMEOUT_S must be a number of seconds in (0, 3600], got \"{}\"",
          idle.text));
    opt.idle.idle_s = *idle.value;
  }
  select_device(device);  // throws with the reason for a bad ordinal or no GPU
  if (opt.flush_l2) opt.l2_flush = shared_flush(device, opt.l2_mode);
  auto* s = static_cast<cudaStream_t>(stream);
  if (kind == "events") return std::make_unique<EventTimer>(device, s, opt);
  // Asked for by name only (it serialises kernels): no fallback, the reason is the error.
  if (kind == "profiler") return std::make_unique<ProfilerTimer>(device, s, opt);
  try {
    return std::make_unique<CuptiTimer>(device, s, opt);
  } catch (const std::runtime_error& e) {
    if (kind == "cupti") throw;
    return std::make_unique<EventTimer>(device, s, opt, e.what());
  }
}

CudaErrorStatus poll_cuda_error(bool synchronize) {
  CudaErrorStatus st;
  cudaError_t err = cudaSuccess;
  if (synchronize) {
    // Bounded where a timer made the device's guard (a worker always has one): a
    // kernel left running must not hang the worker here.
    int device = 0;
    DeviceIdleGuard* guard =
        cudaGetDevice(&device) == cudaSuccess ? DeviceIdleGuard::existing(device) : nullptr;
    if (guard) {
      const DeviceIdleGuard::Check c =
          guard->check(std::nullopt, guard->bounds(), "the workload's last call");
      if (!c.idle) {
        st.ok = false;
        st.sticky = true;
        st.work_left_running = true;
        st.name = "work_left_running";
        st.message = c.message;
        return st;
      }
      err = c.error;
    } else {
      err = cudaDeviceSynchronize();
    }
  }
  // The sync's own error, else whatever an earlier asynchronous call left behind.
  if (err == cudaSuccess) err = cudaPeekAtLastError();
  if (err == cudaSuccess) return st;
  st.ok = false;
  st.code = static_cast<int>(err);
  st.sticky = is_sticky(err);
  st.name = error_name(err);
  const char* msg = cudaGetErrorString(err);
  st.message = msg ? msg : "";
  if (!st.sticky) (void)cudaGetLastError();  // recoverable: clear it for the next call
  return st;
}

bool is_sticky_cuda_error(int code) { return is_sticky(static_cast<cudaError_t>(code)); }

json to_json(const CudaErrorStatus& s) {
  json j = json::object();
  j["ok"] = s.ok;
  if (!s.ok) {
    j["sticky"] = s.sticky;
    if (s.work_left_running) j["work_left_running"] = true;
    j["code"] = s.code;
    j["name"] = s.name;
    j["message"] = s.message;
  }
  return j;
}

}  // namespace solbench::gpu
