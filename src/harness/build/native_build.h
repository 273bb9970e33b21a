// The native build: a plain C++/CUDA shared library whose entry function is looked
// up by name.
//
// Native binding [ext] (include/solbench/kernel.h): g++/gcc for .cc/.cpp/.cxx/.c
// with `cflags`, nvcc for .cu with `cuda_cflags`, linked with g++ into lib.so
// (`ld_flags`). `languages: ["cpp"]` builds host code only (a .cu source is
// refused; -lcuda is dropped). CUDA languages (cuda_cpp, cutlass, cublas, cudnn)
// use nvcc with `-gencode` for the target arch, see the toolkit's include folder
// from host sources too, link the CUDA runtime as a shared library (-lcudart);
// without a driver, libcuda resolves against the toolkit's stub library.
// Relocatable device code gets a device link. The entry must be exported (C
// linkage, default visibility: artifact_check.h).
#pragma once

#include "harness/build/builder.h"

namespace solbench::harness::build_internal {

// Builds (or finds in the cache) b.sol as a native library; the outcome is in b.result.
void build_native(Builder& b);

}  // namespace solbench::harness::build_internal
