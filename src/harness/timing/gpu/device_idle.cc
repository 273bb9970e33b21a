#include "harness/timing/gpu/device_idle.h"

#include <cuda.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <future>
#include <map>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "core/text.h"
#include "harness/timing/gpu/cuda_check.h"
#include "harness/timing/gpu/cupti_collector.h"
#include "harness/timing/gpu/gpu_errors.h"

namespace solbench::gpu {

namespace {

std::mutex g_mu;
std::map<int, DeviceIdleGuard*> g_guards;  // never freed: a stuck thread may use them at exit
std::string g_left_message;                // set once a wait gave up
std::atomic<bool> g_left{false};

// A runtime synchronise on the waiter's thread: its non-sticky error would stay in
// that thread's last-error slot; the caller gets the code instead.
int runtime_code(cudaError_t e) {
  if (e != cudaSuccess && !is_sticky(e)) (void)cudaGetLastError();
  return static_cast<int>(e);
}

// The driver calls that synchronise another context, looked up once (nothing links
// libcuda). Null where the driver lacks them.
struct ContextSync {
  decltype(&::cuCtxPushCurrent) push = nullptr;
  decltype(&::cuCtxPopCurrent) pop = nullptr;
  decltype(&::cuCtxSynchronize) sync = nullptr;
};
const ContextSync& context_sync() {
  static const ContextSync s{
      reinterpret_cast<decltype(&::cuCtxPushCurrent)>(driver_entry_point("cuCtxPushCurrent")),
      reinterpret_cast<decltype(&::cuCtxPopCurrent)>(driver_entry_point("cuCtxPopCurrent")),
      // The argument-less form: CUDA 13's entry point for "cuCtxSynchronize" is
      // cuCtxSynchronize_v2(CUcontext), which called without one crashed (H100).
      reinterpret_cast<decltype(&::cuCtxSynchronize)>(driver_entry_point("cuCtxSynchronize", 12000))};
  return s;
}

int sync_context(void* context) {
  const ContextSync& d = context_sync();
  if (!d.push || !d.pop || !d.sync) return static_cast<int>(CUDA_ERROR_NOT_FOUND);
  const CUresult pushed = d.push(static_cast<CUcontext>(context));
  if (pushed != CUDA_SUCCESS) return static_cast<int>(pushed);  // destroyed meanwhile, ...
  const CUresult r = d.sync();
  CUcontext popped = nullptr;
  (void)d.pop(&popped);
  return static_cast<int>(r);
}

std::string demangled(const std::string& name) {
  std::string out = demangle(name);
  if (out.size() > 120) out = out.substr(0, 117) + "...";
  return out;
}

// "`k` (context 3, launched in timed span 2), ..." for the launches CUPTI saw that
// have no complete activity record, or why none is named.
std::string unfinished_launches() {
  detail::CuptiCollector* col = detail::CuptiCollector::existing();
  if (!col) return "CUPTI is not in use, so the kernels are not named";
  // Delivers the records of everything that did finish. It should not wait for the
  // device, but the report must not hang on it if it does: on a thread, bounded.
  auto flushed = std::make_shared<std::promise<void>>();
  std::future<void> done = flushed->get_future();
  std::thread([col, flushed] {
    try {
      col->flush();
    } catch (const std::exception&) {
    }
    flushed->set_value();
  }).detach();
  const bool fresh = done.wait_for(std::chrono::seconds(1)) == std::future_status::ready;
  size_t total = 0;
  const std::vector<detail::TrackedLaunch> left = col->unfinished_launches(3, &total);
  if (left.empty())
    return "CUPTI saw no kernel launch left unfinished (a stream waiting for a value or an "
           "event, or a launch it did not trace)";
  std::string s = "unfinished launches: ";
  for (size_t i = 0; i < left.size(); ++i) {
    const auto& l = left[i];
    s += fmt::format("{}`{}` ({}context {}, launched {})", i ? ", " : "",
                     l.name.empty() ? l.api : demangled(l.name), l.name.empty() ? "graph, " : "",
                     l.context_id, l.when);
  }
  if (total > left.size()) s += fmt::format(" and {} more", total - left.size());
  if (!fresh) s += " (CUPTI's last records could not be read: some may have finished)";
  return s;
}

}  // namespace

bool work_left_running(std::string* message) {
  if (!g_left.load()) return false;
  if (message) {
    std::lock_guard<std::mutex> lock(g_mu);
    *message = g_left_message;
  }
  return true;
}

DeviceIdleGuard& DeviceIdleGuard::for_device(int device) {
  std::lock_guard<std::mutex> lock(g_mu);
  DeviceIdleGuard*& g = g_guards[device];
  if (!g) g = new DeviceIdleGuard(device);
  return *g;
}

DeviceIdleGuard* DeviceIdleGuard::existing(int device) {
  std::lock_guard<std::mutex> lock(g_mu);
  auto it = g_guards.find(device);
  return it == g_guards.end() ? nullptr : it->second;
}

DeviceIdleGuard::DeviceIdleGuard(int device)
    : device_(device), waiter_([device] { (void)runtime_code(cudaSetDevice(device)); }) {}

std::string DeviceIdleGuard::left_running(const BoundedWaiter::Result& r,
                                          const std::vector<std::string>& where,
                                          const IdleBounds& b, const std::string& after) const {
  std::string what;
  if (r.stuck_phase == 1) {
    what =
        fmt::format("the work queued on the stream it was given was still running {:g} s after {}",
                    b.stream_s, after);
  } else {
    const std::string& w = r.stuck_item < where.size() ? where[r.stuck_item] : where.back();
    what = fmt::format("{} was still busy {:g} s after {}", w, b.idle_s, after);
  }
  return fmt::format(
      "the solution left work running on the GPU: {}; {}. A call's GPU work must be finished "
      "once its work on the given stream is: a kernel left running on a stream or in a CUDA "
      "context of its own could do later calls' work outside their timed spans",
      what, unfinished_launches());
}

DeviceIdleGuard::Check DeviceIdleGuard::check(std::optional<cudaStream_t> stream,
                                              const IdleBounds& b, const std::string& after) {
  Check c;
  if (work_left_running(&c.message)) {
    c.idle = false;
    return c;
  }
  detail::CuptiCollector* col = detail::CuptiCollector::existing();
  const uint64_t seq = col ? col->launch_seq() : 0;
  std::vector<std::string> where = {fmt::format("device {} (its primary context)", device_)};
  std::vector<BoundedWaiter::Sync> rest = {[] { return runtime_code(cudaDeviceSynchronize()); }};
  if (col) {
    for (const detail::TrackedContext& t : col->contexts()) {
      where.push_back(
          fmt::format("a CUDA context made after the harness started (context {})", t.id));
      rest.push_back([ctx = t.context] { return sync_context(ctx); });
    }
  }
  BoundedWaiter::Sync first;
  if (stream) first = [s = *stream] { return runtime_code(cudaStreamSynchronize(s)); };
  const BoundedWaiter::Result r = waiter_.run(first, b.stream_s, rest, b.idle_s);
  c.stream_ms = r.phase1_ms;
  c.tail_ms = r.phase2_ms;
  if (!r.finished) {
    c.idle = false;
    c.message = left_running(r, where, b, after);
    std::lock_guard<std::mutex> lock(g_mu);
    if (!g_left.load()) {
      g_left_message = c.message;
      g_left.store(true);
    } else {
      c.message = g_left_message;
    }
    return c;
  }
  // Everything launched before this wait began has finished.
  if (col) col->forget_launches_before(seq);
  if (r.phase1_code != 0) {
    c.error = static_cast<cudaError_t>(r.phase1_code);
    c.error_call = "cudaStreamSynchronize(stream)";
  } else if (!r.phase2_codes.empty() && r.phase2_codes[0] != 0) {
    c.error = static_cast<cudaError_t>(r.phase2_codes[0]);
    c.error_call = "cudaDeviceSynchronize()";
  }
  // Errors of other contexts are their owners' (a solution's context that faulted).
  return c;
}

DeviceIdleGuard::Check DeviceIdleGuard::wait(std::optional<cudaStream_t> stream,
                                             const IdleBounds& b, const std::string& after) {
  Check c = check(stream, b, after);
  if (!c.idle) throw WorkLeftRunning(c.message);
  if (c.error != cudaSuccess) detail::check(c.error, c.error_call, __FILE__, __LINE__);
  return c;
}

void IdleWaitStats::add(const DeviceIdleGuard::Check& c, double us) {
  ++waits;
  total_us += us;
  max_tail_ms = std::max(max_tail_ms, c.tail_ms);
}

void IdleWaitStats::details(json& j, const IdleBounds& b) const {
  json w = {{"stream_bound_s", b.stream_s}, {"bound_s", b.idle_s}, {"waits", waits}};
  if (waits) {
    w["mean_us"] = total_us / static_cast<double>(waits);
    w["max_tail_ms"] = max_tail_ms;
  }
  j["idle_wait"] = std::move(w);
}

}  // namespace solbench::gpu
