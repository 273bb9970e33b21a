#include "harness/staging.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "core/settings.h"
#include "harness/sha256.h"

namespace solbench::harness {
namespace fs = std::filesystem;

fs::path default_staging_base() {
  const Settings& s = settings();
  if (!s.staging_dir.empty()) return s.staging_dir;
  if (!s.tmpdir.empty()) return s.tmpdir / "solbench";
  return "/tmp/solbench";
}

namespace {

// The folders a process owns (registered) and the bases it has swept. Never
// destroyed: the interrupt's thread may use it while the process exits.
struct Registry {
  std::mutex mu;
  std::set<std::string> dirs;
  std::set<std::string> swept;
};

Registry& registry() {
  static Registry* r = new Registry();
  return *r;
}

// A /proc/<pid>/stat: the pid, the state and the start time (field 22).
struct ProcStat {
  long pid = 0;
  char state = 0;
  unsigned long long start = 0;
};

enum class StatRead { Ok, Gone, Unknown };

StatRead read_proc_stat(const std::string& path, ProcStat& out) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno == ENOENT || errno == ESRCH ? StatRead::Gone : StatRead::Unknown;
  char buf[1024];
  ssize_t n;
  do {
    n = ::read(fd, buf, sizeof buf - 1);
  } while (n < 0 && errno == EINTR);
  const int err = errno;
  ::close(fd);
  if (n < 0) return err == ESRCH ? StatRead::Gone : StatRead::Unknown;
  buf[n] = '\0';
  // "pid (comm) state ppid ...": comm may hold anything, so fields count from the
  // last ')'; the state is field 3, the start time field 22.
  char* close_paren = std::strrchr(buf, ')');
  if (!close_paren) return StatRead::Unknown;
  out.pid = std::strtol(buf, nullptr, 10);
  char* p = close_paren + 1;
  for (int field = 3; field <= 22; ++field) {
    while (*p == ' ') ++p;
    if (!*p) return StatRead::Unknown;
    if (field == 3) out.state = *p;
    if (field == 22) {
      char* end = nullptr;
      out.start = std::strtoull(p, &end, 10);
      return end != p ? StatRead::Ok : StatRead::Unknown;
    }
    while (*p && *p != ' ') ++p;
  }
  return StatRead::Unknown;
}

std::string read_small(const char* path) {
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  char buf[256];
  const ssize_t n = ::read(fd, buf, sizeof buf);
  ::close(fd);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

// This process's PID namespace and boot: a pid and a start time name a process only
// there. A folder from another host (a shared file system), container or boot is
// never judged by this /proc.
std::string namespace_tag() {
  char link[128];
  const ssize_t n = ::readlink("/proc/self/ns/pid", link, sizeof link - 1);
  if (n <= 0) return {};
  return sha256_hex(std::string(link, static_cast<size_t>(n)) + "\n" +
                    read_small("/proc/sys/kernel/random/boot_id"))
      .substr(0, 8);
}

bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

// True unless /proc says that the owner is gone: no such pid, another process under
// its pid (another start time), or a zombie. Anything /proc cannot tell counts as alive.
bool owner_alive(const ScratchOwner& o) {
  ProcStat st;
  switch (read_proc_stat("/proc/" + std::to_string(o.pid) + "/stat", st)) {
    case StatRead::Gone: return false;
    case StatRead::Unknown: return true;
    case StatRead::Ok: break;
  }
  if (st.start != o.start) return false;
  return st.state != 'Z' && st.state != 'X';
}

}  // namespace

std::string owner_tag() {
  static std::mutex mu;
  static pid_t computed_for = 0;
  static std::string tag;
  std::lock_guard<std::mutex> lock(mu);
  const pid_t self = ::getpid();
  if (computed_for == self) return tag;
  computed_for = self;
  tag.clear();
  ProcStat st;
  const std::string ns = namespace_tag();
  if (!ns.empty() && read_proc_stat("/proc/self/stat", st) == StatRead::Ok && st.pid > 0)
    tag = std::to_string(st.pid) + "." + std::to_string(st.start) + "." + ns;
  return tag;
}

std::optional<ScratchOwner> parse_scratch_name(std::string_view name) {
  size_t i = 0;
  auto digits = [&](size_t max, unsigned long long& value) {
    const size_t from = i;
    value = 0;
    while (i < name.size() && i - from < max && std::isdigit(static_cast<unsigned char>(name[i])))
      value = value * 10 + static_cast<unsigned long long>(name[i++] - '0');
    return i > from && (i == name.size() || !std::isdigit(static_cast<unsigned char>(name[i])));
  };
  auto literal = [&](std::string_view s) {
    if (name.substr(i, s.size()) != s) return false;
    i += s.size();
    return true;
  };
  auto mkdtemp_suffix = [&] {  // the six characters mkdtemp chose
    for (int k = 0; k < 6; ++k, ++i)
      if (i >= name.size() || !is_name_char(name[i])) return false;
    return true;
  };
  while (i < name.size() && name[i] >= 'a' && name[i] <= 'z') ++i;  // the prefix
  if (i == 0 || !literal("-")) return std::nullopt;
  ScratchOwner o;
  unsigned long long pid = 0;
  if (!digits(10, pid) || pid == 0 || !literal(".") || !digits(20, o.start) || !literal("."))
    return std::nullopt;
  o.pid = static_cast<long>(pid);
  for (int k = 0; k < 8; ++k, ++i) {
    if (i >= name.size() || !std::isxdigit(static_cast<unsigned char>(name[i])) ||
        std::isupper(static_cast<unsigned char>(name[i])))
      return std::nullopt;
    o.ns += name[i];
  }
  if (!literal("-") || !mkdtemp_suffix()) return std::nullopt;
  // A worker's compile caches on their way back (worker_policy.cc): "<scratch>.jit-XXXXXX".
  if (i < name.size() && !(literal(".jit-") && mkdtemp_suffix() && i == name.size()))
    return std::nullopt;
  return o;
}

size_t sweep_stale_scratch(const fs::path& base) {
  const std::string mine = owner_tag();
  if (mine.empty()) return 0;
  const std::string ns = mine.substr(mine.rfind('.') + 1);
  const int dirfd = ::open(base.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dirfd < 0) return 0;
  std::vector<std::string> stale;
  if (const int listed = ::dup(dirfd); listed >= 0) {
    if (DIR* d = ::fdopendir(listed)) {
      while (const dirent* e = ::readdir(d)) {
        const auto owner = parse_scratch_name(e->d_name);
        if (!owner || owner->ns != ns) continue;
        struct stat st {};
        if (::fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode) ||
            st.st_uid != ::geteuid())
          continue;
        if (!owner_alive(*owner)) stale.emplace_back(e->d_name);
      }
      ::closedir(d);
    } else {
      ::close(listed);
    }
  }
  size_t removed = 0;
  for (const std::string& name : stale) {
    remove_tree_at(dirfd, name.c_str());
    struct stat st {};
    removed += ::fstatat(dirfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0;
  }
  ::close(dirfd);
  return removed;
}

void register_scratch(const fs::path& p) {
  if (p.empty()) return;
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.dirs.insert(p.string());
}

void unregister_scratch(const fs::path& p) {
  if (p.empty()) return;
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.dirs.erase(p.string());
}

size_t remove_registered_scratch_for_exit() {
  Registry& r = registry();
  r.mu.lock();  // deliberately never unlocked: the process ends after this
  size_t removed = 0;
  // A folder the main thread was still writing into (a record being moved) may
  // survive the first pass: up to three.
  for (int pass = 0; pass < 3 && !r.dirs.empty(); ++pass) {
    if (pass > 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    for (auto it = r.dirs.begin(); it != r.dirs.end();) {
      struct stat st {};
      if (::lstat(it->c_str(), &st) != 0) {  // never made, or gone already
        it = r.dirs.erase(it);
        continue;
      }
      remove_tree_quietly(*it);
      if (::lstat(it->c_str(), &st) != 0) {
        ++removed;
        it = r.dirs.erase(it);
      } else {
        ++it;
      }
    }
  }
  return removed;
}

StagingDir StagingDir::create(const fs::path& base, std::string_view prefix, bool keep) {
  std::error_code ec;
  fs::create_directories(base, ec);
  if (ec) throw std::system_error(ec, "cannot create staging base " + base.string());
  const std::string tag = keep ? std::string() : owner_tag();
  std::string templ =
      (base / (std::string(prefix) + (tag.empty() ? "" : tag + "-") + "XXXXXX")).string();
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  const fs::path key = fs::absolute(base, ec).lexically_normal();
  if (r.swept.insert((ec ? base : key).string()).second) sweep_stale_scratch(base);
  if (::mkdtemp(templ.data()) == nullptr)
    throw std::system_error(errno, std::generic_category(),
                            "mkdtemp under " + base.string());
  StagingDir d{fs::path(templ)};
  d.keep_ = keep;
  if (!keep) r.dirs.insert(templ);
  return d;
}

StagingDir StagingDir::adopt(fs::path existing) {
  register_scratch(existing);
  return StagingDir(std::move(existing));
}

StagingDir::StagingDir(StagingDir&& other) noexcept
    : path_(std::move(other.path_)), keep_(other.keep_) {
  other.path_.clear();
}

StagingDir& StagingDir::operator=(StagingDir&& other) noexcept {
  if (this != &other) {
    remove();
    path_ = std::move(other.path_);
    keep_ = other.keep_;
    other.path_.clear();
  }
  return *this;
}

StagingDir::~StagingDir() { remove(); }

void StagingDir::keep(bool k) {
  keep_ = k;
  if (k) unregister_scratch(path_);
  else register_scratch(path_);
}

void StagingDir::remove() {
  if (path_.empty() || keep_) return;
  unregister_scratch(path_);
  remove_tree_quietly(path_);
  path_.clear();
}

fs::path StagingDir::release() {
  fs::path p = std::move(path_);
  path_.clear();
  unregister_scratch(p);
  return p;
}

namespace {

// O_NOFOLLOW: a link in place of a folder is never entered.
int open_folder_at(int dirfd, const char* name) {
  const int flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
  int fd = ::openat(dirfd, name, flags);
  if (fd < 0 && errno == EACCES) {
    // Untrusted code may have removed read/search permission from its folders.
    ::fchmodat(dirfd, name, 0700, 0);
    fd = ::openat(dirfd, name, flags);
  }
  return fd;
}

}  // namespace

void remove_tree_at(int dirfd, const char* name) {
  struct stat st {};
  if (::fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) return;
  if (!S_ISDIR(st.st_mode)) {
    ::unlinkat(dirfd, name, 0);
    return;
  }
  if (::unlinkat(dirfd, name, AT_REMOVEDIR) == 0) return;
  // Depth first without recursion (a solution can nest folders far deeper than the
  // stack or PATH_MAX allow), one open folder at a time, each listed once. Going
  // back up is through "..", checked against the folder it must be (a worker still
  // running may move its folders): on a mismatch the removal stops rather than
  // reach outside the tree.
  struct Level {
    std::string name;
    dev_t dev;
    ino_t ino;
    std::vector<std::string> todo;  // its folders left to empty
  };
  std::vector<Level> path;
  int cur = open_folder_at(dirfd, name);
  if (cur < 0) return;
  struct stat top {};
  if (::fstat(cur, &top) != 0 || top.st_dev != st.st_dev || top.st_ino != st.st_ino) {
    ::close(cur);
    return;
  }
  auto list = [](int fd, std::vector<std::string>& todo) {
    ::fchmod(fd, 0700);
    const int listed = ::dup(fd);
    DIR* d = listed < 0 ? nullptr : ::fdopendir(listed);
    if (!d) {
      if (listed >= 0) ::close(listed);
      return;
    }
    while (const dirent* e = ::readdir(d)) {
      const char* n = e->d_name;
      if (std::strcmp(n, ".") == 0 || std::strcmp(n, "..") == 0) continue;
      struct stat es {};
      if (::fstatat(fd, n, &es, AT_SYMLINK_NOFOLLOW) != 0) continue;
      if (!S_ISDIR(es.st_mode)) ::unlinkat(fd, n, 0);
      else if (::unlinkat(fd, n, AT_REMOVEDIR) != 0) todo.emplace_back(n);
    }
    ::closedir(d);
  };
  path.push_back({name, top.st_dev, top.st_ino, {}});
  list(cur, path.back().todo);
  while (cur >= 0) {
    Level& here = path.back();
    if (!here.todo.empty()) {
      const std::string down = std::move(here.todo.back());
      here.todo.pop_back();
      const int child = open_folder_at(cur, down.c_str());
      struct stat cs {};
      if (child < 0) continue;
      if (::fstat(child, &cs) != 0) {
        ::close(child);
        continue;
      }
      ::close(cur);
      cur = child;
      path.push_back({down, cs.st_dev, cs.st_ino, {}});
      list(cur, path.back().todo);
      continue;
    }
    // Emptied as far as it goes: up, and remove it.
    const Level self = std::move(path.back());
    path.pop_back();
    const int parent =
        path.empty() ? ::dup(dirfd) : ::openat(cur, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    ::close(cur);
    cur = -1;
    if (parent < 0) break;
    struct stat ps {};
    struct stat again {};
    const bool same_parent = path.empty() || (::fstat(parent, &ps) == 0 && ps.st_dev == path.back().dev &&
                                              ps.st_ino == path.back().ino);
    const bool same_self = ::fstatat(parent, self.name.c_str(), &again, AT_SYMLINK_NOFOLLOW) == 0 &&
                           again.st_dev == self.dev && again.st_ino == self.ino;
    if (same_parent && same_self) ::unlinkat(parent, self.name.c_str(), AT_REMOVEDIR);
    if (!same_parent || path.empty()) {  // done, or moved under us: stop
      ::close(parent);
      break;
    }
    cur = parent;
  }
  if (cur >= 0) ::close(cur);
}

void remove_tree_quietly(const fs::path& p) {
  if (p.empty()) return;
  const fs::path parent = p.has_parent_path() ? p.parent_path() : fs::path(".");
  const int dirfd = ::open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dirfd < 0) return;
  remove_tree_at(dirfd, p.filename().c_str());
  ::close(dirfd);
}

}  // namespace solbench::harness
