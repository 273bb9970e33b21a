#include "harness/worker/worker_policy.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <initializer_list>
#include <fstream>
#include <sstream>
#include <map>
#include <optional>
#include <mutex>
#include <set>
#include <utility>

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "harness/build/build_cache.h"
#include "harness/build/python_probe.h"
#include "harness/process.h"
#include "harness/sha256.h"
#include "harness/staging.h"

namespace solbench::harness {
namespace fs = std::filesystem;

std::optional<uint64_t> parse_byte_size(std::string_view text) {
  size_t i = 0;
  uint64_t n = 0;
  for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
    if (n > (UINT64_MAX - 9) / 10) return std::nullopt;
    n = n * 10 + static_cast<uint64_t>(text[i] - '0');
  }
  if (i == 0) return std::nullopt;
  std::string_view unit = text.substr(i);
  int shift = 0;
  if (!unit.empty()) {
    const std::string_view units = "KMGT";
    const size_t k = units.find(static_cast<char>(std::toupper(static_cast<unsigned char>(unit[0]))));
    if (k == std::string_view::npos) return std::nullopt;
    shift = 10 * static_cast<int>(k + 1);
    unit.remove_prefix(1);
    if (unit != "" && unit != "B" && unit != "iB") return std::nullopt;
  }
  if (n == 0 || (shift && n > (UINT64_MAX >> shift))) return std::nullopt;
  return n << shift;
}

std::string byte_size_text(uint64_t bytes) {
  const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  double v = static_cast<double>(bytes);
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  if (u == 0) return std::to_string(bytes) + " bytes";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f %s", v == static_cast<double>(static_cast<uint64_t>(v)) ? 0 : 1,
                v, units[u]);
  return buf;
}

WorkerLimits worker_limits() {
  WorkerLimits l;
  auto read = [](const char* var, uint64_t& field) {
    const char* v = std::getenv(var);
    if (!v || !*v) return;
    const auto n = parse_byte_size(v);
    if (!n)
      throw std::runtime_error(std::string(var) + "='" + v +
                               "': expected a size in bytes, optionally with a K, M, G or T "
                               "suffix (powers of 1024), e.g. 512M or 2G");
    field = *n;
  };
  read("SOLBENCH_WORKER_TMP_LIMIT", l.tmp_bytes);
  read("SOLBENCH_JIT_CACHE_LIMIT", l.jit_cache_bytes);
  return l;
}

namespace {

// Where pip-installed runtimes keep the programs they start (folders, or single
// files), printed as a JSON list without importing them (find_spec only reads the
// import system's metadata).
constexpr const char* kProbe = R"(import importlib.util as u, json, os
out = []
for pkg, sub in (("triton", ("backends", "nvidia", "bin")), ("nvidia.cuda_nvcc", ("bin",))):
    try:
        s = u.find_spec(pkg)
    except Exception:
        s = None
    for d in (s.submodule_search_locations or []) if s else []:
        out.append(os.path.join(d, *sub))
# torch ships its own PTX tools (Inductor points TRITON_PTXAS_PATH at them); only
# those, not the rest of torch/bin (torch_shm_manager, protoc).
s = u.find_spec("torch")
for d in (s.submodule_search_locations or []) if s else []:
    for tool in ("ptxas", "cuobjdump", "nvdisasm"):
        out.append(os.path.join(d, "bin", tool))
print(json.dumps(out))
)";

std::string configured_python(const std::string& requested) {
  if (!requested.empty()) return requested;
  if (const char* env = std::getenv("SOLBENCH_PYTHON"); env && *env) return env;
#ifdef SOLBENCH_PYTHON_EXECUTABLE
  return SOLBENCH_PYTHON_EXECUTABLE;
#else
  return "python3";
#endif
}

void add_existing(std::set<std::string>& out, const fs::path& p) {
  std::error_code ec;
  fs::path real = fs::canonical(p, ec);
  if (!ec) out.insert(real.string());
}

bool is_elf(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  char magic[4] = {};
  return in.read(magic, 4) && magic[0] == 0x7f && magic[1] == 'E' && magic[2] == 'L' &&
         magic[3] == 'F';
}

