#include "harness/build/safe_inputs.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <set>
#include <vector>

#include "harness/build/command_lines.h"

namespace solbench::harness {
namespace fs = std::filesystem;

namespace {

using build_internal::starts_with;

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    size_t c = s.find(',', start);
    out.push_back(s.substr(start, c == std::string::npos ? std::string::npos : c - start));
    if (c == std::string::npos) break;
    start = c + 1;
  }
  return out;
}

// Linker pieces (from -Wl, or -Xlinker) that write files or load plugins.
std::optional<std::string> unsafe_linker_piece(const std::string& p) {
  if (p == "-o" || starts_with(p, "--output") || starts_with(p, "-Map") || starts_with(p, "--Map") ||
      starts_with(p, "-plugin") || starts_with(p, "--plugin") || starts_with(p, "--dependency-file") ||
      starts_with(p, "--write-") || starts_with(p, "-fplugin"))
    return "linker option " + p + " writes files or loads a plugin";
  return std::nullopt;
}

}  // namespace

std::optional<std::string> unsafe_flag_reason(const std::string& flag, bool nvcc) {
  if (flag.empty()) return std::nullopt;
  if (flag[0] == '@') return "reads options from a file";
  if (flag.find('\0') != std::string::npos || flag.find('\n') != std::string::npos)
    return "contains control characters";
  const std::string name = flag.substr(0, flag.find('='));
  // Running other programs or plugins.
  for (const char* p : {"-fplugin", "-B", "-wrapper", "-specs", "--specs", "-no-integrated-cpp",
                        "--sysroot", "-isysroot", "--gcc-toolchain", "-fcompare-debug"})
    if (starts_with(flag, p)) return "could run programs or plugins outside the toolchain";
  if (starts_with(flag, "-fuse-ld=") && flag.find('/') != std::string::npos)
    return "selects a linker program by path";
  // Writing files outside the build folder.
  if (flag == "-o" || (starts_with(flag, "-o") && !starts_with(flag, "-opt") && !nvcc) ||
      starts_with(flag, "-MF") ||
      starts_with(flag, "-dumpdir") || starts_with(flag, "-dumpbase") ||
      starts_with(flag, "-save-temps=") || starts_with(flag, "-fdump-") ||
      starts_with(flag, "-fprofile-generate=") || starts_with(flag, "-fprofile-dir") ||
      starts_with(flag, "-fstack-usage") || starts_with(flag, "-aux-info") ||
      starts_with(flag, "-fcallgraph-info"))
    return "sets an output file (the harness chooses where artifacts go)";
  if (starts_with(flag, "-Wl,")) {
    for (const auto& p : split_commas(flag.substr(4)))
      if (auto why = unsafe_linker_piece(p)) return why;
  }
  // The next argument would be checked out of context: ask for the -Wl, form.
  if (!nvcc && (flag == "-Xlinker" || flag == "-Xassembler" || flag == "-Xpreprocessor"))
    return "passes the next argument through unchecked (use -Wl,... instead)";
  if (starts_with(flag, "-Wa,")) {
    for (const auto& p : split_commas(flag.substr(4)))
      if (starts_with(p, "-o") || starts_with(p, "-a") || starts_with(p, "--MD") || starts_with(p, "@"))
        return "assembler option " + p + " writes files";
  }
  if (starts_with(flag, "-Wp,")) {
    for (const auto& p : split_commas(flag.substr(4)))
      if (starts_with(p, "-M") || starts_with(p, "-o")) return "preprocessor option " + p + " writes files";
  }
  if (nvcc) {
    static const std::set<std::string> refused = {
        "-o", "--output-file", "-odir", "--output-directory", "-ccbin", "--compiler-bindir",
        "-optf", "--options-file", "--keep-dir", "-keep-dir", "--dependency-output", "-MF",
        "-MD", "-MMD", "--generate-dependencies-with-compile", "--generate-nonsystem-dependencies-with-compile",
        "-Xlinker", "--linker-options", "-Xarchive", "--archive-options", "-Xnvlink", "--nvlink-options",
        "-Xfatbin", "--fatbin-options", "--run", "-run", "--run-args", "-run-args", "-lib", "--lib",
        "-link", "--link", "-dlink", "--device-link", "--compiler-options-file"};
    if (refused.count(name)) return "nvcc option " + name + " is reserved for the harness";
    for (const char* pass : {"-Xcompiler", "--compiler-options"}) {
      if (starts_with(flag, std::string(pass) + "=")) {
        for (const auto& p : split_commas(flag.substr(std::strlen(pass) + 1)))
          if (auto why = unsafe_flag_reason(p, false)) return why;
      }
    }
    for (const char* pass : {"-Xptxas", "--ptxas-options"}) {
      if (starts_with(flag, std::string(pass) + "=")) {
        for (const auto& p : split_commas(flag.substr(std::strlen(pass) + 1)))
          if (starts_with(p, "-o") || starts_with(p, "--output")) return "ptxas option " + p + " writes files";
      }
    }
  }
  return std::nullopt;
}

std::optional<std::string> write_sources(const Solution& solution, const fs::path& dir) {
  std::set<std::string> seen;
  for (const auto& s : solution.sources) {
    if (auto why = unsafe_source_path_reason(s.path))
      return "sources: path '" + s.path + "' refused: " + *why;
    if (!seen.insert(s.path).second) return "sources: path '" + s.path + "' appears twice";
    // Create the parents one component at a time, never through a symlink.
    const fs::path rel(s.path);
    fs::path cur = dir;
    for (auto it = rel.begin(); it != rel.end(); ++it) {
      if (std::next(it) == rel.end()) break;
      cur /= *it;
      struct stat st {};
      if (::lstat(cur.c_str(), &st) == 0) {
        if (S_ISLNK(st.st_mode)) return "sources: path '" + s.path + "' goes through a symlink";
        if (!S_ISDIR(st.st_mode))
          return "sources: path '" + s.path + "' needs folder " + cur.filename().string() +
                 ", which is also a file";
      } else if (::mkdir(cur.c_str(), 0700) != 0) {
        return "sources: cannot create folder for '" + s.path + "': " + std::strerror(errno);
      }
    }
    const fs::path file = dir / rel;
    const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
      if (errno == EEXIST || errno == ELOOP)
        return "sources: path '" + s.path + "' already exists in the staging folder (symlink or duplicate)";
      return "sources: cannot write '" + s.path + "': " + std::strerror(errno);
    }
    size_t off = 0;
    while (off < s.content.size()) {
      ssize_t w = ::write(fd, s.content.data() + off, s.content.size() - off);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) {
        const int e = errno;
        ::close(fd);
        return "sources: cannot write '" + s.path + "': " + std::strerror(e);
      }
      off += static_cast<size_t>(w);
    }
    ::close(fd);
  }
  return std::nullopt;
}

}  // namespace solbench::harness
