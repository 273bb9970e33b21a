// Building solutions: g++ for CPU code, nvcc for CUDA (when the toolkit is here),
// compile errors with the compiler's message, timeouts, the build cache, refused
// inputs, and the torch binding (opt-in: slow).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <thread>

#include "harness/build.h"
#include "harness/native_library.h"
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
