#include "harness/worker/sandbox.h"

#include <fcntl.h>
#include <linux/capability.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <stdexcept>

#ifdef SOLBENCH_HAVE_SECCOMP
#include <seccomp.h>

#include "core/settings.h"
#endif

#ifndef PR_CAP_AMBIENT
#define PR_CAP_AMBIENT 47
#define PR_CAP_AMBIENT_CLEAR_ALL 4
#endif
#ifndef SECBIT_NOROOT
#define SECBIT_NOROOT (1 << 0)
#define SECBIT_NOROOT_LOCKED (1 << 1)
#define SECBIT_NO_SETUID_FIXUP (1 << 2)
#define SECBIT_NO_SETUID_FIXUP_LOCKED (1 << 3)
#define SECBIT_KEEP_CAPS_LOCKED (1 << 5)
#endif

namespace solbench::harness {
namespace {

std::string errno_text(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

bool write_proc_file(const char* path, const std::string& text) {
  int fd = ::open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  return ok;
}

// In a new user namespace: the ids the process had, mapped to themselves (files
// keep their owners; unmapped ids would make every file creation fail).
bool map_ids_to_themselves(uid_t uid, gid_t gid) {
  write_proc_file("/proc/self/setgroups", "deny");
  return write_proc_file("/proc/self/uid_map",
                         std::to_string(uid) + " " + std::to_string(uid) + " 1\n") &&
         write_proc_file("/proc/self/gid_map",
                         std::to_string(gid) + " " + std::to_string(gid) + " 1\n");
}

void apply_limit(int resource, uint64_t value, const char* name, SandboxReport& r,
                 std::optional<uint64_t>& field) {
  struct rlimit lim = {static_cast<rlim_t>(value), static_cast<rlim_t>(value)};
  if (::setrlimit(resource, &lim) == 0) {
    field = value;
  } else {
    r.notes.push_back(errno_text(name));
  }
}

void enter_network_namespace(SandboxReport& r) {
  if (::unshare(CLONE_NEWNET) == 0) {
    r.network_namespace = true;
    r.network_namespace_kind = "netns";
    return;
  }
  const int direct_errno = errno;
  // Unprivileged: a user namespace gives us the right to create a network
  // namespace. Map our own ids to themselves so files keep their owners.
  const uid_t uid = ::geteuid();
  const gid_t gid = ::getegid();
  if (::unshare(CLONE_NEWUSER | CLONE_NEWNET) == 0) {
    const bool mapped = map_ids_to_themselves(uid, gid);
    r.network_namespace = true;
    r.network_namespace_kind = "userns+netns";
    if (!mapped) r.notes.push_back("user namespace id mapping failed: " + std::string(std::strerror(errno)));
    return;
  }
  r.notes.push_back(std::string("no network namespace: unshare(CLONE_NEWNET): ") +
                    std::strerror(direct_errno) + "; with a user namespace: " +
                    std::strerror(errno) +
                    (errno == EINVAL ? " (process already multi-threaded?)" : ""));
}

int last_capability() {
  std::ifstream in("/proc/sys/kernel/cap_last_cap");
  int n = 0;
  if (in >> n && n > 0 && n < 64) return n;
  return CAP_LAST_CAP;
}

void drop_capabilities(SandboxReport& r) {
  bool bounding_ok = true;
  const int last = last_capability();
  for (int cap = 0; cap <= last; ++cap) {
    if (::prctl(PR_CAPBSET_READ, cap, 0, 0, 0) == 1 &&
        ::prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0)
      bounding_ok = false;
  }
  ::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
  // uid 0 must not regain capabilities through execve.
  if (::geteuid() == 0) {
    ::prctl(PR_SET_SECUREBITS, SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP |
                                   SECBIT_NO_SETUID_FIXUP_LOCKED | SECBIT_KEEP_CAPS_LOCKED,
            0, 0, 0);
  }
  __user_cap_header_struct hdr{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  if (::syscall(SYS_capset, &hdr, data) != 0) {
    r.notes.push_back(errno_text("capset"));
    return;
  }
  r.capabilities_dropped = true;
  if (!bounding_ok) r.notes.push_back("capability bounding set only partly dropped");
}

#ifdef SOLBENCH_HAVE_SECCOMP
// Syscalls refused with EPERM unconditionally.
constexpr const char* kDenied[] = {
    // debugging and other processes' memory
    "ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd",
    // mounts and namespaces
    "mount", "umount", "umount2", "pivot_root", "chroot", "setns", "unshare", "fsopen",
    "fsconfig", "fsmount", "fspick", "move_mount", "open_tree", "mount_setattr",
    "open_by_handle_at", "name_to_handle_at",
    // kernel and system administration
    "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module", "reboot",
    "swapon", "swapoff", "acct", "quotactl", "syslog", "iopl", "ioperm", "sethostname",
    "setdomainname", "vhangup", "uselib", "lookup_dcookie", "nfsservctl", "_sysctl",
    // kernel attack surface without a use in a kernel benchmark
    // (perf_event_open stays allowed: profilers such as CUPTI may rely on it.)
    "bpf", "userfaultfd", "io_uring_setup", "io_uring_enter",
    "io_uring_register", "keyctl", "add_key", "request_key", "fanotify_init",
    // clocks
    "settimeofday", "clock_settime", "clock_adjtime", "adjtimex",
    // network: socket creation is filtered by family below; connect, bind, listen
    // and accept are refused unless allow_unix_ipc
    // signals by thread id (may target other processes)
    "tkill",
};

class SeccompFilter {
 public:
  SeccompFilter(SandboxReport& r, std::vector<std::string> allowed)
      : r_(r), allowed_(std::move(allowed)) {
    ctx_ = seccomp_init(SCMP_ACT_ALLOW);
  }
  ~SeccompFilter() {
    if (ctx_) seccomp_release(ctx_);
  }
  bool valid() const { return ctx_ != nullptr; }

  // Adds a rule; a syscall unknown on this architecture is skipped silently.
  bool add(const char* name, uint32_t action, std::initializer_list<scmp_arg_cmp> args = {}) {
    if (std::find(allowed_.begin(), allowed_.end(), name) != allowed_.end()) {
      r_.notes.push_back(std::string("allowed by request: ") + name);
      return true;
    }
    int nr = seccomp_syscall_resolve_name(name);
    if (nr == __NR_SCMP_ERROR) return true;
    int rc = seccomp_rule_add_array(ctx_, action, nr, static_cast<unsigned>(args.size()),
                                    args.size() ? args.begin() : nullptr);
    if (rc != 0) {
      // Pseudo-syscalls of other architectures (negative numbers) cannot carry rules.
      if (nr < 0) return true;
      r_.notes.push_back(std::string("seccomp rule for ") + name + ": " + std::strerror(-rc));
      return false;
    }
    r_.denied_syscalls.push_back(args.size() ? std::string(name) + "(filtered)" : name);
    return true;
  }

  bool load() {
    seccomp_attr_set(ctx_, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
    seccomp_attr_set(ctx_, SCMP_FLTATR_CTL_NNP, 1);
    // Threads that already exist get the filter too.
    seccomp_attr_set(ctx_, SCMP_FLTATR_CTL_TSYNC, 1);
    int rc = seccomp_load(ctx_);
    if (rc != 0) {
      r_.notes.push_back(std::string("seccomp_load: ") + std::strerror(-rc));
      return false;
    }
    return true;
  }

 private:
  SandboxReport& r_;
  std::vector<std::string> allowed_;
  scmp_filter_ctx ctx_ = nullptr;
};

bool install_seccomp(const SandboxOptions& o, SandboxReport& r) {
  std::vector<std::string> allowed = o.allow_syscalls;
  for (const auto& name : settings().sandbox_allow) allowed.push_back(name);
  SeccompFilter f(r, std::move(allowed));
  if (!f.valid()) {
    r.notes.push_back("seccomp_init failed");
    return false;
  }
  // EPERM, or SIGSYS in the diagnosis mode (trap_refusals).
  const uint32_t refuse = o.trap_refusals ? SCMP_ACT_TRAP : SCMP_ACT_ERRNO(EPERM);
  bool ok = true;
  for (const char* name : kDenied) ok &= f.add(name, refuse);

  // Sockets: AF_UNIX only (or none).
  if (o.allow_unix_sockets) {
    ok &= f.add("socket", refuse, {SCMP_A0(SCMP_CMP_NE, AF_UNIX)});
    ok &= f.add("socketpair", refuse, {SCMP_A0(SCMP_CMP_NE, AF_UNIX)});
  } else {
    ok &= f.add("socket", refuse);
    ok &= f.add("socketpair", refuse);
  }
  if (!(o.allow_unix_ipc && o.allow_unix_sockets)) {
    for (const char* name : {"connect", "bind", "listen", "accept", "accept4"}) ok &= f.add(name, refuse);
  }
  // personality(0xffffffff) only queries.
  ok &= f.add("personality", refuse, {SCMP_A0(SCMP_CMP_NE, 0xffffffffULL)});
  // Typing into the controlling terminal.
  ok &= f.add("ioctl", refuse, {SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffULL, TIOCSTI)});

  if (o.deny_sysv_ipc) {
    ok &= f.add("shmget", refuse);
    ok &= f.add("msgget", refuse);
  }
  if (o.deny_process_creation) {
    // Always errno, even when trapping: libc makes these calls with every signal
    // blocked (posix_spawn, pthread_create), and a blocked SIGSYS kills the process.
    const uint32_t refuse_errno = SCMP_ACT_ERRNO(EPERM);
    ok &= f.add("fork", refuse_errno);
    ok &= f.add("vfork", refuse_errno);
    ok &= f.add("execve", refuse);
    ok &= f.add("execveat", refuse);
    // Threads (CLONE_THREAD) stay allowed: Python, CUDA and OpenMP runtimes need them.
    ok &= f.add("clone", refuse_errno, {SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, 0)});
    // clone3 passes its flags in memory, out of the filter's reach: ENOSYS makes
    // libc fall back to clone, which is filtered above.
    ok &= f.add("clone3", SCMP_ACT_ERRNO(ENOSYS));
    r.process_creation_denied = ok;
  }
  if (o.signals_to_self_only) {
    const auto self = static_cast<scmp_datum_t>(::getpid());
    bool sig_ok = f.add("kill", refuse, {SCMP_A0(SCMP_CMP_NE, self)});
    sig_ok &= f.add("tgkill", refuse, {SCMP_A0(SCMP_CMP_NE, self)});
    sig_ok &= f.add("rt_sigqueueinfo", refuse, {SCMP_A0(SCMP_CMP_NE, self)});
    sig_ok &= f.add("rt_tgsigqueueinfo", refuse, {SCMP_A0(SCMP_CMP_NE, self)});
    sig_ok &= f.add("pidfd_open", refuse, {SCMP_A0(SCMP_CMP_NE, self)});
    r.signals_to_self_only = sig_ok;
    ok &= sig_ok;
  }
  if (!f.load()) {
    r.process_creation_denied = false;
    r.signals_to_self_only = false;
    r.denied_syscalls.clear();
    return false;
  }
  if (!ok) r.notes.push_back("some seccomp rules could not be added");
  return true;
}
#endif

}  // namespace

bool seccomp_compiled_in() {
#ifdef SOLBENCH_HAVE_SECCOMP
  return true;
#else
  return false;
#endif
}

bool harden_parent_process() { return ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == 0; }

namespace {

// The tmpfs: mounted over /dev/shm (a private one from here on), with two folders,
// "tmp" bound over $TMPDIR and "shm" bound over /dev/shm itself, so that one size
// limit covers both. Without a /dev/shm, the tmpfs goes straight onto $TMPDIR.
void mount_private_tmp(const PrivateMountOptions& o, PrivateMountReport& r) {
  // Every inode costs kernel memory beyond the size limit: one per 16 KiB allowed.
  const uint64_t inodes = std::clamp<uint64_t>(o.tmp_bytes / (16 << 10), 1024, 1 << 20);
  const std::string data = "size=" + std::to_string(o.tmp_bytes) +
                           ",nr_inodes=" + std::to_string(inodes) + ",mode=0700";
  const unsigned long flags = MS_NOSUID | MS_NODEV;
  struct stat st {};
  bool shm = ::stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode);
  // A scratch folder under /dev/shm (TMPDIR=/dev/shm, some clusters set it) would
  // vanish under the tmpfs: /dev/shm is then left as it is (and not writable).
  char real_tmp[PATH_MAX], real_shm[PATH_MAX];
  if (shm && ::realpath(o.tmp_dir.c_str(), real_tmp) && ::realpath("/dev/shm", real_shm) &&
      std::string(real_tmp).rfind(std::string(real_shm) + "/", 0) == 0) {
    shm = false;
    r.notes.push_back("the scratch folder is under /dev/shm: the host's /dev/shm is left as it is");
  }
  const std::string root = shm ? "/dev/shm" : o.tmp_dir;
  if (root.empty()) return;
  if (::mount("tmpfs", root.c_str(), "tmpfs", flags, data.c_str()) != 0) {
    r.notes.push_back("private tmpfs on " + root + ": " + std::strerror(errno));
    return;
  }
  r.tmp_bytes = o.tmp_bytes;
  if (!shm) {
    r.tmp_private = true;
    return;
  }
  r.shm_private = true;  // whatever follows, the host's /dev/shm is out of reach
  if (!o.tmp_dir.empty()) {
    if (::mkdir("/dev/shm/tmp", 0700) == 0 &&
        ::mount("/dev/shm/tmp", o.tmp_dir.c_str(), nullptr, MS_BIND, nullptr) == 0)
      r.tmp_private = true;
    else
      r.notes.push_back("private tmpfs on " + o.tmp_dir + ": " + std::strerror(errno));
  }
  // /dev/shm's usual mode (everyone, sticky), set past the umask.
  if (::mkdir("/dev/shm/shm", 0700) != 0 || ::chmod("/dev/shm/shm", 01777) != 0 ||
      ::mount("/dev/shm/shm", "/dev/shm", nullptr, MS_BIND, nullptr) != 0)
    r.notes.push_back(std::string("binding /dev/shm: ") + std::strerror(errno));
}

}  // namespace

json PrivateMountReport::to_json() const {
  return json{{"mount_namespace", mount_namespace.empty() ? json(nullptr) : json(mount_namespace)},
              {"ipc_namespace", ipc_namespace},
              {"tmp", tmp_private ? "private tmpfs" : "scratch folder"},
              {"dev_shm", shm_private ? "private tmpfs" : "not writable"},
              {"tmp_bytes", tmp_private || shm_private ? json(tmp_bytes) : json(nullptr)},
              {"ms", ms},
              {"notes", notes}};
}

namespace {

void enter_private_mounts_into(const PrivateMountOptions& o, PrivateMountReport& r) {
  const uid_t uid = ::geteuid();
  const gid_t gid = ::getegid();
  // Privileged first (the worker is root in its own PID namespace, or was started
  // by root); else a user namespace, which unprivileged users get on most kernels.
  std::string why;
  if (!o.force_user_namespace) {
    if (::unshare(CLONE_NEWNS | CLONE_NEWIPC) == 0) {
      r.mount_namespace = "mntns";
      r.ipc_namespace = true;
    } else if (::unshare(CLONE_NEWNS) == 0) {
      r.mount_namespace = "mntns";
      r.notes.push_back(std::string("no IPC namespace: ") + std::strerror(errno));
    } else {
      why = std::string("unshare(CLONE_NEWNS): ") + std::strerror(errno) + "; ";
    }
  }
  if (r.mount_namespace.empty()) {
    if (::unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWIPC) != 0) {
      r.notes.push_back("no mount namespace: " + why + "with a user namespace: " +
                        std::strerror(errno));
      if (o.mount_proc) r.proc = "no mount namespace";
      return;
    }
    r.mount_namespace = "userns+mntns";
    r.ipc_namespace = true;
    if (!map_ids_to_themselves(uid, gid))
      r.notes.push_back(std::string("user namespace id mapping failed: ") + std::strerror(errno));
  }
  // Nothing mounted below may reach the host's namespace: with "/" shared, it would.
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    r.notes.push_back(std::string("making mounts private: ") + std::strerror(errno) +
                      " (nothing mounted)");
    if (o.mount_proc) r.proc = "making mounts private failed";
    return;
  }
  if (o.mount_proc) {
    r.proc = ::mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) == 0
                 ? "mounted"
                 : std::string("mount proc: ") + std::strerror(errno);
  }
  if (o.tmp_bytes > 0) mount_private_tmp(o, r);
}

}  // namespace

