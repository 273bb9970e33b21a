// Child processes: exit and signal reporting, group kill on timeout, core dumps
// off, bounded logs, the framed channel, scratch folders.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <iterator>
#include <vector>
#include <thread>

#include "harness/process.h"
#include "harness/protocol.h"
#include "test_util.h"
#include "harness/staging.h"

namespace solbench::harness {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

// True when `pid` no longer runs (gone, or a zombie waiting for its new parent).
bool process_gone(pid_t pid) {
  if (::kill(pid, 0) != 0 && errno == ESRCH) return true;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(stat, line);
  const size_t close = line.rfind(')');
  return close != std::string::npos && close + 2 < line.size() && line[close + 2] == 'Z';
}

bool eventually_gone(pid_t pid) {
  for (int i = 0; i < 200; ++i) {
    if (process_gone(pid)) return true;
    std::this_thread::sleep_for(10ms);
  }
  return false;
}

TEST(Process, CapturesOutputAndExitCode) {
  auto r = run_command({"sh", "-c", "echo out; echo err >&2; exit 3"});
  EXPECT_TRUE(r.spawn_error.empty());
  EXPECT_TRUE(r.status.exited);
  EXPECT_EQ(r.status.exit_code, 3);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.status.describe(), "exit 3");
  EXPECT_NE(r.output.find("out\n"), std::string::npos);
  EXPECT_NE(r.output.find("err\n"), std::string::npos);
}

TEST(Process, ReportsTheTerminatingSignal) {
  auto r = run_command({"sh", "-c", "kill -SEGV $$"});
  EXPECT_FALSE(r.status.exited);
  EXPECT_EQ(r.status.signal, SIGSEGV);
  EXPECT_FALSE(r.status.timed_out);
  EXPECT_NE(r.status.describe().find("SIGSEGV"), std::string::npos) << r.status.describe();
  EXPECT_EQ(signal_name(SIGKILL), "SIGKILL");
}

TEST(Process, CoreDumpsAreOff) {
  auto r = run_command({"sh", "-c", "ulimit -c; ulimit -H -c"});
  ASSERT_TRUE(r.ok()) << r.output;
  EXPECT_EQ(r.output, "0\n0\n");
  // And a crash does not dump one.
  auto crash = run_command({"sh", "-c", "kill -ABRT $$"});
  EXPECT_EQ(crash.status.signal, SIGABRT);
  EXPECT_FALSE(crash.status.core_dumped);
}

TEST(Process, TimeoutKillsTheWholeGroupIncludingGrandchildren) {
  StagingDir dir = StagingDir::create();
  const fs::path pidfile = dir.path() / "grandchild.pid";
  SpawnOptions so;
  // The grandchild sleeps forever in the background; the child waits forever too.
  so.argv = {"sh", "-c", "sleep 1000 & echo $! > " + pidfile.string() + "; wait"};
  const auto start = Clock::now();
  Child child = Child::spawn(so);
  // Wait until the grandchild has written its pid.
  for (int i = 0; i < 500 && !fs::exists(pidfile); ++i) std::this_thread::sleep_for(10ms);
  ASSERT_TRUE(fs::exists(pidfile));
  std::this_thread::sleep_for(20ms);
  pid_t grandchild = 0;
  std::ifstream(pidfile) >> grandchild;
  ASSERT_GT(grandchild, 0);
  EXPECT_EQ(::getpgid(grandchild), child.pgid());

  ExitStatus st = child.wait(deadline_after(300ms));
  EXPECT_TRUE(st.timed_out);
  EXPECT_FALSE(st.success());
  EXPECT_NE(st.describe().find("timed out"), std::string::npos);
  EXPECT_LT(Clock::now() - start, 5s);
  EXPECT_TRUE(eventually_gone(child.pid() > 0 ? child.pid() : grandchild));
  EXPECT_TRUE(eventually_gone(grandchild)) << "grandchild " << grandchild << " survived";
}

