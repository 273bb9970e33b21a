// Building solutions: g++ for CPU code, nvcc for CUDA (when the toolkit is here),
// compile errors with the compiler's message, timeouts, the build cache, refused
// inputs, parallel compiles, dependencies, and the torch binding (its flags and
// precompiled header with a recording stand-in for g++; real builds opt-in: slow).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>

#include "harness/build/build.h"
#include "harness/eval_plan.h"
#include "harness/worker/native_library.h"
#include "harness/process.h"
#include "test_util.h"
#include "harness/staging.h"

namespace solbench::harness {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

constexpr const char* kVecAdd = R"(
#include <solbench/kernel.h>
SB_EXPORT int vec_add(const sb_tensor* in, int32_t n_in, sb_tensor* out, int32_t n_out, void*) {
  if (n_in != 2 || n_out != 1) return 1;
  const float* a = static_cast<const float*>(in[0].data);
  const float* b = static_cast<const float*>(in[1].data);
  float* c = static_cast<float*>(out[0].data);
  for (int64_t i = 0; i < sb_numel(&out[0]); ++i) c[i] = a[i] + b[i] * SCALE;
  return 0;
}
)";

Solution cpu_solution(const std::string& code, std::vector<std::string> cflags = {"-DSCALE=1"}) {
  Solution s;
  s.name = "vec_add_cpu";
  s.definition = "vec_add";
  s.spec.languages = {Language::Cpp};
  s.spec.target_hardware = {"cpu"};
  s.spec.entry_point = "kernel.cc::vec_add";
  s.spec.entry_file = "kernel.cc";
  s.spec.entry_function = "vec_add";
  s.spec.binding = Binding::Native;
  s.spec.compile_options.cflags = std::move(cflags);
  s.sources = {{"kernel.cc", code}};
  return s;
}

class BuildTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = StagingDir::create(default_staging_base(), "buildtest-");
    opts_.cache_dir = root_.path() / "cache";
    opts_.staging_base = root_.path() / "staging";
    opts_.timeout = 120s;
  }
  StagingDir root_;
  BuildOptions opts_;
};

TEST_F(BuildTest, CompilesLoadsAndRunsACpuKernel) {
  BuildResult r = build_solution(cpu_solution(kVecAdd, {"-DSCALE=10"}), opts_);
  ASSERT_TRUE(r.ok()) << build_status_name(r.status) << "\n" << r.log;
  EXPECT_FALSE(r.cache_hit);
  EXPECT_TRUE(fs::is_regular_file(r.so_path));
  EXPECT_EQ(r.so_path.filename(), "lib.so");
  EXPECT_EQ(r.entry_symbol, "vec_add");
  EXPECT_EQ(r.cache_key.size(), 64u);
  EXPECT_TRUE(r.abi_symbol);
  EXPECT_FALSE(has_denied(r.import_violations)) << to_json(r.import_violations).dump();
  EXPECT_NE(r.compiler_version.find("g++"), std::string::npos) << r.compiler_version;
  EXPECT_NE(r.log.find("-shared"), std::string::npos) << r.log;
  EXPECT_NE(r.log.find("-DSCALE=10"), std::string::npos) << r.log;
  EXPECT_EQ(r.log.find("-lcuda"), std::string::npos) << "CPU builds drop the public -lcuda default";

  NativeLibrary lib = NativeLibrary::open(r.so_path, r.entry_symbol);
  float a[4] = {1, 2, 3, 4}, b[4] = {1, 1, 1, 1}, c[4] = {};
  int64_t shape[1] = {4}, strides[1] = {1};
  sb_tensor in[2] = {{a, SB_DTYPE_F32, 1, shape, strides, SB_DEVICE_CPU},
                     {b, SB_DTYPE_F32, 1, shape, strides, SB_DEVICE_CPU}};
  sb_tensor out{c, SB_DTYPE_F32, 1, shape, strides, SB_DEVICE_CPU};
  ASSERT_EQ(lib.entry()(in, 2, &out, 1, nullptr), 0);
  EXPECT_EQ(c[0], 11.0f);
  EXPECT_EQ(c[3], 14.0f);

  const json j = r.to_json();
  EXPECT_EQ(j.at("status"), "ok");
  EXPECT_EQ(j.at("cache_hit"), false);
}

TEST_F(BuildTest, SecondBuildHitsTheCacheAndAFlagChangeMisses) {
  BuildResult first = build_solution(cpu_solution(kVecAdd), opts_);
  ASSERT_TRUE(first.ok()) << first.log;
  BuildResult second = build_solution(cpu_solution(kVecAdd), opts_);
  ASSERT_TRUE(second.ok()) << second.log;
  EXPECT_TRUE(second.cache_hit);
  EXPECT_EQ(second.cache_key, first.cache_key);
  EXPECT_EQ(second.so_path, first.so_path);
  EXPECT_NE(second.log.find("cache hit"), std::string::npos) << second.log;
  EXPECT_EQ(second.log.find("$ "), std::string::npos) << "no compiler ran:\n" << second.log;
  EXPECT_LT(second.seconds, first.seconds);
  std::cerr << "cold build " << first.seconds * 1e3 << " ms, cache hit " << second.seconds * 1e3
            << " ms\n";
  EXPECT_TRUE(second.abi_symbol);

  BuildResult flag = build_solution(cpu_solution(kVecAdd, {"-DSCALE=1", "-O2"}), opts_);
  ASSERT_TRUE(flag.ok()) << flag.log;
  EXPECT_FALSE(flag.cache_hit);
  EXPECT_NE(flag.cache_key, first.cache_key);

  Solution renamed = cpu_solution(kVecAdd);
  renamed.sources[0].content += "\n// a comment changes the content\n";
  EXPECT_NE(build_solution(renamed, opts_).cache_key, first.cache_key);

  BuildOptions off = opts_;
  off.use_cache = false;
  BuildResult uncached = build_solution(cpu_solution(kVecAdd), off);
  ASSERT_TRUE(uncached.ok()) << uncached.log;
  EXPECT_FALSE(uncached.cache_hit);
  EXPECT_EQ(uncached.so_path.parent_path(), uncached.build_dir);
  EXPECT_EQ(uncached.build_dir.parent_path(), opts_.staging_base);
}

TEST_F(BuildTest, CompileErrorCarriesTheCompilerMessage) {
  BuildResult r = build_solution(cpu_solution("int broken( { return undefined_thing; }"), opts_);
  EXPECT_EQ(r.status, BuildStatus::CompileError);
  EXPECT_NE(r.log.find("kernel.cc"), std::string::npos) << r.log;
  EXPECT_NE(r.log.find("error"), std::string::npos) << r.log;
  EXPECT_NE(r.log.find("compiling kernel.cc failed"), std::string::npos) << r.log;
  // Nothing was published, and the temporary build folder is gone.
  EXPECT_FALSE(fs::exists(opts_.cache_dir / r.cache_key));
  int leftovers = 0;
  if (fs::exists(opts_.cache_dir / ".tmp"))
    for ([[maybe_unused]] auto& e : fs::directory_iterator(opts_.cache_dir / ".tmp")) ++leftovers;
  EXPECT_EQ(leftovers, 0);
}

TEST_F(BuildTest, KeepStagingKeepsAFailedBuild) {
  opts_.keep_staging = true;
  BuildResult r = build_solution(cpu_solution("this is not C++"), opts_);
  EXPECT_EQ(r.status, BuildStatus::CompileError);
  ASSERT_FALSE(r.build_dir.empty()) << r.log;
  EXPECT_TRUE(fs::exists(r.build_dir / "src" / "kernel.cc"));
}

TEST_F(BuildTest, EntryWithoutCLinkageIsReported) {
  BuildResult r = build_solution(cpu_solution(R"(
#include <solbench/kernel.h>
int vec_add(const sb_tensor*, int32_t, sb_tensor*, int32_t, void*) { return 0; }
)"),
                                 opts_);
  EXPECT_EQ(r.status, BuildStatus::CompileError);
  EXPECT_NE(r.log.find("does not export 'vec_add'"), std::string::npos) << r.log;
}

