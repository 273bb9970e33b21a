#include "harness/staging.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "core/settings.h"

namespace solbench::harness {
namespace fs = std::filesystem;

fs::path default_staging_base() {
  const Settings& s = settings();
  if (!s.staging_dir.empty()) return s.staging_dir;
  if (!s.tmpdir.empty()) return s.tmpdir / "solbench";
  return "/tmp/solbench";
}

StagingDir StagingDir::create(const fs::path& base, std::string_view prefix) {
  std::error_code ec;
  fs::create_directories(base, ec);
  if (ec) throw std::system_error(ec, "cannot create staging base " + base.string());
  std::string templ = (base / (std::string(prefix) + "XXXXXX")).string();
  if (::mkdtemp(templ.data()) == nullptr)
    throw std::system_error(errno, std::generic_category(),
                            "mkdtemp under " + base.string());
  return StagingDir(fs::path(templ));
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

void StagingDir::remove() {
  if (path_.empty() || keep_) return;
  remove_tree_quietly(path_);
  path_.clear();
}

fs::path StagingDir::release() {
  fs::path p = std::move(path_);
  path_.clear();
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
