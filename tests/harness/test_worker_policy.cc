// The parent's side of the worker sandbox: which programs a worker may run, where
// it may write, and the compile caches it is given (harness/worker_policy.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <cstdlib>
#include <fstream>

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
  EXPECT_EQ(a.at("writable"), json::array({"/dev/shm"}));
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
  req.device = "cuda:0";
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
  std::ofstream(scratch / "unrelated.txt") << "x";

  EXPECT_EQ(lend_caches(plan, scratch), 2);
  EXPECT_TRUE(fs::exists(scratch / "jit" / "triton" / "abc" / "kernel.cubin"));
  EXPECT_TRUE(fs::is_empty(cache));
  // A second worker of the same content meanwhile finds nothing to borrow.
  const fs::path other = dir_ / "worker-2";
  fs::create_directories(other);
  EXPECT_EQ(lend_caches(plan, other), 0);

  // The worker compiled something new; all of it goes back, and only the caches.
  std::ofstream(scratch / "jit" / "triton" / "abc" / "new.json") << "{}";
  EXPECT_EQ(take_back_caches(plan, scratch), 2);
  EXPECT_TRUE(fs::exists(cache / "triton" / "abc" / "new.json"));
  EXPECT_TRUE(fs::exists(scratch / "unrelated.txt"));
  EXPECT_FALSE(fs::exists(cache / "unrelated.txt"));
  // The other worker's copy of a name already back stays with that worker.
  fs::create_directories(other / "jit" / "triton" / "x");
  EXPECT_EQ(take_back_caches(plan, other), 0);
  EXPECT_FALSE(fs::exists(cache / "triton" / "x"));
  // No cache named: nothing moves.
  EXPECT_EQ(lend_caches(json::object(), scratch), 0);
}

}  // namespace
}  // namespace solbench::harness
