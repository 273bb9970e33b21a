// What a worker's sandbox allows, decided by the parent (which knows the solution,
// the caches and the installed toolchains) and sent in WorkerPlan::sandbox:
//
//   processes   native and torch-extension solutions: none; Python-family ones may
//               start processes, but the kernel (Landlock) lets them execute only
//               the toolchains GPU runtimes use: the C compiler chain (Triton's
//               launcher, Inductor's C++), ptxas and its siblings (Triton's bundled
//               ones, the CUDA toolkit's), ldconfig. No shell, no interpreter.
//   writes      the worker's scratch folder (added by the worker, which knows it),
//               /dev/shm; existing device files.
//   caches      Triton, Inductor, the CUDA JIT and XDG caches are kept under
//               <cache>/jit/<content key>/ and lent to the worker: the parent moves
//               their entries into <scratch>/jit/ before the worker gets its plan and
//               back once it is done (rename(2), no copy). A second evaluation of the
//               same solution reuses them, no solution can plant entries another one
//               loads, and the plan names nothing of the solution (a spare worker
//               prepared ahead serves any solution of its kind).
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
// "restrict_fs", "writable", "device_files", "executable", "env", "jit": "scratch",
// "jit_cache"}. Creates the content-keyed cache folder (jit_cache).
json worker_sandbox_plan(const WorkerPolicyRequest& request);

// The environment a worker sets for its runtimes before Python starts: the compile
// caches under `jit_dir` (with "jit": "scratch", <scratch>/jit), compile threads in
// process (Inductor's worker pool would run the interpreter, which is not on the list).
std::vector<std::pair<std::string, std::string>> runtime_cache_env(
    const std::filesystem::path& jit_dir);
inline constexpr const char* kScratchJitFolder = "jit";

// The sandbox as the worker applies it: without the parent's jit_cache path.
json without_jit_cache(json sandbox);

// Lends a plan's caches (sandbox jit_cache) to the worker whose scratch folder is
// `scratch`: moves their entries into <scratch>/jit/; take_back_caches moves them
// back. An entry whose place is taken (another worker of the same content holds the
// caches) is left where it is: that worker compiles afresh. Returns the entries moved.
int lend_caches(const json& sandbox, const std::filesystem::path& scratch);
int take_back_caches(const json& sandbox, const std::filesystem::path& scratch);

}  // namespace solbench::harness
