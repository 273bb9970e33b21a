// An evaluation leaves nothing behind (docs/sandbox.md, "What a worker leaves
// behind"): Python solutions evaluated by the real binary on the bundled RMSNorm
// problem write 1 GiB into /dev/shm, $TMPDIR and their compile-cache folder, and
// try /tmp. The limits are lowered to 256 MiB here; the checks are the log's
// message (the limit hit, the folder and the size) and the host afterwards.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>

#include "eval/python_solution_eval.h"

namespace solbench {
namespace {

namespace fs = std::filesystem;
using testing::pytorch_source;

// Sets an environment variable (read by the binary the test starts) for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    had_ = std::getenv(name) != nullptr;
    ::setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (had_) ::setenv(name_, old_.c_str(), 1);
    else ::unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::string old_;
  bool had_ = false;
};

// fill(path): 1 GiB in 16 MiB writes (raises where the space ends).
const char* kFill = R"(import errno
RUN = '@RUN@'
def fill(path, total=1 << 30):
    chunk = b'x' * (16 << 20)
    with open(path, 'wb') as f:
        for _ in range(total // len(chunk)):
            f.write(chunk)
)";

class WorkerLitter : public testing::PythonSolutionEval {
 protected:
  void SetUp() override {
    PythonSolutionEval::SetUp();
    run_ = "solbench-litter-" + std::to_string(::getpid()) + "-" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
  }
  // A failed test must not leave its gigabyte behind either.
  void TearDown() override {
    for (const char* where : {"/dev/shm", "/tmp"})
      for (const auto& e : fs::directory_iterator(where))
        if (e.path().filename().string().find(run_) != std::string::npos) fs::remove_all(e.path());
  }
  std::string source(const std::string& in_call) const {
    std::string prelude = kFill;
    prelude.replace(prelude.find("@RUN@"), 5, run_);
    return pytorch_source(prelude, in_call);
  }
  // Nothing of the run anywhere it could have written, and no worker folder left.
  void expect_nothing_left() {
    for (const char* where : {"/dev/shm", "/tmp"})
      for (const auto& e : fs::directory_iterator(where))
        EXPECT_EQ(e.path().filename().string().find(run_), std::string::npos) << e.path();
    for (const auto& e : fs::recursive_directory_iterator(dir_ / "staging"))
      ADD_FAILURE() << "left in the staging folder: " << e.path();
    for (const auto& e : fs::recursive_directory_iterator(dir_ / "cache"))
      EXPECT_EQ(e.path().filename().string().find(run_), std::string::npos) << e.path();
  }
  static json private_tmp(const json& doc) {
    return doc.at("sandbox").value("private_tmp", json::object());
  }
  std::string run_;
  ScopedEnv tmp_limit_{"SOLBENCH_WORKER_TMP_LIMIT", "256M"};
  ScopedEnv jit_limit_{"SOLBENCH_JIT_CACHE_LIMIT", "256M"};
};

TEST_F(WorkerLitter, TmpAndDevShmAreOnePrivateTmpfsWhoseLimitTheLogNames) {
  // Without Landlock and without a mount namespace nothing would stop the write.
  if (!landlock()) GTEST_SKIP() << "no Landlock in this kernel";
  json doc = eval(solution("fill_tmp", source(R"(    try:
        open('/tmp/' + RUN, 'w').write('x')
        raise RuntimeError('wrote /tmp/' + RUN)
    except PermissionError:
        pass
    try:
        fill('/dev/shm/' + RUN)
    except OSError as e:
        if e.errno != errno.ENOSPC:
            raise
        print('/dev/shm full at', os.path.getsize('/dev/shm/' + RUN), 'bytes', flush=True)
    fill(os.path.join(os.environ['TMPDIR'], RUN))  # no space at once: one limit for both)")));
  ASSERT_FALSE(doc.empty());
  EXPECT_EQ(status(doc), "RUNTIME_ERROR") << log(doc);
  const json p = private_tmp(doc);
  if (p.value("dev_shm", "") != "private tmpfs") {
    // No mount namespace here: /dev/shm is not writable at all.
    EXPECT_NE(log(doc).find("PermissionError"), std::string::npos) << log(doc);
  } else {
    EXPECT_EQ(p.value("tmp", ""), "private tmpfs") << p.dump();
    EXPECT_EQ(p.at("tmp_bytes").get<uint64_t>(), 256u << 20);
    const std::string l = log(doc);
    EXPECT_NE(l.find("/dev/shm full at " + std::to_string(256u << 20) + " bytes"), std::string::npos) << l;
    EXPECT_NE(l.find("No space left on device"), std::string::npos) << l;
    EXPECT_NE(l.find("and /dev/shm share a private tmpfs of 256 MiB (SOLBENCH_WORKER_TMP_LIMIT)"),
              std::string::npos)
        << l;
  }
  expect_nothing_left();
}

TEST_F(WorkerLitter, CompileCachesOverTheLimitFailTheWorkloadAndAreNotKept) {
  // Once (the first call): the disk is slower than the tmpfs.
  json doc = eval(solution("fill_jit", source(R"(    p = os.path.join(os.environ['TRITON_CACHE_DIR'], RUN)
    if not os.path.exists(p):
        fill(p)
        open(os.path.join(os.environ['TORCHINDUCTOR_CACHE_DIR'], RUN + '-small'), 'w').write('x'))")));
  ASSERT_FALSE(doc.empty());
  EXPECT_EQ(status(doc), "RUNTIME_ERROR") << log(doc);
  const std::string l = log(doc);
  EXPECT_NE(l.find("the compile caches are over their limit of 256 MiB (SOLBENCH_JIT_CACHE_LIMIT)"),
            std::string::npos)
      << l;
  EXPECT_NE(l.find("/jit (TRITON_CACHE_DIR"), std::string::npos) << l;
  // Nothing of that worker's caches is kept (the small file neither), and nothing
  // in the cache is near the limit.
  uintmax_t kept = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir_ / "cache" / "jit"))
    if (e.is_regular_file()) kept += e.file_size();
  EXPECT_LT(kept, uintmax_t{1} << 20);
  expect_nothing_left();
}

TEST_F(WorkerLitter, CachesWithinTheLimitAreKept) {
  json doc = eval(solution("small_jit", source(R"(    p = os.path.join(os.environ['TRITON_CACHE_DIR'], RUN)
    if not os.path.exists(p):
        fill(p, 32 << 20))")));
  ASSERT_FALSE(doc.empty());
  EXPECT_EQ(status(doc), "PASSED") << log(doc);
  bool found = false;
  for (const auto& e : fs::recursive_directory_iterator(dir_ / "cache" / "jit"))
    found |= e.path().filename() == run_ && e.file_size() == (32u << 20);
  EXPECT_TRUE(found) << "the solution's 32 MiB cache file was not kept";
  EXPECT_TRUE(fs::is_empty(dir_ / "staging"));
}

TEST_F(WorkerLitter, ASpareWorkerHasItsOwnTmpfsToo) {
  // A spare enters its sandbox before any solution exists (zygote.h, "Spares"):
  // its private tmpfs is made then, and serves the solution it is given.
  if (!landlock()) GTEST_SKIP() << "no Landlock in this kernel";
  const std::string address = "solbench-test-litter-" + std::to_string(::getpid());
  pid_t zygote = ::fork();
  if (zygote == 0) {
    ::execl(SOLBENCH_BINARY, SOLBENCH_BINARY, "__zygote", "--address", address.c_str(), nullptr);
    ::_exit(127);
  }
  ASSERT_GT(zygote, 0);
  {
    ScopedEnv z("SOLBENCH_ZYGOTE", address.c_str());
    ScopedEnv spares("SOLBENCH_SPARE_WORKERS", "1");
    json first = eval(solution("honest", source("")));
    ASSERT_FALSE(first.empty());
    EXPECT_EQ(status(first), "PASSED") << log(first);
    json doc = eval(solution("fill_spare", source("    fill('/dev/shm/' + RUN)")));
    ASSERT_FALSE(doc.empty());
    EXPECT_EQ(doc.at("workers").at(0).value("launch", ""), "spare") << doc.at("workers").dump();
    EXPECT_TRUE(doc.at("sandbox").value("spare", false));
    EXPECT_EQ(status(doc), "RUNTIME_ERROR") << log(doc);
    if (private_tmp(doc).value("dev_shm", "") == "private tmpfs")
      EXPECT_NE(log(doc).find("a private tmpfs of 256 MiB (SOLBENCH_WORKER_TMP_LIMIT)"), std::string::npos)
          << log(doc);
    else
      EXPECT_NE(log(doc).find("PermissionError"), std::string::npos) << log(doc);
  }
  // The spares left for a next evaluation end with the zygote, and leave nothing:
  // once they are made (their scratch folders hold $TMPDIR; a zygote killed while
  // it makes one leaves that folder, the zygote's own business).
  auto spares_ready = [&] {
    int n = 0;
    for (const auto& e : fs::directory_iterator(dir_ / "staging")) n += fs::exists(e.path() / "tmp");
    return n;
  };
  for (int i = 0; i < 200 && spares_ready() < 2; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ::kill(zygote, SIGKILL);
  ::waitpid(zygote, nullptr, 0);
  for (int i = 0; i < 100 && !fs::is_empty(dir_ / "staging"); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  expect_nothing_left();
}

TEST_F(WorkerLitter, WithoutAPrivateTmpfsDevShmIsNotWritableAndTmpdirIsRemoved) {
  // The fallback where no mount namespace can be made, forced (diagnosis knob).
  if (!landlock()) GTEST_SKIP() << "no Landlock: /dev/shm would be writable";
  ScopedEnv off("SOLBENCH_WORKER_PRIVATE_TMP", "0");
  json doc = eval(solution("fallback", source(R"(    try:
        open('/dev/shm/' + RUN, 'w').write('x')
        raise RuntimeError('wrote /dev/shm/' + RUN)
    except PermissionError:
        pass
    fill(os.path.join(os.environ['TMPDIR'], RUN), 16 << 20))")));
  ASSERT_FALSE(doc.empty());
  const json p = private_tmp(doc);
  EXPECT_EQ(p.value("dev_shm", ""), "not writable") << p.dump();
  EXPECT_EQ(p.value("tmp", ""), "scratch folder");
  EXPECT_EQ(status(doc), "PASSED") << log(doc);
  expect_nothing_left();
}

}  // namespace
}  // namespace solbench
