// The torch-extension build.
//
// Torch binding (public format): compiled as torch.utils.cpp_extension would
// (torch's, pybind11's and, for CUDA languages, the toolkit's include folders,
// -DTORCH_EXTENSION_NAME=<module>, -DTORCH_API_INCLUDE_EXTENSION_H, torch's
// -D_GLIBCXX_USE_CXX11_ABI and pybind11 ABI macros, torch's libraries), into an
// importable module <module_name>.so; settings come from `python3 -c 'import
// torch.utils.cpp_extension ...'` (toolchain.h torch_settings, memoised per torch
// install). A .cpp source that starts with #include <torch/extension.h> may use a
// precompiled header of it kept in the cache (torch_pch.h, docs/native-binding.md).
// Without torch the build is a CompileError saying so.
#pragma once

#include "harness/build/builder.h"

namespace solbench::harness::build_internal {

// Builds (or finds in the cache) b.sol as a torch extension; the outcome is in b.result.
void build_torch(Builder& b);

}  // namespace solbench::harness::build_internal