PrivateMountReport enter_private_mounts(const PrivateMountOptions& o) {
  PrivateMountReport r;
  if (o.tmp_bytes == 0 && !o.mount_proc) return r;
  timespec t0 {}, t1 {};
  ::clock_gettime(CLOCK_MONOTONIC, &t0);
  enter_private_mounts_into(o, r);
  ::clock_gettime(CLOCK_MONOTONIC, &t1);
  r.ms = static_cast<double>(t1.tv_sec - t0.tv_sec) * 1e3 +
         static_cast<double>(t1.tv_nsec - t0.tv_nsec) / 1e6;
  return r;
}

bool SandboxReport::network_blocked() const {
  return network_namespace ||
         (seccomp && std::find(denied_syscalls.begin(), denied_syscalls.end(),
                               "socket(filtered)") != denied_syscalls.end()) ||
         (seccomp && std::find(denied_syscalls.begin(), denied_syscalls.end(), "socket") !=
                         denied_syscalls.end());
}

json SandboxReport::to_json() const {
  json j = json::object();
  j["core_dumps_off"] = core_dumps_off;
  j["not_dumpable"] = not_dumpable;
  j["network_namespace"] = network_namespace_kind.empty() ? json(nullptr) : json(network_namespace_kind);
  j["capabilities_dropped"] = capabilities_dropped;
  j["no_new_privs"] = no_new_privs;
  j["seccomp"] = seccomp;
  j["process_creation_denied"] = process_creation_denied;
  j["signals_to_self_only"] = signals_to_self_only;
  j["network_blocked"] = network_blocked();
  // How the network is kept away: the namespace wins; else the socket rule.
  j["network_isolation"] = network_namespace ? "netns" : network_blocked() ? "seccomp-socket" : "none";
  j["address_space_bytes"] = address_space_bytes ? json(*address_space_bytes) : json(nullptr);
  j["file_size_bytes"] = file_size_bytes ? json(*file_size_bytes) : json(nullptr);
  j["denied_syscalls"] = denied_syscalls;
  j["filesystem"] = fs.to_json();
  j["notes"] = notes;
  return j;
}

