// timer_probe: where the time of a short kernel goes, seen by three clocks at once.
//
// For y = 2 x (the ~5 us validation kernel) at several sizes, each iteration is
// measured by solbench's GPU timer (CUPTI, or CUDA events when CUPTI is taken, as
// under ncu), by the timer's CUDA-event cross-check, and, for the "stamped"
// variant, by the kernel itself (%globaltimer at the first block's start and the
// last block's end, after a fence). Run alone and under
//   ncu --clock-control none --cache-control none --kernel-name regex:scale
//       --metrics gpu__time_duration.sum --csv --log-file F timer_probe ...
// it tells whether a profiler's longer duration is time the kernel ran (its own
// stamps grow) or time the profiler's bracketing adds (they do not).
// `--gaps-us` leaves the GPU idle that long before each launch (after the flush),
// for the question whether an idle GPU starts a kernel slower.
//
// Prints a table; `--out F` writes one JSON object per configuration with every
// iteration's numbers (for pairing with ncu's rows, which come in launch order).
#include <CLI/CLI.hpp>
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "core/json.h"
#include "harness/timing/gpu/cuda_check.h"
#include "harness/timing/gpu/gpu_kernels.h"
#include "harness/timing/gpu/gpu_timer_factory.h"

namespace {

using solbench::json;

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

struct Buffers {
  std::vector<float*> x, y;
  ~Buffers() {
    for (float* p : x) cudaFree(p);
    for (float* p : y) cudaFree(p);
  }
};

struct Config {
  int64_t n;
  bool stamped;
  int gap_us;
};

json run_config(const Config& c, int iters, int rotate, const std::string& timer_kind,
                cudaStream_t stream, uint64_t* stamps) {
  Buffers b;
  const size_t bytes = size_t(c.n) * sizeof(float);
  for (int k = 0; k < rotate; ++k) {  // distinct addresses and values per iteration
    float *x = nullptr, *y = nullptr;
    SB_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&x), bytes));
    SB_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&y), bytes));
    b.x.push_back(x);
    b.y.push_back(y);
    SB_CUDA_CHECK(cudaMemsetAsync(x, 0x3f + k, bytes, stream));
  }
  auto timer = solbench::gpu::make_gpu_timer(0, stream, json{{"timer", timer_kind}});
  solbench::gpu::launch_scale(b.x[0], b.y[0], c.n, nullptr, stream);  // warm-up (module load)
  SB_CUDA_CHECK(cudaStreamSynchronize(stream));

  std::vector<double> timer_ms, events_ms, span_us;
  for (int i = 0; i < iters; ++i) {
    const int k = i % rotate;
    if (c.stamped) {  // outside the span: prepare() waits for these
      SB_CUDA_CHECK(cudaMemsetAsync(stamps, 0xff, sizeof(uint64_t), stream));
      SB_CUDA_CHECK(cudaMemsetAsync(stamps + 1, 0, sizeof(uint64_t), stream));
    }
    timer->prepare();
    if (c.gap_us > 0) std::this_thread::sleep_for(std::chrono::microseconds(c.gap_us));
    timer->begin();
    solbench::gpu::launch_scale(b.x[k], b.y[k], c.n, c.stamped ? stamps : nullptr, stream);
    timer->end();
    timer_ms.push_back(timer->elapsed_ms());
    const json d = timer->details();
    if (d.contains("events_ms")) events_ms.push_back(d["events_ms"].get<double>());
    if (c.stamped) {
      uint64_t h[2] = {0, 0};
      SB_CUDA_CHECK(cudaMemcpy(h, stamps, sizeof(h), cudaMemcpyDeviceToHost));
      span_us.push_back(h[1] > h[0] ? double(h[1] - h[0]) / 1e3 : 0.0);
    }
  }
  return json{{"n", c.n},
              {"variant", c.stamped ? "stamped" : "plain"},
              {"gap_us", c.gap_us},
              {"timer", timer->name()},
              {"fallback_reason", timer->details().value("fallback_reason", "")},
              {"median_timer_us", 1e3 * median(timer_ms)},
              {"median_events_us", 1e3 * median(events_ms)},
              {"median_span_us", median(span_us)},
              {"timer_ms", timer_ms},
              {"events_ms", events_ms},
              {"span_us", span_us}};
}

std::vector<int64_t> parse_list(const std::string& text) {
  std::vector<int64_t> v;
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t comma = std::min(text.find(',', pos), text.size());
    if (comma > pos) v.push_back(std::stoll(text.substr(pos, comma - pos)));
    pos = comma + 1;
  }
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"timer_probe: solbench's GPU timer, CUDA events and in-kernel stamps side by side"};
  std::string sizes = "4096,65536,1048576,2097152,4194304,8388608", gaps = "0,1000";
  std::string variants = "plain,stamped", timer_kind = "auto", out_path;
  int iters = 200, rotate = 4;
  app.add_option("--sizes", sizes, "float32 element counts, comma separated");
  app.add_option("--gaps-us", gaps, "idle gaps before the launch, comma separated");
  app.add_option("--variants", variants, "plain, stamped or both");
  app.add_option("--timer", timer_kind, "auto | cupti | events | profiler");
  app.add_option("--iters", iters, "timed iterations per configuration");
  app.add_option("--rotate", rotate, "buffer sets used in turn")->check(CLI::PositiveNumber);
  app.add_option("--out", out_path, "JSON lines with every iteration");
  CLI11_PARSE(app, argc, argv);

  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0 ||
      !solbench::gpu::kernels_available()) {
    fmt::print(stderr, "timer_probe: no CUDA device or no device kernels in this build\n");
    return 77;
  }
  try {
    cudaStream_t stream = nullptr;
    SB_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    uint64_t* stamps = nullptr;
    SB_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&stamps), 2 * sizeof(uint64_t)));
    const uint64_t step = solbench::gpu::global_timer_step_ns(stream);
    fmt::print("globaltimer step: {} ns\n", step);
    std::ofstream out;
    if (!out_path.empty()) out.open(out_path);
    fmt::print("{:>9} {:>8} {:>6} {:>12} {:>10} {:>10} {:>10}\n", "N", "variant", "gap_us", "timer",
               "timer_us", "events_us", "stamps_us");
    for (int64_t n : parse_list(sizes)) {
      for (int64_t gap : parse_list(gaps)) {
        for (bool stamped : {false, true}) {
          if (variants.find(stamped ? "stamped" : "plain") == std::string::npos) continue;
          json r = run_config({n, stamped, int(gap)}, iters, rotate, timer_kind, stream, stamps);
          r["globaltimer_step_ns"] = step;
          fmt::print("{:>9} {:>8} {:>6} {:>12} {:>10.3f} {:>10.3f} {:>10.3f}\n", n,
                     r["variant"].get<std::string>(), gap, r["timer"].get<std::string>(),
                     r["median_timer_us"].get<double>(), r["median_events_us"].get<double>(),
                     r["median_span_us"].get<double>());
          if (out) out << r.dump() << "\n";
        }
      }
    }
    cudaFree(stamps);
    cudaStreamDestroy(stream);
  } catch (const std::exception& e) {
    fmt::print(stderr, "timer_probe: {}\n", e.what());
    return 1;
  }
  return 0;
}
