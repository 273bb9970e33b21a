// ELF dynamic symbols of freshly compiled shared objects, the import policy, and
// loading through NativeLibrary.
#include <gtest/gtest.h>

#include <fstream>

#include "harness/worker/native_library.h"
#include "harness/process.h"
#include "test_util.h"
#include "harness/staging.h"
#include "harness/checks/symbols.h"

namespace solbench::harness {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

class SymbolsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new StagingDir(StagingDir::create(default_staging_base(), "symtest-"));
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }

  // Compiles `code` into <name>.so with the kernel header on the include path.
  static fs::path compile(const std::string& name, const std::string& code,
                          std::vector<std::string> extra = {}) {
    const fs::path src = dir_->path() / (name + ".cc");
    const fs::path so = dir_->path() / (name + ".so");
    std::ofstream(src) << code;
    std::vector<std::string> argv = {"g++", "-shared", "-fPIC", "-O1", "-I",
                                     std::string(SOLBENCH_SOURCE_DIR) + "/include",
                                     "-o", so.string(), src.string()};
    argv.insert(argv.end(), extra.begin(), extra.end());
    auto r = run_command(argv, with_timeout(120s));
    EXPECT_TRUE(r.ok()) << r.output;
    return so;
  }

  static StagingDir* dir_;
};
StagingDir* SymbolsTest::dir_ = nullptr;

constexpr const char* kCleanKernel = R"(
#include <solbench/kernel.h>
#include <cmath>
SB_EXPORT int scale2(const sb_tensor* in, int32_t n_in, sb_tensor* out, int32_t n_out, void*) {
  if (n_in != 1 || n_out != 1 || in[0].dtype != SB_DTYPE_F32) return 1;
  const float* x = static_cast<const float*>(in[0].data);
  float* y = static_cast<float*>(out[0].data);
  for (int64_t i = 0; i < sb_numel(&in[0]); ++i) y[i] = 2.0f * x[i] + std::sqrt(0.0f);
  return 0;
}
static int helper_not_exported() { return 7; }
int (*keep)() = helper_not_exported;
)";

constexpr const char* kSneakyKernel = R"(
#include <solbench/kernel.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>
static void* spin(void*) { return nullptr; }
SB_EXPORT int sneaky(const sb_tensor*, int32_t, sb_tensor*, int32_t, void*) {
  pthread_t t;
  pthread_create(&t, nullptr, spin, nullptr);
  int s = socket(AF_INET, SOCK_STREAM, 0);
  if (fork() == 0) _exit(0);
  return s < 0;
}
)";

TEST_F(SymbolsTest, ExportsAndImportsOfACleanKernel) {
  const fs::path so = compile("clean", kCleanKernel);
  ElfSymbols s = read_elf_symbols(so);
  auto has = [](const std::vector<std::string>& v, const std::string& x) {
    return std::find(v.begin(), v.end(), x) != v.end();
  };
  EXPECT_TRUE(has(s.exported, "scale2"));
  EXPECT_TRUE(has(s.exported, "sb_abi_version"));
  EXPECT_FALSE(has(s.exported, "helper_not_exported"));
  EXPECT_FALSE(has(s.imported, "scale2"));
  EXPECT_TRUE(std::is_sorted(s.imported.begin(), s.imported.end()));
  auto v = check_imports(s, ImportPolicy::defaults());
  EXPECT_FALSE(has_denied(v)) << to_json(v).dump(2);
}

TEST_F(SymbolsTest, FlagsThreadsSocketsAndFork) {
  const fs::path so = compile("sneaky", kSneakyKernel, {"-lpthread"});
  ElfSymbols syms = read_elf_symbols(so);
  EXPECT_NE(std::find_if(syms.needed.begin(), syms.needed.end(),
                         [](const std::string& n) { return n.rfind("libc.so", 0) == 0; }),
            syms.needed.end());
  auto v = check_imports(so);
  EXPECT_TRUE(has_denied(v));
  std::set<std::string> flagged;
  for (const auto& x : v) flagged.insert(x.symbol);
  EXPECT_TRUE(flagged.count("pthread_create")) << to_json(v).dump(2);
  EXPECT_TRUE(flagged.count("socket"));
  EXPECT_TRUE(flagged.count("fork") || flagged.count("_Fork")) << to_json(v).dump(2);
  const json j = to_json(v);
  ASSERT_TRUE(j.is_array());
  EXPECT_EQ(j[0].at("action"), "deny");
  for (const auto& x : v)
    if (x.symbol == "pthread_create") {
      EXPECT_EQ(x.str(), "pthread_create: creates threads");
    }
}