std::vector<std::string> runtime_program_dirs(const std::string& python) {
  std::vector<std::string> dirs;
  // Remembered in the build cache while the interpreter's import path is unchanged
  // (python_probe.h): 25-100 ms of every evaluation otherwise.
  std::optional<BuildCache> cache;
  try {
    cache.emplace();
  } catch (const std::exception&) {
  }
  const auto found = find_program(python);
  if (!found) return dirs;
  const PythonProbe r = remembered_python_probe(cache ? &*cache : nullptr, *found, "runtime-programs",
                                                kProbe, std::chrono::seconds(30));
  if (!r.ok) return dirs;
  const std::string& text = r.output;
  const size_t line = text.rfind('[');
  if (line == std::string::npos) return dirs;
  json j = json::parse(text.substr(line), nullptr, false);
  if (j.is_array())
    for (const auto& d : j)
      if (d.is_string()) dirs.push_back(d.get<std::string>());
  return dirs;
}

}  // namespace

std::vector<std::string> wrapper_command(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::string text(4096, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  if (text.rfind("#!", 0) != 0) return {};
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    // Shell words of `exec PROGRAM ARG... "$@"`: plain, '...' or "..." (no escapes).
    // Anything the shell would expand ($VAR, `...`) cannot be known here: not a
    // wrapper this reading can see through.
    std::vector<std::string> words;
    bool ok = true;
    size_t i = 0;
    while (ok && i < line.size()) {
      while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
      if (i >= line.size() || line[i] == '#') break;
      std::string w;
      while (i < line.size() && line[i] != ' ' && line[i] != '\t') {
        const char c = line[i];
        if (c == '\'' || c == '"') {
          const size_t close = line.find(c, i + 1);
          if (close == std::string::npos) { ok = false; break; }
          w += line.substr(i + 1, close - i - 1);
          i = close + 1;
        } else {
          w += c;
          ++i;
        }
      }
      if (w == "$@" || w == "$*") break;
      if (w.find('$') != std::string::npos || w.find('`') != std::string::npos) ok = false;
      words.push_back(w);
    }
    if (!ok || words.size() < 2 || words[0] != "exec") continue;
    words.erase(words.begin());
    if (words[0].front() == '/' && is_elf(words[0])) return words;
  }
  return {};
}

std::string wrapper_target(const fs::path& path) {
  const auto cmd = wrapper_command(path);
  return cmd.empty() ? "" : cmd.front();
}

namespace {

// solbench-ccwrap (ccwrap_main.cc): $SOLBENCH_CCWRAP, else beside this executable.
fs::path ccwrap_program() {
  if (const char* v = std::getenv("SOLBENCH_CCWRAP"); v && *v) return v;
  std::error_code ec;
  const fs::path p = fs::read_symlink("/proc/self/exe", ec).parent_path() / "solbench-ccwrap";
  return !ec && fs::exists(p, ec) ? p : fs::path();
}

// A program that runs `cmd` (a wrapper's program and fixed arguments) with the
// arguments it is given: the program itself when there are no fixed arguments,
// else a link to solbench-ccwrap with its `.args` beside it, under
// <cache>/wrappers/<content key>/ (written here, read-only to workers). Empty when
// solbench-ccwrap is missing.
fs::path program_for(const std::string& name, const std::vector<std::string>& cmd) {
  if (cmd.size() == 1) return cmd.front();
  const fs::path shim = ccwrap_program();
  if (shim.empty()) return {};
  std::string text;
  for (const auto& w : cmd) text += w + "\n";
  const fs::path dir = default_build_cache_dir().parent_path() / "wrappers" / sha256_hex(text).substr(0, 16);
  const fs::path link = dir / fs::path(name).filename();
  std::error_code ec;
  fs::create_directories(dir, ec);
  const fs::path args = fs::path(link.string() + ".args");
  const fs::path tmp = fs::path(args.string() + ".tmp" + std::to_string(::getpid()));
  { std::ofstream(tmp) << text; }
  fs::rename(tmp, args, ec);
  if (ec) return {};
  const fs::path target = fs::canonical(shim, ec);
  if (fs::read_symlink(link, ec) != target) {
    fs::remove(link, ec);
    fs::create_symlink(target, link, ec);
  }
  return fs::exists(link, ec) && fs::exists(args, ec) ? link : fs::path();
}

}  // namespace

