#include "harness/build/python_probe.h"

#include <sys/stat.h>

#include <sstream>
#include <vector>

#include "core/settings.h"
#include "harness/build/build_cache.h"
#include "harness/process.h"
#include "harness/sha256.h"

namespace solbench::harness {
namespace fs = std::filesystem;
namespace {

// Put before every probe: `python -c` puts the working directory ('') first on the
// import path, where the workers (which run in scratch folders of their own) have
// nothing. Without it the answer also depended on the working directory's mtime,
// which any file made or removed there changes: an agent evaluating from a busy
// folder asked again in every evaluation (25-100 ms).
constexpr const char* kNoWorkingDirectory =
    "import sys as _sb_sys0\n"
    "if _sb_sys0.path and _sb_sys0.path[0] == '': del _sb_sys0.path[0]\n";

// Appended to every probe: the import path's folders, as watch lines.
constexpr const char* kImportPathWatch = R"PY(
import os as _sb_os, sys as _sb_sys
for _sb_p in _sb_sys.path:
    _sb_p = _sb_os.path.abspath(_sb_p or '.')
    try:
        print('solbench-watch', _sb_os.stat(_sb_p).st_mtime_ns, _sb_p)
    except OSError:
        print('solbench-watch', -1, _sb_p)
)PY";

int64_t mtime_ns(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return -1;
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
}

// The cache's name for the question: the code, the interpreter's file, the
// variables that move its import path and the working directory.
std::string memo_id(const fs::path& python, const std::string& what, const std::string& code) {
  std::string id =
      "python-probe/2|" + what + "|" + sha256_hex(code).substr(0, 16) + "|" + file_identity(python);
  const Settings& env = settings();
  for (const auto& [name, value] : env.python_import_env) id += "|" + name + "=" + value;
  id += "|HOME=" + env.home.string();
  std::error_code ec;
  return id + "|cwd=" + fs::current_path(ec).string();
}

// Splits a probe's output into what it printed and its watch lines; `fresh` is
// false when a watched file changed since.
std::string answer_of(const std::string& text, bool& fresh) {
  std::istringstream in(text);
  std::string line, out;
  fresh = true;
  const std::string prefix = kProbeWatchPrefix;
  while (std::getline(in, line)) {
    if (line.rfind(prefix, 0) != 0) {
      out += line + "\n";
      continue;
    }
    const std::string rest = line.substr(prefix.size());
    const size_t blank = rest.find(' ');
    if (blank == std::string::npos || std::to_string(mtime_ns(rest.substr(blank + 1))) != rest.substr(0, blank))
      fresh = false;
  }
  return out;
}

}  // namespace

PythonProbe remembered_python_probe(const BuildCache* cache, const fs::path& python,
                                    const std::string& what, const std::string& code,
                                    std::chrono::duration<double> timeout) {
  PythonProbe p;
  const std::string id = memo_id(python, what, code);
  if (cache)
    if (const std::optional<std::string> text = cache->toolchain_version(id)) {
      bool fresh = false;
      std::string out = answer_of(*text, fresh);
      if (fresh && text->find(kProbeWatchPrefix) != std::string::npos) {
        p.ok = p.remembered = true;
        p.output = std::move(out);
        return p;
      }
    }
  RunOptions ro;
  ro.timeout = timeout;
  CommandResult r = run_command(
      {python.string(), "-c", kNoWorkingDirectory + code + "\n" + kImportPathWatch}, ro);
  p.timed_out = r.status.timed_out;
  p.ok = r.ok();
  bool fresh = false;
  p.output = answer_of(r.output, fresh);
  if (!r.ok()) p.output = r.spawn_error + p.output;
  if (p.ok && cache) cache->store_toolchain_version(id, r.output);
  return p;
}

}  // namespace solbench::harness
