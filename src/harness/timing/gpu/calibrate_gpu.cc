#include "harness/timing/gpu/calibrate_gpu.h"

#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <vector>

#include "harness/timing/gpu/clocks.h"
#include "harness/timing/gpu/cuda_check.h"
#include "harness/timing/gpu/cuda_event.h"
#include "harness/timing/gpu/cuda_stream.h"
#include "harness/timing/gpu/device.h"
#include "harness/timing/gpu/gpu_kernels.h"
#include "harness/timing/gpu/nvml_library.h"

namespace solbench::gpu {

namespace {

// Device memory owned for one measurement.
class Buffer {
 public:
  explicit Buffer(size_t bytes) { SB_CUDA_CHECK(cudaMalloc(&p_, bytes)); }
  ~Buffer() { (void)cudaFree(p_); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  void* get() const { return p_; }

 private:
  void* p_ = nullptr;
};

struct Timed {
  double median_ms = 0;
  int repeats = 0;
  ClockSample during;
};

// Times `body` (one or more launches on `s`) between two events, repeated for
// about `budget_s` (5 to 500 times) after two warm-up runs; all repeats are queued
// at once, so the GPU runs them back to back, and the clocks are sampled while
// they run. Returns the median.
Timed time_repeated(const std::function<void(cudaStream_t)>& body, cudaStream_t s, double budget_s,
                    int ordinal) {
  CudaEvent a, b;
  body(s);
  a.record(s);
  body(s);
  b.record(s);
  b.synchronize();
  const double estimate_ms = std::max(1e-3, double(CudaEvent::elapsed_ms(a, b)));
  const int reps = std::clamp(int(budget_s * 1e3 / estimate_ms), 5, 500);
  std::vector<CudaEvent> starts(reps), ends(reps);
  for (int r = 0; r < reps; ++r) {
    starts[r].record(s);
    body(s);
    ends[r].record(s);
  }
  Timed t;
  t.repeats = reps;
  t.during = sample_clocks(ordinal);
  ends.back().synchronize();
  std::vector<double> ms(reps);
  for (int r = 0; r < reps; ++r) ms[r] = CudaEvent::elapsed_ms(starts[r], ends[r]);
  std::sort(ms.begin(), ms.end());
  t.median_ms = ms[reps / 2];
  return t;
}

json timed_json(const Timed& t) {
  return {{"median_ms", t.median_ms},
          {"repeats", t.repeats},
          {"sm_mhz", t.during.valid ? json(t.during.sm_mhz) : json(nullptr)},
          {"memory_mhz", t.during.valid ? json(t.during.memory_mhz) : json(nullptr)},
          {"clock_event_reasons", t.during.valid ? json(t.during.reason_names()) : json(nullptr)}};
}

// ---- cuBLASLt, opened at run time ---------------------------------------------

struct CublasLt {
  void* lib = nullptr;
  decltype(&cublasLtCreate) create = nullptr;
  decltype(&cublasLtDestroy) destroy = nullptr;
  decltype(&cublasLtMatmulDescCreate) desc_create = nullptr;
  decltype(&cublasLtMatmulDescDestroy) desc_destroy = nullptr;
  decltype(&cublasLtMatmulDescSetAttribute) desc_set = nullptr;
  decltype(&cublasLtMatrixLayoutCreate) layout_create = nullptr;
  decltype(&cublasLtMatrixLayoutDestroy) layout_destroy = nullptr;
  decltype(&cublasLtMatmulPreferenceCreate) pref_create = nullptr;
  decltype(&cublasLtMatmulPreferenceDestroy) pref_destroy = nullptr;
  decltype(&cublasLtMatmulPreferenceSetAttribute) pref_set = nullptr;
  decltype(&cublasLtMatmulAlgoGetHeuristic) heuristic = nullptr;
  decltype(&cublasLtMatmul) matmul = nullptr;
  std::string error;