Toolchains find_toolchains(const std::string& python) {
  static std::mutex mu;
  static std::map<std::string, Toolchains> memo;
  const std::string py = configured_python(python);
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = memo.find(py); it != memo.end()) return it->second;

  Toolchains result;
  std::set<std::string> out;
  // A program, or the one it hands over to when it is a wrapper script.
  auto add_program = [&](const fs::path& p) {
    const std::string real = wrapper_target(p);
    add_existing(out, real.empty() ? p : fs::path(real));
  };
  // The C compiler chain: the drivers, their internal programs, the assembler and
  // the linker (Triton builds its launcher with cc; Inductor's C++ with g++).
  // CC and CXX from the environment come first: when one names a wrapper script,
  // the runtimes must be pointed at what it runs (the script itself needs a shell,
  // which the sandbox refuses); when it names a program, it is left alone.
  // Each name with the variable a driver of that name sets (none: not a driver).
  std::vector<std::pair<std::string, const char*>> names;
  std::set<std::string> fixed;  // CC/CXX already decided
  for (const char* var : {"CC", "CXX"})
    if (const char* v = std::getenv(var); v && *v) {
      names.emplace_back(v, var);
      if (auto p = find_program(v); p && wrapper_target(*p).empty()) fixed.insert(var);
    }
  for (const auto& [n, var] : std::initializer_list<std::pair<const char*, const char*>>{
           {"cc", "CC"}, {"gcc", "CC"}, {"c++", "CXX"}, {"g++", "CXX"},
           {"as", nullptr}, {"ld", nullptr}, {"ld.bfd", nullptr}, {"ld.gold", nullptr}})
    names.emplace_back(n, var);
  // Each driver as the command that runs it (a wrapper's fixed arguments included).
  std::set<std::vector<std::string>> drivers;
  for (const auto& [n, var] : names)
    if (auto p = find_program(n)) {
      const bool driver = var != nullptr;
      const std::vector<std::string> cmd = wrapper_command(*p);
      if (cmd.empty()) {
        add_existing(out, *p);
        if (driver) drivers.insert({fs::weakly_canonical(*p).string()});
        continue;
      }
      // A wrapper script: list what it runs, and point the runtimes at a program
      // that runs it with the script's fixed arguments (program_for).
      add_existing(out, cmd.front());
      if (!driver) continue;
      drivers.insert(cmd);
      if (fixed.count(var) || std::any_of(result.env.begin(), result.env.end(),
                                          [&](const auto& kv) { return kv.first == var; }))
        continue;
      const fs::path prog = program_for(var == std::string("CXX") ? "c++" : "cc", cmd);
      if (prog.empty()) continue;
      add_existing(out, prog);  // the link resolves to solbench-ccwrap
      result.env.emplace_back(var, prog.string());
    }
  for (const char* d : {"/usr/lib/gcc", "/usr/libexec/gcc"}) add_existing(out, d);
  // A compiler installed elsewhere (e.g. /opt/gcc) keeps its internal programs
  // beside itself: ask each driver where cc1, the assembler and the linker are.
  for (const auto& drv : drivers)
    for (const char* prog : {"cc1", "as", "ld"}) {
      RunOptions ro;
      ro.timeout = std::chrono::seconds(10);
      std::vector<std::string> probe = drv;
      probe.push_back(std::string("-print-prog-name=") + prog);
      CommandResult r = run_command(probe, ro);
      std::string path = r.ok() ? r.output.substr(0, r.output.find('\n')) : "";
      if (path.find('/') == std::string::npos) {
        if (auto p = find_program(prog)) add_program(*p);
        continue;
      }
      // cc1's folder also holds cc1plus, collect2, lto-wrapper and lto1.
      if (prog == std::string("cc1")) add_existing(out, fs::path(path).parent_path());
      else add_program(path);
    }
  // Library lookups (ctypes.util.find_library, Triton without TRITON_LIBCUDA_PATH).
  for (const char* p : {"/sbin/ldconfig", "/usr/sbin/ldconfig"}) add_existing(out, p);
  // The ELF interpreter is executed too (the kernel opens it like the program).
  for (const char* p : {"/lib64/ld-linux-x86-64.so.2", "/lib/ld-linux-aarch64.so.1"})
    add_existing(out, p);
  // PTX assembler and friends: the CUDA toolkit's and the runtimes' own copies.
  std::vector<fs::path> cuda_bins;
  if (const char* h = std::getenv("CUDA_HOME"); h && *h) cuda_bins.emplace_back(fs::path(h) / "bin");
  cuda_bins.emplace_back("/usr/local/cuda/bin");
  for (const auto& bin : cuda_bins)
  {
    // nvcc too (Inductor runs it), with what it runs in turn; not the whole bin
    // folder, which also holds profilers and debuggers.
    for (const char* tool : {"ptxas", "cuobjdump", "nvdisasm", "nvlink", "fatbinary", "nvcc",
                             "cudafe++", "bin2c", "nvprune"})
      add_existing(out, bin / tool);
    add_existing(out, bin.parent_path() / "nvvm" / "bin");  // cicc
  }
  if (const char* v = std::getenv("TRITON_PTXAS_PATH"); v && *v) add_existing(out, v);
  for (const auto& d : runtime_program_dirs(py)) add_existing(out, d);

  result.executables.assign(out.begin(), out.end());
  memo[py] = result;
  return result;
}

