#include "sol/calibrate_cpu.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <ctime>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace solbench::sol {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// "model name" / "cpu MHz" of /proc/cpuinfo ("" when absent).
std::string cpuinfo(const char* key) {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(key, 0) != 0) continue;
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string v = line.substr(colon + 1);
    v.erase(0, v.find_first_not_of(" \t"));
    return v;
  }
  return "";
}

double cache_bytes() {
  for (int name : {_SC_LEVEL3_CACHE_SIZE, _SC_LEVEL2_CACHE_SIZE}) {
    const long v = sysconf(name);
    if (v > 0) return double(v);
  }
  return 32.0 * 1024 * 1024;  // unknown: assume a large LLC so the arrays stay far above it
}

// Runs body(t) on `threads` threads at once and returns the wall time.
template <typename F>
double parallel_seconds(int threads, F body) {
  std::vector<std::thread> pool;
  const auto t0 = Clock::now();
  for (int t = 0; t < threads; ++t) pool.emplace_back(body, t);
  for (auto& th : pool) th.join();
  return seconds_since(t0);
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace

MeasuredCeilings measure_cpu_ceilings(const CpuCalibrationOptions& opt) {
  const int threads = opt.threads > 0 ? opt.threads : std::max(1u, std::thread::hardware_concurrency());
  MeasuredCeilings c;
  c.kind = "cpu";
  c.key = local_host_name();
  c.display_name = cpuinfo("model name");
  if (c.display_name.empty()) c.display_name = "CPU";
  utsname u{};
  c.architecture = uname(&u) == 0 ? u.machine : "cpu";
  c.units = threads;
  const std::string mhz = cpuinfo("cpu MHz");
  c.clock_mhz = mhz.empty() ? 1000 : std::max(1.0, std::atof(mhz.c_str()));
  c.l2_mb = cache_bytes() / (1024.0 * 1024.0);
  const double phys = double(sysconf(_SC_PHYS_PAGES)) * double(sysconf(_SC_PAGESIZE));
  c.memory_gb = phys > 0 ? phys / 1e9 : 1;

  // Memory: three arrays of doubles, each 4x the last-level cache (at least
  // 256 MiB), at most a sixteenth of the memory each; quick: 16 MiB.
  double array_bytes = opt.quick ? 16.0 * (1 << 20) : std::max(4 * cache_bytes(), 256.0 * (1 << 20));
  if (phys > 0) array_bytes = std::min(array_bytes, phys / 16);
  const size_t n = size_t(array_bytes / sizeof(double)) / threads * threads;
  const size_t per = n / threads;
  std::unique_ptr<double[]> a(new double[n]), b(new double[n]), cc(new double[n]);
  // First touch by the thread that later streams the slice (NUMA placement).
  parallel_seconds(threads, [&](int t) {
    for (size_t i = t * per; i < (t + 1) * per; ++i) a[i] = 0, b[i] = 1.0, cc[i] = 2.0;
  });
  const int reps = opt.quick ? 3 : 7;
  std::vector<double> triad, copy;
  for (int r = 0; r < reps; ++r) {
    const double s = 3.0 + r;
    // STREAM convention: bytes read and written, no write-allocate traffic.
    triad.push_back(3 * n * sizeof(double) / parallel_seconds(threads, [&](int t) {
      double* __restrict pa = a.get() + t * per;
      const double* __restrict pb = b.get() + t * per;
      const double* __restrict pc = cc.get() + t * per;
      for (size_t i = 0; i < per; ++i) pa[i] = pb[i] + s * pc[i];
    }));
    copy.push_back(2 * n * sizeof(double) / parallel_seconds(threads, [&](int t) {
      std::memcpy(cc.get() + t * per, b.get() + t * per, per * sizeof(double));
    }));
  }
  const double triad_gbs = median(triad) / 1e9, copy_gbs = median(copy) / 1e9;
  c.dram_gbs = std::max(triad_gbs, copy_gbs);

  // FMA: every thread runs the loop; FLOPs over the wall time of the slowest.
  const long iters = opt.quick ? 1'000'000 : 20'000'000;
  const char* isa = "generic";
  auto fma_rate = [&](bool fp64) {
    std::vector<double> rates;
    for (int r = 0; r < (opt.quick ? 2 : 3); ++r) {
      std::vector<double> flops(threads);
      const double sec = parallel_seconds(threads, [&](int t) {
        const char* used = nullptr;
        flops[t] = fp64 ? fma_loop_fp64(iters, &used) : fma_loop_fp32(iters, &used);
        if (t == 0) isa = used;
      });
      double total = 0;
      for (double f : flops) total += f;
      rates.push_back(total / sec);
    }
    return median(rates) / 1e12;
  };
  const double fp32 = fma_rate(false), fp64 = fma_rate(true);
  c.cuda_core_tflops = {{"fp32", fp32}, {"fp64", fp64}};
  // No tensor cores: matrix products run on the same FMA pipes, and a CPU's half
  // types are not faster than fp32 on them (no AMX path is measured).
  c.tensor_tflops = {{"fp16", fp32}, {"bf16", fp32}, {"tf32", fp32}, {"fp64", fp64}};
  // No SFU: a transcendental is counted at one FP32 FLOP, the optimistic side (a
  // vectorised exp takes ~10-20 FMA-pipe operations).
  c.sfu_tops = fp32;
  c.provenance = {{"date", utc_now()},
                  {"device", "cpu"},
                  {"host", c.key},
                  {"cpu", c.display_name},
                  {"threads", threads},
                  {"isa", isa},
                  {"quick", opt.quick},
                  {"memory", {{"array_bytes", n / threads * threads * sizeof(double)},
                              {"triad_gbs", triad_gbs},
                              {"copy_gbs", copy_gbs},
                              {"repeats", reps}}},
                  {"fma", {{"fp32_tflops", fp32}, {"fp64_tflops", fp64}, {"iterations", iters}}}};
  return c;
}

}  // namespace solbench::sol