TEST(Process, RunCommandTimeout) {
  const auto start = Clock::now();
  auto r = run_command({"sleep", "30"}, with_timeout(200ms));
  EXPECT_TRUE(r.status.timed_out);
  EXPECT_LT(Clock::now() - start, 5s);
  EXPECT_GE(r.seconds, 0.19);
}

TEST(Process, NormalExitAlsoKillsLeftoverGroupMembers) {
  StagingDir dir = StagingDir::create();
  const fs::path pidfile = dir.path() / "bg.pid";
  auto r = run_command({"sh", "-c", "sleep 1000 >/dev/null 2>&1 & echo $! > " + pidfile.string()},
                       with_timeout(10s));
  EXPECT_TRUE(r.ok()) << r.status.describe();
  pid_t bg = 0;
  std::ifstream(pidfile) >> bg;
  ASSERT_GT(bg, 0);
  EXPECT_TRUE(eventually_gone(bg));
}

// Host pids of processes whose command line is exactly `argv` joined by NULs.
std::vector<pid_t> pids_running(const std::string& cmdline) {
  std::vector<pid_t> out;
  for (const auto& e : fs::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(e.path() / "cmdline", std::ios::binary);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (text == cmdline && !process_gone(std::stoi(name))) out.push_back(std::stoi(name));
  }
  return out;
}

TEST(Process, APidNamespaceTakesDetachedDescendantsDownWithTheChild) {
  // setsid leaves the process group, so only the namespace can catch this one.
  const std::string nap = "1000." + std::to_string(::getpid());
  SpawnOptions so;
  so.argv = {"sh", "-c", "setsid sleep " + nap + " >/dev/null 2>&1 & sleep 0.3; exit 0"};
  so.new_pid_namespace = true;
  Child c = Child::spawn(so);
  if (!c.pid_namespace()) {
    c.wait(deadline_after(10s));
    GTEST_SKIP() << "no permission for a PID namespace here";
  }
  // While the child lives the detached sleep runs, as itself (a real test subject).
  std::vector<pid_t> during;
  for (int i = 0; i < 100 && during.empty(); ++i) {
    during = pids_running(std::string("sleep\0", 6) + nap + '\0');
    if (during.empty()) std::this_thread::sleep_for(10ms);
  }
  ASSERT_FALSE(during.empty());
  EXPECT_TRUE(c.wait(deadline_after(10s)).success());
  EXPECT_TRUE(eventually_gone(during.front()));
}

TEST(Process, MissingProgramIsASpawnError) {
  SpawnOptions so;
  so.argv = {"/nonexistent/solbench-no-such-program"};
  EXPECT_THROW(Child::spawn(so), SpawnError);
  auto r = run_command({"solbench-no-such-program-xyz"});
  EXPECT_FALSE(r.spawn_error.empty());
  EXPECT_NE(r.spawn_error.find("solbench-no-such-program-xyz"), std::string::npos);
}

TEST(Process, BadWorkingDirectoryIsASpawnError) {
  SpawnOptions so;
  so.argv = {"true"};
  so.cwd = "/nonexistent/dir";
  try {
    Child::spawn(so);
    FAIL() << "expected SpawnError";
  } catch (const SpawnError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/dir"), std::string::npos) << e.what();
    EXPECT_EQ(e.error_code(), ENOENT);
  }
}

TEST(Process, RunsInAFreshScratchFolderWithEnvironment) {
  StagingDir scratch = StagingDir::create(default_staging_base(), "scratch-");
  SpawnOptions so;
  so.argv = {"sh", "-c", "pwd; ls -A | wc -l; echo \"$SB_TEST_VALUE\""};
  so.cwd = scratch.path();
  so.env_set = {{"SB_TEST_VALUE", "hello"}};
  Child c = Child::spawn(so);
  ExitStatus st = c.wait(deadline_after(10s));
  ASSERT_TRUE(st.success()) << st.describe();
  EXPECT_EQ(c.log(), fs::canonical(scratch.path()).string() + "\n0\nhello\n");
}