std::vector<std::pair<std::string, std::string>> runtime_cache_env(const fs::path& jit) {
  // One folder of kCacheFolders each (only those are kept, take_back_caches).
  return {
      {"TRITON_CACHE_DIR", (jit / kCacheFolders[0]).string()},
      {"TRITON_HOME", jit.string()},
      {"TORCHINDUCTOR_CACHE_DIR", (jit / kCacheFolders[1]).string()},
      // Inductor's parallel compile starts interpreter processes; compile in process.
      {"TORCHINDUCTOR_COMPILE_THREADS", "1"},
      {"CUDA_CACHE_PATH", (jit / kCacheFolders[2]).string()},
      {"XDG_CACHE_HOME", (jit / kCacheFolders[3]).string()},
      {"PYTHONDONTWRITEBYTECODE", "1"},
  };
}

json worker_sandbox_plan(const WorkerPolicyRequest& req) {
  const fs::path root =
      req.jit_root.empty() ? default_build_cache_dir().parent_path() / "jit" : req.jit_root;
  // Keyed by content (and device kind: CPU and GPU caches hold different code).
  const std::string key =
      sha256_hex(req.content + '\n' + (req.device == "cpu" ? "cpu" : "cuda")).substr(0, 24);
  const fs::path jit = root / key;
  std::error_code ec;
  fs::create_directories(jit, ec);
  const bool python = req.kind == EntryKind::Python || req.kind == EntryKind::Reference;
  // Nothing in the plan names the solution: the caches are lent into the worker's
  // scratch folder (jit_cache is the parent's alone, see lend_caches), so that two
  // solutions of one kind get the same sandbox and a spare worker prepared ahead
  // (zygote.h) serves either.
  // /dev/shm is not listed: the worker adds its own private one (sandbox.h
  // enter_private_mounts), and leaves the host's unwritable where it has none.
  const WorkerLimits limits = worker_limits();
  json plan = {
      {"restrict_fs", true},
      {"writable", json::array()},
      {"device_files", {"/dev"}},
      {"env", json::object()},
      {"jit", "scratch"},
      {"jit_cache", jit.string()},
      {"limits", {{"tmp_bytes", limits.tmp_bytes}, {"jit_cache_bytes", limits.jit_cache_bytes}}},
  };
  if (python) {
    Toolchains tc = find_toolchains(req.python);
    plan["deny_process_creation"] = false;
    plan["executable"] = tc.executables;
    // tc.env names a wrapper's real compiler only where CC/CXX is unset or itself
    // a wrapper (find_toolchains), so it replaces what the parent has.
    for (const auto& [k, v] : tc.env) plan["env"][k] = v;
  } else {
    // Native code has no use for processes: refused outright (seccomp), and no
    // program may be executed even if one were started.
    plan["deny_process_creation"] = true;
    plan["executable"] = json::array();
  }
  return plan;
}

json without_jit_cache(json sandbox) {
  if (sandbox.is_object()) sandbox.erase("jit_cache");
  return sandbox;
}