TEST_F(BuildTest, CompileTimeoutKillsTheCompilerGroup) {
  // A "compiler" that answers --version, then hangs with a child of its own.
  const fs::path fake = root_.path() / "slow-cxx";
  const fs::path pidfile = root_.path() / "slow.pid";
  {
    std::ofstream f(fake);
    f << "#!/bin/sh\n"
         "if [ \"$1\" = --version ]; then echo 'slow-cxx 1.0'; exit 0; fi\n"
         "sleep 1000 &\necho $! > " << pidfile.string() << "\nwait\n";
  }
  fs::permissions(fake, fs::perms::owner_all);
  opts_.cxx = fake.string();
  opts_.timeout = 1s;
  const auto start = Clock::now();
  BuildResult r = build_solution(cpu_solution(kVecAdd), opts_);
  const auto took = Clock::now() - start;
  EXPECT_EQ(r.status, BuildStatus::Timeout) << r.log;
  EXPECT_NE(r.log.find("timed out"), std::string::npos) << r.log;
  EXPECT_LT(took, 8s);
  pid_t bg = 0;
  std::ifstream(pidfile) >> bg;
  ASSERT_GT(bg, 0);
  bool gone = false;
  for (int i = 0; i < 200 && !gone; ++i) {
    gone = ::kill(bg, 0) != 0;
    if (!gone) {
      std::ifstream st("/proc/" + std::to_string(bg) + "/stat");
      std::string line;
      std::getline(st, line);
      gone = line.find(") Z") != std::string::npos;
    }
    if (!gone) std::this_thread::sleep_for(10ms);
  }
  EXPECT_TRUE(gone) << "the compiler's child " << bg << " survived the timeout";
}

TEST_F(BuildTest, UnsafeInputsAreRejectedBeforeAnythingRuns) {
  Solution escape = cpu_solution(kVecAdd);
  escape.sources.push_back({"../evil.cc", "int x;"});
  BuildResult r = build_solution(escape, opts_);
  EXPECT_EQ(r.status, BuildStatus::Rejected);
  EXPECT_NE(r.log.find("../evil.cc"), std::string::npos) << r.log;
  EXPECT_EQ(r.log.find("$ "), std::string::npos) << "nothing may run: " << r.log;

  Solution abs = cpu_solution(kVecAdd);
  abs.sources[0].path = "/tmp/kernel.cc";
  EXPECT_EQ(build_solution(abs, opts_).status, BuildStatus::Rejected);

  BuildResult plugin = build_solution(cpu_solution(kVecAdd, {"-fplugin=/tmp/evil.so"}), opts_);
  EXPECT_EQ(plugin.status, BuildStatus::Rejected);
  EXPECT_NE(plugin.log.find("spec.compile_options.cflags"), std::string::npos) << plugin.log;

  Solution ld = cpu_solution(kVecAdd);
  ld.spec.compile_options.ld_flags = {"-Wl,-Map=/tmp/map.txt"};
  EXPECT_EQ(build_solution(ld, opts_).status, BuildStatus::Rejected);
}

TEST_F(BuildTest, PythonFamilyAndMissingEntryFile) {
  Solution py = cpu_solution("");
  py.spec.languages = {Language::Pytorch};
  py.sources = {{"main.py", "def run(x): return x"}};
  EXPECT_EQ(build_solution(py, opts_).status, BuildStatus::Unsupported);

  Solution cu_on_cpu = cpu_solution(kVecAdd);
  cu_on_cpu.sources.push_back({"k.cu", "__global__ void k() {}"});
  BuildResult r = build_solution(cu_on_cpu, opts_);
  EXPECT_EQ(r.status, BuildStatus::CompileError);
  EXPECT_NE(r.log.find("host code only"), std::string::npos) << r.log;

  Solution wrong_entry = cpu_solution(kVecAdd);
  wrong_entry.spec.entry_file = "other.cc";
  EXPECT_EQ(build_solution(wrong_entry, opts_).status, BuildStatus::CompileError);
}

TEST(BuildFlags, UnsafeFlagTable) {
  for (const char* bad : {"-fplugin=x.so", "-B/tmp/bin", "-wrapper", "-specs=x", "@opts.txt", "-o",
                          "-o/tmp/x", "-MF/tmp/d", "-Wl,-Map=/tmp/m", "-Wl,--plugin,x.so",
                          "-Wl,-o,/tmp/x", "-fuse-ld=/tmp/ld", "-Xlinker", "-dumpdir", "-fdump-tree-all"})
    EXPECT_TRUE(unsafe_flag_reason(bad, false).has_value()) << bad;
  for (const char* ok : {"-O2", "-O3", "-march=native", "-DX=1", "-I/usr/include/foo", "-std=c++20",
                         "-fopenmp", "-ffast-math", "-Wl,--as-needed", "-lm", "-fuse-ld=gold", "-g"})
    EXPECT_FALSE(unsafe_flag_reason(ok, false).has_value()) << ok;
  for (const char* bad : {"-ccbin", "--compiler-bindir=/tmp", "-odir", "-optf", "--options-file",
                          "-Xcompiler=-fplugin=x.so", "-Xlinker", "--run"})
    EXPECT_TRUE(unsafe_flag_reason(bad, true).has_value()) << bad;
  for (const char* ok : {"-O3", "--use_fast_math", "-lineinfo", "-Xcompiler=-O3,-fopenmp",
                         "--expt-relaxed-constexpr", "-rdc=true", "-Xptxas=-v"})
    EXPECT_FALSE(unsafe_flag_reason(ok, true).has_value()) << ok;
}

TEST(BuildFlags, Gencode) {
  EXPECT_EQ(gencode_flags("90a"), (std::vector<std::string>{"-gencode", "arch=compute_90a,code=sm_90a"}));
  EXPECT_EQ(gencode_flags("80"), (std::vector<std::string>{"-gencode", "arch=compute_80,code=sm_80"}));
  EXPECT_EQ(gencode_flags("100a").at(1), "arch=compute_100a,code=sm_100a");
  EXPECT_TRUE(gencode_flags("").empty());
  EXPECT_TRUE(gencode_flags("sm_90").empty());
  EXPECT_TRUE(gencode_flags("9").empty());
  EXPECT_TRUE(gencode_flags("90x").empty());
  EXPECT_EQ(build_status_name(BuildStatus::Timeout), "timeout");
}

constexpr const char* kCudaKernel = R"(
#include <solbench/kernel.h>
#include <cuda_runtime.h>
__global__ void add_one(float* x, int64_t n) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n) x[i] += 1.0f;
}
SB_EXPORT int add_one_entry(const sb_tensor* in, int32_t, sb_tensor* out, int32_t, void* stream) {
  int64_t n = sb_numel(&out[0]);
  add_one<<<(n + 255) / 256, 256, 0, (cudaStream_t)stream>>>((float*)out[0].data, n);
  (void)in;
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
)";

TEST_F(BuildTest, CudaKernelBuildsWithoutAGpu) {
  if (!find_program("/usr/local/cuda/bin/nvcc") && !find_program("nvcc"))
    GTEST_SKIP() << "no CUDA toolkit";
  Solution s;
  s.name = "add_one_cuda";
  s.spec.languages = {Language::CudaCpp};
  s.spec.target_hardware = {"H100"};
  s.spec.entry_point = "k.cu::add_one_entry";
  s.spec.entry_file = "k.cu";
  s.spec.entry_function = "add_one_entry";
  s.spec.binding = Binding::Native;
  s.sources = {{"k.cu", kCudaKernel}};
  opts_.cuda_arch = "90a";
  BuildResult r = build_solution(s, opts_);
  ASSERT_TRUE(r.ok()) << build_status_name(r.status) << "\n" << r.log;
  EXPECT_NE(r.log.find("arch=compute_90a,code=sm_90a"), std::string::npos);
  EXPECT_NE(r.log.find("-lcudart"), std::string::npos);
  EXPECT_NE(r.compiler_version.find("nvcc"), std::string::npos) << r.compiler_version;
  auto syms = read_elf_symbols(r.so_path);
  EXPECT_NE(std::find(syms.exported.begin(), syms.exported.end(), "add_one_entry"), syms.exported.end());
  EXPECT_NE(std::find_if(syms.needed.begin(), syms.needed.end(),
                         [](const std::string& n) { return n.rfind("libcudart.so", 0) == 0; }),
            syms.needed.end());
  // Another arch is another artifact.
  opts_.cuda_arch = "80";
  BuildResult other = build_solution(s, opts_);
  ASSERT_TRUE(other.ok()) << other.log;
  EXPECT_NE(other.cache_key, r.cache_key);
}

