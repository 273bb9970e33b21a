// solbench-ccwrap: stands in for a compiler wrapper script inside the worker sandbox.
//
// Some machines put a shell script in front of their compiler (`#!/bin/sh` +
// `exec /opt/gcc/bin/gcc-real -B/opt/gcc/bin/ ... "$@"`). Triton and Inductor run
// $CC, but a Python worker may not execute a shell, and the real compiler alone
// lacks the script's fixed arguments. The parent (toolchain.cc) writes those
// into `<link>.args` (the program on the first line, one argument per line after
// it) beside a symbolic link `<link>` to this program, and points CC/CXX at the
// link. This program execs the program with the fixed arguments, then its own.
// It can run nothing the sandbox would not: the kernel still checks the exec.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

// argv[0] as a path: a bare name is looked up on PATH, as the shell would.
std::filesystem::path invoked_path(const char* argv0) {
  const std::filesystem::path name = argv0;
  if (name.has_parent_path()) return name;
  std::istringstream dirs(std::getenv("PATH") ? std::getenv("PATH") : "");
  std::error_code ec;
  for (std::string dir; std::getline(dirs, dir, ':');) {
    const std::filesystem::path candidate = std::filesystem::path(dir.empty() ? "." : dir) / name;
    if (std::filesystem::exists(std::filesystem::path(candidate).concat(".args"), ec)) return candidate;
  }
  return name;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 1) return 127;
  const std::string config = std::filesystem::path(invoked_path(argv[0])).concat(".args").string();
  std::ifstream in(config);
  std::vector<std::string> words;
  for (std::string line; std::getline(in, line);) words.push_back(line);
  if (words.empty() || words[0].empty() || words[0][0] != '/') {
    std::fprintf(stderr, "solbench-ccwrap: no program in %s (this program stands in for a "
                         "compiler wrapper inside solbench's worker sandbox)\n", config.c_str());
    return 127;
  }
  std::vector<char*> args;
  for (auto& w : words) args.push_back(w.data());
  for (int i = 1; i < argc; ++i) args.push_back(argv[i]);
  args.push_back(nullptr);
  ::execv(words[0].c_str(), args.data());
  std::fprintf(stderr, "solbench-ccwrap: cannot run %s: %s\n", words[0].c_str(), std::strerror(errno));
  return 127;
}
