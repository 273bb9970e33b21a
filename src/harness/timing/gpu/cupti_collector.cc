#include "harness/timing/gpu/cupti_collector.h"

#include <cupti.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "core/settings.h"
#include "harness/timing/gpu/cuda_check.h"

namespace solbench::gpu::detail {

namespace {

constexpr size_t kBufferBytes = size_t{4} << 20;
constexpr size_t kBufferAlign = 8;

std::atomic<bool> g_recording{false};  // lock-free fast path for the API callback
CuptiCollector* g_collector = nullptr;

// Per-thread nesting of API calls: a runtime call's internal driver calls belong
// to the runtime call's group.
struct ThreadCallState {
  int depth = 0;
  uint32_t group = 0;
};
thread_local ThreadCallState t_call;

// True for top-level calls that enqueue GPU work producing kernel, memcpy or
// memset records (launches, graph launches, copies, fills).
bool creates_work(const char* fn) {
  if (!fn) return false;
  if (std::strstr(fn, "HostFunc") || std::strstr(fn, "GetAttribute") ||
      std::strstr(fn, "FuncGet") || std::strstr(fn, "GetFunc") || std::strstr(fn, "Occupancy"))
    return false;
  return std::strstr(fn, "Launch") || std::strstr(fn, "Memcpy") || std::strstr(fn, "Memset");
}

// Kernel and graph launch calls by callback id, per API domain (init() fills them).
std::vector<uint8_t> g_launch_runtime, g_launch_driver;

void CUPTIAPI api_callback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                           const void* cbdata) {
  if (domain == CUPTI_CB_DOMAIN_RESOURCE) {
    const auto* r = static_cast<const CUpti_ResourceData*>(cbdata);
    if (g_collector && cbid == CUPTI_CBID_RESOURCE_CONTEXT_CREATED)
      g_collector->on_context(true, r->context);
    else if (g_collector && cbid == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING)
      g_collector->on_context(false, r->context);
    return;
  }
  if (domain != CUPTI_CB_DOMAIN_RUNTIME_API && domain != CUPTI_CB_DOMAIN_DRIVER_API) return;
  const auto* data = static_cast<const CUpti_CallbackData*>(cbdata);
  const bool enter = data->callbackSite == CUPTI_API_ENTER;
  // Depth is tracked always (cheap), ids only inside a window.
  if (enter) {
    if (t_call.depth++ == 0) t_call.group = data->correlationId;
  } else if (t_call.depth > 0) {
    --t_call.depth;
  }
  if (enter && g_recording.load(std::memory_order_relaxed) && g_collector)
    g_collector->on_api(true, data->correlationId, data->functionName);
  // Launches are tracked inside and outside windows (device_idle.h).
  const bool runtime = domain == CUPTI_CB_DOMAIN_RUNTIME_API;
  const std::vector<uint8_t>& launches = runtime ? g_launch_runtime : g_launch_driver;
  if (!g_collector || cbid >= launches.size() || !launches[cbid]) return;
  const bool top = enter ? t_call.depth == 1 : t_call.depth == 0;
  bool failed = false;
  if (!enter && top && data->functionReturnValue)
    failed = runtime ? *static_cast<const cudaError_t*>(data->functionReturnValue) != cudaSuccess
                     : *static_cast<const CUresult*>(data->functionReturnValue) != CUDA_SUCCESS;
  g_collector->on_launch(enter, top, data->correlationId, t_call.group, data->symbolName,
                         data->functionName, data->contextUid, failed);
}

// Activity buffers are recycled, and handed to CUPTI already zeroed
// (CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER): otherwise CUPTI zeroes every new
// buffer in the thread that needs it, and after each forced flush (two per timed
// call) that was the next CUDA call's: 0.4-0.9 ms of an 8 MiB buffer, a third of a
// short kernel's timed call on the H200 (docs/gpu-timing.md). A returned buffer
// has its used bytes zeroed again; CUPTI writes nothing past them.
struct BufferPool {
  std::mutex mu;
  std::vector<uint8_t*> free;
  bool cupti_zeroes = true;  // until CUPTI accepts zeroed buffers from us
};
BufferPool& buffer_pool() {
  static BufferPool* p = new BufferPool;  // never freed: CUPTI may call back at exit
  return *p;
}
constexpr size_t kPooledBuffers = 16;

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  BufferPool& pool = buffer_pool();
  uint8_t* b = nullptr;
  {
    std::lock_guard<std::mutex> lock(pool.mu);
    if (!pool.free.empty()) {
      b = pool.free.back();
      pool.free.pop_back();
    }
  }
  if (!b) {
    b = static_cast<uint8_t*>(std::aligned_alloc(kBufferAlign, kBufferBytes));
    if (b && !pool.cupti_zeroes) std::memset(b, 0, kBufferBytes);
  }
  *buffer = b;
  *size = b ? kBufferBytes : 0;
  *max_records = 0;  // as many as fit
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  if (!buffer) return;
  if (g_collector) g_collector->on_buffer(buffer, valid);
  BufferPool& pool = buffer_pool();
  // A margin past the records: cheap, and nothing stale is left should a record
  // have been cut short by a forced flush.
  if (!pool.cupti_zeroes) std::memset(buffer, 0, std::min(valid + 4096, kBufferBytes));
  std::lock_guard<std::mutex> lock(pool.mu);
  if (pool.free.size() < kPooledBuffers)
    pool.free.push_back(buffer);
  else
    std::free(buffer);
}