// The interpreter whose torch the builds use ($SOLBENCH_PYTHON on the device).
std::string test_python() {
  const char* e = std::getenv("SOLBENCH_PYTHON");
  return e && *e ? e : "/usr/bin/python3";
}

// The public format's torch binding. Slow (torch headers), so opt-in here; the
// GPU validation runs it on the device.
TEST_F(BuildTest, TorchBindingBuildsAnImportableModule) {
  if (!std::getenv("SOLBENCH_TEST_TORCH_BUILD"))
    GTEST_SKIP() << "set SOLBENCH_TEST_TORCH_BUILD=1 (takes a minute: torch headers)";
  Solution s;
  s.name = "torch_double";
  s.spec.languages = {Language::CudaCpp};
  s.spec.entry_point = "ext.cpp::double_it";
  s.spec.entry_file = "ext.cpp";
  s.spec.entry_function = "double_it";
  s.spec.binding = Binding::Torch;
  s.spec.compile_options.ld_flags = {};
  opts_.timeout = 600s;  // torch's headers take minutes on a loaded 2-core machine
  s.sources = {{"ext.cpp", R"(
#include <torch/extension.h>
void double_it(torch::Tensor x, torch::Tensor out) { out.copy_(x * 2); }
PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("double_it", &double_it); }
)"}};
  BuildResult r = build_solution(s, opts_);
  ASSERT_TRUE(r.ok()) << build_status_name(r.status) << "\n" << r.log;
  EXPECT_EQ(r.so_path.filename(), r.module_name + ".so");
  std::cerr << "torch binding build: " << r.seconds << " s\n";
  // Import it in the interpreter the build used and call it.
  const std::string py = std::string("import importlib.util as u, torch\n") +
                         "s = u.spec_from_file_location('" + r.module_name + "', '" +
                         r.so_path.string() + "')\nm = u.module_from_spec(s); s.loader.exec_module(m)\n" +
                         "x = torch.arange(4.0); o = torch.empty(4); m.double_it(x, o); print(o.tolist())\n";
  auto run = run_command({test_python(), "-c", py}, with_timeout(120s));
  EXPECT_TRUE(run.ok()) << run.output;
  EXPECT_NE(run.output.find("[0.0, 2.0, 4.0, 6.0]"), std::string::npos) << run.output;
  BuildResult again = build_solution(s, opts_);
  EXPECT_TRUE(again.cache_hit) << again.log;
}

}  // namespace
}  // namespace solbench::harness

