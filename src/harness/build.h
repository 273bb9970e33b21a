// Builds a C++-family solution into a shared object, in a staging folder, through
// the content-addressed build cache.
//
// Native binding [ext] (include/solbench/kernel.h): every C/C++/CUDA source is
// compiled separately (g++/gcc for .cc/.cpp/.cxx/.c with `cflags`, nvcc for .cu with
// `cuda_cflags`) and linked with g++ into lib.so (`ld_flags`). `languages: ["cpp"]`
// builds host code only (a .cu source is refused; -lcuda is dropped). CUDA
// languages (cuda_cpp, cutlass, cublas, cudnn) use nvcc with `-gencode` for the
// target arch, link the CUDA runtime as a shared library (-lcudart) and add
// -lcublas/-lcublasLt, -lcudnn for those dependencies; without a driver, libcuda
// resolves against the toolkit's stub library.
// Torch binding (public format): sources carry their own
// PYBIND11_MODULE(TORCH_EXTENSION_NAME, m); they are compiled against torch's
// headers (found through `python3 -c 'import torch.utils.cpp_extension ...'`) into
// an importable module <module_name>.so; without torch the build is a
// CompileError saying so.
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
#include "harness/symbols.h"

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
};

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

// Writes the solution's sources under `dir` (which must exist), re-validating every
// path and refusing to write through a symlink. Returns the reason on refusal.
std::optional<std::string> write_sources(const Solution& solution,
                                         const std::filesystem::path& dir);

// The reason a compiler flag is refused, or nullopt when it is allowed. `nvcc`
// selects the additional nvcc-only checks.
std::optional<std::string> unsafe_flag_reason(const std::string& flag, bool nvcc);

// nvcc target flags for a compute capability: "90a" → {"-gencode", "arch=compute_90a,code=sm_90a"}.
std::vector<std::string> gencode_flags(const std::string& cuda_arch);

}  // namespace solbench::harness
