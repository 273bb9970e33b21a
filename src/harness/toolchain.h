// The toolchains solbench finds on this machine, for the build (build/) and for the
// sandbox of Python workers (worker/worker_policy.cc): one place for where each is
// looked for, which variables are honoured and what is remembered.
//
//   interpreter     configured_python: the one the worker embeds, unless named
//   compilers       compiler_name / find_compiler: g++, gcc ($CXX, $CC);
//                   find_nvcc: nvcc ($NVCC, $CUDA_HOME, $CUDA_PATH, the toolkit
//                   solbench was built with, /usr/local/cuda, PATH); cuda_root_of,
//                   cuda_lib_dir; program_version (`--version`, memoised)
//   solbench        kernel_include_candidates: where include/solbench/kernel.h is
//   torch           torch_settings: what torch.utils.cpp_extension compiles with
//                   (memoised per torch install)
//   worker sandbox  find_toolchains: every program a Python worker may execute
//                   (compiler chain, CUDA tools, the runtimes' own), memoised per
//                   process; wrapper_command / wrapper_target see through
//                   compiler wrapper scripts
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "harness/process.h"

namespace solbench::harness {

class BuildCache;

// ---------------------------------------------------------------- interpreter

// `requested`, else $SOLBENCH_PYTHON, else the interpreter solbench embeds
// (SOLBENCH_PYTHON_EXECUTABLE at build time), else "python3".
std::string configured_python(const std::string& requested = "");

// ---------------------------------------------------------------- compilers

// The compiler to use: `configured`, else $`env` ("CXX" or "CC", from settings()),
// else `fallback` ("g++", "gcc").
std::string compiler_name(const std::string& configured, const char* env, const char* fallback);
// `name` looked up in PATH (a name with a slash as is), made absolute; nullopt when
// it is not an executable.
std::optional<std::filesystem::path> find_compiler(const std::string& name);

// nvcc: `configured`, else $NVCC, else bin/nvcc of $CUDA_HOME, $CUDA_PATH, the toolkit
// solbench was built with (SOLBENCH_CUDA_ROOT), /usr/local/cuda, else nvcc in PATH.
std::optional<std::filesystem::path> find_nvcc(const std::string& configured = "");
// The toolkit's root: <root>/bin/nvcc.
std::filesystem::path cuda_root_of(const std::filesystem::path& nvcc);
// The toolkit's library folder (the one holding libcudart.so; lib64 when none does).
std::filesystem::path cuda_lib_dir(const std::filesystem::path& cuda_root);

// `prog --version`, remembered in `cache` (may be null) by the program's
// file_identity; only a successful answer is remembered.
struct ProgramVersion {
  std::optional<std::string> text;  // the first 2048 bytes of what it printed
  bool timed_out = false;
  std::string error;                // why it could not run (spawn error, or status and output)
};
ProgramVersion program_version(const std::filesystem::path& prog, const BuildCache* cache,
                               std::chrono::duration<double> timeout);

// ---------------------------------------------------------------- solbench's headers

// Folders that may hold solbench/kernel.h, in order: `configured`, $SOLBENCH_INCLUDE_DIR,
// the source tree's include/ (SOLBENCH_SOURCE_INCLUDE_DIR), <executable>/../include.
std::vector<std::filesystem::path> kernel_include_candidates(const std::filesystem::path& configured);

// ---------------------------------------------------------------- torch

// What torch.utils.cpp_extension.load() compiles with: include_paths(),
// library_paths(), the pybind11 ABI macros, the C++11 ABI flag, plus pybind11's
// headers when torch does not ship them.
struct TorchSettings {
  std::string error;        // non-empty: none (no torch, the query failed)
  bool timed_out = false;   // the error is a time limit
  std::string note;         // for the build log: the query ran (it was not remembered)
  std::string origin;       // where torch is: the memo key of the query
  std::string text;         // the query's answer (JSON), as remembered
  std::vector<std::string> include_paths, library_paths;
  std::string python_include, pybind11_include, version, cuda_version;
  std::vector<std::pair<std::string, std::string>> pybind11_abi;  // {"COMPILER_TYPE", "_gcc"}, ...
  int cxx11_abi = 1;
  bool ok() const { return error.empty(); }
};
// Asks `python` (its path) where torch is (python_probe.h, remembered while its
// import path is unchanged) and then, unless `cache` (may be null) remembers the
// answer for that torch, its build settings; within `deadline`.
TorchSettings torch_settings(const std::filesystem::path& python, const BuildCache* cache,
                             Deadline deadline);

// ---------------------------------------------------------------- worker sandbox

struct Toolchains {
  // Files, or folders of them, that Python workers may execute.
  std::vector<std::string> executables;
  // CC / CXX for the runtimes when a compiler driver on PATH (or $CC/$CXX) is a
  // wrapper script (`#!/bin/sh` + `exec /real/gcc -B... "$@"`): the shell is not on
  // the list, so the runtimes are pointed at the program the wrapper runs, through
  // solbench-ccwrap when the script adds fixed arguments (ccwrap_main.cc).
  std::vector<std::pair<std::string, std::string>> env;
};

// The toolchains found on this machine. Probes the interpreter (configured_python
// of `python`) and the compilers once per process.
Toolchains find_toolchains(const std::string& python = "");

// What a wrapper script runs: the program and fixed arguments of its first
// `exec /absolute/elf ARG... "$@"` line, or empty when `path` is no such script
// (or its arguments need the shell to expand them).
std::vector<std::string> wrapper_command(const std::filesystem::path& path);
// wrapper_command's program, or empty.
std::string wrapper_target(const std::filesystem::path& path);

}  // namespace solbench::harness