const char* memcpy_kind_name(uint8_t kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD: return "memcpy HtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH: return "memcpy DtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD: return "memcpy DtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return "memcpy HtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return "memcpy PtoP";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA: return "memcpy HtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH: return "memcpy AtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA: return "memcpy AtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD: return "memcpy AtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA: return "memcpy DtoA";
    default: return "memcpy";
  }
}

// The fields every activity record kind we enable has under the same names.
template <typename Record>
void copy_common(GpuActivity& a, GpuActivity::Kind kind, const Record& r) {
  a.kind = kind;
  a.start_ns = r.start;
  a.end_ns = r.end;
  a.correlation_id = r.correlationId;
  a.device_id = r.deviceId;
  a.context_id = r.contextId;
  a.stream_id = r.streamId;
}

}  // namespace

bool launches_kernels(const char* fn) {
  if (!fn || std::strstr(fn, "HostFunc")) return false;
  return std::strncmp(fn, "cuLaunch", 8) == 0 || std::strncmp(fn, "cudaLaunch", 10) == 0 ||
         std::strstr(fn, "GraphLaunch") != nullptr;
}

CuptiCollector* CuptiCollector::existing() { return g_collector; }

CuptiCollector* CuptiCollector::instance(std::string* why) {
  static std::once_flag once;
  static std::string init_error;
  std::call_once(once, [] {
    auto* c = new CuptiCollector();  // lives as long as the process: CUPTI calls into it
    if (c->init(&init_error)) {
      g_collector = c;
    } else {
      delete c;
    }
  });
  if (!g_collector && why) *why = init_error;
  return g_collector;
}

