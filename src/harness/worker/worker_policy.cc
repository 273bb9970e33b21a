#include "harness/worker/worker_policy.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <utility>

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "core/settings.h"
#include "harness/build/build_cache.h"
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
  auto read = [](const char* var, const std::string& v, uint64_t& field) {
    if (v.empty()) return;
    const auto n = parse_byte_size(v);
    if (!n)
      throw std::runtime_error(std::string(var) + "='" + v +
                               "': expected a size in bytes, optionally with a K, M, G or T "
                               "suffix (powers of 1024), e.g. 512M or 2G");
    field = *n;
  };
  const Settings& env = settings();
  read("SOLBENCH_WORKER_TMP_LIMIT", env.worker_tmp_limit, l.tmp_bytes);
  read("SOLBENCH_JIT_CACHE_LIMIT", env.jit_cache_limit, l.jit_cache_bytes);
  return l;
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
      sha256_hex(req.content + '\n' + (req.device.is_cpu() ? "cpu" : "cuda")).substr(0, 24);
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
    // rename(2) replaces an empty folder (a spare made them), and refuses a non-empty
    // one: what a spare wrote there while it warmed up (a launcher Triton built) is
    // moved aside, to go with the scratch folder, so that the plan's cache is lent.
    if (is_real_folder(to / name) && !fs::is_empty(to / name, ec)) {
      const fs::path aside = to / (std::string(name) + ".before-lend");
      if (!fs::exists(aside, ec)) fs::rename(to / name, aside, ec);
    }
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
