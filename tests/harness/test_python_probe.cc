// remembered_python_probe (src/harness/build/python_probe.h): an interpreter's answer
// is reused while its import path and the files it names are unchanged.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "harness/build/build_cache.h"
#include "harness/build/python_probe.h"
#include "test_support.h"

namespace solbench::harness {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

class PythonProbeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(site_);
    std::ofstream(watched_) << "1\n";
    // An interpreter that logs each run, with `site_` first on its import path.
    std::ofstream f(python_);
    f << "#!/bin/sh\necho run >> '" << runs_.string() << "'\n"
      << "PYTHONPATH='" << site_.string() << "' exec python3 \"$@\"\n";
    f.close();
    fs::permissions(python_, fs::perms::owner_all);
  }
  PythonProbe ask(const std::string& code) {
    return remembered_python_probe(&cache_, python_, "test", code, 30s);
  }
  size_t runs() const {
    std::ifstream in(runs_);
    size_t n = 0;
    for (std::string l; std::getline(in, l);) ++n;
    return n;
  }

  testing::TempDir tmp_;
  fs::path site_ = tmp_.path() / "site";
  fs::path watched_ = tmp_.path() / "watched.txt";
  fs::path python_ = tmp_.path() / "python";
  fs::path runs_ = tmp_.path() / "runs.txt";
  BuildCache cache_{tmp_.path() / "cache"};
  std::string code_ = "import os\nprint('answer', 42)\nprint('solbench-watch', os.stat('" +
                      watched_.string() + "').st_mtime_ns, '" + watched_.string() + "')";
};

TEST_F(PythonProbeTest, AnswersFromTheCacheUntilTheImportPathOrAWatchedFileChanges) {
  PythonProbe p = ask(code_);
  ASSERT_TRUE(p.ok) << p.output;
  EXPECT_FALSE(p.remembered);
  EXPECT_EQ(p.output, "answer 42\n");  // the watch lines are the probe's own
  EXPECT_EQ(runs(), 1u);

  p = ask(code_);
  EXPECT_TRUE(p.ok && p.remembered);
  EXPECT_EQ(p.output, "answer 42\n");
  EXPECT_EQ(runs(), 1u);

  std::ofstream(site_ / "new_package.py") << "\n";  // an install on the import path
  p = ask(code_);
  EXPECT_FALSE(p.remembered);
  EXPECT_EQ(runs(), 2u);
  EXPECT_TRUE(ask(code_).remembered);

  std::this_thread::sleep_for(20ms);
  std::ofstream(watched_) << "2\n";  // a file the code named
  EXPECT_FALSE(ask(code_).remembered);
  EXPECT_EQ(runs(), 3u);

  // Other code is another question.
  EXPECT_FALSE(ask(code_ + "\n").remembered);
  EXPECT_EQ(runs(), 4u);
}

// The working directory is not on the probe's import path (the workers run elsewhere):
// files made there change no answer, and a module there is not found.
TEST_F(PythonProbeTest, TheWorkingDirectoryIsNeitherImportedFromNorWatched) {
  const fs::path work = tmp_.path() / "work";
  fs::create_directories(work);
  std::ofstream(work / "cwd_only_module.py") << "X = 1\n";
  const fs::path before = fs::current_path();
  fs::current_path(work);
  PythonProbe p = ask(code_);
  const PythonProbe imported = ask("import cwd_only_module");
  std::this_thread::sleep_for(20ms);
  std::ofstream(work / "new_file.txt") << "x\n";  // the folder's mtime changes
  const PythonProbe again = ask(code_);
  fs::current_path(before);
  ASSERT_TRUE(p.ok) << p.output;
  EXPECT_FALSE(imported.ok) << imported.output;
  EXPECT_TRUE(again.ok && again.remembered);
  EXPECT_EQ(runs(), 2u);
}

TEST_F(PythonProbeTest, AFailedAnswerIsNotRemembered) {
  EXPECT_FALSE(ask("raise SystemExit(3)").ok);
  EXPECT_FALSE(ask("raise SystemExit(3)").ok);
  EXPECT_EQ(runs(), 2u);
  // Without a cache every question runs.
  EXPECT_FALSE(remembered_python_probe(nullptr, python_, "test", code_, 30s).remembered);
  EXPECT_FALSE(remembered_python_probe(nullptr, python_, "test", code_, 30s).remembered);
  EXPECT_EQ(runs(), 4u);
}

}  // namespace
}  // namespace solbench::harness
