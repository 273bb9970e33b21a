// Scratch folders name their owner (pid, start time, PID namespace and boot), and
// a new process removes the folders of owners that are dead, and nothing else
// (harness/staging.h, sweep_stale_scratch).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "harness/staging.h"
#include "test_support.h"

namespace solbench::harness {
namespace {

namespace fs = std::filesystem;

std::set<std::string> names_in(const fs::path& dir) {
  std::set<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.insert(e.path().filename().string());
  return out;
}

// A child process that creates a worker- and a records- folder (with a file each)
// and a kept build- folder (--keep-staging) under `base`, says so, and waits to be
// killed; its folders are left as a killed evaluation leaves them.
pid_t owner_with_folders(const fs::path& base) {
  int ready[2];
  if (::pipe(ready) != 0) return -1;
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(ready[0]);
    for (const char* prefix : {"worker-", "records-"}) {
      StagingDir d = StagingDir::create(base, prefix);
      std::ofstream(d.path() / "out.bin") << std::string(4096, 'x');
      fs::create_directories(d.path() / "judge" / "0");
      d.release();
    }
    StagingDir::create(base, "build-", /*keep=*/true).release();
    const char c = 'r';
    if (::write(ready[1], &c, 1) != 1) ::_exit(1);
    for (;;) ::pause();
  }
  ::close(ready[1]);
  char c = 0;
  const bool ok = ::read(ready[0], &c, 1) == 1;
  ::close(ready[0]);
  return ok ? pid : -1;
}

std::vector<std::string> folders_of(const fs::path& base, pid_t pid) {
  std::vector<std::string> out;
  for (const std::string& n : names_in(base))
    if (auto o = parse_scratch_name(n); o && o->pid == pid) out.push_back(n);
  return out;
}

TEST(ScratchSweep, NamesSayWhoOwnsThem) {
  testing::TempDir t;
  const std::string tag = owner_tag();
  ASSERT_FALSE(tag.empty()) << "no /proc here";
  StagingDir d = StagingDir::create(t.path(), "worker-");
  const std::string name = d.path().filename().string();
  EXPECT_EQ(name.rfind("worker-" + tag + "-", 0), 0u) << name;
  auto o = parse_scratch_name(name);
  ASSERT_TRUE(o.has_value()) << name;
  EXPECT_EQ(o->pid, ::getpid());
  EXPECT_EQ(tag, std::to_string(o->pid) + "." + std::to_string(o->start) + "." + o->ns);
  // A worker's compile caches on their way back keep the folder's owner.
  EXPECT_TRUE(parse_scratch_name(name + ".jit-Ab12Cd").has_value());
  // A folder to keep names no owner: it outlives its process.
  StagingDir kept = StagingDir::create(t.path(), "worker-", /*keep=*/true);
  EXPECT_TRUE(kept.kept());
  EXPECT_FALSE(parse_scratch_name(kept.path().filename().string()).has_value()) << kept.path();
  for (const char* bad :
       {"worker-Ab12Cd", "worker-12.34-Ab12Cd", "worker-12.34.0123abcd-Ab12C", "Worker-12.34.0123abcd-Ab12Cd",
        "-12.34.0123abcd-Ab12Cd", "worker-12.34.0123ABCD-Ab12Cd", "worker-12.34.0123abcd-Ab12Cdx",
        "worker-12.34.0123abcd-Ab12Cd.jit-", "worker-0.34.0123abcd-Ab12Cd", "worker-12.x.0123abcd-Ab12Cd",
        "worker-12.34.0123abcd-Ab12Cd.tmp-Ab12Cd", "worker-12.34.0123abcd-Ab/2Cd"})
    EXPECT_FALSE(parse_scratch_name(bad).has_value()) << bad;
}

TEST(ScratchSweep, RemovesTheFoldersOfDeadOwnersOnly) {
  testing::TempDir t;
  const fs::path base = t.path() / "staging";
  fs::create_directories(base);
  const std::string ns = owner_tag().substr(owner_tag().rfind('.') + 1);
  ASSERT_EQ(ns.size(), 8u);

  const pid_t killed = owner_with_folders(base);  // SIGKILLed and reaped
  const pid_t zombie = owner_with_folders(base);  // SIGKILLed, not reaped yet
  const pid_t live = owner_with_folders(base);    // still running
  ASSERT_GT(killed, 0);
  ASSERT_GT(zombie, 0);
  ASSERT_GT(live, 0);
  StagingDir mine = StagingDir::create(base, "stage-");  // this (live) process's
  const std::vector<std::string> killed_dirs = folders_of(base, killed);
  const std::vector<std::string> zombie_dirs = folders_of(base, zombie);
  const std::vector<std::string> live_dirs = folders_of(base, live);
  ASSERT_EQ(killed_dirs.size(), 2u);
  ASSERT_EQ(zombie_dirs.size(), 2u);
  ASSERT_EQ(live_dirs.size(), 2u);
  ::kill(killed, SIGKILL);
  ASSERT_EQ(::waitpid(killed, nullptr, 0), killed);
  ::kill(zombie, SIGKILL);
  siginfo_t si{};
  ASSERT_EQ(::waitid(P_PID, static_cast<id_t>(zombie), &si, WEXITED | WNOWAIT), 0);

  // Names that say "a dead owner" on what is not a folder of this user's, of this
  // PID namespace and boot: left alone.
  const auto dead = parse_scratch_name(killed_dirs[0]);
  ASSERT_TRUE(dead.has_value());
  const std::string dead_owner = std::to_string(dead->pid) + "." + std::to_string(dead->start);
  const fs::path outside = t.path() / "outside";
  fs::create_directories(outside);
  std::ofstream(outside / "keep.txt") << "keep";
  const std::string link = "worker-" + dead_owner + "." + ns + "-Link00";
  fs::create_directory_symlink(outside, base / link);
  const std::string file = "records-" + dead_owner + "." + ns + "-File00";
  std::ofstream(base / file) << "a file";
  const std::string other_ns = "worker-" + dead_owner + "." + (ns == "00000000" ? "11111111" : "00000000") + "-Other0";
  fs::create_directories(base / other_ns);
  std::set<std::string> unrelated = {link, file, other_ns, "worker-Ab12Cd", "notes", "build-1.2-abcdef"};
  for (const char* plain : {"worker-Ab12Cd", "notes", "build-1.2-abcdef"}) fs::create_directories(base / plain);
  std::string other_user;
  if (::geteuid() == 0) {  // another user's folder can be made here only as root
    other_user = "worker-" + dead_owner + "." + ns + "-User00";
    fs::create_directories(base / other_user);
    ASSERT_EQ(::chown((base / other_user).c_str(), 65534, 65534), 0);
    unrelated.insert(other_user);
  }

  EXPECT_EQ(sweep_stale_scratch(base), 4u);
  const std::set<std::string> left = names_in(base);
  for (const auto& n : killed_dirs) EXPECT_EQ(left.count(n), 0u) << n << " (owner killed and reaped)";
  for (const auto& n : zombie_dirs) EXPECT_EQ(left.count(n), 0u) << n << " (owner a zombie)";
  for (const auto& n : live_dirs) EXPECT_EQ(left.count(n), 1u) << n << " (owner alive)";
  EXPECT_EQ(left.count(mine.path().filename().string()), 1u);
  for (const auto& n : unrelated) EXPECT_EQ(left.count(n), 1u) << n;
  EXPECT_TRUE(fs::is_symlink(base / link));
  size_t kept = 0;  // the owners' folders made to be kept (build-XXXXXX)
  for (const auto& n : left) kept += n.rfind("build-", 0) == 0 && n.size() == 12;
  EXPECT_EQ(kept, 3u);
  EXPECT_EQ(testing::read(outside / "keep.txt"), "keep");

  // Its owner gone, the live process's folders go too.
  ::waitpid(zombie, nullptr, 0);
  ::kill(live, SIGKILL);
  ASSERT_EQ(::waitpid(live, nullptr, 0), live);
  EXPECT_EQ(sweep_stale_scratch(base), 2u);
  for (const auto& n : live_dirs) EXPECT_FALSE(fs::exists(base / n)) << n;
  EXPECT_TRUE(fs::exists(mine.path()));
}

TEST(ScratchSweep, TheFirstFolderOfAProcessSweepsItsBase) {
  testing::TempDir t;
  const fs::path base = t.path() / "staging";
  const pid_t killed = owner_with_folders(base);
  ASSERT_GT(killed, 0);
  const std::vector<std::string> left_behind = folders_of(base, killed);
  ASSERT_EQ(left_behind.size(), 2u);
  ::kill(killed, SIGKILL);
  ASSERT_EQ(::waitpid(killed, nullptr, 0), killed);
  for (const auto& n : left_behind) ASSERT_TRUE(fs::exists(base / n));
  // This process has made no folder under `base` yet: the first one sweeps it.
  StagingDir d = StagingDir::create(base, "worker-");
  for (const auto& n : left_behind) EXPECT_FALSE(fs::exists(base / n)) << n;
  EXPECT_TRUE(fs::exists(d.path()));
}

}  // namespace
}  // namespace solbench::harness
