// The worker sandbox, observed from outside: sandbox_probe applies it to itself and
// reports the errno of each forbidden (and each still-allowed) attempt.
#include <gtest/gtest.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <unistd.h>

#include "harness/process.h"
#include "test_util.h"
#include "harness/worker/landlock.h"
#include "harness/worker/sandbox.h"

namespace solbench::harness {
namespace {

json run_probe(std::vector<std::string> args) {
  args.insert(args.begin(), SANDBOX_PROBE);
  CommandResult r = run_command(args, with_timeout(std::chrono::seconds(30)));
  EXPECT_TRUE(r.ok()) << r.status.describe() << "\n" << r.spawn_error << r.output;
  // The JSON is the last line (libseccomp may not print anything, but be lenient).
  std::string out = r.output;
  while (!out.empty() && out.back() == '\n') out.pop_back();
  const size_t nl = out.rfind('\n');
  return json::parse(nl == std::string::npos ? out : out.substr(nl + 1));
}

class SandboxTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!seccomp_compiled_in()) GTEST_SKIP() << "built without libseccomp";
  }
};

TEST_F(SandboxTest, ReportSaysWhatWasApplied) {
  json j = run_probe({});
  const json& rep = j.at("report");
  EXPECT_TRUE(rep.at("seccomp").get<bool>()) << rep.dump(2);
  EXPECT_TRUE(rep.at("core_dumps_off").get<bool>());
  EXPECT_TRUE(rep.at("no_new_privs").get<bool>());
  EXPECT_TRUE(rep.at("network_blocked").get<bool>());
  EXPECT_NE(rep.at("network_isolation").get<std::string>(), "none");
  EXPECT_TRUE(rep.at("process_creation_denied").get<bool>());
  const auto denied = rep.at("denied_syscalls").get<std::vector<std::string>>();
  for (const char* name : {"ptrace", "process_vm_writev", "process_vm_readv", "mount", "bpf",
                           "kexec_load", "unshare", "setns", "keyctl", "userfaultfd"})
    EXPECT_NE(std::find(denied.begin(), denied.end(), name), denied.end()) << name;
  // CUPTI-style profilers keep working.
  EXPECT_EQ(std::find(denied.begin(), denied.end(), "perf_event_open"), denied.end());
  // Either a private namespace ("netns"/"userns+netns") or a reason in the notes.
  if (rep.at("network_namespace").is_null())
    EXPECT_FALSE(rep.at("notes").empty()) << rep.dump(2);
  else
    EXPECT_NE(rep.at("network_namespace").get<std::string>().find("netns"), std::string::npos);
}

TEST_F(SandboxTest, InternetSocketsRefusedUnixAllowed) {
  json a = run_probe({}).at("attempts");
  EXPECT_EQ(a.at("socket_inet").get<int>(), EPERM);
  EXPECT_EQ(a.at("socket_inet6").get<int>(), EPERM);
  EXPECT_EQ(a.at("socket_netlink").get<int>(), EPERM);
  EXPECT_EQ(a.at("socket_unix").get<int>(), 0);
  EXPECT_EQ(a.at("socketpair_unix").get<int>(), 0);
}

TEST_F(SandboxTest, UnixIpcOnlyWhenAskedFor) {
  json refused = run_probe({}).at("attempts");
  EXPECT_EQ(refused.at("connect_unix").get<int>(), EPERM);
  EXPECT_EQ(refused.at("bind_unix").get<int>(), EPERM);
  // CUDA workers: the calls reach the kernel (the path does not exist), the rest holds.
  json j = run_probe({"--unix-ipc"});
  EXPECT_EQ(j.at("attempts").at("connect_unix").get<int>(), ENOENT);
  EXPECT_EQ(j.at("attempts").at("bind_unix").get<int>(), 0);
  EXPECT_EQ(j.at("attempts").at("socket_inet").get<int>(), EPERM);
  EXPECT_EQ(j.at("attempts").at("ptrace_attach_parent").get<int>(), EPERM);
  const auto denied = j.at("report").at("denied_syscalls").get<std::vector<std::string>>();
  for (const char* name : {"connect", "bind", "listen", "accept"})
    EXPECT_EQ(std::find(denied.begin(), denied.end(), name), denied.end()) << name;
  EXPECT_NE(std::find(denied.begin(), denied.end(), "ptrace"), denied.end());
}

