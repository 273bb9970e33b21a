// Pieces of the compiler and linker command lines that the native and the
// torch-extension builds share, and the small text helpers of the build.
//
//   sources   SrcKind, kind_of: which compiler a source goes to (or none)
//   flags     has_prefix_flag, include_args, append; gencode_flags (build.h)
//   CUDA      is_cuda_language, has_cuda_language, append_cuda_link,
//             append_host_link_flags
//   the log   command_line (argv as a shell reads it), seconds_text,
//             timeout_message
//   text      starts_with, lower
#pragma once

#include <filesystem>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "core/solution.h"
#include "harness/build/dependencies.h"

namespace solbench::harness::build_internal {

enum class SrcKind { Cxx, C, Cuda, Other };
// By extension: .cc/.cpp/.cxx/.C/.c++ C++, .c C, .cu CUDA; headers and anything
// else are written, not compiled.
SrcKind kind_of(const std::string& path);

bool has_prefix_flag(const std::vector<std::string>& flags, std::initializer_list<const char*> prefixes);
// {flag, dir} for each folder: -I by default, -isystem for system headers.
std::vector<std::string> include_args(const std::vector<std::filesystem::path>& dirs,
                                      const char* flag = "-I");
void append(std::vector<std::string>& a, const std::vector<std::string>& b);

bool is_cuda_language(Language l);
bool has_cuda_language(const Solution& sol);
// The CUDA runtime, the dependencies' libraries, then the solution's own link
// flags. The stub libcuda.so only satisfies the linker; the driver's is used at
// run time.
void append_cuda_link(std::vector<std::string>& link, const std::filesystem::path& nvcc,
                      const ResolvedDependencies& deps, const Solution& sol);
// A CPU-only link: the dependencies' libraries and the solution's flags, less the
// public default -lcuda.
void append_host_link_flags(std::vector<std::string>& link, const ResolvedDependencies& deps,
                            const Solution& sol);

// The command as logged ("$ ..."): arguments quoted where a shell would need it.
std::string command_line(const std::vector<std::string>& argv);
// "120", "1.5": seconds for messages.
std::string seconds_text(double s);
// "<what> timed out: the build limit of <limit> s passed; ...".
std::string timeout_message(const std::string& what, double limit_seconds);

inline bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
std::string lower(std::string s);

}  // namespace solbench::harness::build_internal
