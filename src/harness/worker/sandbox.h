// The worker sandbox: applied by the worker process to itself, after its own setup
// that needs the refused facilities and BEFORE any untrusted code is loaded (the
// solution's shared object, Python solution modules).
//
// Call it while the process is still single-threaded (before starting Python,
// CUDA or any thread): a private user namespace (the fallback used to get a network
// namespace without privileges) can only be entered by a single-threaded process.
// Everything applied is inherited by threads created later and kept across exec.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/json.h"
#include "harness/worker/landlock.h"

namespace solbench::harness {

struct SandboxOptions {
  bool no_core_dumps = true;     // RLIMIT_CORE 0 (soft and hard)
  bool not_dumpable = true;      // PR_SET_DUMPABLE 0: no ptrace attach / /proc/pid/mem by peers
  bool private_network = true;   // unshare(CLONE_NEWNET), else a user+network namespace
  bool drop_capabilities = true; // empty capability sets and bounding set
  bool no_new_privs = true;      // PR_SET_NO_NEW_PRIVS (always on when seccomp is on)
  bool seccomp = true;           // the syscall filter (below)
  // Refuse process creation (fork, vfork, clone without CLONE_THREAD, execve) with
  // EPERM; clone3 gets ENOSYS so libc falls back to clone. Threads stay allowed.
  // Turn off for solutions whose runtime spawns tools (e.g. Triton's ptxas).
  bool deny_process_creation = true;
  // Signals only to this process (kill/tgkill/rt_sigqueueinfo/pidfd_open with
  // another pid are refused): untrusted code cannot kill the parent or kill(-1).
  bool signals_to_self_only = true;
  // socket() only for AF_UNIX (connect/bind/listen/accept are refused anyway).
  bool allow_unix_sockets = true;
  // Leave connect, bind, listen and accept out of the filter. With socket() limited
  // to AF_UNIX they only reach local sockets (abstract names are private to the
  // worker's network namespace). The CUDA driver needs them: cuInit opens AF_UNIX
  // SOCK_SEQPACKET sockets, connects one, binds and listens on another, and returns
  // 304 (OS call failed) when any is refused (found with sandbox_cuda_probe's trap
  // mode on an H100, driver 580). CUDA workers set this.
  bool allow_unix_ipc = false;
  // Refuse shmget and msgget (EPERM): set where the worker has no IPC namespace of
  // its own, in which System V segments and queues would outlive it (they hold
  // memory until removed or the machine restarts).
  bool deny_sysv_ipc = false;
  std::optional<uint64_t> address_space_bytes;  // RLIMIT_AS; off by default (CUDA maps a lot)
  std::optional<uint64_t> file_size_bytes;      // RLIMIT_FSIZE
  // Fail (throw) instead of reporting when seccomp was requested but is unavailable.
  bool require_seccomp = false;
  // Syscalls left out of the filter (by name), for runtimes that need one of the
  // refused calls; the names in $SOLBENCH_SANDBOX_ALLOW (comma-separated) are added.
  std::vector<std::string> allow_syscalls;
  // Diagnosis only: refused calls raise SIGSYS (SECCOMP_RET_TRAP) instead of failing
  // with EPERM, so that a SIGSYS handler installed by the caller can record which
  // calls a runtime makes (tests/gpu/sandbox_cuda_probe does this for the CUDA driver).
  // fork, vfork, clone and clone3 keep their errno: libc issues them with all signals
  // blocked, and a blocked SIGSYS would kill the process.
  bool trap_refusals = false;
  // Where the worker may write and what it may execute (Landlock), applied when
  // `restrict_fs` is set; see harness/landlock.h.
  bool restrict_fs = false;
  FsRules fs;
};

// What was applied, for the trace log. Fields are true only when in force.
struct SandboxReport {
  bool core_dumps_off = false;
  bool not_dumpable = false;
  bool network_namespace = false;
  std::string network_namespace_kind;  // "netns", "userns+netns" or ""
  bool capabilities_dropped = false;
  bool no_new_privs = false;
  bool seccomp = false;
  bool process_creation_denied = false;
  bool signals_to_self_only = false;
  std::optional<uint64_t> address_space_bytes;
  std::optional<uint64_t> file_size_bytes;
  std::vector<std::string> denied_syscalls;  // names in the filter
  std::vector<std::string> notes;            // what was not applied, and why
  FsRulesReport fs;                          // Landlock: writes and program execution

  // Network is unreachable from untrusted code (a private namespace, or the seccomp
  // rule refusing non-AF_UNIX sockets).
  bool network_blocked() const;
  json to_json() const;
  std::string summary() const;  // one line, e.g. "sandbox: seccomp netns nocore ..."
};

// The worker's private mounts (docs/sandbox.md, "What a worker leaves behind"),
// entered before the rest of the sandbox, while the process may still create
// namespaces: a mount and an IPC namespace (directly when privileged, else inside
// a user namespace with the worker's ids mapped to themselves), a /proc of its own
// PID namespace, and one size-limited tmpfs that holds $TMPDIR and /dev/shm. All of
// it vanishes with the worker's last process; System V IPC objects too.
struct PrivateMountOptions {
  // Size of the tmpfs; 0: none (the namespaces and /proc only).
  uint64_t tmp_bytes = 0;
  // $TMPDIR, an existing folder (<scratch>/tmp): the tmpfs is bound over it.
  std::string tmp_dir;
  // Mount a /proc of the worker's PID namespace (the worker is its process 1).
  bool mount_proc = false;
  // Tests and diagnosis: go through a user namespace even when privileged.
  bool force_user_namespace = false;
};

struct PrivateMountReport {
  std::string mount_namespace;  // "mntns", "userns+mntns", or "" (none could be made)
  bool ipc_namespace = false;
  std::string proc;             // "mounted", or why not ("" when not asked for)
  bool tmp_private = false;     // $TMPDIR is on the private tmpfs
  bool shm_private = false;     // /dev/shm is (the same tmpfs)
  uint64_t tmp_bytes = 0;       // the tmpfs's size, when mounted
  double ms = 0;                // what entering all of it took
  std::vector<std::string> notes;
  json to_json() const;
};

// Never throws; what could not be done is in `notes`. Call single-threaded, before
// apply_worker_sandbox (whose seccomp filter refuses mount and unshare).
PrivateMountReport enter_private_mounts(const PrivateMountOptions& opts);

// Applies the requested pieces in a safe order (limits, namespaces, capabilities,
// no_new_privs, dumpable, seccomp). Pieces that are not permitted are reported in
// `notes`, except that require_seccomp turns a missing seccomp into a thrown
// std::runtime_error. Irreversible for the calling process.
SandboxReport apply_worker_sandbox(const SandboxOptions& opts = {});

// True when solbench was built with libseccomp (SOLBENCH_HAVE_SECCOMP).
bool seccomp_compiled_in();

// For the PARENT: PR_SET_DUMPABLE 0 on itself, so that a worker running as the same
// user cannot open /proc/<parent>/mem or ptrace it. Returns false when it failed.
bool harden_parent_process();

}  // namespace solbench::harness
