#include "harness/timing/gpu/call_profile.h"

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cupti_pmsampling.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_target.h>

#include <algorithm>
#include <chrono>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "harness/timing/gpu/cuda_check.h"
#include "harness/timing/gpu/cupti_params.h"
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

// cuptiProfilerInitialize, once per process: the range profiler and PM sampling
// both need it. A failure is thrown each time it is asked for.
void profiler_initialize() {
  static std::mutex mu;
  static bool done = false;
  std::lock_guard<std::mutex> lock(mu);
  if (done) return;
  auto pinit = SB_CUPTI_PARAMS(CUpti_Profiler_Initialize_Params);
  check(cuptiProfilerInitialize(&pinit), "cuptiProfilerInitialize");
  done = true;
}

std::string chip_name(int device) {
  auto chip = SB_CUPTI_PARAMS(CUpti_Device_GetChipName_Params);
  chip.deviceIndex = static_cast<size_t>(device);
  check(cuptiDeviceGetChipName(&chip), "cuptiDeviceGetChipName");
  return chip.pChipName;
}

// What `f` returns, or nullopt with the reason in `why` where it threw: counters
// not allowed, CUDA or CUPTI refusing. Work left running on the GPU is the
// solution's doing and goes on up: the worker reports it, as after any call.
template <typename F>
auto or_reason(F&& f, std::string* why) -> std::optional<decltype(f())> {
  try {
    return f();
  } catch (const WorkLeftRunning&) {
    throw;
  } catch (const std::runtime_error& e) {  // also CounterFailure, CudaError, no CUPTI
    if (why) *why = e.what();
    return std::nullopt;
  }
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
  auto init = SB_CUPTI_PARAMS(CUpti_Profiler_Host_Initialize_Params);
  init.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
  init.pChipName = s.chip.c_str();
  init.pCounterAvailabilityImage = s.availability.data();
  check(cuptiProfilerHostInitialize(&init), "cuptiProfilerHostInitialize");
  return init.pHostObject;
}

void release_host(CUpti_Profiler_Host_Object* h) {
  auto d = SB_CUPTI_PARAMS(CUpti_Profiler_Host_Deinitialize_Params);
  d.pHostObject = h;
  (void)cuptiProfilerHostDeinitialize(&d);
}

// The configuration image of a host object for `n` metrics (added to it here).
std::vector<uint8_t> config_image(CUpti_Profiler_Host_Object* host, const char** names, size_t n) {
  auto add = SB_CUPTI_PARAMS(CUpti_Profiler_Host_ConfigAddMetrics_Params);
  add.pHostObject = host;
  add.ppMetricNames = names;
  add.numMetrics = n;
  check(cuptiProfilerHostConfigAddMetrics(&add), "cuptiProfilerHostConfigAddMetrics");
  auto size = SB_CUPTI_PARAMS(CUpti_Profiler_Host_GetConfigImageSize_Params);
  size.pHostObject = host;
  check(cuptiProfilerHostGetConfigImageSize(&size), "cuptiProfilerHostGetConfigImageSize");
  std::vector<uint8_t> config(size.configImageSize);
  auto img = SB_CUPTI_PARAMS(CUpti_Profiler_Host_GetConfigImage_Params);
  img.pHostObject = host;
  img.configImageSize = config.size();
  img.pConfigImage = config.data();
  check(cuptiProfilerHostGetConfigImage(&img), "cuptiProfilerHostGetConfigImage");
  return config;
}

// The `n` metrics' values of range (or sample) `index` of a counter data image.
void evaluate(CUpti_Profiler_Host_Object* host, std::vector<uint8_t>& data, size_t index,
              const char** names, size_t n, double* values) {
  auto ev = SB_CUPTI_PARAMS(CUpti_Profiler_Host_EvaluateToGpuValues_Params);
  ev.pHostObject = host;
  ev.pCounterDataImage = data.data();
  ev.counterDataImageSize = data.size();
  ev.rangeIndex = index;
  ev.ppMetricNames = names;
  ev.numMetrics = n;
  ev.pMetricValues = values;
  check(cuptiProfilerHostEvaluateToGpuValues(&ev), "cuptiProfilerHostEvaluateToGpuValues");
}

