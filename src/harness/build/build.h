// Builds a C++-family solution into a shared object, in a staging folder, through
// the content-addressed build cache.
//
// Every compilable source is compiled by its own compiler process, up to
// BuildOptions::jobs at once (default: the CPUs this process may use), then the
// objects are linked. The log lists each source's command and output in source
// order.
//
// Native binding [ext] (include/solbench/kernel.h): g++/gcc for .cc/.cpp/.cxx/.c
// with `cflags`, nvcc for .cu with `cuda_cflags`, linked with g++ into lib.so
// (`ld_flags`). `languages: ["cpp"]` builds host code only (a .cu source is
// refused; -lcuda is dropped). CUDA languages (cuda_cpp, cutlass, cublas, cudnn)
// use nvcc with `-gencode` for the target arch, see the toolkit's include folder
// from host sources too, link the CUDA runtime as a shared library (-lcudart);
// without a driver, libcuda resolves against the toolkit's stub library.
// Torch binding (public format): compiled as torch.utils.cpp_extension would
// (torch's, pybind11's and, for CUDA languages, the toolkit's include folders,
// -DTORCH_EXTENSION_NAME=<module>, -DTORCH_API_INCLUDE_EXTENSION_H, torch's
// -D_GLIBCXX_USE_CXX11_ABI and pybind11 ABI macros, torch's libraries), into an
// importable module <module_name>.so; settings come from `python3 -c 'import
// torch.utils.cpp_extension ...'` (memoised per torch install). A .cpp source that
// starts with #include <torch/extension.h> may use a precompiled header of it kept
// in the cache (docs/native-binding.md). Without torch the build is a
// CompileError saying so.
// Dependencies (spec.dependencies, and the languages cublas, cudnn, cutlass) are
// resolved for both bindings by resolve_dependencies(); a missing one is a
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

// The C++ dependencies of a solution: spec.dependencies (names compared without
// case, '-' read as '_') and the languages cublas, cudnn, cutlass.
//   cublas, cublaslt           -lcublas -lcublasLt (the CUDA toolkit's)
//   cudnn, cudnn_frontend      cudnn.h and libcudnn from $CUDNN_HOME / $CUDNN_PATH, the
//                              nvidia-cudnn wheel of `python` (nvidia/cudnn/{include,lib}),
//                              the CUDA toolkit, or the system; -lcudnn, rpath to its folder
//   cutlass, cute              headers from $SOLBENCH_CUTLASS_DIR, $CUTLASS_DIR
//                              ($CUTLASS_PATH, $CUTLASS_HOME), the nvidia-cutlass Python
//                              package (cutlass_library/source/include), or
//                              /usr/local/cutlass
// Other names (torch, triton, numpy, ...: Python packages) add nothing.
struct ResolvedDependencies {
  std::vector<std::string> resolved;                // "cublas", "cudnn", "cutlass" (sorted)
  std::vector<std::filesystem::path> include_dirs;  // added with -isystem to every compile
  std::vector<std::string> link_flags;              // -L, -Wl,-rpath, -l
  // Links the build folder provides so that -l<name> finds a library shipped only
  // with a versioned name (the cudnn wheel's libcudnn.so.9): {"libcudnn.so", target}.
  std::vector<std::pair<std::string, std::filesystem::path>> link_aliases;
  std::string notes;                                // where each was found (for the build log)
  std::string error;                                // non-empty: a dependency is missing
  bool ok() const { return error.empty(); }
  std::string key() const;                          // all of the above, for the cache key
};

// Resolves the dependencies of `solution`. `cuda_root` is the CUDA toolkit's root
// (empty when there is none); `python` the interpreter whose packages are searched
// (run only when cudnn or cutlass is wanted and not found through the environment).
ResolvedDependencies resolve_dependencies(const Solution& solution,
                                          const std::filesystem::path& cuda_root,
                                          const std::string& python);

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
