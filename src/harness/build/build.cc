#include "harness/build/build.h"

#include <sched.h>

#include <algorithm>
#include <cstdlib>
#include <thread>

#include "core/settings.h"
#include "harness/build/builder.h"
#include "harness/build/native_build.h"
#include "harness/build/torch_build.h"

namespace solbench::harness {

using build_internal::Builder;

std::string_view build_status_name(BuildStatus s) {
  switch (s) {
    case BuildStatus::Ok: return "ok";
    case BuildStatus::CompileError: return "compile_error";
    case BuildStatus::Timeout: return "timeout";
    case BuildStatus::Unsupported: return "unsupported";
    case BuildStatus::Rejected: return "rejected";
  }
  return "?";
}

json BuildResult::to_json() const {
  json j = {{"status", build_status_name(status)},
            {"so_path", so_path.string()},
            {"entry_symbol", entry_symbol},
            {"cache_hit", cache_hit},
            {"cache_key", cache_key},
            {"seconds", seconds},
            {"compiler_version", compiler_version},
            {"abi_symbol", abi_symbol},
            {"import_violations", harness::to_json(import_violations)},
            {"log", log}};
  if (!module_name.empty()) j["module_name"] = module_name;
  if (!build_dir.empty()) j["build_dir"] = build_dir.string();
  return j;
}

int build_jobs() {
  if (const std::optional<int> jobs = settings().build_jobs) return *jobs;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) == 0) {
    const int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  const unsigned n = std::thread::hardware_concurrency();
  return n > 0 ? static_cast<int>(n) : 1;
}

std::string first_error_line(const std::string& log) {
  std::string last;
  size_t pos = 0;
  while (pos < log.size()) {
    size_t e = log.find('\n', pos);
    if (e == std::string::npos) e = log.size();
    std::string line = log.substr(pos, e - pos);
    pos = e + 1;
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos || build_internal::starts_with(line, "$ "))
      continue;
    last = line;
    const std::string l = build_internal::lower(line);
    if (l.find("error:") != std::string::npos || l.find("error :") != std::string::npos ||
        l.find("undefined reference") != std::string::npos ||
        l.find("undefined symbol") != std::string::npos)
      return line;
  }
  return last;
}

BuildResult build_solution(const Solution& solution, const BuildOptions& opts) {
  Builder b(solution, opts);
  if (solution.spec.languages.empty()) {
    b.fail(BuildStatus::Rejected, "spec.languages is empty");
    return b.finalize();
  }
  if (solution.spec.family() == LanguageFamily::Python) {
    b.fail(BuildStatus::Unsupported, "Python-family solutions are not built (they run in the worker's interpreter)");
    return b.finalize();
  }
  try {
    if (solution.spec.binding == Binding::Torch) build_internal::build_torch(b);
    else build_internal::build_native(b);
  } catch (const std::exception& e) {
    // Unexpected (I/O on the cache or staging folder): still a result, never a throw.
    b.fail(BuildStatus::CompileError, std::string("build failed: ") + e.what());
  }
  return b.finalize();
}

BuildResult build_torch_extension(const Solution& solution, const BuildOptions& opts) {
  Builder b(solution, opts);
  try {
    build_internal::build_torch(b);
  } catch (const std::exception& e) {
    b.fail(BuildStatus::CompileError, std::string("build failed: ") + e.what());
  }
  return b.finalize();
}

}  // namespace solbench::harness
