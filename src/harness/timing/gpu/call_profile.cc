#include "harness/timing/gpu/call_profile.h"

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_target.h>

#include <algorithm>
#include <chrono>
#include <mutex>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

#include "harness/timing/gpu/cuda_check.h"
#include "harness/timing/gpu/cupti_timer.h"
#include "harness/timing/gpu/gpu_errors.h"
#include "harness/timing/gpu/gpu_timer_factory.h"

namespace solbench::gpu {

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// The loop's timer options with the activity timer forced (the breakdown needs its
// records whatever --timer timed the loop) and the launch gate as asked.
json pass_options(const json& timer_options, bool gate) {
  json o = timer_options.is_object() ? timer_options : json::object();
  o["timer"] = "cupti";
  o["block_launch"] = gate;
  return o;
}

std::unique_ptr<harness::Timer> make_cupti_timer(int device, void* stream, const json& options,
                                                 CuptiTimer** cupti) {
  std::unique_ptr<harness::Timer> t = make_gpu_timer(device, stream, options);
  *cupti = dynamic_cast<CuptiTimer*>(t.get());
  // SOLBENCH_GPU_TIMER overrides the option: another timer has no records to keep.
  if (!*cupti)
    throw std::runtime_error(fmt::format("the {} timer keeps no activity records", t->name()));
  return t;
}

const char* kind_name(detail::GpuActivity::Kind k) {
  switch (k) {
    case detail::GpuActivity::Kind::Kernel: return "kernel";
    case detail::GpuActivity::Kind::Memcpy: return "memcpy";
    case detail::GpuActivity::Kind::Memset: return "memset";
  }
  return "?";
}

}  // namespace

harness::CallTrace trace_call(int device, void* stream, const json& timer_options,
                              const std::function<void()>& call) {
  CuptiTimer* cupti = nullptr;
  auto timer = make_cupti_timer(device, stream, pass_options(timer_options, true), &cupti);
  cupti->keep_activities(true);
  harness::CallTrace out;
  out.timer = timer->name();
  timer->prepare();
  const Clock::time_point t0 = Clock::now();
  timer->begin();
  try {
    call();
  } catch (...) {
    // The window closed and the launch gate opened again before the error goes on:
    // the collector and the stream are left as the timed loop leaves them.
    timer->end();
    timer->wait_idle();
    throw;
  }
  out.host_enqueue_ms = ms_since(t0);
  timer->end();       // opens the launch gate: the call's work runs now
  timer->wait_idle(); // the same bounded wait as elapsed_ms(), timed on the host's clock
  out.host_wall_ms = ms_since(t0);
  (void)timer->elapsed_ms();
  for (const detail::GpuActivity& a : cupti->last_activities()) {
    harness::TracedActivity t;
    t.kind = kind_name(a.kind);
    t.name = a.name;
    t.start_ns = a.start_ns;
    t.end_ns = a.end_ns;
    t.context = a.context_id;
    t.stream = a.stream_id;
    t.bytes = a.bytes;
    for (int i = 0; i < 3; ++i) {
      t.grid[i] = a.grid[i];
      t.block[i] = a.block[i];
    }
    out.activities.push_back(std::move(t));
  }
  return out;
}

// ---------------------------------------------------------------- counters

namespace {

template <typename P>
P zeroed(size_t struct_size) {
  P p{};
  p.structSize = struct_size;
  return p;
}
#define SB_PARAMS(T) zeroed<T>(T##_STRUCT_SIZE)

// Kernels one counter pass records (auto range: one range per kernel).
constexpr size_t kMaxRanges = 1024;

struct CounterFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

void check(CUptiResult r, const char* what) {
  if (r == CUPTI_SUCCESS) return;
  std::string s = fmt::format("{} failed: {}", what, error_name(r));
  if (r == CUPTI_ERROR_INSUFFICIENT_PRIVILEGES)
    s += " (hardware counters need root or the driver option NVreg_RestrictProfilingToAdminUsers=0)";
  else if (r == CUPTI_ERROR_HARDWARE_BUSY)
    s += " (another process is reading this GPU's counters: ncu, nsys or `--timer profiler`)";
  else if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED || r == CUPTI_ERROR_NOT_INITIALIZED)
    s += " (another profiler, e.g. ncu or nsys, may own CUPTI)";
  throw CounterFailure(s);
}

// The host side's view of this chip, made once per process: which of the wanted
// metrics it knows, and the configuration image for them (metric probing costs
// a host object per metric, so it is not repeated per workload).
struct HostSetup {
  std::string chip;
  std::vector<uint8_t> availability;
  std::vector<std::string> metrics, unavailable;
  std::vector<uint8_t> config;
  int passes = 0;
  CUpti_Profiler_Host_Object* host = nullptr;  // kept for evaluating ranges
};

