#include "harness/timing/gpu/profiler_timer.h"

#include <cuda.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_target.h>

#include <mutex>
#include <numeric>
#include <stdexcept>

#include <fmt/format.h>

#include "harness/timing/gpu/cuda_check.h"
#include "harness/timing/gpu/cupti_params.h"

namespace solbench::gpu {

namespace detail {

// The process's one range-profiler session (CUPTI allows one per context): set up
// on first use for one device and kept for the life of the process.
class KernelDurationProfiler {
 public:
  static constexpr const char* kMetric = "gpu__time_duration.sum";
  // Kernels one span records; a call that fills it is refused (ProfilerTimer).
  static constexpr size_t kMaxRanges = 2048;

  // Null with the reason in `why` when the profiler cannot be used on `device`.
  static KernelDurationProfiler* instance(int device, std::string* why);

  int device() const { return device_; }
  // A fresh counter image, then profiling on: every kernel from here is a range.
  void start();
  // Profiling off; the ranges are read by collect() once the device is idle.
  void stop();
  // gpu__time_duration (ns) of each kernel since start(), in launch order.
  std::vector<double> collect(uint64_t* dropped);

 private:
  bool init(int device, std::string* why);

  int device_ = -1;
  CUpti_Profiler_Host_Object* host_ = nullptr;
  CUpti_RangeProfiler_Object* session_ = nullptr;
  std::vector<uint8_t> config_;
  std::vector<uint8_t> counter_data_;
};

namespace {

KernelDurationProfiler* g_profiler = nullptr;

// `what` failed with `r`: the reason, with a hint for the failures users can fix.
std::string failure(const char* what, CUptiResult r) {
  std::string s = fmt::format("{} failed: {}", what, error_name(r));
  if (r == CUPTI_ERROR_INSUFFICIENT_PRIVILEGES)
    s += " (hardware counters need root or the driver option NVreg_RestrictProfilingToAdminUsers=0)";
  else if (r == CUPTI_ERROR_HARDWARE_BUSY)
    s += " (another process is reading this GPU's counters: ncu, nsys or another "
         "`--timer profiler`; one at a time per GPU)";
  else if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED || r == CUPTI_ERROR_NOT_INITIALIZED)
    s += " (another profiler, e.g. ncu or nsys, may own CUPTI)";
  return s;
}

const char* level(CUpti_Profiler_Support_Level l) {
  switch (l) {
    case CUPTI_PROFILER_CONFIGURATION_SUPPORTED: return "supported";
    case CUPTI_PROFILER_CONFIGURATION_DISABLED: return "disabled";
    case CUPTI_PROFILER_CONFIGURATION_UNSUPPORTED: return "unsupported";
    default: return "unknown";
  }
}

}  // namespace

KernelDurationProfiler* KernelDurationProfiler::instance(int device, std::string* why) {
  static std::mutex mu;
  static std::string init_error;
  static bool tried = false;
  std::lock_guard<std::mutex> lock(mu);
  if (!tried) {
    tried = true;
    auto* p = new KernelDurationProfiler();  // lives as long as the process
    if (p->init(device, &init_error))
      g_profiler = p;
    else
      delete p;
  }
  if (g_profiler && g_profiler->device() != device) {
    if (why)
      *why = fmt::format("the profiler timer is bound to device {} in this process, not {}",
                         g_profiler->device(), device);
    return nullptr;
  }
  if (!g_profiler && why) *why = init_error;
  return g_profiler;
}

bool KernelDurationProfiler::init(int device, std::string* why) {
  device_ = device;
  if (cudaSetDevice(device) != cudaSuccess || cudaFree(nullptr) != cudaSuccess) {
    *why = fmt::format("CUDA device {} cannot be used: {}", device,
                       error_name(cudaGetLastError()));
    return false;
  }
  using GetCurrent = CUresult (*)(CUcontext*);
  auto get_current = reinterpret_cast<GetCurrent>(driver_entry_point("cuCtxGetCurrent"));
  CUcontext ctx = nullptr;
  if (!get_current || get_current(&ctx) != CUDA_SUCCESS || !ctx) {
    *why = "no current CUDA context (cuCtxGetCurrent)";
    return false;
  }
  auto ok = [&](CUptiResult r, const char* what) {
    if (r == CUPTI_SUCCESS) return true;
    *why = failure(what, r);
    return false;
  };

  auto pinit = SB_CUPTI_PARAMS(CUpti_Profiler_Initialize_Params);
  if (!ok(cuptiProfilerInitialize(&pinit), "cuptiProfilerInitialize")) return false;

  auto sup = SB_CUPTI_PARAMS(CUpti_Profiler_DeviceSupported_Params);
  sup.cuDevice = device;
  sup.api = CUPTI_PROFILER_RANGE_PROFILING;
  if (!ok(cuptiProfilerDeviceSupported(&sup), "cuptiProfilerDeviceSupported")) return false;
  if (sup.isSupported != CUPTI_PROFILER_CONFIGURATION_SUPPORTED) {
    *why = fmt::format(
        "range profiling is not available on device {} (architecture {}, vGPU {}, "
        "confidential compute {}, WSL {})",
        device, level(sup.architecture), level(sup.vGpu), level(sup.confidentialCompute),
        level(sup.wsl));
    return false;
  }

  auto chip = SB_CUPTI_PARAMS(CUpti_Device_GetChipName_Params);
  chip.deviceIndex = static_cast<size_t>(device);
  if (!ok(cuptiDeviceGetChipName(&chip), "cuptiDeviceGetChipName")) return false;

  auto avail = SB_CUPTI_PARAMS(CUpti_Profiler_GetCounterAvailability_Params);
  avail.ctx = ctx;
  if (!ok(cuptiProfilerGetCounterAvailability(&avail), "cuptiProfilerGetCounterAvailability"))
    return false;
  std::vector<uint8_t> availability(avail.counterAvailabilityImageSize);
  avail.pCounterAvailabilityImage = availability.data();
  if (!ok(cuptiProfilerGetCounterAvailability(&avail), "cuptiProfilerGetCounterAvailability"))
    return false;

  // The host side: which counters the metric needs, as a config image.
  auto hinit = SB_CUPTI_PARAMS(CUpti_Profiler_Host_Initialize_Params);
  hinit.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
  hinit.pChipName = chip.pChipName;
  hinit.pCounterAvailabilityImage = availability.data();
  if (!ok(cuptiProfilerHostInitialize(&hinit), "cuptiProfilerHostInitialize")) return false;
  host_ = hinit.pHostObject;
  const char* metrics[] = {kMetric};
  auto add = SB_CUPTI_PARAMS(CUpti_Profiler_Host_ConfigAddMetrics_Params);
  add.pHostObject = host_;
  add.ppMetricNames = metrics;
  add.numMetrics = 1;
  if (!ok(cuptiProfilerHostConfigAddMetrics(&add), "cuptiProfilerHostConfigAddMetrics"))
    return false;
  auto csize = SB_CUPTI_PARAMS(CUpti_Profiler_Host_GetConfigImageSize_Params);
  csize.pHostObject = host_;
  if (!ok(cuptiProfilerHostGetConfigImageSize(&csize), "cuptiProfilerHostGetConfigImageSize"))
    return false;
  config_.resize(csize.configImageSize);
  auto cimg = SB_CUPTI_PARAMS(CUpti_Profiler_Host_GetConfigImage_Params);
  cimg.pHostObject = host_;
  cimg.configImageSize = config_.size();
  cimg.pConfigImage = config_.data();
  if (!ok(cuptiProfilerHostGetConfigImage(&cimg), "cuptiProfilerHostGetConfigImage")) return false;
  auto passes = SB_CUPTI_PARAMS(CUpti_Profiler_Host_GetNumOfPasses_Params);
  passes.configImageSize = config_.size();
  passes.pConfigImage = config_.data();
  if (!ok(cuptiProfilerHostGetNumOfPasses(&passes), "cuptiProfilerHostGetNumOfPasses"))
    return false;
  // One pass: every call is measured as it runs, never replayed.
  if (passes.numOfPasses != 1) {
    *why = fmt::format("{} needs {} passes on this GPU; the timer only runs single-pass", kMetric,
                       passes.numOfPasses);
    return false;
  }

  // The target side: a range-profiler session on the context.
  auto en = SB_CUPTI_PARAMS(CUpti_RangeProfiler_Enable_Params);
  en.ctx = ctx;
  if (!ok(cuptiRangeProfilerEnable(&en), "cuptiRangeProfilerEnable")) return false;
  session_ = en.pRangeProfilerObject;
  auto dsize = SB_CUPTI_PARAMS(CUpti_RangeProfiler_GetCounterDataSize_Params);
  dsize.pRangeProfilerObject = session_;
  dsize.pMetricNames = metrics;
  dsize.numMetrics = 1;
  dsize.maxNumOfRanges = kMaxRanges;
  dsize.maxNumRangeTreeNodes = kMaxRanges;
  if (!ok(cuptiRangeProfilerGetCounterDataSize(&dsize), "cuptiRangeProfilerGetCounterDataSize"))
    return false;
  counter_data_.resize(dsize.counterDataSize);
  return true;
}

void KernelDurationProfiler::start() {
  auto img = SB_CUPTI_PARAMS(CUpti_RangeProfiler_CounterDataImage_Initialize_Params);
  img.pRangeProfilerObject = session_;
  img.counterDataSize = counter_data_.size();
  img.pCounterData = counter_data_.data();
  SB_CUDA_CHECK(cuptiRangeProfilerCounterDataImageInitialize(&img));
  auto cfg = SB_CUPTI_PARAMS(CUpti_RangeProfiler_SetConfig_Params);
  cfg.pRangeProfilerObject = session_;
  cfg.configSize = config_.size();
  cfg.pConfig = config_.data();
  cfg.counterDataImageSize = counter_data_.size();
  cfg.pCounterDataImage = counter_data_.data();
  cfg.range = CUPTI_AutoRange;       // one range per kernel
  cfg.replayMode = CUPTI_UserReplay;  // single pass: nothing is replayed
  cfg.maxRangesPerPass = kMaxRanges;
  cfg.numNestingLevels = 1;
  cfg.minNestingLevel = 1;
  cfg.passIndex = 0;
  cfg.targetNestingLevel = 1;
  SB_CUDA_CHECK(cuptiRangeProfilerSetConfig(&cfg));
  auto st = SB_CUPTI_PARAMS(CUpti_RangeProfiler_Start_Params);
  st.pRangeProfilerObject = session_;
  SB_CUDA_CHECK(cuptiRangeProfilerStart(&st));
}

void KernelDurationProfiler::stop() {
  auto sp = SB_CUPTI_PARAMS(CUpti_RangeProfiler_Stop_Params);
  sp.pRangeProfilerObject = session_;
  SB_CUDA_CHECK(cuptiRangeProfilerStop(&sp));
  if (!sp.isAllPassSubmitted)
    throw std::runtime_error(fmt::format("CUPTI range profiler: {} asked for another pass", kMetric));
}

std::vector<double> KernelDurationProfiler::collect(uint64_t* dropped) {
  auto dec = SB_CUPTI_PARAMS(CUpti_RangeProfiler_DecodeData_Params);
  dec.pRangeProfilerObject = session_;
  SB_CUDA_CHECK(cuptiRangeProfilerDecodeData(&dec));
  *dropped += dec.numOfRangeDropped;
  auto info = SB_CUPTI_PARAMS(CUpti_RangeProfiler_GetCounterDataInfo_Params);
  info.pCounterDataImage = counter_data_.data();
  info.counterDataImageSize = counter_data_.size();
  SB_CUDA_CHECK(cuptiRangeProfilerGetCounterDataInfo(&info));
  std::vector<double> ns(info.numTotalRanges, 0.0);
  const char* metrics[] = {kMetric};
  for (size_t i = 0; i < ns.size(); ++i) {
    auto ev = SB_CUPTI_PARAMS(CUpti_Profiler_Host_EvaluateToGpuValues_Params);
    ev.pHostObject = host_;
    ev.pCounterDataImage = counter_data_.data();
    ev.counterDataImageSize = counter_data_.size();
    ev.rangeIndex = i;
    ev.ppMetricNames = metrics;
    ev.numMetrics = 1;
    ev.pMetricValues = &ns[i];
    SB_CUDA_CHECK(cuptiProfilerHostEvaluateToGpuValues(&ev));
  }
  return ns;
}

}  // namespace detail