  CublasLt() {
    // The toolkit's major version first: the header these types come from.
    const std::string soname = "libcublasLt.so." + std::to_string(CUBLAS_VER_MAJOR);
    // By name (the loader's path), then beside the cudart this process uses (the
    // toolkit's lib64, often not on the loader's path), then the default toolkit.
    std::vector<std::string> names = {soname, "libcublasLt.so"};
    Dl_info where{};
    if (dladdr(reinterpret_cast<void*>(&cudaGetDeviceCount), &where) && where.dli_fname) {
      const std::string cudart = where.dli_fname;
      names.push_back(cudart.substr(0, cudart.rfind('/') + 1) + soname);
    }
    names.push_back("/usr/local/cuda/lib64/" + soname);
    for (const std::string& name : names)
      if ((lib = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL))) break;
    if (!lib) {
      error = "cannot open " + soname + " (" + dlerror() + ")";
      return;
    }
    bool ok = true;
    auto sym = [&](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name));
      if (!fn) ok = false, error += std::string(error.empty() ? "missing " : ", ") + name;
    };
    sym(create, "cublasLtCreate");
    sym(destroy, "cublasLtDestroy");
    sym(desc_create, "cublasLtMatmulDescCreate");
    sym(desc_destroy, "cublasLtMatmulDescDestroy");
    sym(desc_set, "cublasLtMatmulDescSetAttribute");
    sym(layout_create, "cublasLtMatrixLayoutCreate");
    sym(layout_destroy, "cublasLtMatrixLayoutDestroy");
    sym(pref_create, "cublasLtMatmulPreferenceCreate");
    sym(pref_destroy, "cublasLtMatmulPreferenceDestroy");
    sym(pref_set, "cublasLtMatmulPreferenceSetAttribute");
    sym(heuristic, "cublasLtMatmulAlgoGetHeuristic");
    sym(matmul, "cublasLtMatmul");
    if (!ok) lib = nullptr;  // left open: the process ends soon after
  }
  bool ok() const { return lib != nullptr; }
};

void lt_check(cublasStatus_t st, const char* what) {
  if (st != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(std::string(what) + " failed (cublasStatus " + std::to_string(int(st)) + ")");
}

struct GemmType {
  const char* cls;        // model class: bf16, fp16, tf32, fp8
  const char* fill;       // launch_calib_fill type of A and B
  cudaDataType_t ab, cd;  // operand and output types
  size_t ab_size, cd_size;
  cublasComputeType_t compute;
  int min_cc;             // 10 * major + minor
};

// Operands and accumulation as the datasheet's dense rates assume them (FP32
// accumulate); FP8 writes BF16 (an FP8 output needs scales) and runs where the
// chip has FP8 tensor cores (compute capability 8.9 and up).
const GemmType kGemms[] = {
    {"bf16", "bf16", CUDA_R_16BF, CUDA_R_16BF, 2, 2, CUBLAS_COMPUTE_32F, 80},
    {"fp16", "fp16", CUDA_R_16F, CUDA_R_16F, 2, 2, CUBLAS_COMPUTE_32F, 70},
    {"tf32", "fp32", CUDA_R_32F, CUDA_R_32F, 4, 4, CUBLAS_COMPUTE_32F_FAST_TF32, 80},
    {"fp8", "fp8e4m3", CUDA_R_8F_E4M3, CUDA_R_16BF, 1, 2, CUBLAS_COMPUTE_32F, 89},
};

// D = A^T B for n x n matrices (the TN layout FP8 requires), timed; returns TFLOP/s.
double time_gemm(const CublasLt& lt, cublasLtHandle_t handle, const GemmType& g, int64_t n,
                 cudaStream_t s, const GpuCalibrationOptions& opt, int ordinal, json& detail) {
  Buffer a(n * n * g.ab_size), b(n * n * g.ab_size), d(n * n * g.cd_size);
  launch_calib_fill(a.get(), n * n, g.fill, s);
  launch_calib_fill(b.get(), n * n, g.fill, s);
  const size_t workspace_bytes = 64u << 20;
  Buffer workspace(workspace_bytes);

  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, ld = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  auto cleanup = [&] {
    if (pref) lt.pref_destroy(pref);
    if (ld) lt.layout_destroy(ld);
    if (lb) lt.layout_destroy(lb);
    if (la) lt.layout_destroy(la);
    if (desc) lt.desc_destroy(desc);
  };
  try {
    lt_check(lt.desc_create(&desc, g.compute, CUDA_R_32F), "cublasLtMatmulDescCreate");
    const cublasOperation_t trans = CUBLAS_OP_T, no = CUBLAS_OP_N;
    lt_check(lt.desc_set(desc, CUBLASLT_MATMUL_DESC_TRANSA, &trans, sizeof trans), "TRANSA");
    lt_check(lt.desc_set(desc, CUBLASLT_MATMUL_DESC_TRANSB, &no, sizeof no), "TRANSB");
    if (g.ab == CUDA_R_8F_E4M3) {
      // FP8 at the tensor cores' full rate: accumulation without the periodic
      // promotion to FP32 (what the datasheet's FP8 figure assumes).
      const int8_t fast = 1;
      lt_check(lt.desc_set(desc, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast, sizeof fast), "FAST_ACCUM");
    }
    lt_check(lt.layout_create(&la, g.ab, n, n, n), "layout A");
    lt_check(lt.layout_create(&lb, g.ab, n, n, n), "layout B");
    lt_check(lt.layout_create(&ld, g.cd, n, n, n), "layout D");
    lt_check(lt.pref_create(&pref), "cublasLtMatmulPreferenceCreate");
    lt_check(lt.pref_set(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes,
                         sizeof workspace_bytes),
             "workspace preference");
    cublasLtMatmulHeuristicResult_t best{};
    int found = 0;
    lt_check(lt.heuristic(handle, desc, la, lb, ld, ld, pref, 1, &best, &found),
             "cublasLtMatmulAlgoGetHeuristic");
    if (found == 0) throw std::runtime_error("cuBLASLt has no algorithm for this type");
    const float alpha = 1.f, beta = 0.f;
    const Timed t = time_repeated(
        [&](cudaStream_t st) {
          lt_check(lt.matmul(handle, desc, &alpha, a.get(), la, b.get(), lb, &beta, d.get(), ld,
                             d.get(), ld, &best.algo, workspace.get(), workspace_bytes, st),
                   "cublasLtMatmul");
        },
        s, opt.budget_s, ordinal);
    cleanup();
    const double tflops = 2.0 * double(n) * n * n / (t.median_ms * 1e-3) / 1e12;
    detail = timed_json(t);
    detail["n"] = n;
    detail["tflops"] = tflops;
    return tflops;
  } catch (...) {
    cleanup();
    throw;
  }
}

}  // namespace