bool CuptiCollector::init(std::string* why) {
  if (settings().gpu_timer == "events") {
    *why = "CUPTI disabled by SOLBENCH_GPU_TIMER=events";
    return false;
  }
  // The launch calls, by name: the ids differ between CUDA versions.
  const std::pair<CUpti_CallbackDomain, uint32_t> api_domains[] = {
      {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_SIZE},
      {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_SIZE}};
  for (const auto& [domain, size] : api_domains) {
    auto& table = domain == CUPTI_CB_DOMAIN_RUNTIME_API ? g_launch_runtime : g_launch_driver;
    table.assign(size, 0);
    for (uint32_t cbid = 1; cbid < size; ++cbid) {
      const char* name = nullptr;
      if (cuptiGetCallbackName(domain, cbid, &name) == CUPTI_SUCCESS && launches_kernels(name))
        table[cbid] = 1;
    }
  }
  CUpti_SubscriberHandle subscriber{};
  CUptiResult r = cuptiSubscribe(&subscriber, api_callback, nullptr);
  if (r != CUPTI_SUCCESS) {
    *why = fmt::format("cuptiSubscribe failed: {} (another profiler, e.g. ncu or nsys, may own CUPTI)",
                       error_name(r));
    return false;
  }
  auto fail = [&](const char* what, CUptiResult res) {
    *why = fmt::format("{} failed: {}", what, error_name(res));
    cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    cuptiActivityDisable(CUPTI_ACTIVITY_KIND_KERNEL);
    cuptiActivityDisable(CUPTI_ACTIVITY_KIND_MEMCPY);
    cuptiActivityDisable(CUPTI_ACTIVITY_KIND_MEMCPY2);
    cuptiActivityDisable(CUPTI_ACTIVITY_KIND_MEMSET);
    cuptiUnsubscribe(subscriber);
    return false;
  };
  // Diagnosis of CUPTI's host overhead (docs/gpu-timing.md): SOLBENCH_CUPTI_DIAG
  // "no-callbacks" (no API callbacks: nothing is attributed to a call),
  // "work-callbacks" (callbacks only for the calls that create work, by name, instead
  // of whole API domains; measured no cheaper on the H100), "kernels-only" (no memcpy/memset
  // records), "no-activities" (no records at all), "serial-kernels" (the KERNEL
  // activity kind, which serialises kernels, instead of CONCURRENT_KERNEL).
  const std::string diag = settings().cupti_diag;
  if (diag == "work-callbacks") {
    const std::pair<CUpti_CallbackDomain, uint32_t> domains[] = {
        {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_SIZE},
        {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_SIZE}};
    for (const auto& [domain, size] : domains) {
      for (uint32_t cbid = 1; cbid < size; ++cbid) {
        const char* name = nullptr;
        if (cuptiGetCallbackName(domain, cbid, &name) != CUPTI_SUCCESS || !creates_work(name)) continue;
        if ((r = cuptiEnableCallback(1, subscriber, domain, cbid)) != CUPTI_SUCCESS)
          return fail("cuptiEnableCallback", r);
      }
    }
  } else if (diag != "no-callbacks") {
    if ((r = cuptiEnableDomain(1, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API)) != CUPTI_SUCCESS)
      return fail("cuptiEnableDomain(RUNTIME_API)", r);
    if ((r = cuptiEnableDomain(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API)) != CUPTI_SUCCESS)
      return fail("cuptiEnableDomain(DRIVER_API)", r);
  }
  // Contexts the process creates from now on (device_idle.h waits for them too).
  for (CUpti_CallbackId cbid :
       {CUPTI_CBID_RESOURCE_CONTEXT_CREATED, CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING})
    if ((r = cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RESOURCE, cbid)) != CUPTI_SUCCESS)
      return fail("cuptiEnableCallback(RESOURCE)", r);
  // We hand CUPTI zeroed buffers (buffer_requested); where this CUPTI does not
  // take that, it zeroes them itself, as before.
  uint8_t zeroed = 1;
  size_t zeroed_size = sizeof(zeroed);
  buffer_pool().cupti_zeroes =
      cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER, &zeroed_size,
                                &zeroed) != CUPTI_SUCCESS;
  if ((r = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed)) != CUPTI_SUCCESS)
    return fail("cuptiActivityRegisterCallbacks", r);
  // Kernel timestamps from the hardware where the chip has them (Blackwell): no
  // instrumentation of the kernels. Elsewhere CUPTI says NOT_SUPPORTED and keeps
  // its software method. The driver must be initialised first.
  (void)cudaFree(nullptr);
  (void)cudaGetLastError();  // nothing to report from the initialisation itself
  hw_trace_ = cuptiActivityEnableHWTrace(1) == CUPTI_SUCCESS;
  const std::pair<CUpti_ActivityKind, const char*> kinds[] = {
      {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, "cuptiActivityEnable(CONCURRENT_KERNEL)"},
      {CUPTI_ACTIVITY_KIND_MEMCPY, "cuptiActivityEnable(MEMCPY)"},
      {CUPTI_ACTIVITY_KIND_MEMCPY2, "cuptiActivityEnable(MEMCPY2)"},
      {CUPTI_ACTIVITY_KIND_MEMSET, "cuptiActivityEnable(MEMSET)"},
  };
  for (auto [kind, what] : kinds) {
    if (diag == "no-activities" || (diag == "kernels-only" && kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL))
      continue;
    if (diag == "serial-kernels" && kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
      kind = CUPTI_ACTIVITY_KIND_KERNEL;
      what = "cuptiActivityEnable(KERNEL)";
    }
    if ((r = cuptiActivityEnable(kind)) != CUPTI_SUCCESS) return fail(what, r);
  }
  return true;
}

void CuptiCollector::open_window() {
  std::lock_guard<std::mutex> lock(mu_);
  ++windows_;
  calls_ = WindowCalls{};
  recording_ = true;
  g_recording.store(true, std::memory_order_seq_cst);
}

WindowCalls CuptiCollector::close_window() {
  g_recording.store(false, std::memory_order_seq_cst);
  std::lock_guard<std::mutex> lock(mu_);
  recording_ = false;
  return std::move(calls_);
}

