// Content-addressed cache of built solutions.
//
// Layout: <root>/<key>/ holds the artifact (lib.so or <module>.so) and build.json
// (what went into the key, the compiler version, the build log and time). Entries
// are built in <root>/.tmp/<random>/ and published with one rename(2), so readers
// never see a half-written entry and concurrent builders of the same key are safe
// (the first rename wins; the loser discards its copy).
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "core/json.h"

namespace solbench::harness {

// $SOLBENCH_CACHE_DIR/builds, else $XDG_CACHE_HOME/solbench/builds, else
// ~/.cache/solbench/builds (else /tmp/solbench-cache/builds without HOME).
std::filesystem::path default_build_cache_dir();

// "<path>|<size>|<mtime s>.<ns>": a program file as a memo key (the path alone when
// it cannot be stat'ed). A rebuilt or reinstalled program is another key.
std::string file_identity(const std::filesystem::path& file);

class BuildCache {
 public:
  explicit BuildCache(std::filesystem::path root = default_build_cache_dir());

  const std::filesystem::path& root() const { return root_; }
  std::filesystem::path entry_dir(const std::string& key) const { return root_ / key; }

  // The entry folder when `key` is published and its metadata file is present.
  std::optional<std::filesystem::path> lookup(const std::string& key) const;
  // The metadata (build.json) of a published entry.
  std::optional<json> metadata(const std::string& key) const;

  // A fresh private folder on the cache's file system to build into.
  std::filesystem::path make_temp_dir(bool keep = false) const;
  // Writes `meta` as build.json into `built_dir` and renames it to entry_dir(key).
  // When the entry already exists (a concurrent build won), `built_dir` is removed
  // and the existing entry is returned.
  std::filesystem::path publish(const std::string& key, const std::filesystem::path& built_dir,
                                const json& meta);
  // Removes an entry (e.g. when its artifact turns out to be unusable).
  void evict(const std::string& key);

  // Memo of a compiler's `--version` output keyed by its resolved path, size and
  // mtime (file_identity), so a cache hit does not need to execute the compiler at all.
  std::optional<std::string> toolchain_version(const std::string& toolchain_id) const;
  void store_toolchain_version(const std::string& toolchain_id, const std::string& version) const;

 private:
  std::filesystem::path root_;
};

}  // namespace solbench::harness