GpuCeilings measure_gpu_ceilings(int ordinal, const GpuCalibrationOptions& opt) {
  if (!kernels_available())
    throw std::runtime_error("solbench was built without a CUDA compiler: no GPU calibration kernels");
  select_device(ordinal);
  const DeviceInfo info = query_device(ordinal);
  CudaStream stream;
  const cudaStream_t s = stream.get();
  GpuCeilings c;
  c.name = info.name;
  c.uuid = info.uuid;
  c.compute_capability = info.compute_capability();
  c.sm_count = info.sm_count;
  c.sm_clock_max_mhz = info.sm_clock_max_khz / 1e3;
  c.l2_bytes = double(info.l2_bytes);
  c.memory_bytes = double(info.total_memory_bytes);
  c.driver = std::to_string(info.driver_version);  // CUDA driver API version; NVML's below
  if (auto& nvml = detail::NvmlLibrary::get(); nvml.ok() && nvml.SystemGetDriverVersion) {
    char buf[96] = {};
    if (nvml.SystemGetDriverVersion(buf, sizeof buf) == detail::NVML_SUCCESS) c.driver = buf;
  }
  // Watched, never set: the numbers are what this chip reaches at the clocks it
  // chooses, and the trace of clocks says which those were.
  ClockWatch watch(ordinal);
  watch.before();
  const unsigned sms = unsigned(std::max(1, info.sm_count));

  // Warm-up: an idle GPU starts at a low clock; about 0.2 s of FMA work first, so
  // that the first measurement does not include the ramp.
  {
    CudaEvent a, b;
    a.record(s);
    launch_calib_fma(opt.quick ? 64 : 1024, sms * 32, s);
    b.record(s);
    b.synchronize();
    const double ms = std::max(1e-3, double(CudaEvent::elapsed_ms(a, b)));
    const int more = std::clamp(int((opt.quick ? 20 : 200) / ms), 1, 2000);
    for (int i = 0; i < more; ++i) launch_calib_fma(opt.quick ? 64 : 1024, sms * 32, s);
    SB_CUDA_CHECK(cudaStreamSynchronize(s));
  }

  // DRAM: buffers of 16x the L2 (at least 1 GiB; a third of the free memory at
  // most), so neither the copy nor the read is served from the L2.
  {
    size_t bytes = std::max<size_t>(size_t(16) * info.l2_bytes, size_t(1) << 30);
    if (opt.quick) bytes = std::max<size_t>(size_t(4) * info.l2_bytes, size_t(64) << 20);
    bytes = std::min<size_t>(bytes, size_t(info.free_memory_bytes / 3));
    bytes &= ~size_t(63);
    Buffer src(bytes), dst(bytes);
    SB_CUDA_CHECK(cudaMemsetAsync(src.get(), 1, bytes, s));
    const Timed copy = time_repeated([&](cudaStream_t st) { launch_copy(dst.get(), src.get(), bytes, st); },
                                     s, opt.budget_s, ordinal);
    const Timed read = time_repeated(
        [&](cudaStream_t st) { launch_calib_read(src.get(), bytes, sms * 8, st); }, s, opt.budget_s, ordinal);
    const double copy_gbs = 2.0 * double(bytes) / (copy.median_ms * 1e-3) / 1e9;
    const double read_gbs = double(bytes) / (read.median_ms * 1e-3) / 1e9;
    c.dram_gbs = std::max(copy_gbs, read_gbs);
    c.detail["dram"] = {{"buffer_bytes", bytes},
                        {"copy", timed_json(copy)},
                        {"copy_gbs", copy_gbs},
                        {"read", timed_json(read)},
                        {"read_gbs", read_gbs}};
  }

  // FP32 FMA and SFU: 32 blocks of 256 threads per SM (4 waves at full occupancy).
  {
    const unsigned blocks = sms * 32;
    const int fma_iters = opt.quick ? 256 : 4096, sfu_iters = opt.quick ? 64 : 1024;
    const Timed fma = time_repeated([&](cudaStream_t st) { launch_calib_fma(fma_iters, blocks, st); }, s,
                                    opt.budget_s, ordinal);
    const Timed sfu = time_repeated([&](cudaStream_t st) { launch_calib_sfu(sfu_iters, blocks, st); }, s,
                                    opt.budget_s, ordinal);
    const double threads = double(blocks) * 256;
    c.fp32_tflops = threads * 16.0 * fma_iters / (fma.median_ms * 1e-3) / 1e12;
    c.sfu_tops = threads * 8.0 * sfu_iters / (sfu.median_ms * 1e-3) / 1e12;
    c.detail["fp32_fma"] = timed_json(fma);
    c.detail["sfu_rsqrt"] = timed_json(sfu);
  }

  // Tensor cores through cuBLASLt.
  CublasLt lt;
  if (!lt.ok()) {
    c.detail["gemm_skipped"] = lt.error;
  } else {
    cublasLtHandle_t handle = nullptr;
    if (const cublasStatus_t st = lt.create(&handle); st != CUBLAS_STATUS_SUCCESS) {
      c.detail["gemm_skipped"] = "cublasLtCreate failed (cublasStatus " + std::to_string(int(st)) + ")";
      handle = nullptr;
    }
    const int cc = info.cc_major * 10 + info.cc_minor;
    const int64_t n = opt.quick ? 2048 : 8192;
    for (const GemmType& g : kGemms) {
      if (!handle) break;
      if (cc < g.min_cc) {
        c.detail["gemm"][g.cls] = {{"skipped", "compute capability " + info.compute_capability() +
                                                   " has no " + g.cls + " tensor cores"}};
        continue;
      }
      json d;
      try {
        c.tensor_tflops[g.cls] = time_gemm(lt, handle, g, n, s, opt, ordinal, d);
      } catch (const std::exception& e) {
        d = {{"skipped", e.what()}};
      }
      c.detail["gemm"][g.cls] = d;
    }
    if (handle) lt.destroy(handle);
  }

  // Launch floor: an empty kernel between two events, GPU time (last: the clocks
  // are up by now).
  {
    const Timed t = time_repeated([](cudaStream_t st) { launch_calib_empty(st); }, s,
                                  opt.quick ? 0.02 : 0.1, ordinal);
    c.launch_us = t.median_ms * 1e3;
    c.detail["launch"] = timed_json(t);
  }
  SB_CUDA_CHECK(cudaStreamSynchronize(s));
  watch.after();
  c.clocks = watch.to_json();
  return c;
}

}  // namespace solbench::gpu