TEST_F(SandboxTest, OtherProcessesAreOutOfReach) {
  json a = run_probe({}).at("attempts");
  EXPECT_EQ(a.at("ptrace_attach_parent").get<int>(), EPERM);
  EXPECT_EQ(a.at("process_vm_writev_parent").get<int>(), EPERM);
  EXPECT_EQ(a.at("process_vm_readv_parent").get<int>(), EPERM);
  EXPECT_EQ(a.at("kill_parent_sig0").get<int>(), EPERM);
  EXPECT_EQ(a.at("kill_self_sig0").get<int>(), 0);
  EXPECT_EQ(a.at("fork").get<int>(), EPERM);
}

TEST_F(SandboxTest, SystemAdministrationRefused) {
  json a = run_probe({}).at("attempts");
  for (const char* k : {"mount_tmpfs", "unshare_net", "bpf", "kexec_load", "init_module", "keyctl",
                        "userfaultfd", "personality_change"})
    EXPECT_EQ(a.at(k).get<int>(), EPERM) << k;
  EXPECT_EQ(a.at("personality_query").get<int>(), 0);
}

TEST_F(SandboxTest, OrdinaryWorkStillRuns) {
  json a = run_probe({}).at("attempts");
  EXPECT_EQ(a.at("thread").get<int>(), 0);
  EXPECT_EQ(a.at("file_write").get<int>(), 0);
}

TEST_F(SandboxTest, ProcessCreationCanBeAllowed) {
  json j = run_probe({"--allow-processes"});
  EXPECT_FALSE(j.at("report").at("process_creation_denied").get<bool>());
  EXPECT_EQ(j.at("attempts").at("fork").get<int>(), 0);
  // The rest of the filter is still there.
  EXPECT_EQ(j.at("attempts").at("ptrace_attach_parent").get<int>(), EPERM);
}

TEST_F(SandboxTest, TrapModeReportsRefusalsAndStillRefuses) {
  // The diagnosis mode (sandbox_cuda_probe's "trap"): every refused call reaches the
  // SIGSYS handler, which fails it with EPERM, so the outcome matches the real filter.
  json plain = run_probe({});
  json trapped = run_probe({"--trap"});
  EXPECT_EQ(plain.at("trapped").get<int>(), 0);
  EXPECT_GE(trapped.at("trapped").get<int>(), 10);
  EXPECT_EQ(trapped.at("attempts"), plain.at("attempts"));
}

TEST_F(SandboxTest, SeccompAloneBlocksTheNetwork) {
  // Without a namespace the socket rule is what keeps the network away.
  json j = run_probe({"--no-netns"});
  EXPECT_TRUE(j.at("report").at("network_namespace").is_null());
  EXPECT_TRUE(j.at("report").at("network_blocked").get<bool>());
  EXPECT_EQ(j.at("report").at("network_isolation"), "seccomp-socket");
  EXPECT_EQ(j.at("attempts").at("socket_inet").get<int>(), EPERM);
  EXPECT_EQ(j.at("attempts").at("socket_unix").get<int>(), 0);
}

// A folder with w/ (writable under the rules) and ro/keep (not).
class LandlockTest : public SandboxTest {
 protected:
  void SetUp() override {
    SandboxTest::SetUp();
    if (IsSkipped()) return;
    if (landlock_abi() == 0) GTEST_SKIP() << "this kernel has no Landlock";
    char tmpl[] = "/tmp/solbench-landlock-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    std::filesystem::create_directories(root_ / "w");
    std::filesystem::create_directories(root_ / "ro");
    std::ofstream(root_ / "ro" / "keep") << "judge's file";
  }
  void TearDown() override {
    std::error_code ec;
    if (!root_.empty()) std::filesystem::remove_all(root_, ec);
  }
  static std::string real(const char* p) { return std::filesystem::canonical(p).string(); }
  std::filesystem::path root_;
};