std::string SandboxReport::summary() const {
  std::string s = "sandbox:";
  auto flag = [&](bool on, const char* name) { s += std::string(" ") + (on ? "+" : "-") + name; };
  flag(seccomp, "seccomp");
  flag(network_namespace, network_namespace_kind.empty() ? "netns" : network_namespace_kind.c_str());
  flag(process_creation_denied, "nofork");
  flag(signals_to_self_only, "selfsignals");
  flag(capabilities_dropped, "nocaps");
  flag(no_new_privs, "nonewprivs");
  flag(core_dumps_off, "nocore");
  flag(not_dumpable, "nodump");
  flag(fs.writes_restricted, "fswrites");
  flag(fs.exec_restricted, "execlist");
  if (address_space_bytes) s += " as=" + std::to_string(*address_space_bytes);
  for (const auto& n : notes) s += "; " + n;
  return s;
}

SandboxReport apply_worker_sandbox(const SandboxOptions& o) {
  SandboxReport r;
  if (o.no_core_dumps) {
    std::optional<uint64_t> dummy;
    apply_limit(RLIMIT_CORE, 0, "setrlimit(RLIMIT_CORE)", r, dummy);
    r.core_dumps_off = dummy.has_value();
  }
  if (o.address_space_bytes)
    apply_limit(RLIMIT_AS, *o.address_space_bytes, "setrlimit(RLIMIT_AS)", r, r.address_space_bytes);
  if (o.file_size_bytes)
    apply_limit(RLIMIT_FSIZE, *o.file_size_bytes, "setrlimit(RLIMIT_FSIZE)", r, r.file_size_bytes);

  // Namespaces need privileges that the next steps give up.
  if (o.private_network) enter_network_namespace(r);
  if (o.drop_capabilities) drop_capabilities(r);

  if (o.no_new_privs || o.seccomp) {
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0) r.no_new_privs = true;
    else r.notes.push_back(errno_text("PR_SET_NO_NEW_PRIVS"));
  }
  // Landlock before seccomp: its syscalls are not in the filter, but the order
  // keeps the filter free to refuse them in the future.
  if (o.restrict_fs) {
    r.fs = apply_fs_rules(o.fs);
    for (const auto& n : r.fs.notes) r.notes.push_back("filesystem: " + n);
  }
  if (o.not_dumpable) {
    if (::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == 0) r.not_dumpable = true;
    else r.notes.push_back(errno_text("PR_SET_DUMPABLE"));
  }
  if (o.seccomp) {
#ifdef SOLBENCH_HAVE_SECCOMP
    r.seccomp = install_seccomp(o, r);
#else
    r.notes.push_back("seccomp unavailable: solbench was built without libseccomp");
#endif
    if (!r.seccomp && o.require_seccomp)
      throw std::runtime_error("seccomp filter required but not applied: " + r.summary());
  }
  return r;
}

}  // namespace solbench::harness