CUpti_Profiler_Host_Object* host_object(const HostSetup& s) {
  auto init = SB_PARAMS(CUpti_Profiler_Host_Initialize_Params);
  init.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
  init.pChipName = s.chip.c_str();
  init.pCounterAvailabilityImage = s.availability.data();
  check(cuptiProfilerHostInitialize(&init), "cuptiProfilerHostInitialize");
  return init.pHostObject;
}

void release_host(CUpti_Profiler_Host_Object* h) {
  auto d = SB_PARAMS(CUpti_Profiler_Host_Deinitialize_Params);
  d.pHostObject = h;
  (void)cuptiProfilerHostDeinitialize(&d);
}

void build_host(HostSetup& s, int device, CUcontext ctx, const std::vector<std::string>& wanted) {
  auto chip = SB_PARAMS(CUpti_Device_GetChipName_Params);
  chip.deviceIndex = static_cast<size_t>(device);
  check(cuptiDeviceGetChipName(&chip), "cuptiDeviceGetChipName");
  s.chip = chip.pChipName;
  auto avail = SB_PARAMS(CUpti_Profiler_GetCounterAvailability_Params);
  avail.ctx = ctx;
  check(cuptiProfilerGetCounterAvailability(&avail), "cuptiProfilerGetCounterAvailability");
  s.availability.resize(avail.counterAvailabilityImageSize);
  avail.pCounterAvailabilityImage = s.availability.data();
  check(cuptiProfilerGetCounterAvailability(&avail), "cuptiProfilerGetCounterAvailability");
  // Each metric on a host object of its own: one this chip lacks is listed, not fatal.
  for (const std::string& m : wanted) {
    CUpti_Profiler_Host_Object* h = host_object(s);
    auto add = SB_PARAMS(CUpti_Profiler_Host_ConfigAddMetrics_Params);
    const char* names[] = {m.c_str()};
    add.pHostObject = h;
    add.ppMetricNames = names;
    add.numMetrics = 1;
    (cuptiProfilerHostConfigAddMetrics(&add) == CUPTI_SUCCESS ? s.metrics : s.unavailable)
        .push_back(m);
    release_host(h);
  }
  if (s.metrics.empty()) throw CounterFailure("this GPU knows none of the profile's metrics");
  s.host = host_object(s);
  std::vector<const char*> names;
  for (const auto& m : s.metrics) names.push_back(m.c_str());
  auto add = SB_PARAMS(CUpti_Profiler_Host_ConfigAddMetrics_Params);
  add.pHostObject = s.host;
  add.ppMetricNames = names.data();
  add.numMetrics = names.size();
  check(cuptiProfilerHostConfigAddMetrics(&add), "cuptiProfilerHostConfigAddMetrics");
  auto size = SB_PARAMS(CUpti_Profiler_Host_GetConfigImageSize_Params);
  size.pHostObject = s.host;
  check(cuptiProfilerHostGetConfigImageSize(&size), "cuptiProfilerHostGetConfigImageSize");
  s.config.resize(size.configImageSize);
  auto img = SB_PARAMS(CUpti_Profiler_Host_GetConfigImage_Params);
  img.pHostObject = s.host;
  img.configImageSize = s.config.size();
  img.pConfigImage = s.config.data();
  check(cuptiProfilerHostGetConfigImage(&img), "cuptiProfilerHostGetConfigImage");
  auto passes = SB_PARAMS(CUpti_Profiler_Host_GetNumOfPasses_Params);
  passes.configImageSize = s.config.size();
  passes.pConfigImage = s.config.data();
  check(cuptiProfilerHostGetNumOfPasses(&passes), "cuptiProfilerHostGetNumOfPasses");
  s.passes = static_cast<int>(passes.numOfPasses);
}

// The range-profiler session on a context, disabled again whatever happens.
class Session {
 public:
  explicit Session(CUcontext ctx) {
    auto en = SB_PARAMS(CUpti_RangeProfiler_Enable_Params);
    en.ctx = ctx;
    check(cuptiRangeProfilerEnable(&en), "cuptiRangeProfilerEnable");
    obj_ = en.pRangeProfilerObject;
  }
  ~Session() {
    auto d = SB_PARAMS(CUpti_RangeProfiler_Disable_Params);
    d.pRangeProfilerObject = obj_;
    (void)cuptiRangeProfilerDisable(&d);
  }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  CUpti_RangeProfiler_Object* get() const { return obj_; }

 private:
  CUpti_RangeProfiler_Object* obj_ = nullptr;
};