TEST(Process, OwnProcessGroup) {
  SpawnOptions so;
  so.argv = {"sleep", "5"};
  Child c = Child::spawn(so);
  EXPECT_EQ(::getpgid(c.pid()), c.pid());
  EXPECT_NE(::getpgid(c.pid()), ::getpgid(0));
  EXPECT_TRUE(c.running());
  c.kill_group();
  ExitStatus st = c.wait(deadline_after(5s));
  EXPECT_EQ(st.signal, SIGKILL);
  EXPECT_FALSE(st.timed_out);
}

TEST(Process, DestructorKillsTheGroup) {
  pid_t pid;
  {
    SpawnOptions so;
    so.argv = {"sleep", "1000"};
    Child c = Child::spawn(so);
    pid = c.pid();
    Child moved = std::move(c);  // ownership moves; one kill
    EXPECT_EQ(moved.pid(), pid);
  }
  EXPECT_TRUE(eventually_gone(pid));
}

TEST(Process, LogIsBounded) {
  auto r = run_command({"sh", "-c", "head -c 300000 /dev/zero | tr '\\0' a; echo; echo THE-END"},
                       with_timeout(20s, 4096));
  ASSERT_TRUE(r.ok()) << r.status.describe();
  EXPECT_LT(r.output.size(), 4096u + 100u);
  EXPECT_NE(r.output.find("bytes omitted"), std::string::npos);
  EXPECT_NE(r.output.find("THE-END"), std::string::npos);  // the tail is kept
  EXPECT_EQ(r.output.substr(0, 10), "aaaaaaaaaa");         // and the head
}

TEST(BoundedLogTest, HeadTailAndOffsets) {
  BoundedLog log(40);  // head 10, tail 30
  std::string all;
  for (int i = 0; i < 20; ++i) {
    std::string chunk = "<" + std::to_string(i) + ">";
    all += chunk;
    log.append(chunk.data(), chunk.size());
  }
  EXPECT_EQ(log.total_bytes(), all.size());
  const std::string t = log.text();
  EXPECT_EQ(t.substr(0, 10), all.substr(0, 10));
  EXPECT_EQ(t.substr(t.size() - 30), all.substr(all.size() - 30));
  EXPECT_NE(t.find("[... " + std::to_string(all.size() - 40) + " bytes omitted ...]"), std::string::npos);
  // Since an offset within the tail: exact.
  EXPECT_EQ(log.text_since(all.size() - 5), all.substr(all.size() - 5));
  EXPECT_EQ(log.text_since(all.size()), "");
  BoundedLog small(1000);
  small.append("abc", 3);
  EXPECT_EQ(small.text(), "abc");
  EXPECT_EQ(small.text_since(1), "bc");
}

TEST(BoundedLogTest, OffsetAfterFindsMarkersInKeptBytes) {
  BoundedLog log(1000);  // head 250, tail 750
  log.append("abc<m>def", 9);
  EXPECT_EQ(log.offset_after(0, "<m>"), 6u);
  EXPECT_EQ(log.offset_after(4, "<m>"), std::nullopt);  // only before `from`
  EXPECT_EQ(log.offset_after(0, "<x>"), std::nullopt);
  // Split across appends, and across the head/tail boundary while nothing is dropped.
  BoundedLog split(8);  // head 2, tail 6
  split.append("a<", 2);
  split.append("m>b", 3);
  EXPECT_EQ(split.offset_after(0, "<m>"), 4u);
  // After a drop, positions are still stream offsets.
  split.append("xxxxxxx<m>yz", 12);  // total 17: head "a<", tail "x<m>yz" from 11
  EXPECT_EQ(split.offset_after(5, "<m>"), 15u);
  EXPECT_EQ(split.text_since(15), "yz");
}

TEST(WorkloadLogMarker, IsOneLineAndStripsOut) {
  const std::string m = workload_log_marker(7);
  EXPECT_EQ(m.back(), '\n');
  EXPECT_EQ(std::count(m.begin(), m.end(), '\n'), 1);
  EXPECT_EQ(strip_workload_markers("a\n" + m + "b\n" + workload_log_marker(8)), "a\nb\n");
  EXPECT_EQ(strip_workload_markers("no marker"), "no marker");
}

