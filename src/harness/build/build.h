// Builds a C++-family solution into a shared object, in a staging folder, through
// the content-addressed build cache. This header is the build's front door
// (build.cc); the rest of build/ holds its parts:
//
//   safe_inputs.h      sources written safely; unsafe paths and compiler flags refused
//   dependencies.h     cublas, cudnn, cutlass found for both bindings
//   builder.h          one build's state and the steps both bindings share
//   step_runner.h      the compiler runs, in parallel, logged in source order
//   command_lines.h    pieces of compile and link commands (gencode_flags: here)
//   native_build.h     the native binding [ext]: lib.so
//   torch_build.h      the torch binding: an importable extension module
//   torch_pch.h        its precompiled <torch/extension.h>
//   artifact_check.h   the import check and the entry's export, on the built .so
//   build_cache.h      the content-addressed cache; python_probe.h: interpreter
//                      answers remembered there
// Where compilers, CUDA, python and torch are found: harness/toolchain.h.
//
// Every compilable source is compiled by its own compiler process, up to
// BuildOptions::jobs at once (default: the CPUs this process may use), then the
// objects are linked. The log lists each source's command and output in source
// order. Dependencies (spec.dependencies, and the languages cublas, cudnn, cutlass)
// are resolved for both bindings by resolve_dependencies(); a missing one is a
// CompileError naming it and what to set.
//
// Source paths are re-checked (unsafe_source_path_reason, no escape through
// symlinks) and compiler flags that would run foreign programs or write outside the
// staging folder (-fplugin, -B, -wrapper, -specs, @file, -o, -ccbin, ...) are
// refused before anything runs (status Rejected).
#pragma once

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/json.h"
#include "core/solution.h"
#include "harness/build/dependencies.h"  // ResolvedDependencies, resolve_dependencies
#include "harness/build/safe_inputs.h"   // write_sources, unsafe_flag_reason
#include "harness/checks/symbols.h"

namespace solbench::harness {

enum class BuildStatus {
  Ok,
  CompileError,  // the compiler or linker failed (or torch headers are missing)
  Timeout,       // the compile deadline passed; the compiler's process group was killed
  Unsupported,   // not buildable here: Python-family solution, no nvcc for CUDA, ...
  Rejected,      // unsafe input (source path, symlink, compiler flag): nothing ran.
                 // The trace has no closer status than COMPILE_ERROR.
};
std::string_view build_status_name(BuildStatus s);  // "ok", "compile_error", ...

struct BuildOptions {
  // Cache root; empty: default_build_cache_dir().
  std::filesystem::path cache_dir;
  bool use_cache = true;
  // Wall-clock limit for the whole build (all compiler and linker runs).
  std::chrono::duration<double> timeout = std::chrono::seconds(120);
  // CUDA target as a compute capability, e.g. "90a", "100a", "80"; empty: nvcc's
  // default (-arch=native is never used: builds must not need a GPU).
  std::string cuda_arch;
  // Folder holding solbench/kernel.h; empty: SOLBENCH_INCLUDE_DIR from the
  // environment, else the include/ of the source tree solbench was built from.
  std::filesystem::path include_dir;
  // Compilers; empty: $CXX/$CC or g++/gcc, $NVCC or nvcc in CUDA_HOME/bin or PATH.
  std::string cxx, cc, nvcc;
  std::string python = "python3";       // for torch include paths
  std::vector<std::string> extra_include_dirs;  // e.g. a CUTLASS checkout's include
  // Staging for the build when the cache is off (with the cache on, builds happen
  // in the cache's temp folder); kept for inspection when keep_staging.
  std::filesystem::path staging_base;
  bool keep_staging = false;
  size_t log_limit_bytes = 64 << 10;
  // Compiler processes run at once (one per source); 0: build_jobs().
  int jobs = 0;
  // Torch binding: use (and make) a precompiled <torch/extension.h> in the cache
  // for .cpp sources that start with that include. Also off when
  // $SOLBENCH_TORCH_PCH is "0", and without the cache.
  bool torch_pch = true;
};

// Compiler processes a build runs at once by default: $SOLBENCH_BUILD_JOBS when it
// is a positive number, else the number of CPUs this process may run on.
int build_jobs();

// The line of a build log to show first: the first line that reports an error
// (the compiler's "file:line:col: error: ..." or "fatal error"), never one of the
// logged commands ("$ ..."); else the last non-empty line. Empty for an empty log.
std::string first_error_line(const std::string& log);

struct BuildResult {
  BuildStatus status = BuildStatus::CompileError;
  std::filesystem::path so_path;    // the artifact when Ok
  std::string module_name;          // torch binding: the Python module name
  std::string entry_symbol;         // function to look up (native: dlsym name)
  std::string log;                  // commands run and compiler output (bounded)
  bool cache_hit = false;
  double seconds = 0;
  std::string compiler_version;     // first line(s) of `--version` of the compilers used
  std::string cache_key;            // hex SHA-256
  // Kept build folder (keep_staging, or use_cache off: the caller removes it).
  std::filesystem::path build_dir;
  // From the artifact's dynamic symbol table (native binding, also on cache hits):
  bool abi_symbol = false;          // exports sb_abi_version (included solbench/kernel.h)
  std::vector<ImportViolation> import_violations;  // ImportPolicy::defaults(); advisory
  bool ok() const { return status == BuildStatus::Ok; }
  json to_json() const;
};

// Builds (or finds in the cache) the solution's shared object. Never throws for
// problems of the solution; they are reported in the result.
BuildResult build_solution(const Solution& solution, const BuildOptions& opts = {});

// The torch-binding path of build_solution, callable directly.
BuildResult build_torch_extension(const Solution& solution, const BuildOptions& opts = {});

// nvcc target flags for a compute capability: "90a" → {"-gencode", "arch=compute_90a,code=sm_90a"}.
std::vector<std::string> gencode_flags(const std::string& cuda_arch);

}  // namespace solbench::harness
