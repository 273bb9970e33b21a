#include "harness/build/command_lines.h"

#include <algorithm>
#include <cctype>
#include <cstdio>

#include "harness/build/build.h"
#include "harness/toolchain.h"

namespace solbench::harness {
namespace fs = std::filesystem;

std::vector<std::string> gencode_flags(const std::string& arch) {
  // "90", "90a", "100a", "120f": digits, then at most one letter suffix.
  size_t digits = 0;
  while (digits < arch.size() && std::isdigit(static_cast<unsigned char>(arch[digits]))) ++digits;
  if (digits < 2 || digits > 3 || arch.size() > digits + 1 ||
      (arch.size() == digits + 1 && arch.back() != 'a' && arch.back() != 'f'))
    return {};
  return {"-gencode", "arch=compute_" + arch + ",code=sm_" + arch};
}

namespace build_internal {

SrcKind kind_of(const std::string& path) {
  const std::string ext = fs::path(path).extension().string();
  if (ext == ".cc" || ext == ".cpp" || ext == ".cxx" || ext == ".C" || ext == ".c++") return SrcKind::Cxx;
  if (ext == ".c") return SrcKind::C;
  if (ext == ".cu") return SrcKind::Cuda;
  return SrcKind::Other;  // headers (.h, .cuh, .hpp, .inl) and anything else: written, not compiled
}

bool has_prefix_flag(const std::vector<std::string>& flags, std::initializer_list<const char*> prefixes) {
  for (const auto& f : flags)
    for (const char* p : prefixes)
      if (starts_with(f, p)) return true;
  return false;
}

std::vector<std::string> include_args(const std::vector<fs::path>& dirs, const char* flag) {
  std::vector<std::string> a;
  for (const auto& d : dirs) {
    a.push_back(flag);
    a.push_back(d.string());
  }
  return a;
}

void append(std::vector<std::string>& a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
}

bool is_cuda_language(Language l) {
  return l == Language::CudaCpp || l == Language::Cutlass || l == Language::Cudnn ||
         l == Language::Cublas;
}

bool has_cuda_language(const Solution& sol) {
  return std::any_of(sol.spec.languages.begin(), sol.spec.languages.end(), is_cuda_language);
}

void append_cuda_link(std::vector<std::string>& link, const fs::path& nvcc,
                      const ResolvedDependencies& deps, const Solution& sol) {
  const fs::path lib = cuda_lib_dir(cuda_root_of(nvcc));
  append(link, {"-L" + lib.string(), "-L" + (lib / "stubs").string(), "-Wl,-rpath," + lib.string(),
                "-lcudart"});
  append(link, deps.link_flags);
  append(link, sol.spec.compile_options.ld_flags);
}

void append_host_link_flags(std::vector<std::string>& link, const ResolvedDependencies& deps,
                            const Solution& sol) {
  append(link, deps.link_flags);
  for (const auto& f : sol.spec.compile_options.ld_flags)
    if (f != "-lcuda") link.push_back(f);
}

namespace {

std::string quote_arg(const std::string& a) {
  if (!a.empty() && a.find_first_of(" \t\n'\"\\$`*?;&|<>()") == std::string::npos) return a;
  std::string q = "'";
  for (char c : a) {
    if (c == '\'') q += "'\\''";
    else q += c;
  }
  return q + "'";
}

}  // namespace

std::string command_line(const std::vector<std::string>& argv) {
  std::string s;
  for (const auto& a : argv) {
    if (!s.empty()) s += ' ';
    s += quote_arg(a);
  }
  return s;
}

std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", s);
  return buf;
}

std::string timeout_message(const std::string& what, double limit_seconds) {
  return what + " timed out: the build limit of " + seconds_text(limit_seconds) +
         " s passed; the compiler's process group was killed";
}

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace build_internal
}  // namespace solbench::harness
