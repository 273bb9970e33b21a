#include "harness/build/build_cache.h"

#include <sys/stat.h>

#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <system_error>

#include "core/settings.h"
#include "harness/sha256.h"
#include "harness/staging.h"

namespace solbench::harness {
namespace fs = std::filesystem;

namespace {
constexpr const char* kMetaFile = "build.json";

std::optional<std::string> read_small_file(const fs::path& p) {
  std::error_code ec;
  if (!fs::is_regular_file(p, ec)) return std::nullopt;
  try {
    return read_text_file(p);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}
}  // namespace

fs::path default_build_cache_dir() {
  const fs::path home = settings().cache_home();
  return (home.empty() ? fs::path("/tmp/solbench-cache") : home) / "builds";
}

BuildCache::BuildCache(fs::path root) : root_(std::move(root)) {}

std::optional<fs::path> BuildCache::lookup(const std::string& key) const {
  const fs::path dir = entry_dir(key);
  std::error_code ec;
  if (fs::is_regular_file(dir / kMetaFile, ec)) return dir;
  return std::nullopt;
}

std::optional<json> BuildCache::metadata(const std::string& key) const {
  auto text = read_small_file(entry_dir(key) / kMetaFile);
  if (!text) return std::nullopt;
  try {
    return json::parse(*text);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

fs::path BuildCache::make_temp_dir(bool keep) const {
  return StagingDir::create(root_ / ".tmp", "build-", keep).release();
}

fs::path BuildCache::publish(const std::string& key, const fs::path& built_dir, const json& meta) {
  // The metadata file goes in last: lookup() treats its presence as "complete".
  write_text_file(built_dir / kMetaFile, meta.dump(2) + "\n");
  const fs::path dest = entry_dir(key);
  std::error_code ec;
  fs::create_directories(root_, ec);
  if (::rename(built_dir.c_str(), dest.c_str()) == 0) return dest;
  const int err = errno;
  if (err == EEXIST || err == ENOTEMPTY) {
    if (lookup(key)) {
      remove_tree_quietly(built_dir);
      return dest;
    }
    // A broken leftover (no metadata): replace it.
    remove_tree_quietly(dest);
    if (::rename(built_dir.c_str(), dest.c_str()) == 0) return dest;
  }
  throw std::system_error(err, std::generic_category(),
                          "cannot publish build " + built_dir.string() + " to " + dest.string());
}

void BuildCache::evict(const std::string& key) { remove_tree_quietly(entry_dir(key)); }

std::string file_identity(const fs::path& file) {
  struct stat st {};
  std::string id = file.string();
  if (::stat(file.c_str(), &st) == 0)
    id += "|" + std::to_string(st.st_size) + "|" + std::to_string(st.st_mtim.tv_sec) + "." +
          std::to_string(st.st_mtim.tv_nsec);
  return id;
}

std::optional<std::string> BuildCache::toolchain_version(const std::string& toolchain_id) const {
  return read_small_file(root_ / ".toolchains" / sha256_hex(toolchain_id));
}

void BuildCache::store_toolchain_version(const std::string& toolchain_id,
                                         const std::string& version) const {
  try {
    write_text_file(root_ / ".toolchains" / sha256_hex(toolchain_id), version);
  } catch (const std::exception&) {
    // A memo only: failing to store it costs one `--version` run next time.
  }
}

}  // namespace solbench::harness
