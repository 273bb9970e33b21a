#include "harness/worker/landlock.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

namespace solbench::harness {
namespace {

// The UAPI constants, spelled out here so that the build does not depend on the
// kernel headers' age (Debian 12's lack the later rights).
#ifndef SYS_landlock_create_ruleset
constexpr long SYS_landlock_create_ruleset = 444;
constexpr long SYS_landlock_add_rule = 445;
constexpr long SYS_landlock_restrict_self = 446;
#endif
constexpr uint32_t kCreateRulesetVersion = 1u << 0;
constexpr int kRulePathBeneath = 1;

constexpr uint64_t kExecute = 1ull << 0;
constexpr uint64_t kWriteFile = 1ull << 1;
constexpr uint64_t kRemoveDir = 1ull << 4;
constexpr uint64_t kRemoveFile = 1ull << 5;
constexpr uint64_t kMakeChar = 1ull << 6;
constexpr uint64_t kMakeDir = 1ull << 7;
constexpr uint64_t kMakeReg = 1ull << 8;
constexpr uint64_t kMakeSock = 1ull << 9;
constexpr uint64_t kMakeFifo = 1ull << 10;
constexpr uint64_t kMakeBlock = 1ull << 11;
constexpr uint64_t kMakeSym = 1ull << 12;
constexpr uint64_t kRefer = 1ull << 13;     // ABI 2
constexpr uint64_t kTruncate = 1ull << 14;  // ABI 3

// Rights that a rule on a regular file (rather than a folder) may carry.
constexpr uint64_t kFileRights = kExecute | kWriteFile | kTruncate;

struct RulesetAttr {
  uint64_t handled_access_fs;  // the first field of every ABI's struct
};
struct __attribute__((packed)) PathBeneathAttr {
  uint64_t allowed_access;
  int32_t parent_fd;
};

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

std::string errno_text(const std::string& what) { return what + ": " + std::strerror(errno); }

}  // namespace

int landlock_abi() {
  long v = ::syscall(SYS_landlock_create_ruleset, nullptr, 0, kCreateRulesetVersion);
  return v > 0 ? static_cast<int>(v) : 0;
}

json FsRulesReport::to_json() const {
  return json{{"landlock_abi", abi},
              {"writes_restricted", writes_restricted},
              {"exec_restricted", exec_restricted},
              {"writable", writable},
              {"executable", executable},
              {"notes", notes}};
}

FsRulesReport apply_fs_rules(const FsRules& rules) {
  FsRulesReport r;
  if (!rules.restrict_writes && !rules.restrict_exec) return r;
  const int abi = landlock_abi();
  if (abi <= 0) {
    r.notes.push_back("Landlock unavailable (kernel without it, or disabled): writes and "
                      "program execution are not restricted by the kernel");
    return r;
  }
  uint64_t write_rights = kWriteFile | kRemoveDir | kRemoveFile | kMakeDir | kMakeReg |
                          kMakeSock | kMakeFifo | kMakeSym;
  if (abi >= 2) write_rights |= kRefer;
  if (abi >= 3) write_rights |= kTruncate;
  // Device nodes are never created, anywhere.
  const uint64_t handled_writes = write_rights | kMakeChar | kMakeBlock;

  RulesetAttr attr{0};
  if (rules.restrict_writes) attr.handled_access_fs |= handled_writes;
  if (rules.restrict_exec) attr.handled_access_fs |= kExecute;
  Fd ruleset(static_cast<int>(::syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0)));
  if (ruleset.get() < 0) {
    r.notes.push_back(errno_text("landlock_create_ruleset"));
    return r;
  }

  // Adds `rights` below `path`; a file gets only the rights a file can carry.
  auto add = [&](const std::string& path, uint64_t rights, std::vector<std::string>* record) {
    Fd fd(::open(path.c_str(), O_PATH | O_CLOEXEC));
    if (fd.get() < 0) {
      r.notes.push_back(errno_text("skipped " + path));
      return true;
    }
    struct stat st {};
    if (::fstat(fd.get(), &st) == 0 && !S_ISDIR(st.st_mode)) rights &= kFileRights;
    rights &= attr.handled_access_fs;
    if (rights == 0) return true;
    PathBeneathAttr pb{rights, fd.get()};
    if (::syscall(SYS_landlock_add_rule, ruleset.get(), kRulePathBeneath, &pb, 0) != 0) {
      r.notes.push_back(errno_text("landlock_add_rule " + path));
      return false;
    }
    if (record) record->push_back(path);
    return true;
  };

  bool ok = true;
  if (rules.restrict_writes) {
    for (const auto& p : rules.writable) ok &= add(p, write_rights, &r.writable);
    for (const auto& p : rules.device_files)
      ok &= add(p, kWriteFile | (abi >= 3 ? kTruncate : 0), nullptr);
  }
  if (rules.restrict_exec)
    for (const auto& p : rules.executable) ok &= add(p, kExecute, &r.executable);
  if (!ok) {
    r.notes.push_back("Landlock rules incomplete: not enforced");
    r.writable.clear();
    r.executable.clear();
    return r;
  }
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    r.notes.push_back(errno_text("PR_SET_NO_NEW_PRIVS (needed by Landlock)"));
    return r;
  }
  if (::syscall(SYS_landlock_restrict_self, ruleset.get(), 0) != 0) {
    r.notes.push_back(errno_text("landlock_restrict_self"));
    r.writable.clear();
    r.executable.clear();
    return r;
  }
  r.abi = abi;
  r.writes_restricted = rules.restrict_writes;
  r.exec_restricted = rules.restrict_exec;
  return r;
}

}  // namespace solbench::harness