void build_host(HostSetup& s, int device, CUcontext ctx, const std::vector<std::string>& wanted) {
  s.chip = chip_name(device);
  auto avail = SB_CUPTI_PARAMS(CUpti_Profiler_GetCounterAvailability_Params);
  avail.ctx = ctx;
  check(cuptiProfilerGetCounterAvailability(&avail), "cuptiProfilerGetCounterAvailability");
  s.availability.resize(avail.counterAvailabilityImageSize);
  avail.pCounterAvailabilityImage = s.availability.data();
  check(cuptiProfilerGetCounterAvailability(&avail), "cuptiProfilerGetCounterAvailability");
  // Each metric on a host object of its own: one this chip lacks is listed, not fatal.
  for (const std::string& m : wanted) {
    CUpti_Profiler_Host_Object* h = host_object(s);
    auto add = SB_CUPTI_PARAMS(CUpti_Profiler_Host_ConfigAddMetrics_Params);
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
  s.config = config_image(s.host, names.data(), names.size());
  auto passes = SB_CUPTI_PARAMS(CUpti_Profiler_Host_GetNumOfPasses_Params);
  passes.configImageSize = s.config.size();
  passes.pConfigImage = s.config.data();
  check(cuptiProfilerHostGetNumOfPasses(&passes), "cuptiProfilerHostGetNumOfPasses");
  s.passes = static_cast<int>(passes.numOfPasses);
}

// Device idle and the L2 flushed first (the timer's prepare(): clean lines), as every
// timed call starts: DRAM reads are then the call's own. An empty window opens a
// launch gate that SOLBENCH_GPU_BLOCK_LAUNCH=1 may have closed: nothing may hold the
// stream while CUPTI replays kernels or samples the call.
void settle(harness::Timer& timer) {
  timer.prepare();
  timer.begin();
  timer.end();
  timer.wait_idle();
}

// The range-profiler session on a context, disabled again whatever happens.
class Session {
 public:
  explicit Session(CUcontext ctx) {
    auto en = SB_CUPTI_PARAMS(CUpti_RangeProfiler_Enable_Params);
    en.ctx = ctx;
    check(cuptiRangeProfilerEnable(&en), "cuptiRangeProfilerEnable");
    obj_ = en.pRangeProfilerObject;
  }
  ~Session() {
    auto d = SB_CUPTI_PARAMS(CUpti_RangeProfiler_Disable_Params);
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
  auto dsize = SB_CUPTI_PARAMS(CUpti_RangeProfiler_GetCounterDataSize_Params);
  dsize.pRangeProfilerObject = session.get();
  dsize.pMetricNames = names.data();
  dsize.numMetrics = names.size();
  dsize.maxNumOfRanges = kMaxRanges;
  dsize.maxNumRangeTreeNodes = kMaxRanges;
  check(cuptiRangeProfilerGetCounterDataSize(&dsize), "cuptiRangeProfilerGetCounterDataSize");
  std::vector<uint8_t> data(dsize.counterDataSize);
  auto init = SB_CUPTI_PARAMS(CUpti_RangeProfiler_CounterDataImage_Initialize_Params);
  init.pRangeProfilerObject = session.get();
  init.counterDataSize = data.size();
  init.pCounterData = data.data();
  check(cuptiRangeProfilerCounterDataImageInitialize(&init),
        "cuptiRangeProfilerCounterDataImageInitialize");
  auto cfg = SB_CUPTI_PARAMS(CUpti_RangeProfiler_SetConfig_Params);
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

  settle(flush_timer);
  auto st = SB_CUPTI_PARAMS(CUpti_RangeProfiler_Start_Params);
  st.pRangeProfilerObject = session.get();
  check(cuptiRangeProfilerStart(&st), "cuptiRangeProfilerStart");
  try {
    call();
  } catch (...) {
    auto sp = SB_CUPTI_PARAMS(CUpti_RangeProfiler_Stop_Params);
    sp.pRangeProfilerObject = session.get();
    (void)cuptiRangeProfilerStop(&sp);
    throw;
  }
  flush_timer.wait_idle();  // bounded, as after every call
  auto sp = SB_CUPTI_PARAMS(CUpti_RangeProfiler_Stop_Params);
  sp.pRangeProfilerObject = session.get();
  check(cuptiRangeProfilerStop(&sp), "cuptiRangeProfilerStop");
  if (!sp.isAllPassSubmitted) throw CounterFailure("the range profiler asked for another pass");

  auto dec = SB_CUPTI_PARAMS(CUpti_RangeProfiler_DecodeData_Params);
  dec.pRangeProfilerObject = session.get();
  check(cuptiRangeProfilerDecodeData(&dec), "cuptiRangeProfilerDecodeData");
  auto info = SB_CUPTI_PARAMS(CUpti_RangeProfiler_GetCounterDataInfo_Params);
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
    auto ri = SB_CUPTI_PARAMS(CUpti_RangeProfiler_CounterData_GetRangeInfo_Params);
    ri.pCounterDataImage = data.data();
    ri.counterDataImageSize = data.size();
    ri.rangeIndex = r;
    ri.rangeDelimiter = "/";
    if (cuptiRangeProfilerCounterDataGetRangeInfo(&ri) == CUPTI_SUCCESS && ri.rangeName)
      k.name = ri.rangeName;
    evaluate(s.host, data, r, names.data(), names.size(), values.data());
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
  return or_reason([&] {
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
          profiler_initialize();
          auto sup = SB_CUPTI_PARAMS(CUpti_Profiler_DeviceSupported_Params);
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
  }, why);
}

// ---------------------------------------------------------------- PM sampling

namespace {

// DRAM bytes written, then read (the order of the values evaluated per sample).
const char* kPmMetrics[] = {"dram__bytes_write.sum", "dram__bytes_read.sum"};
constexpr size_t kPmBufferBytes = size_t(64) << 20;  // the hardware buffer of raw samples
constexpr uint32_t kPmMaxSamples = 40000;            // the counter data image's capacity
constexpr double kPmMinIntervalNs = 1000;            // 1 us: a 15 us kernel gets 15 samples

// The host side of PM sampling on this chip: its configuration image for the two
// metrics, made once per process.
struct PmSetup {
  std::vector<uint8_t> availability, config;
  std::string chip;
  CUpti_Profiler_Host_Object* host = nullptr;  // kept for evaluating samples
};

PmSetup build_pm(int device) {
  PmSetup s;
  s.chip = chip_name(device);
  auto av = SB_CUPTI_PARAMS(CUpti_PmSampling_GetCounterAvailability_Params);
  av.deviceIndex = static_cast<size_t>(device);
  check(cuptiPmSamplingGetCounterAvailability(&av), "cuptiPmSamplingGetCounterAvailability");
  s.availability.resize(av.counterAvailabilityImageSize);
  av.pCounterAvailabilityImage = s.availability.data();
  check(cuptiPmSamplingGetCounterAvailability(&av), "cuptiPmSamplingGetCounterAvailability");
  auto init = SB_CUPTI_PARAMS(CUpti_Profiler_Host_Initialize_Params);
  init.profilerType = CUPTI_PROFILER_TYPE_PM_SAMPLING;
  init.pChipName = s.chip.c_str();
  init.pCounterAvailabilityImage = s.availability.data();
  check(cuptiProfilerHostInitialize(&init), "cuptiProfilerHostInitialize (PM sampling)");
  s.host = init.pHostObject;
  s.config = config_image(s.host, kPmMetrics, 2);
  return s;
}

// PM sampling enabled on a device, disabled again whatever happens.
class PmSession {
 public:
  explicit PmSession(int device) {
    auto en = SB_CUPTI_PARAMS(CUpti_PmSampling_Enable_Params);
    en.deviceIndex = static_cast<size_t>(device);
    check(cuptiPmSamplingEnable(&en), "cuptiPmSamplingEnable");
    obj_ = en.pPmSamplingObject;
  }
  ~PmSession() {
    if (started_) {
      auto sp = SB_CUPTI_PARAMS(CUpti_PmSampling_Stop_Params);
      sp.pPmSamplingObject = obj_;
      (void)cuptiPmSamplingStop(&sp);
    }
    auto d = SB_CUPTI_PARAMS(CUpti_PmSampling_Disable_Params);
    d.pPmSamplingObject = obj_;
    (void)cuptiPmSamplingDisable(&d);
  }
  PmSession(const PmSession&) = delete;
  PmSession& operator=(const PmSession&) = delete;
  CUpti_PmSampling_Object* get() const { return obj_; }
  void start() {
    auto st = SB_CUPTI_PARAMS(CUpti_PmSampling_Start_Params);
    st.pPmSamplingObject = obj_;
    check(cuptiPmSamplingStart(&st), "cuptiPmSamplingStart");
    started_ = true;
  }
  void stop() {
    auto sp = SB_CUPTI_PARAMS(CUpti_PmSampling_Stop_Params);
    sp.pPmSamplingObject = obj_;
    started_ = false;
    check(cuptiPmSamplingStop(&sp), "cuptiPmSamplingStop");
  }

 private:
  CUpti_PmSampling_Object* obj_ = nullptr;
  bool started_ = false;
};

// The samples' sums, the first left out: it spans from before the start (what the
// L2 flush moved among it) to its first trigger, which the wait after the start lets
// pass before the call. The device is idle around the call and the flush left the
// L2 clean, so the rest is the call's own traffic while it ran.
harness::SampledDram sum_samples(const PmSetup& s, CUpti_PmSampling_Object* obj,
                                 std::vector<uint8_t>& data, double interval_ns) {
  auto dec = SB_CUPTI_PARAMS(CUpti_PmSampling_DecodeData_Params);
  dec.pPmSamplingObject = obj;
  dec.pCounterDataImage = data.data();
  dec.counterDataImageSize = data.size();
  check(cuptiPmSamplingDecodeData(&dec), "cuptiPmSamplingDecodeData");
  if (dec.overflow || dec.decodeStopReason == CUPTI_PM_SAMPLING_DECODE_STOP_REASON_COUNTER_DATA_FULL)
    throw CounterFailure(fmt::format("the call outlasted PM sampling's buffers ({} samples of {} ns)",
                                     kPmMaxSamples, interval_ns));
  auto info = SB_CUPTI_PARAMS(CUpti_PmSampling_GetCounterDataInfo_Params);
  info.pCounterDataImage = data.data();
  info.counterDataImageSize = data.size();
  check(cuptiPmSamplingGetCounterDataInfo(&info), "cuptiPmSamplingGetCounterDataInfo");
  if (info.numCompletedSamples < 2) throw CounterFailure("PM sampling decoded no sample of the call");
  harness::SampledDram out;
  out.interval_ns = interval_ns;
  for (size_t i = 1; i < info.numCompletedSamples; ++i) {
    double v[2] = {0, 0};
    evaluate(s.host, data, i, kPmMetrics, 2, v);
    out.write_bytes += v[0];
    out.read_bytes += v[1];
  }
  out.samples = info.numCompletedSamples - 1;
  return out;
}

}  // namespace

std::optional<harness::SampledDram> sample_call_dram(int device, void* stream,
                                                     const json& timer_options, double expected_ms,
                                                     const std::function<void()>& call,
                                                     std::string* why) {
  static std::mutex mu;
  static std::optional<PmSetup> setup;
  static std::string setup_error;
  return or_reason([&] {
    CuptiTimer* cupti = nullptr;
    auto timer = make_cupti_timer(device, stream, pass_options(timer_options, false), &cupti);
    std::lock_guard<std::mutex> lock(mu);
    if (!setup && setup_error.empty()) {
      try {
        profiler_initialize();
        setup = build_pm(device);
      } catch (const CounterFailure& e) {
        setup_error = e.what();
      }
    }
    if (!setup) throw CounterFailure(setup_error);
    // At most about 20000 samples over the call (1 us each up to 20 ms).
    const double interval_ns = std::max(kPmMinIntervalNs, std::max(expected_ms, 0.0) * 1e6 / 20000);
    const auto wait = std::chrono::nanoseconds(static_cast<int64_t>(std::max(50e3, 5 * interval_ns)));
    PmSession session(device);
    auto cfg = SB_CUPTI_PARAMS(CUpti_PmSampling_SetConfig_Params);
    cfg.pPmSamplingObject = session.get();
    cfg.configSize = setup->config.size();
    cfg.pConfig = setup->config.data();
    cfg.hardwareBufferSize = kPmBufferBytes;
    cfg.samplingInterval = static_cast<uint64_t>(interval_ns);
    cfg.triggerMode = CUPTI_PM_SAMPLING_TRIGGER_MODE_GPU_TIME_INTERVAL;
    cfg.hwBufferAppendMode = CUPTI_PM_SAMPLING_HARDWARE_BUFFER_APPEND_MODE_KEEP_OLDEST;
    check(cuptiPmSamplingSetConfig(&cfg), "cuptiPmSamplingSetConfig");
    auto dsize = SB_CUPTI_PARAMS(CUpti_PmSampling_GetCounterDataSize_Params);
    dsize.pPmSamplingObject = session.get();
    dsize.pMetricNames = kPmMetrics;
    dsize.numMetrics = 2;
    dsize.maxSamples = kPmMaxSamples;
    check(cuptiPmSamplingGetCounterDataSize(&dsize), "cuptiPmSamplingGetCounterDataSize");
    std::vector<uint8_t> data(dsize.counterDataSize);
    auto init = SB_CUPTI_PARAMS(CUpti_PmSampling_CounterDataImage_Initialize_Params);
    init.pPmSamplingObject = session.get();
    init.counterDataSize = data.size();
    init.pCounterData = data.data();
    check(cuptiPmSamplingCounterDataImageInitialize(&init),
          "cuptiPmSamplingCounterDataImageInitialize");
    settle(*timer);  // then the first sample's trigger passes before the call
    session.start();
    std::this_thread::sleep_for(wait);
    call();
    timer->wait_idle();  // bounded, as after every call
    std::this_thread::sleep_for(wait);
    session.stop();
    return sum_samples(*setup, session.get(), data, interval_ns);
  }, why);
}

}  // namespace solbench::gpu
