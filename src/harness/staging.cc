#include "harness/staging.h"

#include <stdlib.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>
#include <system_error>

namespace solbench::harness {
namespace fs = std::filesystem;

fs::path default_staging_base() {
  if (const char* d = std::getenv("SOLBENCH_STAGING_DIR"); d && *d) return d;
  if (const char* t = std::getenv("TMPDIR"); t && *t) return fs::path(t) / "solbench";
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

void remove_tree_quietly(const fs::path& p) {
  std::error_code ec;
  auto st = fs::symlink_status(p, ec);
  if (ec || !fs::exists(st)) return;
  if (fs::is_directory(st)) {
    // Untrusted code may have removed write/search permission from its folders.
    ::chmod(p.c_str(), 0700);
    for (fs::directory_iterator it(p, ec), end; !ec && it != end; it.increment(ec)) {
      remove_tree_quietly(it->path());
    }
  }
  fs::remove(p, ec);
}

}  // namespace solbench::harness