namespace {

constexpr uint64_t kCacheBlock = 4096;

uint64_t jit_cache_limit(const json& sandbox) {
  if (sandbox.is_object() && sandbox.contains("limits") && sandbox["limits"].is_object())
    return sandbox["limits"].value("jit_cache_bytes", WorkerLimits{}.jit_cache_bytes);
  return WorkerLimits{}.jit_cache_bytes;
}

// What an entry costs: a file its size rounded up to whole blocks (an empty one a
// block), anything else a block, so that a count of small entries is bounded too.
uint64_t charge(const struct stat& st) {
  if (!S_ISREG(st.st_mode) || st.st_size <= 0) return kCacheBlock;
  const auto size = static_cast<uint64_t>(st.st_size);
  return (size + kCacheBlock - 1) / kCacheBlock * kCacheBlock;
}

struct CacheScan {
  uint64_t bytes = 0;
  bool over = false;        // stopped: more than the limit
  bool unreadable = false;  // something could not be looked at
};

int open_folder_at(int dirfd, const char* name) {
  const int flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
  int fd = ::openat(dirfd, name, flags);
  if (fd < 0 && errno == EACCES) {  // a solution may take its folders' permissions away
    ::fchmodat(dirfd, name, 0700, 0);
    fd = ::openat(dirfd, name, flags);
  }
  return fd;
}

// Adds up the open folder `dir` (`depth` below <scratch>/jit; links never followed,
// names opened relative to their folder, so no path grows past PATH_MAX) until past
// `limit`. With `prune`, first removes what no toolchain writes (take_back_caches).
void scan_cache_tree(int dir, int depth, uint64_t limit, bool prune, CacheScan& s) {
  const int listed = ::dup(dir);
  DIR* d = listed < 0 ? nullptr : ::fdopendir(listed);
  if (!d) {
    if (listed >= 0) ::close(listed);
    s.unreadable = true;
    return;
  }
  while (!s.over) {
    errno = 0;
    const dirent* e = ::readdir(d);
    if (!e) {
      if (errno) s.unreadable = true;
      break;
    }
    const char* name = e->d_name;
    if (std::strcmp(name, ".") == 0 || std::strcmp(name, "..") == 0) continue;
    struct stat st {};
    if (::fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
      s.unreadable = true;
      continue;
    }
    const bool folder = S_ISDIR(st.st_mode);
    const bool kept = folder ? depth < kMaxCacheDepth : S_ISREG(st.st_mode) && st.st_nlink == 1;
    if (prune && !kept) {
      remove_tree_at(dir, name);
      continue;
    }
    s.bytes += charge(st);
    if (s.bytes > limit) {
      s.over = true;
    } else if (folder && kept) {
      const int sub = open_folder_at(dir, name);
      if (sub < 0) {
        s.unreadable = true;
        continue;
      }
      scan_cache_tree(sub, depth + 1, limit, prune, s);
      ::close(sub);
    }
  }
  ::closedir(d);
}

// The same for a folder by path.
CacheScan scan_cache_folder(const fs::path& p, int depth, uint64_t limit, bool prune) {
  CacheScan s;
  const int fd = ::open(p.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    s.unreadable = true;
    return s;
  }
  scan_cache_tree(fd, depth, limit, prune, s);
  ::close(fd);
  return s;
}

bool is_real_folder(const fs::path& p) {
  struct stat st {};
  return ::lstat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

}  // namespace

int lend_caches(const json& sandbox, const fs::path& scratch) {
  if (!sandbox.is_object() || !sandbox.contains("jit_cache")) return 0;
  const fs::path cache = sandbox["jit_cache"].get<std::string>();
  const fs::path to = scratch / kScratchJitFolder;
  std::error_code ec;
  fs::create_directories(to, ec);
  int moved = 0;
  for (const char* name : kCacheFolders) {
    if (!is_real_folder(cache / name)) continue;
    // rename(2) replaces an empty folder (a spare made them), and refuses a non-empty one.
    fs::rename(cache / name, to / name, ec);
    if (!ec) ++moved;
  }
  return moved;
}

int take_back_caches(const json& sandbox, const fs::path& scratch) {
  if (!sandbox.is_object() || !sandbox.contains("jit_cache")) return 0;
  const fs::path cache = sandbox["jit_cache"].get<std::string>();
  const fs::path from = scratch / kScratchJitFolder;
  if (!is_real_folder(from)) return 0;
  // Out of the worker's writable domain first (a folder beside its scratch folder,
  // on the same file system): a worker still running can no longer add, rename or
  // replace anything there, so what is checked below is what is kept.
  std::string hold = (scratch.parent_path() / (scratch.filename().string() + ".jit-XXXXXX")).string();
  if (!::mkdtemp(hold.data())) return 0;
  struct Drop {
    fs::path p;
    ~Drop() { remove_tree_quietly(p); }
  } drop{hold};
  const fs::path jit = fs::path(hold) / kScratchJitFolder;
  std::error_code ec;
  fs::rename(from, jit, ec);
  if (ec) return 0;

  const uint64_t limit = jit_cache_limit(sandbox);
  uint64_t bytes = 0;
  std::vector<fs::path> keep;
  for (const char* name : kCacheFolders) {  // anything else in <scratch>/jit is dropped
    const fs::path p = jit / name;
    if (!is_real_folder(p)) continue;
    const CacheScan s = scan_cache_folder(p, 1, limit - std::min(limit, bytes), true);
    bytes += kCacheBlock + s.bytes;
    // Over the limit, or not all of it could be checked: nothing is kept.
    if (s.over || s.unreadable || bytes > limit) return 0;
    keep.push_back(p);
  }
  fs::create_directories(cache, ec);
  int moved = 0;
  for (const fs::path& p : keep) {
    fs::rename(p, cache / p.filename(), ec);
    if (!ec) ++moved;
  }
  return moved;
}

void check_worker_writes(const json& sandbox, const json& report, const fs::path& scratch,
                         WorkloadOutcome& o) {
  if (sandbox.is_object() && sandbox.contains("jit_cache")) {
    const uint64_t limit = jit_cache_limit(sandbox);
    const fs::path jit = scratch / kScratchJitFolder;
    if (is_real_folder(jit) && scan_cache_folder(jit, 0, limit, false).over) {
      std::string msg =
          "solbench: the compile caches are over their limit of " + byte_size_text(limit) +
          " (SOLBENCH_JIT_CACHE_LIMIT): the worker's " + jit.string() +
          " (TRITON_CACHE_DIR, TORCHINDUCTOR_CACHE_DIR, CUDA_CACHE_PATH, XDG_CACHE_HOME) holds more "
          "than that; the workload fails, and none of this worker's compile caches are kept";
      if (o.status != Status::RewardHack) {
        o.status = Status::RuntimeError;
        o.correctness.reset();
        o.timing.reset();
        o.reference_timing.reset();
      }
      o.log = msg + (o.log.empty() ? "" : "\n" + o.log);
    }
  }
  const json tmp = report.is_object() ? report.value("private_tmp", json::object()) : json::object();
  const bool private_tmp = tmp.is_object() && tmp.value("tmp", "") == "private tmpfs";
  const bool private_shm = tmp.is_object() && tmp.value("dev_shm", "") == "private tmpfs";
  if ((private_tmp || private_shm) && tmp.contains("tmp_bytes") && tmp["tmp_bytes"].is_number_integer() &&
      tmp["tmp_bytes"].get<int64_t>() > 0) {
    const bool no_space = o.log.find("No space left on device") != std::string::npos ||
                          o.log.find("ENOSPC") != std::string::npos ||
                          o.log.find("[Errno 28]") != std::string::npos;
    if (no_space) {
      const std::string where = private_tmp && private_shm
                                    ? "$TMPDIR (" + (scratch / "tmp").string() + ") and /dev/shm share"
                                : private_tmp ? "$TMPDIR (" + (scratch / "tmp").string() + ") is"
                                              : "/dev/shm is";
      o.log += "\nsolbench: a write found no space left: the worker's " + where +
               " a private tmpfs of " + byte_size_text(static_cast<uint64_t>(tmp["tmp_bytes"].get<int64_t>())) +
               " (SOLBENCH_WORKER_TMP_LIMIT), gone with the worker";
    }
  }
}

}  // namespace solbench::harness