TEST_F(LandlockTest, WritesOnlyWhereListedAndOnlyListedProgramsRun) {
  json j = run_probe({"--allow-processes", "--fs", root_.string(), "--exec", real("/bin/true"),
                      "--exec", real("/lib64/ld-linux-x86-64.so.2")});
  const json& fs = j.at("report").at("filesystem");
  EXPECT_TRUE(fs.at("writes_restricted").get<bool>()) << fs.dump(2);
  EXPECT_TRUE(fs.at("exec_restricted").get<bool>());
  const json& a = j.at("attempts");
  EXPECT_EQ(a.at("fs_write_inside").get<int>(), 0);
  EXPECT_EQ(a.at("fs_write_outside").get<int>(), EACCES);
  EXPECT_EQ(a.at("fs_overwrite_outside").get<int>(), EACCES);
  EXPECT_EQ(a.at("fs_unlink_outside").get<int>(), EACCES);
  EXPECT_EQ(a.at("fs_mkdir_outside").get<int>(), EACCES);
  EXPECT_NE(a.at("fs_rename_out").get<int>(), 0);
  EXPECT_EQ(a.at("dev_null_write").get<int>(), 0);
  EXPECT_EQ(a.at("exec_listed").get<int>(), 0);      // the listed tool ran
  EXPECT_EQ(a.at("exec_shell").get<int>(), EACCES);  // /bin/sh is not on the list
  std::ifstream keep(root_ / "ro" / "keep");
  std::string text;
  std::getline(keep, text);
  EXPECT_EQ(text, "judge's file");
  EXPECT_FALSE(std::filesystem::exists(root_ / "ro" / "new.txt"));
}

TEST_F(LandlockTest, TheElfInterpreterMustBeListedToo) {
  // The kernel opens a dynamic program's interpreter for execution as well: listing
  // the program alone is not enough (worker_policy lists ld.so for this reason).
  json j = run_probe({"--allow-processes", "--fs", root_.string(), "--exec", real("/bin/true")});
  EXPECT_EQ(j.at("attempts").at("exec_listed").get<int>(), EACCES);
}

TEST(SandboxBaseline, WithoutTheSandboxTheProbeSucceedsWhereAllowed) {
  // Shows the probe measures the sandbox, not the machine: unsandboxed, the same
  // calls that the filter refuses get through (sockets, fork, signal to the parent).
  json a = run_probe({"--no-sandbox"}).at("attempts");
  EXPECT_EQ(a.at("socket_inet").get<int>(), 0);
  EXPECT_EQ(a.at("fork").get<int>(), 0);
  EXPECT_EQ(a.at("kill_parent_sig0").get<int>(), 0);
}