TEST_F(SymbolsTest, SectionHeadersStrippedStillReadable) {
  // The loader only needs PT_DYNAMIC; so does the reader.
  const fs::path so = compile("stripped", kSneakyKernel, {"-lpthread", "-s"});
  const fs::path noshdr = dir_->path() / "noshdr.so";
  std::string bytes;
  {
    std::ifstream in(so, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  // Zero e_shoff / e_shnum / e_shstrndx in the ELF64 header (offsets 0x28, 0x3c, 0x3e).
  std::fill(bytes.begin() + 0x28, bytes.begin() + 0x30, '\0');
  std::fill(bytes.begin() + 0x3c, bytes.begin() + 0x40, '\0');
  std::ofstream(noshdr, std::ios::binary) << bytes;
  ElfSymbols s = read_elf_symbols(noshdr);
  EXPECT_NE(std::find(s.exported.begin(), s.exported.end(), "sneaky"), s.exported.end());
  EXPECT_NE(std::find(s.imported.begin(), s.imported.end(), "pthread_create"), s.imported.end());
  EXPECT_FALSE(s.needed.empty());
}

TEST_F(SymbolsTest, MalformedFilesAreErrorsNotCrashes) {
  const fs::path text = dir_->path() / "text.so";
  std::ofstream(text) << "this is not an ELF file at all, just words";
  EXPECT_THROW(read_elf_symbols(text), ElfError);
  EXPECT_THROW(read_elf_symbols(dir_->path() / "missing.so"), ElfError);
  auto v = check_imports(text);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].symbol, "<elf>");
  EXPECT_TRUE(has_denied(v));

  // Every truncation of a real object is either parsed or refused with ElfError.
  const fs::path so = compile("trunc", kCleanKernel);
  std::string bytes;
  {
    std::ifstream in(so, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  int refused = 0;
  for (size_t cut : {size_t(10), size_t(64), size_t(200), bytes.size() / 4, bytes.size() / 2,
                     bytes.size() - 100}) {
    const fs::path t = dir_->path() / "cut.so";
    std::ofstream(t, std::ios::binary | std::ios::trunc) << bytes.substr(0, cut);
    try {
      read_elf_symbols(t);
    } catch (const ElfError&) {
      ++refused;
    }
  }
  EXPECT_GE(refused, 3);  // at least the header-level cuts
}

TEST(ImportRuleTest, ExactAndPrefix) {
  ImportRule exact{"fork", "r"};
  EXPECT_TRUE(exact.matches("fork"));
  EXPECT_FALSE(exact.matches("forkpty"));
  ImportRule prefix{"cupti*", "r"};
  EXPECT_TRUE(prefix.matches("cuptiActivityEnable"));
  EXPECT_TRUE(prefix.matches("cupti"));
  EXPECT_FALSE(prefix.matches("cupt"));
}

TEST(ImportPolicyTest, UnexpectedLibraryIsDenied) {
  ElfSymbols s;
  s.needed = {"libc.so.6", "libcurl.so.4"};
  s.imported = {"memcpy", "cuptiSubscribe", "cudaLaunchHostFunc"};
  auto v = check_imports(s, ImportPolicy::defaults());
  std::map<std::string, RuleAction> got;
  for (const auto& x : v) got[x.symbol] = x.action;
  EXPECT_EQ(got.count("memcpy"), 0u);
  EXPECT_EQ(got.at("cuptiSubscribe"), RuleAction::Deny);
  EXPECT_EQ(got.at("cudaLaunchHostFunc"), RuleAction::Warn);
  EXPECT_EQ(got.at("libcurl.so.4"), RuleAction::Deny);
  EXPECT_EQ(got.count("libc.so.6"), 0u);
}

TEST_F(SymbolsTest, NativeLibraryLoadsAndCalls) {
  const fs::path so = compile("callme", kCleanKernel);
  NativeLibrary lib = NativeLibrary::open(so, "scale2");
  ASSERT_TRUE(lib);
  float x[3] = {1, 2, 3}, y[3] = {0, 0, 0};
  int64_t shape[1] = {3}, strides[1] = {1};
  sb_tensor in{x, SB_DTYPE_F32, 1, shape, strides, SB_DEVICE_CPU};
  sb_tensor out{y, SB_DTYPE_F32, 1, shape, strides, SB_DEVICE_CPU};
  EXPECT_EQ(lib.entry()(&in, 1, &out, 1, nullptr), 0);
  EXPECT_EQ(y[2], 6.0f);
  EXPECT_THROW(NativeLibrary::open(so, "no_such_entry"), std::runtime_error);
  EXPECT_THROW(NativeLibrary::open(dir_->path() / "missing.so", "scale2"), std::runtime_error);
}

TEST_F(SymbolsTest, NativeLibraryRefusesAnotherAbiVersion) {
  const fs::path so = compile("abi999", R"(
#define SB_NO_ABI_SYMBOL
#include <solbench/kernel.h>
extern "C" __attribute__((visibility("default"))) const int32_t sb_abi_version = 999;
SB_EXPORT int k(const sb_tensor*, int32_t, sb_tensor*, int32_t, void*) { return 0; }
)");
  try {
    NativeLibrary::open(so, "k");
    FAIL() << "expected an ABI mismatch";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("999"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace solbench::harness
