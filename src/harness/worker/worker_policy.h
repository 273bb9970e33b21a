// What a worker's sandbox allows, decided by the parent (which knows the solution,
// the caches and the installed toolchains) and sent in WorkerPlan::sandbox:
//
//   processes   native and torch-extension solutions: none; Python-family ones may
//               start processes, but the kernel (Landlock) lets them execute only
//               the toolchains GPU runtimes use: the C compiler chain (Triton's
//               launcher, Inductor's C++), ptxas and its siblings (Triton's bundled
//               ones, the CUDA toolkit's), ldconfig. No shell, no interpreter.
//   writes      the worker's scratch folder (added by the worker, which knows it),
//               the solution's own compile caches, /dev/shm; existing device files.
//   caches      Triton, Inductor, the CUDA JIT and XDG caches live under
//               <cache>/jit/<content key>/: a second evaluation of the same solution
//               reuses them, and no solution can plant entries another one loads.
//
// docs/sandbox.md states the policy and what it leaves open.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "core/json.h"
#include "harness/protocol.h"

namespace solbench::harness {

struct WorkerPolicyRequest {
  EntryKind kind = EntryKind::Python;
  std::string device = "cpu";
  // Content key of what runs (the solution's JSON, or the definition for the
  // reference): names the compile-cache folder.
  std::string content;
  // Root of the compile caches; empty: <default build cache>/../jit.
  std::filesystem::path jit_root;
  std::string python;  // interpreter whose packages hold Triton; empty: the configured one
};

struct Toolchains {
  // Files, or folders of them, that Python workers may execute.
  std::vector<std::string> executables;
  // CC / CXX for the runtimes when a compiler driver on PATH (or $CC/$CXX) is a
  // wrapper script (`#!/bin/sh` + `exec /real/gcc -B... "$@"`): the shell is not on
  // the list, so the runtimes are pointed at the program the wrapper runs, through
  // solbench-ccwrap when the script adds fixed arguments (ccwrap_main.cc).
  std::vector<std::pair<std::string, std::string>> env;
};

// The toolchains found on this machine. Probes the interpreter and the compilers
// once per process.
Toolchains find_toolchains(const std::string& python = "");

// What a wrapper script runs: the program and fixed arguments of its first
// `exec /absolute/elf ARG... "$@"` line, or empty when `path` is no such script
// (or its arguments need the shell to expand them).
std::vector<std::string> wrapper_command(const std::filesystem::path& path);
// wrapper_command's program, or empty.
std::string wrapper_target(const std::filesystem::path& path);

// The WorkerPlan::sandbox object for a request: {"deny_process_creation",
// "restrict_fs", "writable", "device_files", "executable", "env"}. Creates the
// cache folders.
json worker_sandbox_plan(const WorkerPolicyRequest& request);

// The environment a worker sets for its runtimes before Python starts: the compile
// caches under `jit_dir`, compile threads in process (Inductor's worker pool would
// run the interpreter, which is not on the list).
std::vector<std::pair<std::string, std::string>> runtime_cache_env(
    const std::filesystem::path& jit_dir);

}  // namespace solbench::harness