TEST(Process, ChannelCarriesFramesBothWays) {
  // `cat` echoes whatever arrives on the channel back through it.
  SpawnOptions so;
  so.argv = {"sh", "-c", "test \"$SOLBENCH_CHANNEL_FD\" = 3 && exec cat <&3 >&3"};
  so.channel = true;
  Child c = Child::spawn(so);
  ASSERT_GE(c.channel_fd(), 0);
  json msg = {{"type", "plan"}, {"workloads", {"a", "b"}}};
  ASSERT_TRUE(write_frame(c.channel_fd(), msg, deadline_after(5s)).ok());
  FrameReader reader(c.channel_fd());
  auto back = reader.read(deadline_after(10s));
  ASSERT_TRUE(back.ok()) << back.error << "\n" << c.log();
  EXPECT_EQ(back.message, msg);
  c.close_channel();  // cat reads EOF and exits
  ExitStatus st = c.wait(deadline_after(10s));
  EXPECT_TRUE(st.success()) << st.describe() << c.log();
}

TEST(Process, SyncLogHasWhatWasPrintedBeforeAFrame) {
  // The runner attributes prints to a workload when its result frame arrives; the
  // drain thread may not have read them yet, so sync_log() pulls them in. Repeated:
  // without it the check fails only when the drain thread is late.
  for (int i = 0; i < 20; ++i) {
    SpawnOptions so;
    so.argv = {"sh", "-c", "echo printed-before-the-frame >&2; exec cat <&3 >&3"};
    so.channel = true;
    Child c = Child::spawn(so);
    ASSERT_TRUE(write_frame(c.channel_fd(), json{{"type", "ping"}}, deadline_after(5s)).ok());
    FrameReader reader(c.channel_fd());
    ASSERT_TRUE(reader.read(deadline_after(10s)).ok());
    c.sync_log();
    EXPECT_NE(c.log_since(0).find("printed-before-the-frame"), std::string::npos) << "try " << i;
    c.close_channel();
    c.wait(deadline_after(10s));
  }
}

TEST(Process, ChildSeesOnlyItsStandardFdsAndChannel) {
  SpawnOptions so;
  so.argv = {"sh", "-c", "ls /proc/self/fd | sort -n | tr '\\n' ' '"};
  so.channel = true;
  Child c = Child::spawn(so);
  c.wait(deadline_after(10s));
  // 0,1,2, the channel 3, and the fd ls uses to read the folder.
  const std::string fds = c.log();
  EXPECT_EQ(fds.rfind("0 1 2 3 ", 0), 0u) << fds;
  EXPECT_LE(std::count(fds.begin(), fds.end(), ' '), 5) << fds;
}

TEST(Process, FindProgramAndSelfExe) {
  auto sh = find_program("sh");
  ASSERT_TRUE(sh.has_value());
  EXPECT_TRUE(sh->is_absolute() || sh->string().find('/') != std::string::npos);
  EXPECT_FALSE(find_program("solbench-definitely-missing").has_value());
  EXPECT_TRUE(fs::exists(self_exe()));
  EXPECT_NE(self_exe().filename().string().find("harness_tests"), std::string::npos);
}

TEST(Staging, CreatesPrivateFoldersAndRemovesThem) {
  fs::path p;
  {
    StagingDir d = StagingDir::create(default_staging_base(), "t-");
    p = d.path();
    EXPECT_TRUE(fs::is_directory(p));
    EXPECT_EQ(fs::status(p).permissions() & fs::perms::all, fs::perms::owner_all);
    std::ofstream(p / "f") << "x";
    fs::create_directories(p / "sub");
    fs::permissions(p / "sub", fs::perms::none);  // untrusted code may do this
  }
  EXPECT_FALSE(fs::exists(p));
  {
    StagingDir d = StagingDir::create(default_staging_base(), "t-");
    p = d.path();
    d.keep();
  }
  EXPECT_TRUE(fs::exists(p));
  remove_tree_quietly(p);
  EXPECT_FALSE(fs::exists(p));
}

}  // namespace
}  // namespace solbench::harness