namespace {
detail::KernelDurationProfiler* require_profiler(int device) {
  std::string why;
  detail::KernelDurationProfiler* p = detail::KernelDurationProfiler::instance(device, &why);
  if (!p) throw std::runtime_error("CUPTI range profiler unavailable: " + why);
  return p;
}
}  // namespace

ProfilerTimer::ProfilerTimer(int device, cudaStream_t stream, GpuTimerOptions options)
    : device_(device), stream_(stream), options_(std::move(options)),
      guards_(device_, options_),
      profiler_(require_profiler(device)) {
  prepare_l2_flush(options_, device_);
}

void ProfilerTimer::prepare() {
  SB_CUDA_CHECK(cudaSetDevice(device_));
  // Any earlier work, then the flush, finish before profiling starts: not the call's kernels.
  guards_.before_flush(stream_);
  flush_l2(options_, stream_);
  SB_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

void ProfilerTimer::begin() {
  profiler_->start();
  start_.record(stream_);
}

void ProfilerTimer::end() {
  stop_.record(stream_);
  profiler_->stop();
}

double ProfilerTimer::elapsed_ms() {
  guards_.after_call(stream_, "the timed call's work on the given stream had finished");
  uint64_t dropped = 0;
  last_kernel_ns_ = profiler_->collect(&dropped);
  // CUPTI stops recording at the span's capacity without counting the rest as
  // dropped (seen on the H100): a full span may have missed kernels, and a sum that
  // misses kernels is a time too short. Refuse it.
  if (dropped || last_kernel_ns_.size() >= detail::KernelDurationProfiler::kMaxRanges) {
    ++over_capacity_spans_;
    throw std::runtime_error(fmt::format(
        "profiler timer: the call launched {} or more kernels, as many as one span records, "
        "so some may not be measured; use the default timer for this solution",
        detail::KernelDurationProfiler::kMaxRanges));
  }
  last_events_ms_ = CudaEvent::elapsed_ms(start_, stop_);
  ++iterations_;
  if (last_kernel_ns_.empty()) {
    ++empty_iterations_;  // no kernel (copies only, or host work): the events' span
    last_ms_ = std::max(0.0, last_events_ms_);
  } else {
    last_ms_ = std::accumulate(last_kernel_ns_.begin(), last_kernel_ns_.end(), 0.0) / 1e6;
  }
  return last_ms_;
}

void ProfilerTimer::wait_idle() {
  guards_.after_call(stream_, "the call's work on the given stream had finished");
}

json ProfilerTimer::details() const {
  json j = json::object();
  j["timer"] = name();
  j["scope"] = "every kernel the call launched, on any stream, serialised by the profiler; "
               "time = sum of gpu__time_duration.sum (ncu's Duration); memcpy/memset not counted";
  j["device"] = device_;
  l2_flush_details(options_, j);
  guards_.details(j);
  j["iterations"] = iterations_;
  j["last_ms"] = last_ms_;
  j["last_kernels"] = last_kernel_ns_.size();
  j["events_ms"] = last_events_ms_;
  if (empty_iterations_) j["iterations_without_kernels"] = empty_iterations_;
  if (over_capacity_spans_) j["spans_over_capacity"] = over_capacity_spans_;
  return j;
}

}  // namespace solbench::gpu
