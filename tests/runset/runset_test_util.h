// Helpers shared by the runset tests: a data set in the public layout built in
// a temporary folder from the bundled problems (symlinks), a folder of their CPU
// solutions, and running the real `solbench` binary.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "core/json.h"
#include "score/selection.h"
#include "test_support.h"  // EXPECT_HAS, TempDir, read, write

namespace solbench::runset::testing {

namespace fs = std::filesystem;
using solbench::testing::read;
using solbench::testing::TempDir;
using solbench::testing::write;

// Workload selections (score/selection.h) as the options would make them.
inline score::WorkloadSelection first_n(int n) {
  score::WorkloadSelection s;
  s.first = n;
  return s;
}
inline score::WorkloadSelection smallest_n(int n) {
  score::WorkloadSelection s;
  s.smallest = n;
  return s;
}
inline score::WorkloadSelection wanted(std::vector<std::string> uuids) {
  score::WorkloadSelection s;
  s.wanted = std::move(uuids);
  return s;
}

inline const fs::path kSource = SOLBENCH_SOURCE_DIR;
inline const fs::path kProblems = kSource / "problems";
inline const char* kRms = "001_rmsnorm_llama3_8b_h4096";
inline const char* kSwiglu = "002_swiglu_activation_llama3_8b";
inline const char* kSoftmax = "005_softmax_vocab_llama3_8b";

// ROOT/<category>/<problem> -> problems/<problem>, for each (category, problem).
inline fs::path make_dataset(const fs::path& root,
                             const std::vector<std::pair<std::string, std::string>>& layout) {
  for (const auto& [cat, prob] : layout) {
    const fs::path dir = cat.empty() ? root : root / cat;
    fs::create_directories(dir);
    fs::create_directory_symlink(kProblems / prob, dir / prob);
  }
  return root;
}

// The bundled CPU solution `kind` (pytorch_simple, cpp_rowwise) of `problem`,
// copied to DIR/<problem>_<kind>.json.
inline fs::path add_solution(const fs::path& dir, const std::string& problem,
                             const std::string& kind) {
  fs::create_directories(dir);
  const fs::path to = dir / (problem + "_" + kind + ".json");
  fs::copy_file(kProblems / problem / "solutions" / kind / "solution.json", to,
                fs::copy_options::overwrite_existing);
  return to;
}

struct CliRun {
  int rc = -1;
  std::string out, err;
  json doc;  // stdout parsed (when it is JSON)
};

// The environment every test's children share: a private cache (build cache,
// default store) and staging folder under `dir`.
inline std::string env_prefix(const fs::path& dir) {
  return "SOLBENCH_CACHE_DIR='" + (dir / "cache").string() + "' SOLBENCH_STAGING_DIR='" +
         (dir / "staging").string() + "' ";
}

inline CliRun solbench(const fs::path& dir, const std::string& args) {
  CliRun r;
  static int n = 0;
  const fs::path out = dir / ("stdout" + std::to_string(n) + ".txt");
  const fs::path err = dir / ("stderr" + std::to_string(n++) + ".txt");
  const std::string cmd = env_prefix(dir) + "'" + SOLBENCH_BINARY + "' " + args + " >'" +
                          out.string() + "' 2>'" + err.string() + "'";
  const int status = std::system(cmd.c_str());
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = read(out);
  r.err = read(err);
  r.doc = json::parse(r.out, nullptr, false);
  return r;
}

// `solbench ARGS` started in the background (its own process, output to files).
class Background {
 public:
  Background(const fs::path& dir, const std::string& args)
      : out_(dir / "bg_stdout.txt"), err_(dir / "bg_stderr.txt") {
    const std::string cmd = env_prefix(dir) + "exec '" + SOLBENCH_BINARY + "' " + args + " >'" +
                            out_.string() + "' 2>'" + err_.string() + "'";
    pid_ = ::fork();
    if (pid_ == 0) {
      ::execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
  }
  ~Background() {
    if (pid_ > 0 && !reaped_) {
      ::kill(pid_, SIGKILL);
      wait();
    }
  }
  Background(const Background&) = delete;  // owns one process
  Background& operator=(const Background&) = delete;

  void signal(int sig) { ::kill(pid_, sig); }
  // The raw wait status.
  int wait() {
    int st = 0;
    ::waitpid(pid_, &st, 0);
    reaped_ = true;
    return st;
  }
  std::string out() const { return read(out_); }
  std::string err() const { return read(err_); }

 private:
  fs::path out_, err_;
  pid_t pid_ = -1;
  bool reaped_ = false;
};

// Polls `cond` every 20 ms for up to `limit`; true when it held.
template <class F>
bool wait_until(F cond, std::chrono::seconds limit = std::chrono::seconds(120)) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (cond()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

}  // namespace solbench::runset::testing
