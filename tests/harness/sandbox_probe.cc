// Applies the worker sandbox to itself, then tries what untrusted code must not be
// able to do, and prints one JSON object: {"report": <SandboxReport>, "attempts":
// {name: errno (0 = succeeded)}}. Run by test_sandbox.cc.
//
// Flags: --no-sandbox (attempts only, for a baseline), --allow-processes
// (deny_process_creation off), --no-netns (private_network off), --trap (refused
// calls raise SIGSYS; a handler counts them under "trapped" and fails them with
// EPERM, so the attempts read as without --trap), --unix-ipc (connect, bind,
// listen and accept allowed, as in CUDA workers), --private-tmp BYTES DIR (the
// worker's private mounts first: a tmpfs of BYTES for /dev/shm and DIR, which it
// then fills; --userns through a user namespace), --deny-sysv (deny_sysv_ipc).
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/personality.h>
#include <sys/ipc.h>
#include <sys/shm.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>

#include "harness/worker/sandbox.h"

using solbench::json;

namespace {

std::atomic<int> g_trapped{0};

void on_sigsys(int, siginfo_t*, void* raw) {
  g_trapped.fetch_add(1, std::memory_order_relaxed);
#if defined(__x86_64__)
  static_cast<ucontext_t*>(raw)->uc_mcontext.gregs[REG_RAX] = -EPERM;
#elif defined(__aarch64__)
  static_cast<ucontext_t*>(raw)->uc_mcontext.regs[0] = static_cast<unsigned long>(-EPERM);
#endif
}

// errno of a call that returns -1 on failure; 0 when it succeeded.
int attempt(long rc) { return rc < 0 ? errno : 0; }

// Writes `file` in 1 MiB pieces until a write fails or `limit` bytes are written:
// {"errno": the failing write's (0: none failed), "bytes": written}.
json fill(const std::string& file, uint64_t limit) {
  json r = {{"errno", 0}, {"bytes", 0}};
  int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) {
    r["errno"] = errno;
    return r;
  }
  std::string chunk(1 << 20, 'x');
  uint64_t done = 0;
  while (done < limit) {
    const ssize_t n = ::write(fd, chunk.data(), chunk.size());
    if (n < 0) {
      r["errno"] = errno;
      break;
    }
    done += static_cast<uint64_t>(n);
  }
  ::close(fd);
  r["bytes"] = done;
  return r;
}