harness::CallCounters collect(const HostSetup& s, CUcontext ctx, harness::Timer& flush_timer,
                              const std::function<void()>& call, CUpti_ProfilerReplayMode replay) {
  Session session(ctx);
  std::vector<const char*> names;
  for (const auto& m : s.metrics) names.push_back(m.c_str());
  auto dsize = SB_PARAMS(CUpti_RangeProfiler_GetCounterDataSize_Params);
  dsize.pRangeProfilerObject = session.get();
  dsize.pMetricNames = names.data();
  dsize.numMetrics = names.size();
  dsize.maxNumOfRanges = kMaxRanges;
  dsize.maxNumRangeTreeNodes = kMaxRanges;
  check(cuptiRangeProfilerGetCounterDataSize(&dsize), "cuptiRangeProfilerGetCounterDataSize");
  std::vector<uint8_t> data(dsize.counterDataSize);
  auto init = SB_PARAMS(CUpti_RangeProfiler_CounterDataImage_Initialize_Params);
  init.pRangeProfilerObject = session.get();
  init.counterDataSize = data.size();
  init.pCounterData = data.data();
  check(cuptiRangeProfilerCounterDataImageInitialize(&init),
        "cuptiRangeProfilerCounterDataImageInitialize");
  auto cfg = SB_PARAMS(CUpti_RangeProfiler_SetConfig_Params);
  cfg.pRangeProfilerObject = session.get();
  cfg.configSize = s.config.size();
  cfg.pConfig = s.config.data();
  cfg.counterDataImageSize = data.size();
  cfg.pCounterDataImage = data.data();
  cfg.range = CUPTI_AutoRange;          // one range per kernel
  cfg.replayMode = replay;
  cfg.maxRangesPerPass = kMaxRanges;
  cfg.numNestingLevels = 1;
  cfg.minNestingLevel = 1;
  cfg.passIndex = 0;
  cfg.targetNestingLevel = 1;
  check(cuptiRangeProfilerSetConfig(&cfg), "cuptiRangeProfilerSetConfig");

  // Device idle and the L2 flushed first (the timer's prepare()), as every timed call
  // starts: DRAM reads are then the call's own. An empty window opens a launch gate
  // that SOLBENCH_GPU_BLOCK_LAUNCH=1 may have closed: nothing may hold the stream
  // while CUPTI replays kernels.
  flush_timer.prepare();
  flush_timer.begin();
  flush_timer.end();
  flush_timer.wait_idle();
  auto st = SB_PARAMS(CUpti_RangeProfiler_Start_Params);
  st.pRangeProfilerObject = session.get();
  check(cuptiRangeProfilerStart(&st), "cuptiRangeProfilerStart");
  try {
    call();
  } catch (...) {
    auto sp = SB_PARAMS(CUpti_RangeProfiler_Stop_Params);
    sp.pRangeProfilerObject = session.get();
    (void)cuptiRangeProfilerStop(&sp);
    throw;
  }
  flush_timer.wait_idle();  // bounded, as after every call
  auto sp = SB_PARAMS(CUpti_RangeProfiler_Stop_Params);
  sp.pRangeProfilerObject = session.get();
  check(cuptiRangeProfilerStop(&sp), "cuptiRangeProfilerStop");
  if (!sp.isAllPassSubmitted) throw CounterFailure("the range profiler asked for another pass");

  auto dec = SB_PARAMS(CUpti_RangeProfiler_DecodeData_Params);
  dec.pRangeProfilerObject = session.get();
  check(cuptiRangeProfilerDecodeData(&dec), "cuptiRangeProfilerDecodeData");
  auto info = SB_PARAMS(CUpti_RangeProfiler_GetCounterDataInfo_Params);
  info.pCounterDataImage = data.data();
  info.counterDataImageSize = data.size();
  check(cuptiRangeProfilerGetCounterDataInfo(&info), "cuptiRangeProfilerGetCounterDataInfo");

  harness::CallCounters out;
  out.metrics = s.metrics;
  out.unavailable = s.unavailable;
  out.replay = replay == CUPTI_KernelReplay ? "kernel" : "none (one pass)";
  out.passes = s.passes;
  // A full counter image may have missed kernels; say so rather than sum short.
  if (dec.numOfRangeDropped || info.numTotalRanges >= kMaxRanges)
    out.unavailable.push_back(
        fmt::format("(ranges: the call launched {} or more kernels; only the first are counted)",
                    kMaxRanges));
  std::vector<double> values(names.size());
  for (size_t r = 0; r < info.numTotalRanges; ++r) {
    harness::KernelCounters k;
    auto ri = SB_PARAMS(CUpti_RangeProfiler_CounterData_GetRangeInfo_Params);
    ri.pCounterDataImage = data.data();
    ri.counterDataImageSize = data.size();
    ri.rangeIndex = r;
    ri.rangeDelimiter = "/";
    if (cuptiRangeProfilerCounterDataGetRangeInfo(&ri) == CUPTI_SUCCESS && ri.rangeName)
      k.name = ri.rangeName;
    auto ev = SB_PARAMS(CUpti_Profiler_Host_EvaluateToGpuValues_Params);
    ev.pHostObject = s.host;
    ev.pCounterDataImage = data.data();
    ev.counterDataImageSize = data.size();
    ev.rangeIndex = r;
    ev.ppMetricNames = names.data();
    ev.numMetrics = names.size();
    ev.pMetricValues = values.data();
    check(cuptiProfilerHostEvaluateToGpuValues(&ev), "cuptiProfilerHostEvaluateToGpuValues");
    for (size_t i = 0; i < names.size(); ++i) k.values[s.metrics[i]] = values[i];
    out.kernels.push_back(std::move(k));
  }
  return out;
}

}  // namespace

