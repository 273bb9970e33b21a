// The parent's side of the worker sandbox: which programs a worker may run, where
// it may write, and the compile caches it is given (harness/worker_policy.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <cstdlib>
#include <fstream>
#include <iterator>

#include <sys/stat.h>
#include <unistd.h>

#include "harness/worker/worker_policy.h"
#include "test_support.h"

namespace solbench::harness {
namespace {

namespace fs = std::filesystem;

class WorkerPolicy : public ::testing::Test {
 protected:
  fs::path script(const std::string& name, const std::string& text) {
    const fs::path p = tmp_.write(name, text);
    fs::permissions(p, fs::perms::owner_all);
    return p;
  }
  testing::TempDir tmp_;
  const fs::path& dir_ = tmp_.path();
};

TEST_F(WorkerPolicy, AWrapperScriptIsSeenThroughToTheProgramItRuns) {
  // The shape of a compiler installed under /opt with a wrapper in front of it.
  const std::string elf = fs::canonical("/bin/true").string();
  EXPECT_EQ(wrapper_target(script("gcc", "#!/bin/sh\nexec " + elf + " \"$@\"\n")), elf);
  EXPECT_EQ(wrapper_target(script("q", "#!/bin/sh\n# comment\nexec '" + elf + "' -x \"$@\"\n")), elf);
  // Not wrappers: an ELF program, a script that runs another script, no exec at all.
  EXPECT_EQ(wrapper_target(elf), "");
  const fs::path inner = script("inner", "#!/bin/sh\necho hi\n");
  EXPECT_EQ(wrapper_target(script("outer", "#!/bin/sh\nexec " + inner.string() + "\n")), "");
  EXPECT_EQ(wrapper_target(inner), "");
  // The fixed arguments come along; what only the shell could expand does not pass.
  EXPECT_EQ(wrapper_command(script("g2", "#!/bin/sh\nexec " + elf + " -B/opt/x/ -isystem '/a b' \"$@\"\n")),
            (std::vector<std::string>{elf, "-B/opt/x/", "-isystem", "/a b"}));
  EXPECT_TRUE(wrapper_command(script("g3", "#!/bin/sh\nexec " + elf + " -B$HOME \"$@\"\n")).empty());
}

TEST_F(WorkerPolicy, ACcThatNamesAWrapperScriptIsReplacedByTheCompilerItRuns) {
  // The GPU machine's shape: CC=/opt/gcc/bin/gcc, a `#!/bin/sh` wrapper. Triton runs
  // $CC; the wrapper would need the shell, so workers get the real compiler instead.
  // find_toolchains probes once per process: the check runs in a fresh one.
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const std::string real = fs::canonical("/usr/bin/gcc").string();
  const fs::path wrap = script("gcc", "#!/bin/sh\nexec " + real + " \"$@\"\n");
  EXPECT_EXIT(
      {
        ::setenv("CC", wrap.c_str(), 1);
        WorkerPolicyRequest req;
        req.jit_root = dir_ / "jit";
        req.kind = EntryKind::Python;
        const json plan = worker_sandbox_plan(req);
        const auto exe = plan.at("executable").get<std::vector<std::string>>();
        const bool listed = std::find(exe.begin(), exe.end(), real) != exe.end();
        const bool wrapper_listed = std::find(exe.begin(), exe.end(), wrap.string()) != exe.end();
        std::exit(plan.at("env").value("CC", "") == real && listed && !wrapper_listed ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
  // With fixed arguments (-B, -isystem: the GPU machine's wrapper), CC becomes a
  // link to solbench-ccwrap, which runs the compiler with them: a C file compiles.
  const fs::path wrap2 = script("gcc2", "#!/bin/sh\nexec " + real + " -DFROM_WRAPPER=1 \"$@\"\n");
  const fs::path src = tmp_.write("t.c", "#ifndef FROM_WRAPPER\n#error no fixed argument\n#endif\nint f(void){return 1;}\n");
  EXPECT_EXIT(
      {
        ::setenv("CC", wrap2.c_str(), 1);
        ::setenv("SOLBENCH_CACHE_DIR", (dir_ / "cache").c_str(), 1);
        ::setenv("SOLBENCH_CCWRAP", SOLBENCH_CCWRAP_PATH, 1);
        const Toolchains tc = find_toolchains();
        std::string cc;
        for (const auto& [k, v] : tc.env)
          if (k == "CC") cc = v;
        if (cc.empty() || fs::canonical(cc) != fs::canonical(SOLBENCH_CCWRAP_PATH)) std::exit(2);
        const std::string cmd = cc + " -c " + src.string() + " -o " + (dir_ / "t.o").string();
        std::exit(std::system(cmd.c_str()) == 0 && fs::exists(dir_ / "t.o") ? 0 : 3);
      },
      ::testing::ExitedWithCode(0), "");
  // A CC that is a program stays as it is.
  EXPECT_EXIT(
      {
        ::setenv("CC", real.c_str(), 1);
        const Toolchains tc = find_toolchains();
        const bool cc_set = std::any_of(tc.env.begin(), tc.env.end(),
                                        [](const auto& kv) { return kv.first == "CC"; });
        std::exit(cc_set ? 1 : 0);
      },
      ::testing::ExitedWithCode(0), "");
}

// Where a driver keeps cc1, as and ld (`-print-prog-name`) is asked once per driver
// and remembered in the build cache under the driver's identity: a new evaluation's
// process runs no compiler for its workers' sandbox plans. A changed driver, or
// another cache, asks again. (find_toolchains memoises per process: each look runs
// in a fresh one.)
TEST_F(WorkerPolicy, TheDriversProgramsAreAskedOnceAndRememberedInTheBuildCache) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  // The child of a threadsafe death test runs this test again from its start, with a
  // temporary folder of its own: what it must share comes through the environment,
  // which only the parent (the process that set SOLBENCH_TEST_PARENT) writes.
  if (!std::getenv("SOLBENCH_TEST_PARENT"))
    ::setenv("SOLBENCH_TEST_PARENT", std::to_string(::getpid()).c_str(), 1);
  const bool parent = std::getenv("SOLBENCH_TEST_PARENT") == std::to_string(::getpid());
  const fs::path runs = dir_ / "runs";
  // Not a wrapper (no exec): the driver is the script itself.
  const fs::path cc =
      script("countcc", "#!/bin/sh\necho run >> '" + runs.string() + "'\n/usr/bin/gcc \"$@\"\n");
  const auto look = [&](const fs::path& cache) {
    if (parent) {
      ::setenv("SOLBENCH_TEST_CC", cc.c_str(), 1);
      ::setenv("SOLBENCH_TEST_CACHE", cache.c_str(), 1);
    }
    EXPECT_EXIT(
        {
          ::setenv("CC", std::getenv("SOLBENCH_TEST_CC"), 1);
          ::setenv("SOLBENCH_CACHE_DIR", std::getenv("SOLBENCH_TEST_CACHE"), 1);
          const Toolchains tc = find_toolchains();
          std::exit(tc.executables.empty() ? 1 : 0);
        },
        ::testing::ExitedWithCode(0), "");
  };
  const auto count = [&] {
    std::ifstream in(runs);
    return std::count(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>(), '\n');
  };
  look(dir_ / "cache");
  EXPECT_EQ(count(), 3);  // cc1, as, ld
  look(dir_ / "cache");
  EXPECT_EQ(count(), 3);  // remembered
  look(dir_ / "other-cache");
  EXPECT_EQ(count(), 6);
  std::ofstream(cc, std::ios::app) << "# changed\n";  // another size: another driver
  look(dir_ / "cache");
  EXPECT_EQ(count(), 9);
  for (const char* v : {"SOLBENCH_TEST_CC", "SOLBENCH_TEST_CACHE", "SOLBENCH_TEST_PARENT"})
    ::unsetenv(v);
}

TEST_F(WorkerPolicy, PythonWorkersMayRunTheCompilerChainButNoShell) {
  const Toolchains tc = find_toolchains();
  auto listed = [&](const std::string& p) {
    const std::string real = fs::canonical(p).string();
    return std::any_of(tc.executables.begin(), tc.executables.end(), [&](const std::string& e) {
      return real == e || real.rfind(e + "/", 0) == 0;
    });
  };
  ASSERT_TRUE(fs::exists("/usr/bin/cc")) << "CI installs build-essential";
  EXPECT_TRUE(listed("/usr/bin/cc"));
  EXPECT_TRUE(listed("/lib64/ld-linux-x86-64.so.2"));  // every dynamic program needs it
  EXPECT_FALSE(listed("/bin/sh"));
  EXPECT_FALSE(listed("/usr/bin/python3"));
  EXPECT_FALSE(listed("/usr/bin/env"));
}

TEST_F(WorkerPolicy, NativeWorkersRunNothingAndEverySolutionHasItsOwnCaches) {
  WorkerPolicyRequest req;
  req.jit_root = dir_ / "jit";
  req.kind = EntryKind::Native;
  req.content = "solution A";
  const json native = worker_sandbox_plan(req);
  EXPECT_TRUE(native.at("deny_process_creation").get<bool>());
  EXPECT_TRUE(native.at("executable").empty());
  EXPECT_TRUE(native.at("restrict_fs").get<bool>());

  req.kind = EntryKind::Python;
  const json a = worker_sandbox_plan(req);
  EXPECT_FALSE(a.at("deny_process_creation").get<bool>());
  EXPECT_FALSE(a.at("executable").empty());
  // The caches are lent into the worker's scratch folder: the plan's writable
  // folders and environment name nothing of the solution.
  EXPECT_EQ(a.at("jit"), "scratch");
  const std::string cache = a.at("jit_cache").get<std::string>();
  EXPECT_TRUE(fs::is_directory(cache));
  EXPECT_EQ(fs::path(cache).parent_path(), dir_ / "jit");
  // /dev/shm is the worker's own where it can have one (it adds it then).
  EXPECT_EQ(a.at("writable"), json::array());
  EXPECT_EQ(a.at("limits").at("tmp_bytes").get<uint64_t>(), WorkerLimits{}.tmp_bytes);
  EXPECT_EQ(a.at("limits").at("jit_cache_bytes").get<uint64_t>(), WorkerLimits{}.jit_cache_bytes);
  EXPECT_EQ(native.at("limits"), a.at("limits"));  // every kind of worker alike
  EXPECT_FALSE(a.at("env").contains("TRITON_CACHE_DIR"));
  EXPECT_EQ(without_jit_cache(a).count("jit_cache"), 0u);
  // Same content, same folder; other content or another device kind, another one.
  EXPECT_EQ(worker_sandbox_plan(req).at("jit_cache"), a.at("jit_cache"));
  req.content = "solution B";
  const json b = worker_sandbox_plan(req);
  EXPECT_NE(b.at("jit_cache"), a.at("jit_cache"));
  // ... and two solutions of one kind get the same sandbox (a spare serves both).
  EXPECT_EQ(without_jit_cache(b), without_jit_cache(a));
  req.content = "solution A";
  req.device = Device::cuda(0);
  EXPECT_NE(worker_sandbox_plan(req).at("jit_cache"), a.at("jit_cache"));
}

TEST_F(WorkerPolicy, CachesAreLentToTheWorkersScratchFolderAndTakenBack) {
  WorkerPolicyRequest req;
  req.jit_root = dir_ / "jit";
  req.content = "solution A";
  const json plan = worker_sandbox_plan(req);
  const fs::path cache = plan.at("jit_cache").get<std::string>();
  fs::create_directories(cache / "triton" / "abc");
  std::ofstream(cache / "triton" / "abc" / "kernel.cubin") << "cubin";
  fs::create_directories(cache / "inductor");
  const fs::path scratch = dir_ / "worker-1";
  fs::create_directories(scratch / kScratchJitFolder / "inductor");  // made by a spare: empty
  // What a spare's warm-up wrote into its own Triton folder (a launcher) is moved aside.
  fs::create_directories(scratch / kScratchJitFolder / "triton" / "launcher");
  std::ofstream(scratch / kScratchJitFolder / "triton" / "launcher" / "l.so") << "so";
  std::ofstream(scratch / "unrelated.txt") << "x";

  EXPECT_EQ(lend_caches(plan, scratch), 2);
  EXPECT_TRUE(fs::exists(scratch / "jit" / "triton" / "abc" / "kernel.cubin"));
  EXPECT_FALSE(fs::exists(scratch / "jit" / "triton" / "launcher"));
  EXPECT_TRUE(fs::exists(scratch / "jit" / "triton.before-lend" / "launcher" / "l.so"));
  EXPECT_TRUE(fs::is_empty(cache));
  // A second worker of the same content meanwhile finds nothing to borrow.
  const fs::path other = dir_ / "worker-2";
  fs::create_directories(other);
  EXPECT_EQ(lend_caches(plan, other), 0);

  // The worker compiled something new; all of it goes back, and only the caches.
  std::ofstream(scratch / "jit" / "triton" / "abc" / "new.json") << "{}";
  EXPECT_EQ(take_back_caches(plan, scratch), 2);
  EXPECT_TRUE(fs::exists(cache / "triton" / "abc" / "new.json"));
  EXPECT_FALSE(fs::exists(cache / "triton.before-lend"));
  EXPECT_FALSE(fs::exists(cache / "triton" / "launcher"));
  EXPECT_TRUE(fs::exists(scratch / "unrelated.txt"));
  EXPECT_FALSE(fs::exists(cache / "unrelated.txt"));
  // The other worker's copy of a name already back stays with that worker.
  fs::create_directories(other / "jit" / "triton" / "x");
  EXPECT_EQ(take_back_caches(plan, other), 0);
  EXPECT_FALSE(fs::exists(cache / "triton" / "x"));
  // No cache named: nothing moves.
  EXPECT_EQ(lend_caches(json::object(), scratch), 0);
}

// Sets an environment variable for one scope.
struct ScopedEnv {
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_.empty()) ::unsetenv(name_);
    else ::setenv(name_, old_.c_str(), 1);
  }
  const char* name_;
  std::string old_;
};

TEST(WorkerLimitsTest, SizesAreReadFromTheEnvironmentOrRefusedWithTheVariablesName) {
  EXPECT_EQ(parse_byte_size("4096"), 4096u);
  EXPECT_EQ(parse_byte_size("512M"), 512ull << 20);
  EXPECT_EQ(parse_byte_size("2g"), 2ull << 30);
  EXPECT_EQ(parse_byte_size("1GiB"), 1ull << 30);
  EXPECT_EQ(parse_byte_size("3KB"), 3072u);
  for (const char* bad : {"", "0", "-1", "1.5G", "12X", "G", "1 G", "99999999999999999999", "16777216T"})
    EXPECT_FALSE(parse_byte_size(bad)) << bad;
  EXPECT_EQ(byte_size_text(1ull << 30), "1 GiB");
  EXPECT_EQ(byte_size_text(3ull << 29), "1.5 GiB");
  EXPECT_EQ(byte_size_text(100), "100 bytes");
  {
    ScopedEnv tmp("SOLBENCH_WORKER_TMP_LIMIT", "256M");
    ScopedEnv jit("SOLBENCH_JIT_CACHE_LIMIT", "3G");
    EXPECT_EQ(worker_limits().tmp_bytes, 256ull << 20);
    EXPECT_EQ(worker_limits().jit_cache_bytes, 3ull << 30);
  }
  ScopedEnv bad("SOLBENCH_JIT_CACHE_LIMIT", "lots");
  try {
    worker_limits();
    FAIL() << "accepted 'lots'";
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("SOLBENCH_JIT_CACHE_LIMIT='lots'"), std::string::npos) << what;
    EXPECT_NE(what.find("expected a size in bytes"), std::string::npos) << what;
  }
  WorkerPolicyRequest req;
  testing::TempDir dir;
  req.jit_root = dir.path() / "jit";
  EXPECT_THROW(worker_sandbox_plan(req), std::runtime_error);
}

class CacheTakeBack : public WorkerPolicy {
 protected:
  json plan(uint64_t limit) {
    WorkerPolicyRequest req;
    req.jit_root = dir_ / "cache" / "jit";
    req.kind = EntryKind::Native;  // no toolchain probe needed
    req.content = "solution A";
    json p = worker_sandbox_plan(req);
    p["limits"]["jit_cache_bytes"] = limit;
    return p;
  }
  static void write_bytes(const fs::path& p, size_t n) {
    fs::create_directories(p.parent_path());
    std::ofstream(p) << std::string(n, 'x');
  }
  // Nothing of a take-back is left beside the scratch folder.
  void expect_nothing_held() {
    for (const auto& e : fs::directory_iterator(dir_))
      EXPECT_EQ(e.path().filename().string().find(".jit-"), std::string::npos) << e.path();
  }
  const fs::path scratch_ = dir_ / "worker-1";
  const fs::path jit_ = scratch_ / kScratchJitFolder;
};

TEST_F(CacheTakeBack, OnlyFoldersAndPlainFilesOfTheToolchainsFoldersAreKept) {
  const json p = plan(1 << 20);
  const fs::path cache = p.at("jit_cache").get<std::string>();
  write_bytes(jit_ / "triton" / "abc" / "kernel.cubin", 1000);
  write_bytes(jit_ / "inductor" / "fx" / "graph.py", 10);
  write_bytes(jit_ / "stray.txt", 10);             // not a toolchain's folder
  write_bytes(jit_ / "other" / "x", 10);           // nor this
  write_bytes(jit_ / ".triton" / "dump" / "x", 10);
  fs::create_symlink("/etc/passwd", jit_ / "triton" / "abc" / "passwd");
  fs::create_directory_symlink("/etc", jit_ / "cuda");   // a toolchain's name, a link
  // A second name for a file outside the caches (in the scratch folder).
  write_bytes(scratch_ / "outside", 10);
  fs::create_hard_link(scratch_ / "outside", jit_ / "triton" / "abc" / "a");
  ASSERT_EQ(::mkfifo((jit_ / "triton" / "fifo").c_str(), 0600), 0);
  fs::path deep = jit_ / "xdg";
  for (int i = 0; i < kMaxCacheDepth + 3; ++i) deep /= "d";
  write_bytes(deep / "too-deep", 10);
  write_bytes(jit_ / "xdg" / "locked" / "kept", 10);
  fs::permissions(jit_ / "xdg" / "locked", fs::perms::none);  // the parent reads it anyway

  EXPECT_EQ(take_back_caches(p, scratch_), 3);  // triton, inductor, xdg
  EXPECT_TRUE(fs::exists(cache / "triton" / "abc" / "kernel.cubin"));
  EXPECT_TRUE(fs::exists(cache / "inductor" / "fx" / "graph.py"));
  EXPECT_TRUE(fs::exists(cache / "xdg" / "locked" / "kept"));
  EXPECT_FALSE(fs::exists(fs::symlink_status(cache / "triton" / "abc" / "passwd")));
  EXPECT_FALSE(fs::exists(fs::symlink_status(cache / "cuda")));
  EXPECT_FALSE(fs::exists(cache / "triton" / "abc" / "a"));
  EXPECT_TRUE(fs::exists(scratch_ / "outside"));
  EXPECT_FALSE(fs::exists(fs::symlink_status(cache / "triton" / "fifo")));
  EXPECT_FALSE(fs::exists(cache / "stray.txt"));
  EXPECT_FALSE(fs::exists(cache / "other"));
  EXPECT_FALSE(fs::exists(cache / ".triton"));
  size_t depth = 0;
  for (fs::path d = cache / "xdg"; fs::is_directory(d / "d"); d /= "d") ++depth;
  EXPECT_LT(depth, static_cast<size_t>(kMaxCacheDepth));
  EXPECT_FALSE(fs::exists(jit_));  // taken out of the scratch folder
  expect_nothing_held();
  EXPECT_TRUE(fs::exists("/etc/passwd"));  // links were dropped, never followed
}

TEST_F(CacheTakeBack, OverTheLimitNothingIsKeptAndTheWorkloadFailsSayingSo) {
  const json p = plan(64 << 10);
  const fs::path cache = p.at("jit_cache").get<std::string>();
  // Under the limit: kept, and the workload's outcome stands.
  write_bytes(jit_ / "triton" / "k" / "small", 30 << 10);
  WorkloadOutcome passed;
  passed.status = Status::Passed;
  passed.timing.emplace();
  check_worker_writes(p, json::object(), scratch_, passed);
  EXPECT_EQ(passed.status, Status::Passed);
  EXPECT_TRUE(passed.log.empty());
  // Over it: the workload fails naming the folder and the limit...
  write_bytes(jit_ / "inductor" / "big", 40 << 10);
  WorkloadOutcome o;
  o.status = Status::Passed;
  o.timing.emplace();
  o.log = "the solution's prints";
  check_worker_writes(p, json::object(), scratch_, o);
  EXPECT_EQ(o.status, Status::RuntimeError);
  EXPECT_FALSE(o.timing);
  EXPECT_NE(o.log.find("over their limit of 64 KiB (SOLBENCH_JIT_CACHE_LIMIT)"), std::string::npos) << o.log;
  EXPECT_NE(o.log.find(jit_.string()), std::string::npos) << o.log;
  EXPECT_NE(o.log.find("the solution's prints"), std::string::npos);
  WorkloadOutcome hack;
  hack.status = Status::RewardHack;
  check_worker_writes(p, json::object(), scratch_, hack);
  EXPECT_EQ(hack.status, Status::RewardHack);  // the graver verdict stands
  // ... and nothing of the caches is kept.
  EXPECT_EQ(take_back_caches(p, scratch_), 0);
  EXPECT_TRUE(fs::is_empty(cache));
  EXPECT_FALSE(fs::exists(jit_));
  expect_nothing_held();
  // Many empty files count too (a block each).
  for (int i = 0; i < 20; ++i) write_bytes(jit_ / "xdg" / std::to_string(i), 0);
  EXPECT_EQ(take_back_caches(p, scratch_), 0);
  EXPECT_TRUE(fs::is_empty(cache));
}

TEST_F(CacheTakeBack, AFullPrivateTmpfsIsNamedWithItsSize) {
  const json p = plan(1 << 20);
  const json report = {{"private_tmp",
                        {{"tmp", "private tmpfs"}, {"dev_shm", "private tmpfs"}, {"tmp_bytes", 1 << 30}}}};
  WorkloadOutcome o;
  o.status = Status::RuntimeError;
  o.log = "OSError: [Errno 28] No space left on device";
  check_worker_writes(p, report, scratch_, o);
  EXPECT_EQ(o.status, Status::RuntimeError);
  EXPECT_NE(o.log.find("$TMPDIR (" + (scratch_ / "tmp").string() + ") and /dev/shm share a private tmpfs of 1 GiB (SOLBENCH_WORKER_TMP_LIMIT)"),
            std::string::npos)
      << o.log;
  // Without a private tmpfs the disk was full: nothing to add.
  WorkloadOutcome fallback;
  fallback.log = "OSError: [Errno 28] No space left on device";
  check_worker_writes(p, {{"private_tmp", {{"tmp", "scratch folder"}, {"dev_shm", "not writable"}}}},
                      scratch_, fallback);
  EXPECT_EQ(fallback.log, "OSError: [Errno 28] No space left on device");
  WorkloadOutcome other;
  other.log = "ValueError: nothing about space";
  check_worker_writes(p, report, scratch_, other);
  EXPECT_EQ(other.log, "ValueError: nothing about space");
}

}  // namespace
}  // namespace solbench::harness
