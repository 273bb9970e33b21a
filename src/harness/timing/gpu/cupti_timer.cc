#include "harness/timing/gpu/cupti_timer.h"

#include <algorithm>
#include <set>
#include <stdexcept>
#include <utility>

#include "harness/timing/gpu/cuda_check.h"
#include "harness/timing/gpu/cupti_collector.h"

namespace solbench::gpu {

using detail::GpuActivity;

SpanSummary summarize(const std::vector<GpuActivity>& acts) {
  SpanSummary s;
  s.activities = acts.size();
  if (acts.empty()) return s;
  std::set<std::pair<uint32_t, uint32_t>> streams;
  std::vector<std::pair<uint64_t, uint64_t>> iv;
  iv.reserve(acts.size());
  uint64_t first = UINT64_MAX, last = 0;
  for (const GpuActivity& a : acts) {
    switch (a.kind) {
      case GpuActivity::Kind::Kernel: ++s.kernels; break;
      case GpuActivity::Kind::Memcpy: ++s.memcpys; break;
      case GpuActivity::Kind::Memset: ++s.memsets; break;
    }
    streams.emplace(a.context_id, a.stream_id);
    first = std::min(first, a.start_ns);
    last = std::max(last, a.end_ns);
    iv.emplace_back(a.start_ns, std::max(a.start_ns, a.end_ns));
    if (s.names.size() < 16 && std::find(s.names.begin(), s.names.end(), a.name) == s.names.end())
      s.names.push_back(a.name);
  }
  s.streams = streams.size();
  s.span_ms = last > first ? (last - first) / 1e6 : 0.0;
  // Union of the intervals: the time the GPU was busy with the call.
  std::sort(iv.begin(), iv.end());
  uint64_t busy = 0, cur_b = iv[0].first, cur_e = iv[0].second;
  for (size_t i = 1; i < iv.size(); ++i) {
    if (iv[i].first > cur_e) {
      busy += cur_e - cur_b;
      cur_b = iv[i].first;
      cur_e = iv[i].second;
    } else {
      cur_e = std::max(cur_e, iv[i].second);
    }
  }
  busy += cur_e - cur_b;
  s.busy_ms = busy / 1e6;
  return s;
}

namespace {
detail::CuptiCollector* require_collector() {
  std::string why;
  detail::CuptiCollector* c = detail::CuptiCollector::instance(&why);
  if (!c) throw std::runtime_error("CUPTI unavailable: " + why);
  return c;
}
}  // namespace

CuptiTimer::CuptiTimer(int device, cudaStream_t stream, GpuTimerOptions options)
    : device_(device), stream_(stream), options_(std::move(options)),
      guards_(device_, options_),
      collector_(require_collector()),
      gate_(options_.block_launch, options_.block_timeout_s) {
  SB_CUDA_CHECK(cudaSetDevice(device_));
  prepare_l2_flush(options_, device_);
}

void CuptiTimer::prepare() {
  int64_t t = harness::monotonic_ns();
  SB_CUDA_CHECK(cudaSetDevice(device_));
  // The whole device, not just the stream: work of the previous call on side
  // streams must not overlap the next span (and must have ended: device_idle.h).
  guards_.wait_before(stream_);
  t = steps_.add("idle_wait", t);
  guards_.reset_l2(stream_);
  t = steps_.add("l2_reset", t);
  flush_l2(options_, stream_);
  SB_CUDA_CHECK(cudaStreamSynchronize(stream_));
  t = steps_.add("l2_flush", t);
  // Records delivered so far belong to no window: dropped. No forced flush here:
  // the L2 flush's records come with the call's and elapsed_ms() keeps only the
  // window's (by correlation id), and each forced flush cost the next CUDA call
  // 0.2 ms (docs/gpu-timing.md).
  (void)collector_->take(detail::WindowCalls{});
  t = steps_.add("records_drop", t);
  gate_.close(stream_);  // launched before the window opens: not the call's work
  steps_.add("gate", t);
}

void CuptiTimer::begin() {
  if (options_.events_crosscheck) start_.record(stream_);
  collector_->open_window();
  in_span_ = true;
}

void CuptiTimer::end() {
  detail::WindowCalls calls = collector_->close_window();
  in_span_ = false;
  if (options_.events_crosscheck) stop_.record(stream_);
  gate_.open();
  // Synchronised and read in elapsed_ms(); keep the window's ids until then.
  pending_calls_ = std::move(calls);
}

double CuptiTimer::elapsed_ms() {
  int64_t t = harness::monotonic_ns();
  guards_.after_call(stream_, "the timed call's work on the given stream had finished");
  t = steps_.add("read_idle_wait", t);
  gate_.settle();
  collector_->flush();
  t = steps_.add("read_records_flush", t);
  std::vector<GpuActivity> acts = collector_->take(pending_calls_);
  steps_.add("read_records_take", t);
  dropped_records_ += collector_->take_dropped();
  last_ = summarize(acts);
  if (keep_activities_) last_activities_ = std::move(acts);
  last_events_ms_ = options_.events_crosscheck ? CudaEvent::elapsed_ms(start_, stop_) : -1.0;
  ++iterations_;
  if (last_.activities == 0) {
    // Nothing ran on the GPU (a host-only call): the events' span is the best
    // measure there is, and details() counts how often this happened.
    ++empty_iterations_;
    last_ms_ = std::max(0.0, last_events_ms_);
  } else {
    last_ms_ = last_.span_ms;
  }
  return last_ms_;
}

void CuptiTimer::warm_up() {
  prepare();
  begin();
  end();
  (void)elapsed_ms();
  iterations_ = empty_iterations_ = 0;
  last_ = SpanSummary{};
  last_ms_ = 0;
  last_events_ms_ = -1;
  (void)steps_.take();
}

void CuptiTimer::wait_idle() {
  guards_.after_call(stream_, "the call's work on the given stream had finished");
}

json CuptiTimer::details() const {
  json j = json::object();
  j["timer"] = name();
  j["scope"] = "kernels, memcpys and memsets launched by the call on every stream; "
               "time = last end - first start";
  j["device"] = device_;
  j["kernel_timestamps"] = collector_->kernel_timestamps();
  l2_flush_details(options_, j);
  j["iterations"] = iterations_;
  j["last_ms"] = last_ms_;
  j["last_busy_ms"] = last_.busy_ms;
  j["last_activities"] = last_.activities;
  j["last_kernels"] = last_.kernels;
  j["last_memcpys"] = last_.memcpys;
  j["last_memsets"] = last_.memsets;
  j["last_streams"] = last_.streams;
  j["last_names"] = last_.names;
  if (options_.events_crosscheck) j["events_ms"] = last_events_ms_;
  gate_details(gate_, j);
  guards_.details(j);
  if (empty_iterations_) j["iterations_without_gpu_activity"] = empty_iterations_;
  if (dropped_records_) j["cupti_dropped_records"] = dropped_records_;
  return j;
}

}  // namespace solbench::gpu