// The worker's private $TMPDIR and /dev/shm (enter_private_mounts): one tmpfs of
// the given size in its own mount namespace, directly or through a user namespace.
TEST_F(SandboxTest, PrivateTmpAndShmShareOneBoundedTmpfsThatVanishesWithTheProcess) {
  namespace fs = std::filesystem;
  // Removed however the test ends.
  struct Removed {
    fs::path p;
    ~Removed() {
      std::error_code ec;
      fs::remove_all(p, ec);
    }
  };
  const std::string marker = "solbench-test-marker-" + std::to_string(::getpid());
  std::ofstream("/dev/shm/" + marker) << "the host's";
  const Removed marker_file{"/dev/shm/" + marker};
  for (const bool userns : {false, true}) {
    SCOPED_TRACE(userns ? "through a user namespace" : "privileged");
    char tmpl[] = "/tmp/solbench-privtmp-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    const fs::path dir = tmpl;
    const Removed removed{dir};
    fs::create_directories(dir / "tmp");
    constexpr uint64_t kSize = 8 << 20;
    std::vector<std::string> args = {"--no-netns", "--private-tmp", std::to_string(kSize),
                                     (dir / "tmp").string(), "--shm-marker", marker};
    if (userns) args.push_back("--userns");
    json j = run_probe(args);
    const json& m = j.at("mounts");
    if (m.at("mount_namespace").is_null()) {
      std::cout << "no mount namespace here: " << m.dump() << "\n";
      continue;  // the fallback, tested through the real binary (test_sandbox_eval)
    }
    EXPECT_EQ(m.at("mount_namespace"), userns ? "userns+mntns" : "mntns") << m.dump(2);
    EXPECT_EQ(m.at("tmp"), "private tmpfs") << m.dump(2);
    EXPECT_EQ(m.at("dev_shm"), "private tmpfs");
    EXPECT_EQ(m.at("tmp_bytes").get<uint64_t>(), kSize);
    EXPECT_TRUE(m.at("ipc_namespace").get<bool>());
    // /dev/shm took all of the size, with ENOSPC past it; $TMPDIR then had nothing left.
    EXPECT_EQ(j.at("fill_shm").at("errno").get<int>(), ENOSPC) << j.dump(2);
    EXPECT_LE(j.at("fill_shm").at("bytes").get<uint64_t>(), kSize);
    EXPECT_GE(j.at("fill_shm").at("bytes").get<uint64_t>(), kSize - (1 << 20));
    EXPECT_EQ(j.at("fill_tmp").at("errno").get<int>(), ENOSPC);
    EXPECT_LT(j.at("fill_tmp").at("bytes").get<uint64_t>(), uint64_t{1} << 20);
    EXPECT_FALSE(j.at("host_shm_marker_seen").get<bool>());
    EXPECT_EQ(j.at("attempts").at("shmget").get<int>(), 0);  // private: gone with it
    // Nothing of it is on the host.
    EXPECT_TRUE(fs::is_empty(dir / "tmp"));
    for (const auto& e : fs::directory_iterator("/dev/shm"))
      EXPECT_EQ(e.path().filename().string().rfind("solbench-probe-", 0), std::string::npos)
          << e.path();
  }
}

TEST_F(SandboxTest, AScratchFolderUnderDevShmKeepsDevShmAsItIs) {
  // TMPDIR=/dev/shm puts the staging folder there: a tmpfs over /dev/shm would hide
  // the scratch folder, so only $TMPDIR gets one.
  namespace fs = std::filesystem;
  char tmpl[] = "/dev/shm/solbench-privtmp-XXXXXX";
  if (!::mkdtemp(tmpl)) GTEST_SKIP() << "no /dev/shm here";
  const fs::path dir = tmpl;
  fs::create_directories(dir / "tmp");
  json j = run_probe({"--no-netns", "--private-tmp", std::to_string(4 << 20), (dir / "tmp").string()});
  const json& m = j.at("mounts");
  if (!m.at("mount_namespace").is_null()) {
    EXPECT_EQ(m.at("dev_shm"), "not writable") << m.dump(2);
    EXPECT_EQ(m.at("tmp"), "private tmpfs");
    EXPECT_EQ(j.at("fill_tmp").at("errno").get<int>(), ENOSPC) << j.dump(2);
    EXPECT_FALSE(j.contains("fill_shm"));
  }
  EXPECT_TRUE(fs::is_empty(dir / "tmp"));
  fs::remove_all(dir);
}

TEST_F(SandboxTest, SystemVSegmentsAreRefusedWhereTheyWouldOutliveTheWorker) {
  json j = run_probe({"--no-netns", "--deny-sysv"});
  EXPECT_EQ(j.at("attempts").at("shmget").get<int>(), EPERM) << j.dump(2);
}

TEST(SandboxReportTest, JsonAndSummary) {
  SandboxReport r;
  r.seccomp = true;
  r.denied_syscalls = {"ptrace", "socket(filtered)"};
  r.notes = {"no network namespace: test"};
  EXPECT_TRUE(r.network_blocked());
  json j = r.to_json();
  EXPECT_TRUE(j.at("network_blocked").get<bool>());
  EXPECT_TRUE(j.at("network_namespace").is_null());
  EXPECT_NE(r.summary().find("+seccomp"), std::string::npos);
  EXPECT_NE(r.summary().find("no network namespace: test"), std::string::npos);
  SandboxReport none;
  EXPECT_FALSE(none.network_blocked());
}

}  // namespace
}  // namespace solbench::harness
