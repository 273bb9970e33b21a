// Fresh scratch folders (mkdtemp) for builds and worker working directories,
// removed when their owner goes away unless asked to keep them.
#pragma once

#include <filesystem>
#include <string_view>

namespace solbench::harness {

// $SOLBENCH_STAGING_DIR, else $TMPDIR/solbench, else /tmp/solbench.
std::filesystem::path default_staging_base();

// Owns one freshly created, private (0700) folder. Movable, not copyable (one
// owner removes it).
class StagingDir {
 public:
  // Creates `base` if needed, then `base/<prefix>XXXXXX`. Throws std::system_error.
  static StagingDir create(const std::filesystem::path& base = default_staging_base(),
                           std::string_view prefix = "stage-");

  // Takes ownership of an existing folder (a spare worker's, zygote.h).
  static StagingDir adopt(std::filesystem::path existing) { return StagingDir(std::move(existing)); }

  StagingDir() = default;
  StagingDir(StagingDir&& other) noexcept;
  StagingDir& operator=(StagingDir&& other) noexcept;
  StagingDir(const StagingDir&) = delete;
  StagingDir& operator=(const StagingDir&) = delete;
  ~StagingDir();

  const std::filesystem::path& path() const { return path_; }
  bool empty() const { return path_.empty(); }
  // Keep the folder on destruction (--keep-staging); it is reported, not removed.
  void keep(bool k = true) { keep_ = k; }
  bool kept() const { return keep_; }
  // Removes the folder now (unless kept); errors are ignored.
  void remove();
  // Gives up ownership without removing; returns the path.
  std::filesystem::path release();

 private:
  explicit StagingDir(std::filesystem::path p) : path_(std::move(p)) {}
  std::filesystem::path path_;
  bool keep_ = false;
};

// Removes a tree without following symlinks and without failing: makes folders
// writable first (a solution may have chmod'ed its scratch files), goes as deep
// as the tree does (no recursion, no path longer than a name), and stops rather
// than leave the tree when a folder is moved during the removal.
void remove_tree_quietly(const std::filesystem::path& p);
// The same for the entry `name` of the open folder `dirfd`.
void remove_tree_at(int dirfd, const char* name);

}  // namespace solbench::harness