std::optional<harness::CallCounters> count_call(int device, void* stream, const json& timer_options,
                                                const std::function<void()>& call,
                                                std::string* why) {
  // The host setup once per process (and device); a failure is remembered.
  static std::mutex mu;
  static std::optional<HostSetup> setup, core;
  static std::string setup_error;
  static int setup_device = -1;
  try {
    CuptiTimer* cupti = nullptr;
    auto timer = make_cupti_timer(device, stream, pass_options(timer_options, false), &cupti);
    using GetCurrent = CUresult (*)(CUcontext*);
    auto get_current = reinterpret_cast<GetCurrent>(driver_entry_point("cuCtxGetCurrent"));
    CUcontext ctx = nullptr;
    if (!get_current || get_current(&ctx) != CUDA_SUCCESS || !ctx)
      throw CounterFailure("no current CUDA context (cuCtxGetCurrent)");
    {
      std::lock_guard<std::mutex> lock(mu);
      if (setup_device == -1) {
        setup_device = device;
        try {
          auto pinit = SB_PARAMS(CUpti_Profiler_Initialize_Params);
          check(cuptiProfilerInitialize(&pinit), "cuptiProfilerInitialize");
          auto sup = SB_PARAMS(CUpti_Profiler_DeviceSupported_Params);
          sup.cuDevice = device;
          sup.api = CUPTI_PROFILER_RANGE_PROFILING;
          check(cuptiProfilerDeviceSupported(&sup), "cuptiProfilerDeviceSupported");
          if (sup.isSupported != CUPTI_PROFILER_CONFIGURATION_SUPPORTED)
            throw CounterFailure(fmt::format(
                "range profiling is not supported on device {} (a vGPU, confidential computing, "
                "WSL or an architecture CUPTI does not profile)",
                device));
          HostSetup s;
          build_host(s, device, ctx, harness::profile_metrics());
          setup = std::move(s);
          // The fallback: what ncu is compared on (duration, DRAM bytes), one pass.
          HostSetup c;
          build_host(c, device, ctx, harness::core_profile_metrics());
          if (c.passes == 1) core = std::move(c);
          else release_host(c.host);
        } catch (const CounterFailure& e) {
          setup_error = e.what();
        }
      }
      if (setup_device != device)
        throw CounterFailure(fmt::format("counters are set up for device {} in this process",
                                         setup_device));
      if (!setup) throw CounterFailure(setup_error);
    }
    try {
      return collect(*setup, ctx, *timer, call, CUPTI_KernelReplay);
    } catch (const CounterFailure& e) {
      // Kernel replay refused (e.g. beside another CUPTI client): the core metrics
      // in one pass of the call itself, as the profiler timer reads its counter.
      if (!core) throw;
      harness::CallCounters c = collect(*core, ctx, *timer, call, CUPTI_UserReplay);
      c.replay += std::string("; kernel replay failed: ") + e.what();
      for (const std::string& m : setup->metrics)
        if (std::find(c.metrics.begin(), c.metrics.end(), m) == c.metrics.end())
          c.unavailable.push_back(m);
      return c;
    }
  } catch (const CounterFailure& e) {
    if (why) *why = e.what();
    return std::nullopt;
  } catch (const WorkLeftRunning&) {
    throw;  // the solution's doing: the worker reports it, as after any call
  } catch (const CudaError& e) {
    if (why) *why = e.what();
    return std::nullopt;
  } catch (const std::runtime_error& e) {
    // No CUPTI here at all (the timer's constructor says why).
    if (why) *why = e.what();
    return std::nullopt;
  }
}

}  // namespace solbench::gpu
