// The worker sandbox as a Python solution meets it, through the real binary on the
// bundled RMSNorm problem (CPU): the toolchains it may run, what it may not run,
// processes it leaves behind, the network, where it may write, and the compile
// caches that persist between evaluations. Every solution below computes a correct
// RMSNorm after its probe, so a probe that wrongly succeeded would read PASSED.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "python_solution_eval.h"

namespace solbench {
namespace {

namespace fs = std::filesystem;
using testing::kB1;
using testing::kB2;
using testing::pytorch_source;
using testing::read;
using SandboxEval = testing::PythonSolutionEval;

TEST_F(SandboxEval, TheCCompilerRunsInsideTheSandbox) {
  // What Triton does to build its launcher, and Inductor to build C++.
  json doc = eval(solution("cc", pytorch_source(
      "subprocess.run(['cc', '--version'], check=True, capture_output=True)", "")));
  ASSERT_FALSE(doc.empty());
  EXPECT_EQ(status(doc), "PASSED") << log(doc);
  if (landlock()) {
    const json& fs = doc.at("sandbox").at("filesystem");
    EXPECT_TRUE(fs.at("exec_restricted").get<bool>()) << doc["sandbox"].dump(2);
    EXPECT_TRUE(fs.at("writes_restricted").get<bool>());
    EXPECT_FALSE(doc.at("sandbox").at("process_creation_denied").get<bool>());
  }
}

TEST_F(SandboxEval, AShellIsRefusedWithAMessageThatSaysWhy) {
  json doc = eval(solution("sh", pytorch_source("", "    subprocess.run(['/bin/sh', '-c', 'true'])")));
  ASSERT_FALSE(doc.empty());
  EXPECT_EQ(status(doc), "RUNTIME_ERROR");
  EXPECT_NE(log(doc).find("solbench sandbox: running"), std::string::npos) << log(doc);
  EXPECT_NE(log(doc).find("not allowed"), std::string::npos) << log(doc);
  // Spelled so that the static look (static_check.py) does not see it: the sandbox
  // must stand on its own.
  json doc2 = eval(solution("system", pytorch_source(
      "", "    getattr(os, 'sys' + 'tem')('curl http://example.com')")));
  ASSERT_FALSE(doc2.empty());
  EXPECT_EQ(status(doc2), "RUNTIME_ERROR");
  EXPECT_NE(log(doc2).find("a shell command"), std::string::npos) << log(doc2);
}

TEST_F(SandboxEval, ExecBehindPythonsBackIsRefusedByTheKernel) {
  if (!landlock()) GTEST_SKIP() << "no Landlock in this kernel";
  // libc's execv in a forked child: no audit hook sees it; Landlock does.
  const std::string probe = R"(
import ctypes, errno
libc = ctypes.CDLL(None, use_errno=True)
pid = getattr(os, 'fo' + 'rk')()  # hidden from the static look
if pid == 0:
    argv = (ctypes.c_char_p * 3)(b'/bin/sh', b'-c', None)
    argv[1] = b'true'
    libc.execv(b'/bin/sh', argv)
    os._exit(100 + ctypes.get_errno())
_, st = os.waitpid(pid, 0)
code = os.waitstatus_to_exitcode(st)
if code == 100 + errno.EACCES:
    raise RuntimeError('kernel refused exec: EACCES')
)";
  json doc = eval(solution("execv", pytorch_source(probe, "")));
  ASSERT_FALSE(doc.empty());
  EXPECT_EQ(status(doc), "RUNTIME_ERROR");
  EXPECT_NE(log(doc).find("kernel refused exec: EACCES"), std::string::npos) << log(doc);
  // The solution itself (the worker binary) is no more executable than a shell.
  json self = eval(solution("self", pytorch_source(
      "", "    subprocess.run([os.readlink('/proc/self/exe'), '--version'])")));
  ASSERT_FALSE(self.empty());
  EXPECT_EQ(status(self), "RUNTIME_ERROR");
  EXPECT_NE(log(self).find("not allowed"), std::string::npos) << log(self);
}

TEST_F(SandboxEval, AProcessLeftRunningIsARewardHackThatNamesIt) {
  // A forked copy keeps running after the call; the worker restarts for the next
  // workload, whose fresh worker forks again and is caught again.
  json doc = eval(solution("fork", pytorch_source("", R"(    if getattr(os, 'fo' + 'rk')() == 0:
        import time
        time.sleep(60)
        os._exit(0))")),
                  std::string(" -w ") + kB1 + " -w " + kB2);
  ASSERT_FALSE(doc.empty());
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(status(doc, i), "REWARD_HACK") << log(doc, i);
    EXPECT_NE(log(doc, i).find("left 1 process(es) running after a call"), std::string::npos)
        << log(doc, i);
  }
  // The tool a solution starts is named too.
  json tool = eval(solution("cat", pytorch_source(
      "_keep = []", "    _keep.append(subprocess.Popen(['cc', '-E', '-x', 'c', '-'], stdin=subprocess.PIPE))")));
  ASSERT_FALSE(tool.empty());
  EXPECT_EQ(status(tool), "REWARD_HACK") << log(tool);
  EXPECT_NE(log(tool).find("cc -E -x c -"), std::string::npos) << log(tool);
}

TEST_F(SandboxEval, TheNetworkIsClosed) {
  json doc = eval(solution("net", pytorch_source(
      "s = __import__('soc' + 'ket')\ns.socket(s.AF_INET, s.SOCK_STREAM)", "")));
  ASSERT_FALSE(doc.empty());
  EXPECT_EQ(status(doc), "RUNTIME_ERROR");
  EXPECT_NE(log(doc).find("PermissionError"), std::string::npos) << log(doc);
}

TEST_F(SandboxEval, NoWritesOutsideScratchAndCaches) {
  if (!landlock()) GTEST_SKIP() << "no Landlock in this kernel";
  // Each target is tried; the solution raises naming the first that was writable.
  const std::string probe = "targets = " +
                            json::array({(problem_ / "planted.txt").string(),
                                         (dir_ / "cache" / "builds" / "planted.txt").string(),
                                         "/tmp/solbench-planted.txt"})
                                .dump() +
                            R"(
for t in targets:
    try:
        with open(t, 'w') as f:
            f.write('x')
    except PermissionError:
        continue
    raise RuntimeError('wrote ' + t)
open('scratch-ok.txt', 'w').write('fine')   # the scratch folder is the solution's
with open(os.path.join(os.environ['TMPDIR'], 't'), 'w') as f:
    f.write('fine')
)";
  fs::create_directories(dir_ / "cache" / "builds");
  const std::string before = read(problem_ / "definition.json");
  json doc = eval(solution("writer", pytorch_source(probe, "")));
  ASSERT_FALSE(doc.empty());
  EXPECT_EQ(status(doc), "PASSED") << log(doc);
  EXPECT_FALSE(fs::exists(problem_ / "planted.txt"));
  EXPECT_FALSE(fs::exists("/tmp/solbench-planted.txt"));
  EXPECT_EQ(read(problem_ / "definition.json"), before);
}

TEST_F(SandboxEval, CompileCachesPersistPerSolution) {
  // Counts its own evaluations in the Triton cache folder the worker points it at.
  const std::string counter = R"(
d = os.environ['TRITON_CACHE_DIR']
p = os.path.join(d, 'count')
n = int(open(p).read()) if os.path.exists(p) else 0
open(p, 'w').write(str(n + 1))
)";
  const fs::path a = solution("cache_a", pytorch_source(counter, ""));
  ASSERT_EQ(status(eval(a)), "PASSED");
  ASSERT_EQ(status(eval(a)), "PASSED");
  const fs::path b = solution("cache_b", pytorch_source(counter + "# another solution\n", ""));
  ASSERT_EQ(status(eval(b)), "PASSED");
  std::vector<std::string> counts;
  for (const auto& e : fs::directory_iterator(dir_ / "cache" / "jit"))
    if (fs::exists(e.path() / "triton" / "count")) counts.push_back(read(e.path() / "triton" / "count"));
  std::sort(counts.begin(), counts.end());
  // Two folders: solution a's, seen twice, and b's, seen once.
  EXPECT_EQ(counts, (std::vector<std::string>{"1", "2"}));
}

}  // namespace
}  // namespace solbench