namespace solbench::harness {
namespace {

// The examples in docs/native-binding.md must build (and the CPU one must be right).
std::string doc_block(const std::string& marker) {
  const std::string doc = read_text_file(fs::path(SOLBENCH_SOURCE_DIR) / "docs" / "native-binding.md");
  size_t pos = 0;
  while ((pos = doc.find("```cpp\n", pos)) != std::string::npos) {
    const size_t start = pos + 7;
    const size_t end = doc.find("```", start);
    std::string block = doc.substr(start, end - start);
    if (block.find(marker) != std::string::npos) return block;
    pos = end + 3;
  }
  return {};
}

float bf16_value(uint16_t h) {
  uint32_t bits = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

TEST_F(BuildTest, DocumentedCpuExampleBuildsAndComputesRmsNorm) {
  const std::string code = doc_block("SB_EXPORT int rmsnorm(");
  ASSERT_FALSE(code.empty()) << "CPU example missing from docs/native-binding.md";
  Solution s = cpu_solution(code, {"-O3"});
  s.spec.entry_point = "rmsnorm.cc::rmsnorm";
  s.spec.entry_file = "rmsnorm.cc";
  s.spec.entry_function = "rmsnorm";
  s.sources = {{"rmsnorm.cc", code}};
  BuildResult r = build_solution(s, opts_);
  ASSERT_TRUE(r.ok()) << r.log;
  NativeLibrary lib = NativeLibrary::open(r.so_path, "rmsnorm");

  const int64_t rows = 3, hidden = 4096;
  std::vector<uint16_t> x(rows * hidden), w(hidden), y(rows * hidden, 0x7fc0);  // NaN poison
  uint32_t state = 12345;
  auto next = [&] {  // bf16 values in [-2, 2)
    state = state * 1664525u + 1013904223u;
    float f = (float(state >> 8) / float(1 << 24)) * 4.0f - 2.0f;
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    return uint16_t(bits >> 16);
  };
  for (auto& v : x) v = next();
  for (auto& v : w) v = next();
  int64_t xs[2] = {rows, hidden}, xst[2] = {hidden, 1}, ws[1] = {hidden}, wst[1] = {1};
  sb_tensor in[2] = {{x.data(), SB_DTYPE_BF16, 2, xs, xst, SB_DEVICE_CPU},
                     {w.data(), SB_DTYPE_BF16, 1, ws, wst, SB_DEVICE_CPU}};
  sb_tensor out{y.data(), SB_DTYPE_BF16, 2, xs, xst, SB_DEVICE_CPU};
  ASSERT_EQ(lib.entry()(in, 2, &out, 1, nullptr), 0);
  double worst = 0;
  for (int64_t row = 0; row < rows; ++row) {
    double ss = 0;
    for (int64_t i = 0; i < hidden; ++i) ss += double(bf16_value(x[row * hidden + i])) * bf16_value(x[row * hidden + i]);
    const double inv = 1.0 / std::sqrt(ss / hidden + 1e-5);
    for (int64_t i = 0; i < hidden; ++i) {
      const double want = bf16_value(x[row * hidden + i]) * inv * bf16_value(w[i]);
      const double got = bf16_value(y[row * hidden + i]);
      ASSERT_FALSE(std::isnan(got)) << "output element " << i << " left unwritten";
      worst = std::max(worst, std::abs(got - want) / (std::abs(want) + 1e-2));
    }
  }
  EXPECT_LT(worst, 1e-2);  // bf16 has 8 bits of mantissa
  // Wrong arity is an error code, not a crash.
  EXPECT_NE(lib.entry()(in, 1, &out, 1, nullptr), 0);
}

TEST_F(BuildTest, DocumentedCudaExampleBuilds) {
  if (!find_program("/usr/local/cuda/bin/nvcc") && !find_program("nvcc"))
    GTEST_SKIP() << "no CUDA toolkit";
  const std::string code = doc_block("swiglu_kernel");
  ASSERT_FALSE(code.empty()) << "CUDA example missing from docs/native-binding.md";
  Solution s;
  s.name = "doc_swiglu";
  s.spec.languages = {Language::CudaCpp};
  s.spec.target_hardware = {"cuda"};
  s.spec.entry_point = "swiglu.cu::swiglu";
  s.spec.entry_file = "swiglu.cu";
  s.spec.entry_function = "swiglu";
  s.spec.binding = Binding::Native;
  s.spec.compile_options.ld_flags = {};
  s.sources = {{"swiglu.cu", code}};
  opts_.cuda_arch = "90a";
  BuildResult r = build_solution(s, opts_);
  EXPECT_TRUE(r.ok()) << r.log;
}

}  // namespace
}  // namespace solbench::harness

namespace solbench::harness {
namespace {

// GPU runs (the device machine): a native CUDA kernel called through the C ABI
// from Python (ctypes) on torch CUDA tensors, and a torch-binding extension with a
// .cu source. Skipped where torch has no CUDA device.
constexpr const char* kCtypesCall = R"PY(
import ctypes, sys, torch
if not torch.cuda.is_available():
    print("NO-CUDA"); sys.exit(0)
class T(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("dtype", ctypes.c_int32), ("ndim", ctypes.c_int32),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("device", ctypes.c_int32)]
keep = []
def view(t):
    shape = (ctypes.c_int64 * t.dim())(*t.shape); strides = (ctypes.c_int64 * t.dim())(*t.stride())
    keep.extend([shape, strides])
    return T(t.data_ptr(), 1, t.dim(), shape, strides, t.device.index)
lib = ctypes.CDLL(sys.argv[1])
x = torch.arange(1 << 20, device="cuda", dtype=torch.float32)
out = x.clone()
ins = (T * 1)(view(x)); outs = (T * 1)(view(out))
rc = lib.add_one_entry(ins, 1, outs, 1, ctypes.c_void_p(torch.cuda.current_stream().cuda_stream))
torch.cuda.synchronize()
print("rc", rc, "ok", bool(torch.equal(out, x + 1)))
)PY";

TEST_F(BuildTest, GpuNativeCudaKernelRunsThroughTheAbi) {
  if (!std::getenv("SOLBENCH_TEST_GPU")) GTEST_SKIP() << "set SOLBENCH_TEST_GPU=1 on a GPU machine";
  Solution s;
  s.name = "add_one_cuda";
  s.spec.languages = {Language::CudaCpp};
  s.spec.target_hardware = {"cuda"};
  s.spec.entry_point = "k.cu::add_one_entry";
  s.spec.entry_file = "k.cu";
  s.spec.entry_function = "add_one_entry";
  s.spec.binding = Binding::Native;
  s.sources = {{"k.cu", kCudaKernel}};
  opts_.cuda_arch = std::getenv("SOLBENCH_TEST_CUDA_ARCH") ? std::getenv("SOLBENCH_TEST_CUDA_ARCH") : "90a";
  BuildResult r = build_solution(s, opts_);
  ASSERT_TRUE(r.ok()) << r.log;
  std::cerr << "native CUDA build: " << r.seconds << " s\n";
  auto run = run_command({test_python(), "-c", kCtypesCall, r.so_path.string()}, with_timeout(300s));
  ASSERT_TRUE(run.ok()) << run.output;
  if (run.output.find("NO-CUDA") != std::string::npos) GTEST_SKIP() << "torch sees no CUDA device";
  EXPECT_NE(run.output.find("rc 0 ok True"), std::string::npos) << run.output;
}

TEST_F(BuildTest, GpuTorchBindingWithACudaSource) {
  if (!std::getenv("SOLBENCH_TEST_GPU")) GTEST_SKIP() << "set SOLBENCH_TEST_GPU=1 on a GPU machine";
  Solution s;
  s.name = "torch_cuda_scale";
  s.spec.languages = {Language::CudaCpp};
  s.spec.entry_point = "ext.cpp::scale";
  s.spec.entry_file = "ext.cpp";
  s.spec.entry_function = "scale";
  s.spec.binding = Binding::Torch;
  s.sources = {{"ext.cpp", R"(
#include <torch/extension.h>
void launch_scale(const float* x, float* y, int64_t n, float a);
void scale(torch::Tensor x, torch::Tensor y) {
  launch_scale(x.data_ptr<float>(), y.data_ptr<float>(), x.numel(), 3.0f);
}
PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("scale", &scale); }
)"},
               {"k.cu", R"(
#include <cstdint>
#include <ATen/cuda/CUDAContext.h>
__global__ void scale_kernel(const float* x, float* y, int64_t n, float a) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i];
}
void launch_scale(const float* x, float* y, int64_t n, float a) {
  scale_kernel<<<(n + 255) / 256, 256, 0, at::cuda::getCurrentCUDAStream()>>>(x, y, n, a);
}
)"}};
  opts_.cuda_arch = std::getenv("SOLBENCH_TEST_CUDA_ARCH") ? std::getenv("SOLBENCH_TEST_CUDA_ARCH") : "90a";
  opts_.timeout = 600s;
  BuildResult r = build_solution(s, opts_);
  ASSERT_TRUE(r.ok()) << build_status_name(r.status) << "\n" << r.log;
  std::cerr << "torch binding (CUDA) build: " << r.seconds << " s\n";
  const std::string py = std::string("import importlib.util as u, torch\n") +
                         "s = u.spec_from_file_location('" + r.module_name + "', '" +
                         r.so_path.string() + "')\nm = u.module_from_spec(s); s.loader.exec_module(m)\n" +
                         "x = torch.arange(1000.0, device='cuda'); y = torch.empty_like(x)\n"
                         "m.scale(x, y); torch.cuda.synchronize(); print('ok', bool(torch.equal(y, 3 * x)))\n";
  auto run = run_command({test_python(), "-c", py}, with_timeout(300s));
  EXPECT_TRUE(run.ok()) << run.output;
  EXPECT_NE(run.output.find("ok True"), std::string::npos) << run.output;
}

}  // namespace
}  // namespace solbench::harness

