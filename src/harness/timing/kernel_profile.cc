#include "harness/timing/kernel_profile.h"

#include <algorithm>
#include <set>

#include "core/text.h"

namespace solbench::harness {

namespace {

// Tensor-core metrics and the dtype each counts (the operand class of the bound's
// work.tensor_tflop, sol/hardware.h MathClass names).
const std::vector<std::pair<std::string, std::string>>& tensor_metrics() {
  static const std::vector<std::pair<std::string, std::string>> m = {
      {"sm__ops_path_tensor_src_fp16_dst_fp16.sum", "fp16"},
      {"sm__ops_path_tensor_src_fp16_dst_fp32.sum", "fp16"},
      {"sm__ops_path_tensor_src_bf16_dst_fp32.sum", "bf16"},
      {"sm__ops_path_tensor_src_tf32_dst_fp32.sum", "tf32"},
      {"sm__ops_path_tensor_src_fp8_dst_fp16.sum", "fp8"},
      {"sm__ops_path_tensor_src_fp8_dst_fp32.sum", "fp8"},
      {"sm__ops_path_tensor_src_int8.sum", "int8"},
      {"sm__ops_path_tensor_src_fp64.sum", "fp64"},
  };
  return m;
}

constexpr const char* kDuration = "gpu__time_duration.sum";
constexpr const char* kDramRead = "dram__bytes_read.sum";
constexpr const char* kDramWrite = "dram__bytes_write.sum";
constexpr const char* kFfma = "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum";
constexpr const char* kFadd = "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum";
constexpr const char* kFmul = "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum";
constexpr const char* kXu = "sm__inst_executed_pipe_xu.sum";

double get(const std::map<std::string, double>& v, const char* key) {
  auto it = v.find(key);
  return it == v.end() ? 0.0 : it->second;
}

bool has(const std::vector<std::string>& metrics, const std::string& m) {
  return std::find(metrics.begin(), metrics.end(), m) != metrics.end();
}

constexpr size_t kActivitiesListed = 512;

json dims(const std::array<uint32_t, 3>& d) { return json::array({d[0], d[1], d[2]}); }

}  // namespace

const std::vector<std::string>& profile_metrics() {
  static const std::vector<std::string> m = [] {
    std::vector<std::string> v = {kDuration, kDramRead, kDramWrite};
    for (const auto& [metric, dtype] : tensor_metrics()) v.push_back(metric);
    v.insert(v.end(), {kFfma, kFadd, kFmul, kXu});
    return v;
  }();
  return m;
}

const std::vector<std::string>& core_profile_metrics() {
  static const std::vector<std::string> m = {kDuration, kDramRead, kDramWrite};
  return m;
}

json kernel_breakdown(const CallTrace& trace, std::optional<double> t_k_ms) {
  std::vector<TracedActivity> acts = trace.activities;
  std::stable_sort(acts.begin(), acts.end(), [](const TracedActivity& a, const TracedActivity& b) {
    return a.start_ns < b.start_ns;
  });
  json list = json::array();
  uint64_t first = acts.empty() ? 0 : acts.front().start_ns;
  uint64_t covered_to = first;  // end of the union of intervals so far
  uint64_t last = first, busy = 0, kernels = 0;
  std::set<std::pair<uint32_t, uint32_t>> streams;
  for (const TracedActivity& a : acts) {
    const uint64_t end = std::max(a.start_ns, a.end_ns);
    // The GPU idle before this activity starts (0 when it overlaps earlier work on
    // another stream): what the call lost between its kernels.
    const uint64_t gap = a.start_ns > covered_to ? a.start_ns - covered_to : 0;
    if (end > covered_to) busy += end - std::max(a.start_ns, covered_to);
    covered_to = std::max(covered_to, end);
    last = std::max(last, end);
    streams.emplace(a.context, a.stream);
    const double dur_us = static_cast<double>(end - a.start_ns) / 1e3;
    json k = {{"kind", a.kind},
              {"name", a.kind == "kernel" ? demangle(a.name) : a.name},
              {"start_us", static_cast<double>(a.start_ns - first) / 1e3},
              {"duration_us", dur_us},
              {"gap_before_us", static_cast<double>(gap) / 1e3},
              {"stream", a.stream}};
    if (a.kind == "kernel") {
      ++kernels;
      k["grid"] = dims(a.grid);
      k["block"] = dims(a.block);
    } else {
      k["bytes"] = a.bytes;
    }
    k["share_of_t_k"] = t_k_ms && *t_k_ms > 0 ? json(dur_us / 1e3 / *t_k_ms) : json(nullptr);
    list.push_back(std::move(k));
  }
  const double span_ms = static_cast<double>(last - first) / 1e6;
  const double busy_ms = static_cast<double>(busy) / 1e6;
  // A trace is one line per workload: a call of thousands of launches lists its first
  // kActivitiesListed (the totals above count every one).
  size_t omitted = 0;
  if (list.size() > kActivitiesListed) {
    omitted = list.size() - kActivitiesListed;
    list.erase(list.begin() + static_cast<std::ptrdiff_t>(kActivitiesListed), list.end());
  }
  json j = {{"activities", list},
            {"activities_omitted", omitted},
            {"kernel_count", kernels},
            {"streams", streams.size()},
            {"span_us", span_ms * 1e3},
            {"busy_us", busy_ms * 1e3},
            {"gaps_us", (span_ms - busy_ms) * 1e3},
            {"host_wall_us", trace.host_wall_ms * 1e3},
            {"host_enqueue_us", trace.host_enqueue_ms * 1e3},
            // What the host clock saw beyond the GPU's work: launch path, Python,
            // synchronisation (0 when the host's clock and the GPU's disagree by more).
            {"host_us", std::max(0.0, trace.host_wall_ms - busy_ms) * 1e3},
            {"t_k_us", t_k_ms ? json(*t_k_ms * 1e3) : json(nullptr)}};
  if (t_k_ms && *t_k_ms > 0) j["gaps_share_of_t_k"] = (span_ms - busy_ms) / *t_k_ms;
  else j["gaps_share_of_t_k"] = nullptr;
  if (!trace.timer.empty()) j["timer"] = trace.timer;
  return j;
}

json counter_summary(const CallCounters& c) {
  const auto& mets = c.metrics;
  json kernels = json::array();
  double tot_read = 0, tot_write = 0, tot_fp32 = 0, tot_sfu = 0, tot_ns = 0;
  std::map<std::string, double> tot_tensor;
  for (const KernelCounters& k : c.kernels) {
    const double ns = get(k.values, kDuration);
    const double rd = get(k.values, kDramRead), wr = get(k.values, kDramWrite);
    std::map<std::string, double> tensor;
    for (const auto& [metric, dtype] : tensor_metrics())
      if (double v = get(k.values, metric.c_str()); v > 0) tensor[dtype] += v;
    // An FMA is two FLOPs; thread-level instruction counts, predicated-on only.
    const double fp32 = 2 * get(k.values, kFfma) + get(k.values, kFadd) + get(k.values, kFmul);
    // One XU warp instruction gives a result per active thread: 32 at most (an
    // upper bound where warps are partly active).
    const double sfu = 32 * get(k.values, kXu);
    double tensor_sum = 0;
    json tj = json::object();
    for (const auto& [dtype, v] : tensor) {
      tj[dtype] = v;
      tot_tensor[dtype] += v;
      tensor_sum += v;
    }
    json kj = {{"name", demangle(k.name)},
               {"duration_ns", has(mets, kDuration) ? json(ns) : json(nullptr)},
               {"dram_read_bytes", has(mets, kDramRead) ? json(rd) : json(nullptr)},
               {"dram_write_bytes", has(mets, kDramWrite) ? json(wr) : json(nullptr)},
               {"tensor_flops", tj},
               {"fp32_flops", has(mets, kFfma) ? json(fp32) : json(nullptr)},
               {"sfu_ops", has(mets, kXu) ? json(sfu) : json(nullptr)}};
    if (ns > 0) {
      kj["dram_gb_per_s"] = (rd + wr) / ns;  // bytes per ns = GB/s
      kj["tensor_tflop_per_s"] = tensor_sum / ns / 1e3;
      kj["fp32_tflop_per_s"] = fp32 / ns / 1e3;
    }
    kernels.push_back(std::move(kj));
    tot_read += rd;
    tot_write += wr;
    tot_fp32 += fp32;
    tot_sfu += sfu;
    tot_ns += ns;
  }
  size_t omitted = 0;  // as in the breakdown: the first ones listed, the totals over all
  if (kernels.size() > kActivitiesListed) {
    omitted = kernels.size() - kActivitiesListed;
    kernels.erase(kernels.begin() + static_cast<std::ptrdiff_t>(kActivitiesListed), kernels.end());
  }
  json tt = json::object();
  for (const auto& [dtype, v] : tot_tensor) tt[dtype] = v;
  json total = {{"kernels", c.kernels.size()},
                {"duration_ns", has(mets, kDuration) ? json(tot_ns) : json(nullptr)},
                {"dram_read_bytes", has(mets, kDramRead) ? json(tot_read) : json(nullptr)},
                {"dram_write_bytes", has(mets, kDramWrite) ? json(tot_write) : json(nullptr)},
                {"tensor_flops", tt},
                {"fp32_flops", has(mets, kFfma) ? json(tot_fp32) : json(nullptr)},
                {"sfu_ops", has(mets, kXu) ? json(tot_sfu) : json(nullptr)}};
  json out = {{"allowed", true},
              {"metrics", mets},
              {"unavailable", c.unavailable},
              {"replay", c.replay},
              {"passes", c.passes},
              {"kernels", kernels},
              {"kernels_omitted", omitted},
              {"total", total}};
  // The PM-sampled call: bytes while it ran (ncu's count, writes the L2 defers past
  // its end left out), beside kernel replay's (which counts them). Per kernel only
  // where the call is one kernel: the samples are not attributed to kernels.
  if (c.sampled) {
    const SampledDram& s = *c.sampled;
    out["total"]["dram_read_bytes_during"] = s.read_bytes;
    out["total"]["dram_write_bytes_during"] = s.write_bytes;
    if (c.kernels.size() == 1) {
      out["kernels"][0]["dram_read_bytes_during"] = s.read_bytes;
      out["kernels"][0]["dram_write_bytes_during"] = s.write_bytes;
    }
    out["sampled"] = {{"samples", s.samples}, {"interval_ns", s.interval_ns}};
  } else if (!c.sampled_why_not.empty()) {
    out["sampled"] = {{"reason", c.sampled_why_not}};
  }
  return out;
}

json counters_not_allowed(const std::string& reason) {
  return {{"allowed", false}, {"reason", reason}};
}

}  // namespace solbench::harness
