// The C++ dependencies of a solution, found for both bindings before anything is
// compiled: spec.dependencies (names compared without case, '-' read as '_') and
// the languages cublas, cudnn, cutlass.
//   cublas, cublaslt           -lcublas -lcublasLt (the CUDA toolkit's)
//   cudnn, cudnn_frontend      cudnn.h and libcudnn from $CUDNN_HOME / $CUDNN_PATH, the
//                              nvidia-cudnn wheel of `python` (nvidia/cudnn/{include,lib}),
//                              the CUDA toolkit, or the system; -lcudnn, rpath to its folder
//   cutlass, cute              headers from $SOLBENCH_CUTLASS_DIR, $CUTLASS_DIR
//                              ($CUTLASS_PATH, $CUTLASS_HOME), the nvidia-cutlass Python
//                              package (cutlass_library/source/include), or
//                              /usr/local/cutlass
// Other names (torch, triton, numpy, ...: Python packages) add nothing. A missing
// one is a CompileError naming it and what to set.
#pragma once

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "core/solution.h"

namespace solbench::harness {

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

}  // namespace solbench::harness