void CuptiCollector::on_api(bool enter, uint32_t correlation_id, const char* function_name) {
  if (!enter) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (!recording_) return;
  const uint32_t group = t_call.depth <= 1 ? correlation_id : t_call.group;
  calls_.group_of[correlation_id] = group;
  ++calls_.api_calls;
  if (t_call.depth <= 1 && creates_work(function_name)) calls_.work_groups.push_back(group);
}

void CuptiCollector::on_buffer(uint8_t* buffer, size_t valid_size) {
  std::vector<GpuActivity> parsed;
  CUpti_Activity* record = nullptr;
  while (cuptiActivityGetNextRecord(buffer, valid_size, &record) == CUPTI_SUCCESS) {
    GpuActivity a;
    switch (record->kind) {
      case CUPTI_ACTIVITY_KIND_KERNEL:
      case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
        const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
        copy_common(a, GpuActivity::Kind::Kernel, *k);
        a.name = k->name ? k->name : "?";
        a.grid[0] = static_cast<uint32_t>(k->gridX);
        a.grid[1] = static_cast<uint32_t>(k->gridY);
        a.grid[2] = static_cast<uint32_t>(k->gridZ);
        a.block[0] = static_cast<uint32_t>(k->blockX);
        a.block[1] = static_cast<uint32_t>(k->blockY);
        a.block[2] = static_cast<uint32_t>(k->blockZ);
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMCPY: {
        const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(record);
        copy_common(a, GpuActivity::Kind::Memcpy, *m);
        a.bytes = m->bytes;
        a.name = memcpy_kind_name(m->copyKind);
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMCPY2: {
        const auto* m = reinterpret_cast<const CUpti_ActivityMemcpyPtoP4*>(record);
        copy_common(a, GpuActivity::Kind::Memcpy, *m);
        a.bytes = m->bytes;
        a.name = "memcpy PtoP";
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMSET: {
        const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(record);
        copy_common(a, GpuActivity::Kind::Memset, *m);
        a.bytes = m->bytes;
        a.name = "memset";
        break;
      }
      default:
        continue;
    }
    parsed.push_back(std::move(a));
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (GpuActivity& a : parsed) {
    launches_.on_record(a.correlation_id, a.start_ns, a.end_ns);
    pending_.push_back(std::move(a));
  }
}

void CuptiCollector::on_launch(bool enter, bool top, uint32_t correlation_id, uint32_t group,
                               const char* symbol, const char* function, uint32_t context_id,
                               bool failed) {
  std::lock_guard<std::mutex> lock(mu_);
  launches_.on_call(enter, top, correlation_id, group, symbol, function, context_id, failed, [&] {
    return recording_      ? fmt::format("in timed span {}", windows_)
           : windows_ == 0 ? std::string("before the first timed span")
                           : fmt::format("after timed span {}", windows_);
  });
}

void CuptiCollector::on_context(bool created, void* context) {
  uint32_t id = 0;
  if (created && cuptiGetContextId(static_cast<CUcontext>(context), &id) != CUPTI_SUCCESS) id = 0;
  std::lock_guard<std::mutex> lock(mu_);
  auto same = [&](const TrackedContext& c) { return c.context == context; };
  contexts_.erase(std::remove_if(contexts_.begin(), contexts_.end(), same), contexts_.end());
  if (created) contexts_.push_back({context, id});
}

std::vector<TrackedContext> CuptiCollector::contexts() {
  std::lock_guard<std::mutex> lock(mu_);
  return contexts_;
}

uint64_t CuptiCollector::launch_seq() {
  std::lock_guard<std::mutex> lock(mu_);
  return launches_.next_seq();
}

void CuptiCollector::forget_launches_before(uint64_t seq) {
  std::lock_guard<std::mutex> lock(mu_);
  launches_.forget_before(seq);
}

std::vector<TrackedLaunch> CuptiCollector::unfinished_launches(size_t max, size_t* total) {
  std::lock_guard<std::mutex> lock(mu_);
  return launches_.unfinished(max, total);
}

void CuptiCollector::flush() {
  SB_CUDA_CHECK(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
}

std::vector<GpuActivity> CuptiCollector::take(const WindowCalls& calls) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<GpuActivity> mine;
  for (GpuActivity& a : pending_)
    if (calls.group_of.count(a.correlation_id)) mine.push_back(std::move(a));
  pending_.clear();
  return mine;
}

uint64_t CuptiCollector::take_dropped() {
  size_t dropped = 0;
  if (cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped) != CUPTI_SUCCESS) dropped = 0;
  std::lock_guard<std::mutex> lock(mu_);
  return std::exchange(dropped_, 0) + dropped;
}

}  // namespace solbench::gpu::detail