// ---------------------------------------------------------------------------------
// Parallel compiles, the first error of a log, dependencies (cublas, cudnn,
// cutlass), and the torch binding's flags and precompiled header. The torch tests
// here use a recording stand-in for g++ (no torch headers needed, seconds); the
// real builds are behind SOLBENCH_TEST_TORCH_BUILD=1.
namespace solbench::harness {
namespace {

std::string data_file(const std::string& rel) {
  return read_text_file(fs::path(SOLBENCH_SOURCE_DIR) / "tests" / "data" / "torch_binding" / rel);
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  for (std::string l; std::getline(ss, l);) out.push_back(l);
  return out;
}

// The CUDA toolkit's include folder (where cuda_runtime_api.h is), if installed.
std::optional<fs::path> cuda_include_dir() {
  for (const char* nv : {"/usr/local/cuda/bin/nvcc", "nvcc"})
    if (auto p = find_program(nv)) {
      const fs::path inc = fs::absolute(*p).parent_path().parent_path() / "include";
      if (fs::is_regular_file(inc / "cuda_runtime_api.h")) return inc;
    }
  return std::nullopt;
}

// A stand-in for g++ that appends each command line to `record` and creates the
// file after -o (objects, the .gch, the module) without compiling anything.
fs::path recording_compiler(const fs::path& dir, const fs::path& record) {
  const fs::path p = dir / "rec-g++";
  std::ofstream f(p);
  f << "#!/bin/sh\n"
       "if [ \"$1\" = --version ]; then echo 'g++ (recording stand-in) 12.2.0'; exit 0; fi\n"
       "printf '%s\\n' \"$*\" >> '" << record.string() << "'\n"
       "out=''; prev=''\n"
       "for a in \"$@\"; do [ \"$prev\" = -o ] && out=\"$a\"; prev=\"$a\"; done\n"
       "[ -n \"$out\" ] && : > \"$out\"\n"
       "exit 0\n";
  f.close();
  fs::permissions(p, fs::perms::owner_all);
  return p;
}

// The recorded command that compiles `source` (it ends with the source's path).
std::string command_for(const std::string& record_text, const std::string& source) {
  for (const auto& l : lines_of(record_text))
    if (l.size() > source.size() && l.compare(l.size() - source.size() - 1, std::string::npos, " " + source) == 0)
      return l;
  return "";
}

Solution torch_solution(const std::string& name, std::vector<SourceFile> sources, bool cuda) {
  Solution s;
  s.name = name;
  s.definition = "scale";
  s.spec.languages = {cuda ? Language::CudaCpp : Language::Cpp};
  s.spec.target_hardware = {cuda ? "LOCAL" : "cpu"};
  s.spec.entry_point = sources.at(0).path + "::scale";
  s.spec.entry_file = sources.at(0).path;
  s.spec.entry_function = "scale";
  s.spec.binding = Binding::Torch;
  s.spec.compile_options.ld_flags = {};
  s.sources = std::move(sources);
  return s;
}

// A torch-binding build that failed only because the test's python has no torch.
bool no_torch_here(const BuildResult& r) {
  return r.status == BuildStatus::CompileError && r.log.find("has no torch module") != std::string::npos;
}

TEST(BuildLog, FirstErrorLineSkipsCommandsAndContext) {
  const std::string gcc =
      "$ g++ -c -Werror -o obj/0.o error_handling.cc\n"
      "In file included from error_handling.h:3,\n"
      "main.cpp: In function 'int f()':\n"
      "main.cpp:7:3: error: 'nope' was not declared in this scope\n"
      "main.cpp:9:1: error: expected ';'\n"
      "compiling main.cpp failed (exit 1)\n";
  EXPECT_EQ(first_error_line(gcc), "main.cpp:7:3: error: 'nope' was not declared in this scope");
  EXPECT_EQ(first_error_line("$ nvcc -c k.cu\nk.cu(12): error : identifier \"x\" is undefined\n"),
            "k.cu(12): error : identifier \"x\" is undefined");
  EXPECT_EQ(first_error_line("$ g++ -shared\n/usr/bin/ld: a.o: undefined reference to `g'\n"
                             "collect2: error: ld returned 1 exit status\n"),
            "/usr/bin/ld: a.o: undefined reference to `g'");
  // No error line: the last line (e.g. solbench's own reason).
  EXPECT_EQ(first_error_line("$ g++ x\nlinking failed (killed by SIGKILL)\n\n"),
            "linking failed (killed by SIGKILL)");
  EXPECT_EQ(first_error_line(""), "");
}

TEST(BuildJobs, EnvironmentOverridesTheCpuCount) {
  {
    ScopedEnv e("SOLBENCH_BUILD_JOBS", "3");
    EXPECT_EQ(build_jobs(), 3);
  }
  ScopedEnv e("SOLBENCH_BUILD_JOBS", "zero");  // not a number: the CPU count
  EXPECT_GE(build_jobs(), 1);
  EXPECT_LE(build_jobs(), static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
}

// A g++ wrapper that counts how many of its instances run at once: each run makes
// a folder in `dir`, counts the folders, sleeps, removes its own, then compiles.
fs::path counting_compiler(const fs::path& dir, const fs::path& record) {
  const fs::path p = dir / "count-g++";
  fs::create_directories(dir / "running");
  std::ofstream f(p);
  f << "#!/bin/sh\n"
       "if [ \"$1\" = --version ]; then exec g++ --version; fi\n"
       "case \" $* \" in *' -c '*) ;; *) exec g++ \"$@\";; esac\n"
       "me=$(mktemp -d '" << (dir / "running").string() << "/c.XXXXXX')\n"
       "sleep 0.4\n"
       "ls '" << (dir / "running").string() << "' | wc -l >> '" << record.string() << "'\n"
       "sleep 0.4\n"
       "rmdir \"$me\"\n"
       "exec g++ \"$@\"\n";
  f.close();
  fs::permissions(p, fs::perms::owner_all);
  return p;
}

int max_recorded(const fs::path& record) {
  int most = 0;
  for (const auto& l : lines_of(read_text_file(record))) most = std::max(most, std::atoi(l.c_str()));
  return most;
}

Solution four_source_solution() {
  Solution s = cpu_solution(kVecAdd);
  for (int i = 0; i < 3; ++i)
    s.sources.push_back({"part" + std::to_string(i) + ".cc",
                         "int part" + std::to_string(i) + "() { return " + std::to_string(i) + "; }\n"});
  return s;
}

TEST_F(BuildTest, SourcesCompileInParallelUpToTheJobLimit) {
  const fs::path record = root_.path() / "concurrency.txt";
  opts_.cxx = counting_compiler(root_.path(), record).string();
  opts_.jobs = 4;
  BuildResult par = build_solution(four_source_solution(), opts_);
  ASSERT_TRUE(par.ok()) << par.log;
  EXPECT_GE(max_recorded(record), 2) << "four sources with jobs=4 never overlapped";
  // The log lists the sources in their order, whatever finished first.
  const size_t k = par.log.find(" kernel.cc"), p0 = par.log.find(" part0.cc"), p2 = par.log.find(" part2.cc");
  ASSERT_NE(k, std::string::npos) << par.log;
  EXPECT_LT(k, p0);
  EXPECT_LT(p0, p2);

  fs::remove(record);
  opts_.jobs = 1;
  Solution again = four_source_solution();
  again.spec.compile_options.cflags.push_back("-DAGAIN");  // another key: no cache hit
  BuildResult serial = build_solution(again, opts_);
  ASSERT_TRUE(serial.ok()) << serial.log;
  EXPECT_EQ(max_recorded(record), 1) << "jobs=1 ran compilers at the same time";
  std::cerr << "4 sources: parallel " << par.seconds << " s, serial " << serial.seconds << " s\n";
}

TEST_F(BuildTest, FailingSourcesAreReportedInSourceOrder) {
  Solution s = cpu_solution(kVecAdd);
  s.sources.push_back({"a_bad.cc", "int a() { return undefined_a; }\n"});
  s.sources.push_back({"b_bad.cc", "int b() { return undefined_b; }\n"});
  opts_.jobs = 8;
  BuildResult r = build_solution(s, opts_);
  ASSERT_EQ(r.status, BuildStatus::CompileError) << r.log;
  // Both ran (in parallel) and both are reported, the first source's error first.
  EXPECT_NE(r.log.find("undefined_b"), std::string::npos) << r.log;
  EXPECT_NE(first_error_line(r.log).find("a_bad.cc:1:"), std::string::npos) << r.log;
  EXPECT_NE(first_error_line(r.log).find("undefined_a"), std::string::npos) << r.log;
  EXPECT_NE(r.log.find("compiling a_bad.cc failed"), std::string::npos) << r.log;
  EXPECT_NE(r.log.find("compiling b_bad.cc failed"), std::string::npos) << r.log;
  // Messages name the solution's own paths, not the staging folder.
  EXPECT_EQ(r.log.find("/src/a_bad.cc:"), std::string::npos) << r.log;

  // One at a time: after a failure nothing more is started.
  opts_.jobs = 1;
  s.spec.compile_options.cflags.push_back("-DONE_AT_A_TIME");
  BuildResult one = build_solution(s, opts_);
  ASSERT_EQ(one.status, BuildStatus::CompileError);
  EXPECT_NE(one.log.find("compiling a_bad.cc failed"), std::string::npos) << one.log;
  EXPECT_EQ(one.log.find("b_bad.cc"), std::string::npos) << one.log;
}

// ------------------------------------------------------------------ dependencies

Solution with_dependencies(std::vector<std::string> deps) {
  Solution s = cpu_solution(kVecAdd);
  s.spec.dependencies = std::move(deps);
  return s;
}

TEST_F(BuildTest, MissingCutlassIsACompileErrorNamingTheVariable) {
  ScopedEnv a("SOLBENCH_CUTLASS_DIR", nullptr), b("CUTLASS_DIR", nullptr), c("CUTLASS_PATH", nullptr),
      d("CUTLASS_HOME", nullptr);
  ResolvedDependencies deps = resolve_dependencies(with_dependencies({"cutlass"}), "", test_python());
  if (deps.ok()) GTEST_SKIP() << "CUTLASS is installed here: " << deps.notes;
  EXPECT_NE(deps.error.find("cutlass"), std::string::npos) << deps.error;
  EXPECT_NE(deps.error.find("SOLBENCH_CUTLASS_DIR"), std::string::npos) << deps.error;
  EXPECT_NE(deps.error.find("/usr/local/cutlass"), std::string::npos) << deps.error;  // where it looked

  BuildResult r = build_solution(with_dependencies({"cutlass"}), opts_);
  EXPECT_EQ(r.status, BuildStatus::CompileError);
  EXPECT_NE(r.log.find("dependency cutlass"), std::string::npos) << r.log;
  EXPECT_NE(r.log.find("SOLBENCH_CUTLASS_DIR"), std::string::npos) << r.log;
  EXPECT_EQ(r.log.find("$ "), std::string::npos) << "no compiler may run:\n" << r.log;

  // The language implies the dependency.
  Solution lang = cpu_solution(kVecAdd);
  lang.spec.languages = {Language::Cutlass};
  EXPECT_FALSE(resolve_dependencies(lang, "", test_python()).ok());
}

TEST_F(BuildTest, CutlassDirIsUsedForTheHeaders) {
  // An include folder (cutlass/cutlass.h directly under it) ...
  const fs::path flat = root_.path() / "cutlass-flat";
  fs::create_directories(flat / "cutlass");
  std::ofstream(flat / "cutlass" / "cutlass.h") << "#pragma once\n#define FAKE_CUTLASS_SCALE 10\n";
  {
    ScopedEnv e("SOLBENCH_CUTLASS_DIR", flat.c_str());
    ResolvedDependencies deps = resolve_dependencies(with_dependencies({"CUTLASS"}), "", test_python());
    ASSERT_TRUE(deps.ok()) << deps.error;
    EXPECT_EQ(deps.include_dirs, std::vector<fs::path>{flat});
    EXPECT_EQ(deps.resolved, std::vector<std::string>{"cutlass"});
    EXPECT_TRUE(deps.link_flags.empty());

    // ... reaches the compiler: the kernel's SCALE comes from the fake header.
    Solution s = with_dependencies({"cute"});
    s.spec.compile_options.cflags = {};
    s.sources[0].content = "#include <cutlass/cutlass.h>\n#define SCALE FAKE_CUTLASS_SCALE\n" + s.sources[0].content;
    BuildResult r = build_solution(s, opts_);
    ASSERT_TRUE(r.ok()) << r.log;
    EXPECT_NE(r.log.find("-isystem " + flat.string()), std::string::npos) << r.log;
    NativeLibrary lib = NativeLibrary::open(r.so_path, r.entry_symbol);
    float a[2] = {1, 2}, b[2] = {1, 1}, c[2] = {};
    int64_t shape[1] = {2}, strides[1] = {1};
    sb_tensor in[2] = {{a, SB_DTYPE_F32, 1, shape, strides, SB_DEVICE_CPU},
                       {b, SB_DTYPE_F32, 1, shape, strides, SB_DEVICE_CPU}};
    sb_tensor out{c, SB_DTYPE_F32, 1, shape, strides, SB_DEVICE_CPU};
    ASSERT_EQ(lib.entry()(in, 2, &out, 1, nullptr), 0);
    EXPECT_EQ(c[1], 12.0f);
  }
  // A checkout: include/cutlass/cutlass.h and tools/util/include.
  const fs::path checkout = root_.path() / "cutlass-checkout";
  fs::create_directories(checkout / "include" / "cutlass");
  fs::create_directories(checkout / "tools" / "util" / "include" / "cutlass" / "util");
  std::ofstream(checkout / "include" / "cutlass" / "cutlass.h") << "#pragma once\n";
  {
    ScopedEnv e("SOLBENCH_CUTLASS_DIR", checkout.c_str());
    ResolvedDependencies deps = resolve_dependencies(with_dependencies({"cutlass"}), "", test_python());
    ASSERT_TRUE(deps.ok()) << deps.error;
    EXPECT_EQ(deps.include_dirs,
              (std::vector<fs::path>{checkout / "include", checkout / "tools" / "util" / "include"}));
  }
  // Set but wrong: an error naming the variable, not a silent fallback.
  ScopedEnv e("SOLBENCH_CUTLASS_DIR", (root_.path() / "nothing-here").c_str());
  ResolvedDependencies bad = resolve_dependencies(with_dependencies({"cutlass"}), "", test_python());
  EXPECT_NE(bad.error.find("SOLBENCH_CUTLASS_DIR=" + (root_.path() / "nothing-here").string()),
            std::string::npos)
      << bad.error;
}

TEST_F(BuildTest, CudnnFromAWheelLayoutGetsHeadersAliasAndRpath) {
  // The nvidia-cudnn wheel's layout: include/cudnn.h, lib/libcudnn.so.9 (no libcudnn.so).
  const fs::path home = root_.path() / "cudnn";
  fs::create_directories(home / "include");
  fs::create_directories(home / "lib");
  std::ofstream(home / "include" / "cudnn.h") << "#pragma once\n";
  std::ofstream(home / "lib" / "libcudnn.so.9") << "";
  ScopedEnv e("CUDNN_HOME", home.c_str());
  ResolvedDependencies deps = resolve_dependencies(with_dependencies({"cudnn"}), "", test_python());
  ASSERT_TRUE(deps.ok()) << deps.error;
  EXPECT_EQ(deps.include_dirs, std::vector<fs::path>{home / "include"});
  ASSERT_EQ(deps.link_aliases.size(), 1u);
  EXPECT_EQ(deps.link_aliases[0].first, "libcudnn.so");
  EXPECT_EQ(deps.link_aliases[0].second, home / "lib" / "libcudnn.so.9");
  const auto has = [&](const std::string& f) {
    return std::find(deps.link_flags.begin(), deps.link_flags.end(), f) != deps.link_flags.end();
  };
  EXPECT_TRUE(has("-lcudnn"));
  EXPECT_TRUE(has("-L" + (home / "lib").string()));
  EXPECT_TRUE(has("-Wl,-rpath," + (home / "lib").string())) << "the worker must find libcudnn.so.9";
  EXPECT_NE(deps.notes.find("$CUDNN_HOME"), std::string::npos) << deps.notes;
}

TEST(BuildDependencies, CublasNeedsTheToolkitAndPythonPackageNamesAddNothing) {
  Solution s = cpu_solution(kVecAdd);
  s.spec.dependencies = {"cuBLAS"};
  ResolvedDependencies none = resolve_dependencies(s, "", "");
  EXPECT_NE(none.error.find("cublas"), std::string::npos) << none.error;
  ResolvedDependencies with = resolve_dependencies(s, "/opt/fake-cuda", "");
  ASSERT_TRUE(with.ok()) << with.error;
  EXPECT_EQ(with.link_flags.back(), "-lcublasLt");
  EXPECT_NE(std::find(with.link_flags.begin(), with.link_flags.end(), "-lcublas"), with.link_flags.end());
  EXPECT_NE(with.key(), none.key());

  // Python packages (a cute_dsl or triton solution's list) mean nothing to a C++ build.
  s.spec.dependencies = {"torch", "triton", "numpy"};
  ResolvedDependencies py = resolve_dependencies(s, "", "");
  EXPECT_TRUE(py.ok()) << py.error;
  EXPECT_TRUE(py.include_dirs.empty());
  EXPECT_TRUE(py.link_flags.empty());
  EXPECT_NE(py.notes.find("'torch'"), std::string::npos) << py.notes;
}

TEST(BuildDependencies, PythonSolutionsWithPackageDependenciesAreNotBuilt) {
  // cute_dsl's ["torch", "cutlass"] are Python packages: nothing is built or resolved,
  // even where no CUTLASS headers exist.
  ScopedEnv e("SOLBENCH_CUTLASS_DIR", "/nonexistent/solbench-test");
  Solution s;
  s.name = "py_with_deps";
  s.definition = "d";
  s.spec.languages = {Language::Pytorch};
  s.spec.target_hardware = {"cpu"};
  s.spec.entry_point = "main.py::run";
  s.spec.entry_file = "main.py";
  s.spec.entry_function = "run";
  s.spec.dependencies = {"torch", "triton", "cutlass"};
  s.sources = {{"main.py", "def run(x):\n    return x\n"}};
  EXPECT_EQ(build_solution(s).status, BuildStatus::Unsupported);
  Definition def;
  def.name = "d";
  PrepareOptions po;
  PreparedSolution p = prepare_solution(s, def, po);
  EXPECT_TRUE(p.ok) << p.log;
  EXPECT_EQ(p.entry.kind, EntryKind::Python);
  EXPECT_FALSE(p.build.has_value());
}

TEST_F(BuildTest, PrepareReportsTheFirstErrorFirst) {
  ScopedEnv cache("SOLBENCH_CACHE_DIR", (root_.path() / "prepare-cache").c_str());
  Solution s = cpu_solution("int broken() {\n  return not_declared_here;\n}\n");
  s.definition = "d";
  Definition def;
  def.name = "d";
  PrepareOptions po;
  PreparedSolution p = prepare_solution(s, def, po);
  ASSERT_FALSE(p.ok);
  EXPECT_EQ(p.failure, Status::CompileError);
  EXPECT_NE(p.first_error.find("kernel.cc:2:"), std::string::npos) << p.first_error;
  EXPECT_NE(p.first_error.find("not_declared_here"), std::string::npos) << p.first_error;
  // The message starts with it, and holds it once; the commands follow.
  EXPECT_EQ(p.log.rfind(p.first_error + "\n", 0), 0u) << p.log;
  EXPECT_EQ(p.log.find(p.first_error, 1), std::string::npos) << p.log;
  EXPECT_NE(p.log.find("$ "), std::string::npos) << p.log;
  EXPECT_NE(p.log.find("compiling kernel.cc failed"), std::string::npos) << p.log;
}

// ------------------------------------------------------------------ torch binding

TEST_F(BuildTest, WhereTorchIsIsAskedAgainOnlyWhenTheImportPathChanged) {
  // A python that logs each "where is torch" probe and answers it with the real
  // interpreter, whose import path starts with a folder holding a stand-in torch
  // (the build then fails at the torch query: only the probe matters here).
  const fs::path site = root_.path() / "site";
  fs::create_directories(site / "torch");
  std::ofstream(site / "torch" / "__init__.py") << "raise ImportError('stand-in')\n";
  std::ofstream(site / "torch" / "version.py") << "__version__ = '0'\n";
  const fs::path log = root_.path() / "probes.txt";
  const fs::path py = root_.path() / "python";
  {
    std::ofstream f(py);
    f << "#!/bin/sh\n"
         "case \"$2\" in *find_spec*) echo probe >> '" << log.string() << "';; esac\n"
         "PYTHONPATH='" << site.string() << "' exec python3 \"$@\"\n";
  }
  fs::permissions(py, fs::perms::owner_all);
  opts_.python = py.string();
  const Solution s = torch_solution("scale_ext", {{"main.cpp", data_file("scale.cpp")}}, false);
  auto probes = [&] { return lines_of(read_text_file(log)).size(); };
  auto build = [&] {
    BuildResult r = build_solution(s, opts_);
    EXPECT_EQ(r.log.find("has no torch module"), std::string::npos) << r.log;
  };
  build();
  ASSERT_EQ(probes(), 1u);
  build();
  EXPECT_EQ(probes(), 1u) << "nothing changed: the remembered answer";
  std::ofstream(site / "newly_installed.py") << "\n";  // an install on the import path
  build();
  EXPECT_EQ(probes(), 2u);
  build();
  EXPECT_EQ(probes(), 2u);
  std::this_thread::sleep_for(20ms);
  std::ofstream(site / "torch" / "version.py") << "__version__ = '1'\n";  // torch upgraded in place
  build();
  EXPECT_EQ(probes(), 3u);
  {
    const std::string other_path = site.string();
    ScopedEnv e("PYTHONPATH", other_path.c_str());  // another import path
    build();
    EXPECT_EQ(probes(), 4u);
  }
}

TEST_F(BuildTest, TorchBindingCompilesAsCppExtensionWould) {
  const fs::path record = root_.path() / "commands.txt";
  opts_.cxx = recording_compiler(root_.path(), record).string();
  opts_.python = test_python();
  const auto cuda_inc = cuda_include_dir();
  Solution s = torch_solution("scale_ext", {{"main.cpp", data_file("scale.cpp")}}, cuda_inc.has_value());
  if (cuda_inc) s.spec.compile_options.cflags = {"-DSB_TEST_CUDA_HEADER"};
  BuildResult r = build_solution(s, opts_);
  if (no_torch_here(r)) GTEST_SKIP() << "no torch for " << test_python();
  ASSERT_TRUE(r.ok()) << build_status_name(r.status) << "\n" << r.log;
  const std::string rec = read_text_file(record);
  const std::string cmd = command_for(rec, "main.cpp");
  ASSERT_FALSE(cmd.empty()) << rec;
  for (const std::string& want : {"-DTORCH_EXTENSION_NAME=" + r.module_name + " ",
                                 std::string("-DTORCH_API_INCLUDE_EXTENSION_H "), std::string("-fPIC "),
                                 std::string("-std=c++17 "), std::string("-D_GLIBCXX_USE_CXX11_ABI=")})
    EXPECT_NE(cmd.find(want), std::string::npos) << want << " missing from\n" << cmd;
  // torch's own ABI flag: the value torch was built with.
  EXPECT_TRUE(cmd.find("-D_GLIBCXX_USE_CXX11_ABI=1 ") != std::string::npos ||
              cmd.find("-D_GLIBCXX_USE_CXX11_ABI=0 ") != std::string::npos)
      << cmd;
  EXPECT_NE(cmd.find("-DPYBIND11_BUILD_ABI=\""), std::string::npos) << cmd;
  EXPECT_NE(cmd.find("/include -isystem"), std::string::npos) << "torch's include folders\n" << cmd;
  EXPECT_EQ(cmd.find(" -O3 "), std::string::npos) << "cpp_extension.load adds no -O level\n" << cmd;
  if (cuda_inc) {
    EXPECT_NE(cmd.find("-isystem " + cuda_inc->string() + " "), std::string::npos)
        << "the CUDA toolkit's include folder for a .cpp of a CUDA language\n" << cmd;
    EXPECT_NE(r.log.find("-lcudart"), std::string::npos) << r.log;
  } else {
    std::cerr << "no CUDA toolkit here: the CUDA-header part is skipped\n";
  }
  // The module links torch as cpp_extension does.
  for (const char* lib : {"-lc10", "-ltorch", "-ltorch_cpu", "-ltorch_python"})
    EXPECT_NE(r.log.find(lib), std::string::npos) << lib;
  EXPECT_NE(r.log.find("-Wl,-rpath,"), std::string::npos);
  EXPECT_EQ(r.so_path.filename(), r.module_name + ".so");
}

TEST_F(BuildTest, TorchPrecompiledHeaderIsMadeOnTheSecondColdBuildAndUsedAfter) {
  ScopedEnv pch_env("SOLBENCH_TORCH_PCH", nullptr);
  const fs::path record = root_.path() / "commands.txt";
  opts_.cxx = recording_compiler(root_.path(), record).string();
  opts_.python = test_python();
  opts_.jobs = 4;
  auto variant = [&](int n) {
    // Another comment: another solution (cache key), same flags (PCH key).
    Solution s = torch_solution("scale_ext", {{"main.cpp", data_file("scale.cpp") + "// " + std::to_string(n) + "\n"},
                                              {"helper.cpp", "// not first\n#include \"helper.h\"\nint h() { return 1; }\n"}},
                                false);
    s.sources.push_back({"helper.h", "#pragma once\n#include <torch/extension.h>\n"});
    return s;
  };
  BuildResult first = build_solution(variant(1), opts_);
  if (no_torch_here(first)) GTEST_SKIP() << "no torch for " << test_python();
  ASSERT_TRUE(first.ok()) << first.log;
  EXPECT_NE(first.log.find("the next cold build with them makes one"), std::string::npos) << first.log;
  EXPECT_EQ(read_text_file(record).find("c++-header"), std::string::npos) << "no PCH on a first build";

  BuildResult second = build_solution(variant(2), opts_);
  ASSERT_TRUE(second.ok()) << second.log;
  EXPECT_FALSE(second.cache_hit);
  EXPECT_NE(second.log.find("building a precompiled <torch/extension.h>"), std::string::npos) << second.log;
  EXPECT_NE(second.log.find("-x c++-header"), std::string::npos) << second.log;
  EXPECT_NE(second.log.find("stored the precompiled <torch/extension.h>"), std::string::npos) << second.log;
  std::string pch_cmd;
  for (const auto& l : lines_of(read_text_file(record)))
    if (l.find("-x c++-header") != std::string::npos) pch_cmd = l;
  ASSERT_FALSE(pch_cmd.empty());
  EXPECT_EQ(pch_cmd.find("TORCH_EXTENSION_NAME"), std::string::npos) << "the PCH is shared by modules\n" << pch_cmd;
  EXPECT_NE(pch_cmd.find("-D_GLIBCXX_USE_CXX11_ABI="), std::string::npos) << pch_cmd;
  EXPECT_EQ(pch_cmd.find("/src"), std::string::npos) << "no staging folder in the PCH's flags\n" << pch_cmd;

  fs::remove(record);
  BuildResult third = build_solution(variant(3), opts_);
  ASSERT_TRUE(third.ok()) << third.log;
  EXPECT_NE(third.log.find("using the precompiled <torch/extension.h>"), std::string::npos) << third.log;
  const std::string rec = read_text_file(record);
  const std::string main_cmd = command_for(rec, "main.cpp");
  EXPECT_NE(main_cmd.find("-include " + (opts_.cache_dir / ".pch").string()), std::string::npos) << main_cmd;
  // helper.cpp does not start with the include: compiled as written.
  EXPECT_EQ(command_for(rec, "helper.cpp").find("-include"), std::string::npos) << rec;
  EXPECT_EQ(rec.find("c++-header"), std::string::npos) << "the PCH is made once";

  // Off by the environment: as written again.
  ScopedEnv off("SOLBENCH_TORCH_PCH", "0");
  fs::remove(record);
  ASSERT_TRUE(build_solution(variant(4), opts_).ok());
  EXPECT_EQ(read_text_file(record).find("-include"), std::string::npos);
}

// Real builds against the installed torch (libtorch-dev on Debian): slow.
TEST_F(BuildTest, TorchBindingCppWithACudaHeaderBuildsAndImports) {
  if (!std::getenv("SOLBENCH_TEST_TORCH_BUILD"))
    GTEST_SKIP() << "set SOLBENCH_TEST_TORCH_BUILD=1 (compiles against torch's headers)";
  opts_.timeout = 600s;
  opts_.python = test_python();
  const auto cuda_inc = cuda_include_dir();
  Solution s = torch_solution("scale_ext", {{"main.cpp", data_file("scale.cpp")}}, cuda_inc.has_value());
  if (cuda_inc) s.spec.compile_options.cflags = {"-DSB_TEST_CUDA_HEADER"};
  BuildResult r = build_solution(s, opts_);
  ASSERT_TRUE(r.ok()) << build_status_name(r.status) << "\n" << r.log;
  std::cerr << "torch binding (.cpp with a CUDA header: " << (cuda_inc ? "yes" : "no") << ") build: " << r.seconds << " s\n";
  const std::string py = "import importlib.util as u, torch\n"
                         "s = u.spec_from_file_location('" + r.module_name + "', '" + r.so_path.string() +
                         "')\nm = u.module_from_spec(s); s.loader.exec_module(m)\n"
                         "print(m.scale(torch.arange(3.0), 2.0).tolist(), m.extension_name, m.cudart_version > 0)\n";
  auto run = run_command({test_python(), "-c", py}, with_timeout(120s));
  ASSERT_TRUE(run.ok()) << run.output;
  EXPECT_NE(run.output.find("[0.0, 2.0, 4.0] " + r.module_name + (cuda_inc ? " True" : " False")),
            std::string::npos)
      << run.output;
}

// Cold builds of three torch sources: one compiler at a time, in parallel, and with
// the precompiled header (made, then used). Prints the times (the numbers in
// docs/native-binding.md); checks that each variant works.
TEST_F(BuildTest, TorchBindingParallelAndPrecompiledHeaderTimings) {
  if (!std::getenv("SOLBENCH_TEST_TORCH_BUILD"))
    GTEST_SKIP() << "set SOLBENCH_TEST_TORCH_BUILD=1 (compiles against torch's headers, minutes)";
  opts_.timeout = 900s;
  opts_.python = test_python();
  auto variant = [&](const std::string& tag) {
    Solution s = torch_solution("fma_ext", {{"main.cpp", data_file("multi/main.cpp") + "// " + tag + "\n"},
                                            {"add.cpp", data_file("multi/add.cpp")},
                                            {"mul.cpp", data_file("multi/mul.cpp")}},
                                false);
    s.spec.entry_point = "main.cpp::fma_rows";
    s.spec.entry_function = "fma_rows";
    return s;
  };
  auto check = [&](const BuildResult& r) {
    const std::string py = "import importlib.util as u, torch\n"
                           "s = u.spec_from_file_location('" + r.module_name + "', '" + r.so_path.string() +
                           "')\nm = u.module_from_spec(s); s.loader.exec_module(m)\n"
                           "x = torch.arange(4.0); print(m.fma_rows(x, x, x).tolist())\n";
    auto run = run_command({test_python(), "-c", py}, with_timeout(120s));
    EXPECT_NE(run.output.find("[0.0, 2.0, 6.0, 12.0]"), std::string::npos) << run.output;
  };
  const int n = std::min(3, build_jobs());
  opts_.jobs = 1;
  opts_.torch_pch = false;
  BuildResult serial = build_solution(variant("serial"), opts_);
  ASSERT_TRUE(serial.ok()) << serial.log;
  check(serial);
  opts_.jobs = n;
  BuildResult parallel = build_solution(variant("parallel"), opts_);
  ASSERT_TRUE(parallel.ok()) << parallel.log;
  check(parallel);
  opts_.torch_pch = true;
  opts_.jobs = 4;  // a compiler for the PCH beside the three sources (more than the CPUs here)
  ScopedEnv eager("SOLBENCH_TORCH_PCH", "1");
  BuildResult making = build_solution(variant("making-pch"), opts_);
  ASSERT_TRUE(making.ok()) << making.log;
  check(making);
  opts_.jobs = n;
  BuildResult using_pch = build_solution(variant("using-pch"), opts_);
  ASSERT_TRUE(using_pch.ok()) << using_pch.log;
  check(using_pch);
  const bool made = making.log.find("stored the precompiled") != std::string::npos;
  EXPECT_TRUE(!made || using_pch.log.find("using the precompiled") != std::string::npos) << using_pch.log;
  // One source (same flags, so the same PCH), with and without it.
  Solution one = torch_solution("scale_ext", {{"main.cpp", data_file("scale.cpp")}}, false);
  BuildResult one_pch = build_solution(one, opts_);
  ASSERT_TRUE(one_pch.ok()) << one_pch.log;
  EXPECT_TRUE(!made || one_pch.log.find("using the precompiled") != std::string::npos) << one_pch.log;
  one.sources[0].content += "// without the PCH\n";
  opts_.torch_pch = false;
  BuildResult one_plain = build_solution(one, opts_);
  ASSERT_TRUE(one_plain.ok()) << one_plain.log;
  std::cerr << "3 torch sources, cold: serial " << serial.seconds << " s, parallel (" << n
            << " jobs) " << parallel.seconds << " s, parallel + making the PCH " << making.seconds
            << " s (" << (made ? "made" : "not made: no CPU to spare") << "), parallel with the PCH "
            << using_pch.seconds << " s; one source: " << one_plain.seconds << " s, with the PCH "
            << one_pch.seconds << " s\n";
}

}  // namespace
}  // namespace solbench::harness
