// Fresh scratch folders (mkdtemp) for builds and worker working directories,
// removed when their owner goes away unless asked to keep them.
//
// Every folder's name says which process owns it: `<prefix><pid>.<start>.<ns>-XXXXXX`,
// the pid and start time (/proc/<pid>/stat field 22) of the solbench process that
// created it and a tag of its PID namespace and boot (owner_tag()). A worker's scratch
// folder is its evaluating process's, not the worker's: the worker is untrusted and
// may write anything inside, so nothing inside is ever read to decide whose it is.
// The first folder a process creates under a base sweeps that base first
// (sweep_stale_scratch): folders whose owner is dead go, whatever killed it.
//
// While a StagingDir owns a folder that is not kept, the folder is registered, so that
// an interrupted process (harness/interrupt.h) removes it before it exits.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace solbench::harness {

// $SOLBENCH_STAGING_DIR, else $TMPDIR/solbench, else /tmp/solbench.
std::filesystem::path default_staging_base();

// Owns one freshly created, private (0700) folder. Movable, not copyable (one
// owner removes it).
class StagingDir {
 public:
  // Creates `base` if needed (and sweeps it, once per process), then
  // `base/<prefix><owner_tag()>-XXXXXX`. A folder made to be kept (--keep-staging)
  // is `base/<prefix>XXXXXX`: no owner in its name, so no sweep ever removes it, and
  // an interrupt leaves it too. Throws std::system_error.
  static StagingDir create(const std::filesystem::path& base = default_staging_base(),
                           std::string_view prefix = "stage-", bool keep = false);

  // Takes ownership of an existing folder (a spare worker's, zygote.h).
  static StagingDir adopt(std::filesystem::path existing);

  StagingDir() = default;
  StagingDir(StagingDir&& other) noexcept;
  StagingDir& operator=(StagingDir&& other) noexcept;
  StagingDir(const StagingDir&) = delete;
  StagingDir& operator=(const StagingDir&) = delete;
  ~StagingDir();

  const std::filesystem::path& path() const { return path_; }
  bool empty() const { return path_.empty(); }
  // Keep the folder on destruction; it is reported, not removed (not on an
  // interrupt either). A folder with its owner in its name is still swept once its
  // owner is dead: create it kept instead where it must outlive the process.
  void keep(bool k = true);
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

// "<pid>.<start>.<ns>" of this process, as its scratch folders' names carry it; empty
// where /proc cannot tell (the folders then get plain mkdtemp names, never swept).
std::string owner_tag();

// Who a scratch folder's name says owns it; nullopt for any other name.
struct ScratchOwner {
  long pid = 0;
  unsigned long long start = 0;  // /proc/<pid>/stat field 22 (clock ticks after boot)
  std::string ns;                // PID namespace and boot tag (owner_tag())
};
std::optional<ScratchOwner> parse_scratch_name(std::string_view name);

// Removes the scratch folders of `base` whose owner is dead (no /proc/<pid>, another
// start time, or a zombie): only folders (not links) of this user whose name parses
// and whose tag is this process's PID namespace's and boot's. Folders of a live
// process and everything else are left alone. Returns how many were removed.
// StagingDir::create calls it once per process and base.
size_t sweep_stale_scratch(const std::filesystem::path& base);

// Scratch to remove if the process is interrupted (harness/interrupt.h). A StagingDir
// registers its folder while it owns it and does not keep it; a build's work folder,
// handed on by path, registers itself.
void register_scratch(const std::filesystem::path& p);
void unregister_scratch(const std::filesystem::path& p);
// For the interrupt only: removes every registered folder and returns how many. The
// registry stays locked afterwards (the process is about to end): a StagingDir
// created or removed after it waits for the end.
size_t remove_registered_scratch_for_exit();

// Removes a tree without following symlinks and without failing: makes folders
// writable first (a solution may have chmod'ed its scratch files), goes as deep
// as the tree does (no recursion, no path longer than a name), and stops rather
// than leave the tree when a folder is moved during the removal.
void remove_tree_quietly(const std::filesystem::path& p);
// The same for the entry `name` of the open folder `dirfd`.
void remove_tree_at(int dirfd, const char* name);

}  // namespace solbench::harness
