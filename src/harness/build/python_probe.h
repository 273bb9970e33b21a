// A question put to an interpreter (`python -c CODE`), remembered in the build
// cache while nothing it can depend on has changed.
//
// Starting the interpreter costs 25-100 ms (site-packages' .pth files), and an
// evaluation asks it where torch is (the torch binding's build key) and where the
// runtimes keep their programs (the sandbox's list): an agent's every call paid it.
// The answer depends on the interpreter's file, the variables that change its
// import path, the working directory (sys.path[0] of -c) and what its import path
// holds: the probe lists every folder of sys.path with its modification time (an
// install or removal anywhere on it adds or drops entries in one of them), and the
// code may name more files to watch (torch/version.py, which an upgrade in place
// rewrites). The remembered answer is used while every one is unchanged.
#pragma once

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>

namespace solbench::harness {

class BuildCache;

struct PythonProbe {
  bool ok = false;         // the interpreter ran the code and exited 0
  bool timed_out = false;
  bool remembered = false; // from the cache: the interpreter did not run
  std::string output;      // what the code printed (stdout and stderr), watch lines removed
};

// The line a probe's code prints for each further file it depends on:
// print(WATCH_PREFIX + str(os.stat(path).st_mtime_ns) + " " + path).
inline constexpr const char* kProbeWatchPrefix = "solbench-watch ";

// Runs `python -c code` (or answers from `cache`, which may be null). `what` names
// the question in the cache (the same code under a new name is a new question).
// Only successful answers are remembered.
PythonProbe remembered_python_probe(const BuildCache* cache, const std::filesystem::path& python,
                                    const std::string& what, const std::string& code,
                                    std::chrono::duration<double> timeout);

}  // namespace solbench::harness