int try_socket(int family, int type) {
  int fd = ::socket(family, type, 0);
  if (fd < 0) return errno;
  ::close(fd);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  bool sandbox = true;
  std::string fs_root;
  solbench::harness::SandboxOptions opts;
  solbench::harness::PrivateMountOptions mounts;
  std::string shm_marker;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--no-sandbox") sandbox = false;
    else if (a == "--allow-processes") opts.deny_process_creation = false;
    else if (a == "--no-netns") opts.private_network = false;
    else if (a == "--trap") opts.trap_refusals = true;
    else if (a == "--unix-ipc") opts.allow_unix_ipc = true;
    else if (a == "--fs" && i + 1 < argc) fs_root = argv[++i];
    else if (a == "--exec" && i + 1 < argc) opts.fs.executable.push_back(argv[++i]);
    else if (a == "--private-tmp" && i + 2 < argc) {
      mounts.tmp_bytes = std::stoull(argv[++i]);
      mounts.tmp_dir = argv[++i];
    } else if (a == "--userns") mounts.force_user_namespace = true;
    else if (a == "--shm-marker" && i + 1 < argc) shm_marker = argv[++i];
    else if (a == "--deny-sysv") opts.deny_sysv_ipc = true;
  }
  if (!fs_root.empty()) {
    // Landlock: only <root>/w is writable; <root>/ro exists and holds "keep".
    opts.restrict_fs = true;
    opts.fs.writable.push_back(fs_root + "/w");
    opts.fs.device_files.push_back("/dev");
  }
  if (opts.trap_refusals) {
    struct sigaction sa = {};
    sa.sa_sigaction = on_sigsys;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    ::sigaction(SIGSYS, &sa, nullptr);
  }
  json out = json::object();
  out["report"] = nullptr;
  solbench::harness::PrivateMountReport mounted;
  if (mounts.tmp_bytes) {
    mounted = solbench::harness::enter_private_mounts(mounts);
    out["mounts"] = mounted.to_json();
  }
  if (sandbox) out["report"] = solbench::harness::apply_worker_sandbox(opts).to_json();

  // (before `a` below: a reference into `out`, which new keys would move)
  if (mounts.tmp_bytes) {
    // Twice the tmpfs's size into /dev/shm, then into DIR, which shares its limit;
    // a file the test left in the host's /dev/shm must be out of sight.
    const std::string name = "solbench-probe-" + std::to_string(::getpid());
    if (mounted.shm_private) out["fill_shm"] = fill("/dev/shm/" + name, 2 * mounts.tmp_bytes);
    out["fill_tmp"] = fill(mounts.tmp_dir + "/" + name, 2 * mounts.tmp_bytes);
    if (!shm_marker.empty())
      out["host_shm_marker_seen"] = ::access(("/dev/shm/" + shm_marker).c_str(), F_OK) == 0;
  }
  const pid_t parent = ::getppid();
  json& a = out["attempts"];
  a["socket_inet"] = try_socket(AF_INET, SOCK_STREAM);
  a["socket_inet6"] = try_socket(AF_INET6, SOCK_DGRAM);
  a["socket_netlink"] = try_socket(AF_NETLINK, SOCK_RAW);
  a["socket_unix"] = try_socket(AF_UNIX, SOCK_STREAM);
  {
    int sv[2];
    int e = attempt(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
    if (e == 0) {
      // The pair must carry data both ways.
      char c = 'x', d = 0;
      if (::write(sv[0], &c, 1) != 1 || ::read(sv[1], &d, 1) != 1 || d != 'x') e = -1;
      ::close(sv[0]);
      ::close(sv[1]);
    }
    a["socketpair_unix"] = e;
  }
  {
    // connect to a path that does not exist: ENOENT when the call is allowed.
    int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr = {};
    addr.sun_family = AF_UNIX;
    std::snprintf(addr.sun_path, sizeof addr.sun_path, "/nonexistent-solbench/probe.sock");
    a["connect_unix"] = fd < 0 ? errno : attempt(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr));
    if (fd >= 0) ::close(fd);
    // bind to an abstract name (no file left behind).
    fd = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    sockaddr_un abstract = {};
    abstract.sun_family = AF_UNIX;
    const int len = std::snprintf(abstract.sun_path + 1, sizeof abstract.sun_path - 1,
                                  "solbench-probe-%d", static_cast<int>(::getpid()));
    a["bind_unix"] = fd < 0 ? errno
                            : attempt(::bind(fd, reinterpret_cast<sockaddr*>(&abstract),
                                             static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + len)));
    if (fd >= 0) ::close(fd);
  }
  // PTRACE_SEIZE does not stop the tracee (an ATTACH that succeeds unsandboxed
  // would leave the test runner stopped); exiting detaches.
  a["ptrace_attach_parent"] = attempt(::ptrace(PTRACE_SEIZE, parent, nullptr, nullptr));
  {
    char buf[8] = {0};
    char target[8] = {0};
    iovec local{buf, sizeof buf};
    iovec remote{target, sizeof target};  // an address in our own image: only the call matters
    a["process_vm_writev_parent"] = attempt(::process_vm_writev(parent, &local, 1, &remote, 1, 0));
    a["process_vm_readv_parent"] = attempt(::process_vm_readv(parent, &local, 1, &remote, 1, 0));
  }
  // A System V segment left behind on purpose: it must die with the probe's IPC
  // namespace, or not be made at all. Never tried where it could outlive us.
  if ((out.contains("mounts") && out["mounts"].value("ipc_namespace", false)) ||
      (sandbox && out["report"].value("seccomp", false) &&
       out["report"]["denied_syscalls"].dump().find("\"shmget\"") != std::string::npos)) {
    const int id = ::shmget(IPC_PRIVATE, 1 << 20, IPC_CREAT | 0600);
    a["shmget"] = id < 0 ? errno : 0;
  }
  a["mount_tmpfs"] = attempt(::mount("none", "/mnt", "tmpfs", 0, nullptr));
  a["unshare_net"] = attempt(::unshare(CLONE_NEWNET));
  a["bpf"] = attempt(::syscall(SYS_bpf, 0, nullptr, 0));
  a["kexec_load"] = attempt(::syscall(SYS_kexec_load, 0, 0, nullptr, 0));
  a["init_module"] = attempt(::syscall(SYS_init_module, nullptr, 0, ""));
  a["keyctl"] = attempt(::syscall(SYS_keyctl, 0, 0, 0, 0, 0));
  a["userfaultfd"] = attempt(::syscall(SYS_userfaultfd, 0));
  a["personality_change"] = attempt(::personality(static_cast<unsigned long>(PER_LINUX) | ADDR_NO_RANDOMIZE));
  a["personality_query"] = attempt(::personality(0xffffffff));
  a["kill_parent_sig0"] = attempt(::kill(parent, 0));
  a["kill_self_sig0"] = attempt(::kill(::getpid(), 0));
  {
    pid_t pid = ::fork();
    if (pid == 0) ::_exit(0);
    int e = pid < 0 ? errno : 0;
    if (pid > 0) ::waitpid(pid, nullptr, 0);
    a["fork"] = e;
  }
  {
    // Threads must keep working (Python, CUDA and OpenMP runtimes need them).
    int value = 0;
    try {
      std::thread t([&] { value = 42; });
      t.join();
      a["thread"] = value == 42 ? 0 : -1;
    } catch (const std::system_error& e) {
      a["thread"] = e.code().value();
    }
  }
  {
    // Ordinary file I/O in the working directory keeps working.
    int fd = ::open("probe.txt", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    int e = fd < 0 ? errno : 0;
    if (fd >= 0) {
      if (::write(fd, "ok", 2) != 2) e = errno;
      ::close(fd);
      ::unlink("probe.txt");
    }
    a["file_write"] = e;
  }
  if (!fs_root.empty()) {
    auto create = [](const std::string& path) {
      int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
      if (fd < 0) return errno;
      ::close(fd);
      return 0;
    };
    a["fs_write_inside"] = create(fs_root + "/w/new.txt");
    a["fs_write_outside"] = create(fs_root + "/ro/new.txt");
    a["fs_overwrite_outside"] = attempt(::open((fs_root + "/ro/keep").c_str(), O_WRONLY | O_CLOEXEC));
    a["fs_unlink_outside"] = attempt(::unlink((fs_root + "/ro/keep").c_str()));
    a["fs_mkdir_outside"] = attempt(::mkdir((fs_root + "/ro/d").c_str(), 0700));
    a["fs_rename_out"] = attempt(::rename((fs_root + "/w/new.txt").c_str(), (fs_root + "/ro/moved").c_str()));
    a["dev_null_write"] = attempt(::open("/dev/null", O_WRONLY | O_CLOEXEC));
    // exec in a child: exit 0 when the program ran, 100 + errno when execve failed.
    auto run = [](const char* path, const char* arg) {
      pid_t pid = ::fork();
      if (pid < 0) return errno;
      if (pid == 0) {
        char* args[] = {const_cast<char*>(path), const_cast<char*>(arg), nullptr};
        ::execv(path, args);
        ::_exit(100 + errno);
      }
      int st = 0;
      ::waitpid(pid, &st, 0);
      if (!WIFEXITED(st)) return -1;
      return WEXITSTATUS(st) >= 100 ? WEXITSTATUS(st) - 100 : WEXITSTATUS(st) == 0 ? 0 : -2;
    };
    if (!opts.fs.executable.empty()) a["exec_listed"] = run(opts.fs.executable.front().c_str(), "--version");
    a["exec_shell"] = run("/bin/sh", "-c");
  }
  out["trapped"] = g_trapped.load();
  std::printf("%s\n", out.dump().c_str());
  return 0;
}
