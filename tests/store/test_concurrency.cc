// Several processes writing into one store, and a writer killed with SIGKILL.
// Children are forked before the parent opens the store (a connection is never
// carried across fork) and report through pipes and exit codes, not gtest.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <functional>
#include <thread>

#include "store_test_util.h"

namespace solbench::store {
namespace {

namespace fs = std::filesystem;
using testing::make_trace;
using testing::solution_record;
using testing::sql_value;
using testing::TempDir;

// Runs `body` in a child process; its return value is the exit code, an
// exception exits 3 after printing it.
pid_t spawn(const std::function<int()>& body) {
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid != 0) return pid;
  int code = 3;
  try {
    code = body();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "child %d: %s\n", static_cast<int>(::getpid()), e.what());
  }
  std::fflush(nullptr);
  ::_exit(code);
}

int wait_exit_code(pid_t pid) {
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// Records `n` traces of solution `name` (workloads NAME-0 ...), one transaction
// each; after each commit writes the count so far to `report_fd` (if >= 0).
// `pause_us` between traces stands for the evaluation of the next workload: it
// lets two writers' transactions interleave instead of one running in bursts.
int record_traces(const fs::path& db, const std::string& name, int n, int report_fd,
                  int pause_us = 0) {
  Store s = Store::open(db);
  const std::string env = s.put_environment(testing::h100_env());
  TraceExtras x;
  x.solution_hash = s.put_solution(solution_record(name, "gemm"));
  x.environment_hash = env;
  x.sol_score = 0.5;
  const int64_t run = s.begin_run(RunInfo{"child " + name, "", env, ""});
  for (int64_t i = 0; i < n; ++i) {
    s.record_trace(run, make_trace("gemm", name, name + "-" + std::to_string(i), Status::Passed, 0.5), x);
    const int64_t done = i + 1;
    if (report_fd >= 0 && ::write(report_fd, &done, sizeof done) != sizeof done) return 4;
    if (pause_us > 0) ::usleep(pause_us);
  }
  s.finish_run(run);
  return 0;
}

TEST(StoreConcurrency, TwoProcessesRecordingIntoOneNewFileKeepEveryRow) {
  TempDir dir;
  const fs::path db = dir.path() / "solbench.db";  // created by the children, at once
  constexpr int kEach = 250;
  int go[2];
  ASSERT_EQ(::pipe(go), 0);
  std::vector<pid_t> children;
  for (const char* name : {"alpha", "beta"})
    children.push_back(spawn([&, name] {
      ::close(go[1]);
      char c;
      if (::read(go[0], &c, 1) != 0) return 5;  // released together by EOF
      return record_traces(db, name, kEach, -1, /*pause_us=*/200);
    }));
  ::close(go[0]);
  ::close(go[1]);  // go
  for (pid_t pid : children) EXPECT_EQ(wait_exit_code(pid), 0) << "see the child's stderr above";

  Store s = Store::open(db);
  EXPECT_EQ(s.trace_count(), 2u * kEach);
  for (const char* name : {"alpha", "beta"}) {
    Filter f;
    f.solution = name;
    EXPECT_EQ(s.history(f).size(), static_cast<size_t>(kEach)) << name;
  }
  EXPECT_EQ(sql_value(db, "SELECT count(DISTINCT workload_uuid) FROM traces"),
            std::to_string(2 * kEach));
  EXPECT_EQ(sql_value(db, "SELECT count(*) FROM runs WHERE finished IS NOT NULL"), "2");
  EXPECT_EQ(sql_value(db, "SELECT count(*) FROM environments"), "1");
  EXPECT_EQ(sql_value(db, "SELECT count(*) FROM meta WHERE key = 'schema_version'"), "1");
  EXPECT_EQ(sql_value(db, "PRAGMA integrity_check"), "ok");
}

TEST(StoreConcurrency, ThreadsSharingOneStoreKeepEveryRow) {
  TempDir dir;
  Store s = Store::open(dir.path() / "solbench.db");
  const std::string env = s.put_environment(testing::h100_env());
  const int64_t run = s.begin_run(RunInfo{"threads", "", env, ""});
  constexpr int kThreads = 4, kEach = 100;
  std::vector<std::thread> threads;
  for (int k = 0; k < kThreads; ++k)
    threads.emplace_back([&, k] {
      const std::string name = "t" + std::to_string(k);
      TraceExtras x;
      x.solution_hash = s.put_solution(solution_record(name, "gemm"));
      x.environment_hash = env;
      for (int i = 0; i < kEach; ++i) {
        const std::string uuid = name + "-" + std::to_string(i);
        s.record_trace(run, make_trace("gemm", name, uuid, Status::Passed, 0.5), x);
        if (!s.has_result(x.solution_hash, uuid, env)) std::abort();  // its own write, seen
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(s.trace_count(), static_cast<size_t>(kThreads * kEach));
  EXPECT_EQ(sql_value(s.file(), "PRAGMA integrity_check"), "ok");
}

// Reads the child's reports until `at_least` traces were committed, kills it,
// and returns the last count it reported.
int64_t kill_after(pid_t pid, int fd, int64_t at_least) {
  int64_t last = 0, v = 0;
  while (last < at_least && ::read(fd, &v, sizeof v) == sizeof v) last = v;
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "the child ended on its own";
  while (::read(fd, &v, sizeof v) == sizeof v) last = v;  // reports written before it died
  return last;
}

TEST(StoreDurability, AWriterKilledMidStreamLosesNothingItCommitted) {
  TempDir dir;
  const fs::path db = dir.path() / "solbench.db";
  size_t before = 0;
  int killed = 0;
  // Three writers in turn, killed after different numbers of traces.
  for (int64_t kill_at : {10, 75, 300}) {
    int report[2];
    ASSERT_EQ(::pipe(report), 0);
    const std::string name = "victim" + std::to_string(kill_at);
    const pid_t pid = spawn([&] {
      ::close(report[0]);
      return record_traces(db, name, 1000000, report[1]);
    });
    ::close(report[1]);
    const int64_t reported = kill_after(pid, report[0], kill_at);
    ::close(report[0]);
    ASSERT_GE(reported, kill_at);
    ++killed;

    Store s = Store::open(db);
    const size_t now = s.trace_count();
    // Every trace reported committed is there; at most one more (committed, then
    // killed before it could say so).
    EXPECT_GE(now - before, static_cast<size_t>(reported)) << "lost committed traces";
    EXPECT_LE(now - before, static_cast<size_t>(reported) + 1);
    Filter f;
    f.solution = name;
    const std::vector<StoredTrace> mine = s.history(f);
    EXPECT_EQ(mine.size(), now - before);
    for (size_t i = 0; i < mine.size(); ++i) {
      EXPECT_EQ(mine[i].workload_uuid, name + "-" + std::to_string(i));
      EXPECT_EQ(mine[i].trace().workload["uuid"], mine[i].workload_uuid);  // whole, parseable
    }
    EXPECT_EQ(sql_value(db, "SELECT count(*) FROM runs WHERE finished IS NULL"),
              std::to_string(killed));  // a killed run never finishes
    EXPECT_EQ(sql_value(db, "PRAGMA integrity_check"), "ok");
    before = now;
  }
}

}  // namespace
}  // namespace solbench::store
