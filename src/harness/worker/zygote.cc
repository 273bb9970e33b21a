#include "harness/worker/zygote.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <pybind11/embed.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "core/settings.h"
#include "bridge/python.h"
#include "harness/build/build_cache.h"
#include "harness/process.h"
#include "harness/sha256.h"
#include "harness/staging.h"
#include "harness/timing/device_lock.h"
#include "harness/worker/worker.h"
#include "harness/worker/worker_session.h"

namespace solbench::harness {
namespace py = pybind11;

namespace {

// Read when Python starts or when torch is imported: a request whose values differ
// would get a worker that imported the wrong things, so it is refused (and the
// requester execs a worker instead). CUDA_VISIBLE_DEVICES is not among them:
// CUDA reads it when it starts, which the zygote never does (zygote_check), so
// each worker gets its own GPU from its environment (harness/evaluate.h worker_gpu).
constexpr const char* kImportTimeEnv[] = {
    "PYTHONPATH", "PYTHONHOME", "PYTHONNOUSERSITE", "PYTHONSAFEPATH", "SOLBENCH_PYTHON",
    "SOLBENCH_PYTHON_DIR", "LD_LIBRARY_PATH", "LD_PRELOAD", "HOME",
};

void close_fd(int& fd) {
  if (fd >= 0) {
    ::close(fd);
    fd = -1;
  }
}

// The executable a worker would run if it were exec'd: a zygote built from another
// binary (an older build, another install) must not serve this one.
std::string exe_identity() { return file_identity(self_exe()); }

sockaddr_un abstract_address(const std::string& name, socklen_t& len) {
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  const size_t n = std::min(name.size(), sizeof(a.sun_path) - 1);
  a.sun_path[0] = '\0';  // abstract: no file, private to the network namespace
  std::memcpy(a.sun_path + 1, name.data(), n);
  len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + n);
  return a;
}

// One byte and room for up to four descriptors (SCM_RIGHTS).
struct FdMessage {
  char byte = 'F';
  iovec iov{&byte, 1};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 4)] = {};
  msghdr msg{};
  FdMessage() {
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
  }
};

// The byte carrying `n` (<= 4) descriptors; the frames follow on the stream.
bool send_fds(int sock, const int* fds, int n) {
  FdMessage m;
  msghdr& msg = m.msg;
  if (n > 0) {
    msg.msg_controllen = CMSG_SPACE(sizeof(int) * n);
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * n);
    std::memcpy(CMSG_DATA(c), fds, sizeof(int) * n);
  } else {
    msg.msg_control = nullptr;
    msg.msg_controllen = 0;
  }
  for (;;) {
    ssize_t r = ::sendmsg(sock, &msg, MSG_NOSIGNAL);
    if (r == 1) return true;
    if (r < 0 && errno == EINTR) continue;
    return false;
  }
}

// Receives the byte and up to `max` descriptors (close-on-exec); returns how many.
int recv_fds(int sock, int* fds, int max, Deadline deadline) {
  pollfd p{sock, POLLIN, 0};
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  if (::poll(&p, 1, static_cast<int>(std::max<int64_t>(left.count(), 0))) <= 0) return -1;
  FdMessage m;
  m.byte = 0;
  msghdr& msg = m.msg;
  ssize_t r;
  do {
    r = ::recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
  } while (r < 0 && errno == EINTR);
  if (r != 1 || m.byte != 'F') return -1;
  int got = 0;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const int n = static_cast<int>((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
    const int* in = reinterpret_cast<const int*>(CMSG_DATA(c));
    for (int i = 0; i < n; ++i) {
      if (got < max) fds[got++] = in[i];
      else ::close(in[i]);
    }
  }
  return got;
}

// The parent pid of `pid` from /proc, or -1.
pid_t parent_of(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const size_t close_paren = s.rfind(')');
  if (close_paren == std::string::npos) return -1;
  char state = 0;
  int ppid = -1;
  if (std::sscanf(s.c_str() + close_paren + 1, " %c %d", &state, &ppid) != 2) return -1;
  return ppid;
}

// True when `pid` is this process or one of its descendants: a worker (or
// anything it started) asking its own zygote for an unsandboxed sibling.
bool is_own_descendant(pid_t pid) {
  const pid_t self = ::getpid();
  for (int depth = 0; pid > 1 && depth < 256; ++depth) {
    if (pid == self) return true;
    pid = parent_of(pid);
  }
  return false;
}

void reset_signals() {
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  for (int sig = 1; sig < NSIG; ++sig)
    if (sig != SIGKILL && sig != SIGSTOP) ::signal(sig, SIG_DFL);
}

json exit_frame(const siginfo_t& si) {
  json f = {{"type", "exit"}, {"exited", si.si_code == CLD_EXITED}};
  if (si.si_code == CLD_EXITED) {
    f["code"] = si.si_status;
  } else {
    f["signal"] = si.si_status;
    f["core"] = si.si_code == CLD_DUMPED;
  }
  return f;
}

// ---- other entry points (zygote.h) ----

std::mutex& entries_mu() {
  static std::mutex m;
  return m;
}
std::map<std::string, ZygoteEntry>& entries() {
  static std::map<std::string, ZygoteEntry> e;
  return e;
}
// nullptr when `name` is not registered.
ZygoteEntry find_entry(const std::string& name) {
  std::lock_guard<std::mutex> lock(entries_mu());
  auto it = entries().find(name);
  return it == entries().end() ? nullptr : it->second;
}
// Checked by the zygote before it forks (refused there when unknown).
ZygoteEntry registered_entry(const std::string& name) {
  ZygoteEntry e = find_entry(name);
  if (!e) ::_exit(127);
  return e;
}

// ---- the worker, forked by its keeper: becomes what `solbench __worker` is ----

// Closes every descriptor above `fd`.
void close_above(int fd) {
#ifdef SYS_close_range
  if (::syscall(SYS_close_range, static_cast<unsigned>(fd + 1), ~0U, 0) == 0) return;
#endif
  for (int f = fd + 1; f < 65536; ++f) ::close(f);
}

// A forked worker becomes the requester's as an exec'd one would be: no core
// dumps (unless the request says otherwise), working directory `cwd`, the
// requester's environment (Python's os.environ, a copy taken when the zygote
// started, follows in the worker) and SOLBENCH_CHANNEL_FD. False when `cwd` cannot
// be entered (errno says why).
bool adopt_request(const json& req, const std::string& cwd, int channel_fd) {
  if (req.value("no_core_dumps", true)) {
    struct rlimit zero = {0, 0};
    ::setrlimit(RLIMIT_CORE, &zero);
  }
  if (!cwd.empty() && ::chdir(cwd.c_str()) != 0) return false;
  ::clearenv();
  for (const auto& e : req.value("env", json::array())) {
    const std::string v = e.is_string() ? e.get<std::string>() : "";
    const size_t eq = v.find('=');
    if (eq != std::string::npos && eq > 0) ::setenv(v.substr(0, eq).c_str(), v.substr(eq + 1).c_str(), 1);
  }
  ::setenv("SOLBENCH_CHANNEL_FD", std::to_string(channel_fd).c_str(), 1);
  return true;
}

[[noreturn]] void run_worker(const json& req, int out_fd, int chan_fd) {
  const int target = req.value("channel_fd", 3);
  auto die = [](const std::string& what) {
    std::fprintf(stderr, "solbench zygote worker: %s: %s\n", what.c_str(), std::strerror(errno));
    std::fflush(stderr);
    ::_exit(127);
  };
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // the keeper gone: nobody would relay our end
  ::setpgid(0, 0);
  int devnull = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  auto lift = [&](int& fd) {
    if (fd >= 0 && fd <= target) fd = ::fcntl(fd, F_DUPFD_CLOEXEC, target + 1);
  };
  lift(devnull);
  lift(out_fd);
  lift(chan_fd);
  if (devnull < 0 || out_fd < 0 || chan_fd < 0) die("descriptors");
  if (::dup2(devnull, 0) < 0 || ::dup2(out_fd, 1) < 0 || ::dup2(out_fd, 2) < 0 ||
      ::dup2(chan_fd, target) < 0)
    die("dup2");
  // Nothing of the zygote's or the keeper's stays open: the listening socket, the
  // keeper's control connection (a worker must not forge its own exit status).
  close_above(target);
  const std::string cwd = req.value("cwd", "");
  if (!adopt_request(req, cwd, target)) die("chdir " + cwd);
  std::fflush(stdout);
  std::fflush(stderr);
  const std::string entry = req.value("entry", "");
  const int rc = entry.empty() ? worker_main(target) : registered_entry(entry)(target);
  std::fflush(stdout);
  std::fflush(stderr);
  ::_exit(rc);
}

// ---- the keeper: one per worker, outside the sandbox ----

// The keeper's part once its worker serves a requester on `conn`: says "started",
// relays the worker's exit status, and kills the worker's group (its PID namespace)
// when the requester closes the connection.
[[noreturn]] void relay(int conn, pid_t w, const json& started) {
  const Deadline soon = deadline_after(std::chrono::seconds(30));
  if (!write_frame(conn, started, soon).ok()) {
    ::kill(w, SIGKILL);
    ::waitpid(w, nullptr, 0);
    ::_exit(1);
  }
  int pidfd = -1;
#ifdef SYS_pidfd_open
  pidfd = static_cast<int>(::syscall(SYS_pidfd_open, w, 0));
#endif
  bool reported = false;
  for (;;) {
    pollfd p[2] = {{conn, POLLIN, 0}, {pidfd, POLLIN, 0}};
    const int r = ::poll(p, pidfd >= 0 ? 2 : 1, pidfd >= 0 || reported ? -1 : 50);
    if (r < 0 && errno != EINTR) break;
    if (!reported) {
      // The status without reaping: the pid stays reserved (a zombie) until the
      // requester, which may still signal that group, has closed the connection.
      siginfo_t si{};
      if (::waitid(P_PID, static_cast<id_t>(w), &si, WEXITED | WNOHANG | WNOWAIT) == 0 &&
          si.si_pid == w) {
        write_frame(conn, exit_frame(si), soon);
        reported = true;
        close_fd(pidfd);
      }
    }
    if (p[0].revents & (POLLIN | POLLHUP | POLLERR)) {
      char buf[256];
      ssize_t n = ::read(conn, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;  // the requester is done, or gone
    }
  }
  // Whatever is still running in the worker's namespace dies with its process 1.
  ::kill(-w, SIGKILL);
  ::kill(w, SIGKILL);
  while (::waitpid(w, nullptr, 0) < 0 && errno == EINTR) {
  }
  ::_exit(0);
}


// What a keeper does first, for either kind: its own group, default signals, no
// death signal (it must outlive the zygote while it serves a requester; a spare's
// ends on its link instead), and the request's PID namespace for its children.
struct KeeperStart {
  bool pid_namespace = false;
  std::string note;  // why there is no new PID namespace, when one was asked for
};

KeeperStart enter_keeper(const json& req) {
  ::setpgid(0, 0);
  reset_signals();
  ::prctl(PR_SET_PDEATHSIG, 0);
  KeeperStart k;
  if (req.value("new_pid_namespace", false)) {
    // Our children start in a new PID namespace; the first is its process 1.
    if (::unshare(CLONE_NEWPID) == 0) k.pid_namespace = true;
    else k.note = std::string("unshare(CLONE_NEWPID): ") + std::strerror(errno);
  }
  return k;
}

[[noreturn]] void run_keeper(int conn, const json& req, int out_fd, int chan_fd) {
  const auto [pid_namespace, note] = enter_keeper(req);
  PyOS_BeforeFork();
  const pid_t w = ::fork();
  if (w == 0) {
    PyOS_AfterFork_Child();
    ::close(conn);
    run_worker(req, out_fd, chan_fd);
  }
  PyOS_AfterFork_Parent();
  ::close(out_fd);
  ::close(chan_fd);
  const Deadline soon = deadline_after(std::chrono::seconds(30));
  if (w < 0) {
    write_frame(conn, {{"type", "error"}, {"message", std::string("fork: ") + std::strerror(errno)}},
                soon);
    ::_exit(1);
  }
  ::setpgid(w, w);
  json started = {{"type", "started"}, {"pid", w}, {"pid_namespace", pid_namespace}};
  if (!note.empty()) started["note"] = note;
  relay(conn, w, started);
}

// ---- spares: a keeper and a worker made ahead of their requester ----
//
// A spare is forked for a "standby" recipe (the requester's environment, and the
// plan's device and sandbox, which name nothing of any solution): its worker
// enters that sandbox in a scratch folder of its own and starts the runtime
// (runtime.init: the CUDA context, cuBLAS), then waits, having run nothing but
// solbench's own code. A launch request with the same recipe gets it: the keeper
// passes the requester's descriptors on, the worker takes them as its stdout,
// stderr and channel and goes on as any worker, and the requester adopts its
// scratch folder. Each spare serves one evaluation, as any worker does.

}  // namespace

std::string spare_recipe_key(const json& req) {
  json k = {{"env", req.value("env", json::array())},
            {"new_pid_namespace", req.value("new_pid_namespace", false)},
            {"no_core_dumps", req.value("no_core_dumps", true)},
            {"standby", req.value("standby", json::object())},
            {"staging_base", req.value("staging_base", "")}};
  return sha256_hex(k.dump());
}

namespace {

[[noreturn]] void run_spare_worker(int link, const json& req, const std::string& scratch) {
  const int target = req.value("channel_fd", 3);
  auto fail = [&](const std::string& what) {
    write_frame(link, {{"type", "failed"}, {"message", what}}, deadline_after(std::chrono::seconds(5)));
    ::_exit(2);
  };
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // the keeper gone: nobody would hand us work
  ::setpgid(0, 0);
  int devnull = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  // The link goes above the channel's number, everything else is closed; stdout and
  // stderr are /dev/null until the requester's arrive.
  const int link_target = target + 1;
  if (devnull < 0 || ::dup2(devnull, 0) < 0 || ::dup2(devnull, 1) < 0 || ::dup2(devnull, 2) < 0)
    ::_exit(127);
  if (link != link_target) {
    if (::dup3(link, link_target, O_CLOEXEC) < 0) ::_exit(127);
    link = link_target;
  }
  close_above(link);
  for (int fd = 3; fd < link; ++fd) ::close(fd);
  if (!adopt_request(req, scratch, target)) fail("chdir " + scratch + ": " + std::strerror(errno));

  const json standby = req.value("standby", json::object());
  PreparedWorker prepared;
  prepared.device = Device::parse(standby.value("device", "cpu"));
  prepared.sandbox = standby.value("sandbox", json::object());
  try {
    prepared.sandbox_report = enter_worker_sandbox(prepared.sandbox, prepared.device);
    prepared.sandboxed_t_ns = monotonic_ns();
    // The context and cuBLAS's handle run no kernel; the few kernels after them
    // do: like a reference worker's warm-up they hold the GPU's timing lock shared,
    // as any untimed step, once no timed loop holds it or waits for it (5 s at
    // most, then their turn), so that they never run in a timed loop. (Exclusive,
    // they made a back-to-back evaluation's correctness rounds wait for them.)
    DeviceLock lock(prepared.device.is_cuda() ? standby.value("timing_lock", "")
                                                          : std::string());
    auto take_lock = [&] {
      const Deadline give_up = deadline_after(std::chrono::seconds(5));
      while (!lock.try_acquire(LockMode::Shared)) {
        if (Clock::now() > give_up) {
          lock.acquire(LockMode::Shared);
          break;
        }
        ::usleep(2000);
      }
    };
    const auto let_go = [&] { lock.release(LockMode::Shared); };
    int64_t t = monotonic_ns();
    WorkerSession::start_runtime(prepared.device, take_lock, let_go);
    prepared.sandbox_report["spare_runtime_ms"] = static_cast<double>(monotonic_ns() - t) / 1e6;
    // The last evaluation's first workload, the likely next one's (runtime.warm_spare);
    // not when a requester is already waiting for this worker (back-to-back
    // evaluations): the warm-up would only delay it, and hold the lock it times under.
    pollfd claimed{link, POLLIN, 0};
    if (req.contains("warm") && ::poll(&claimed, 1, 0) == 0) {
      t = monotonic_ns();
      // Triton's first launch for a Python solution: compiled before the lock (CPU
      // work), launched under it with the rest.
      const bool triton = req["warm"].value("triton", false) &&
                          WorkerSession::warm_triton(prepared.device, /*launch=*/false);
      take_lock();
      const int steps = WorkerSession::warm_spare(req["warm"], prepared.device);
      prepared.sandbox_report["spare_warm_steps"] = steps;
      if (steps >= 3) prepared.warmed_reference_of = req["warm"]["workload"].value("uuid", "");
      if (triton) prepared.sandbox_report["spare_triton_warm"] = WorkerSession::warm_triton(prepared.device, true);
      let_go();
      prepared.sandbox_report["spare_warm_ms"] = static_cast<double>(monotonic_ns() - t) / 1e6;
    }
    // Last: nothing of torch's that the warm-up imported may come after it.
    if (::poll(&claimed, 1, 0) == 0)
      prepared.sandbox_report["spare_torch_baseline_ms"] = WorkerSession::take_torch_baseline_ahead();
  } catch (const std::exception& e) {
    fail(e.what());
  }
  write_frame(link, {{"type", "standing_by"}, {"t_ns", monotonic_ns()}},
              deadline_after(std::chrono::seconds(5)));
  int fds[2] = {-1, -1};
  if (recv_fds(link, fds, 2, deadline_after(std::chrono::hours(24 * 365))) != 2) ::_exit(0);
  // Received at the lowest free numbers (the channel's among them): above the
  // targets first, so that placing one cannot close another.
  for (int& fd : fds)
    if (fd <= link) {
      const int moved = ::fcntl(fd, F_DUPFD_CLOEXEC, link + 1);
      ::close(fd);
      fd = moved;
    }
  if (fds[0] < 0 || fds[1] < 0 || ::dup2(fds[0], 1) < 0 || ::dup2(fds[0], 2) < 0 ||
      ::dup2(fds[1], target) < 0)
    ::_exit(127);
  ::close(fds[0]);
  ::close(fds[1]);
  ::close(link);
  std::fflush(stdout);
  std::fflush(stderr);
  const int rc = worker_main(target, &prepared);
  std::fflush(stdout);
  std::fflush(stderr);
  ::_exit(rc);
}

// A spare's keeper: forks the spare's worker, then waits for the zygote to hand it
// a requester (the connection and its two descriptors, on `link`), or to drop it.
[[noreturn]] void run_spare_keeper(int link, const json& req, const std::string& scratch) {
  // Unclaimed, it ends with the zygote: the zygote holds the only other end of
  // `link`, whose end of file (below) kills the worker and removes the scratch
  // folder, however the zygote ended (a signal on the keeper would leave the folder).
  const auto [pid_namespace, note] = enter_keeper(req);
  int kw[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, kw) != 0) ::_exit(1);
  PyOS_BeforeFork();
  const pid_t w = ::fork();
  if (w == 0) {
    PyOS_AfterFork_Child();
    ::close(link);
    ::close(kw[0]);
    run_spare_worker(kw[1], req, scratch);
  }
  PyOS_AfterFork_Parent();
  ::close(kw[1]);
  auto give_up = [&](int code) {
    if (w > 0) {
      ::kill(-w, SIGKILL);
      ::kill(w, SIGKILL);
      while (::waitpid(w, nullptr, 0) < 0 && errno == EINTR) {
      }
    }
    remove_tree_quietly(scratch);
    ::_exit(code);
  };
  if (w < 0) give_up(1);
  ::setpgid(w, w);
  int pidfd = -1;
#ifdef SYS_pidfd_open
  pidfd = static_cast<int>(::syscall(SYS_pidfd_open, w, 0));
#endif
  for (;;) {
    pollfd p[2] = {{link, POLLIN, 0}, {pidfd, POLLIN, 0}};
    const int r = ::poll(p, pidfd >= 0 ? 2 : 1, pidfd >= 0 ? -1 : 200);
    if (r < 0 && errno != EINTR) give_up(1);
    siginfo_t si{};
    if (::waitid(P_PID, static_cast<id_t>(w), &si, WEXITED | WNOHANG | WNOWAIT) == 0 &&
        si.si_pid == w)
      give_up(0);  // the spare ended before it was wanted (it failed to start)
    if (!(p[0].revents & (POLLIN | POLLHUP | POLLERR))) continue;
    int fds[3] = {-1, -1, -1};
    if (recv_fds(link, fds, 3, deadline_after(std::chrono::seconds(10))) != 3) give_up(0);
    // Claimed: from now on this keeper is the requester's, as run_keeper is.
    ::close(link);
    close_fd(pidfd);
    ::prctl(PR_SET_PDEATHSIG, 0);
    const int conn = fds[0];
    const bool handed = send_fds(kw[0], fds + 1, 2);
    ::close(fds[1]);
    ::close(fds[2]);
    if (!handed) {
      write_frame(conn, {{"type", "error"}, {"message", "the spare worker is gone"}},
                  deadline_after(std::chrono::seconds(5)));
      give_up(1);
    }
    json started = {{"type", "started"}, {"pid", w}, {"pid_namespace", pid_namespace},
                    {"cwd", scratch}, {"spare", true}};
    if (!note.empty()) started["note"] = note;
    relay(conn, w, started);
  }
}

// ---- the zygote ----

struct Zygote {
  int listen_fd = -1;
  std::string exe;
  std::map<std::string, std::string> import_env;
  std::set<std::string> preloaded;
  std::string broken;  // once CUDA is initialised here, no further worker is forked

  struct Spare {
    std::string key;
    pid_t keeper = -1;
    int link = -1;  // to the keeper: a claim's descriptors go here
    std::string scratch;
  };
  std::vector<Spare> spares;  // oldest first
  static constexpr size_t kMaxSpares = 4;

  void refuse(int conn, const std::string& why) {
    write_frame(conn, {{"type", "error"}, {"message", why}}, deadline_after(std::chrono::seconds(5)));
  }

  // Forks a keeper that runs `keeper` (which never returns) with nothing of the
  // zygote's open but what it was given: not the listening socket, not the spares'
  // links (a spare's keeper sees its link close only when the zygote closes it).
  template <typename Keeper>
  pid_t fork_keeper(Keeper keeper) {
    std::fflush(stdout);
    std::fflush(stderr);
    PyOS_BeforeFork();
    const pid_t k = ::fork();
    if (k == 0) {
      PyOS_AfterFork_Child();
      ::close(listen_fd);
      for (Spare& sp : spares) close_fd(sp.link);
      keeper();
      ::_exit(1);  // not reached: a keeper ends the process itself
    }
    PyOS_AfterFork_Parent();
    return k;
  }

  // Closing its link is enough: the keeper kills its worker and removes the folder.
  void drop(Spare& sp) { close_fd(sp.link); }

  void drop_all() {
    for (Spare& sp : spares) {
      close_fd(sp.link);
      if (sp.keeper > 0) {
        ::kill(-sp.keeper, SIGKILL);
        ::kill(sp.keeper, SIGKILL);
      }
      remove_tree_quietly(sp.scratch);
    }
    spares.clear();
  }

  // Forks spares for `req`'s recipe (its standby, environment and staging folder)
  // until there are req["count"] (default 1) of it: a Python solution's worker and
  // the reference worker share one.
  void make_spares(const json& req) {
    const std::string key = spare_recipe_key(req);
    const int wanted = std::clamp(req.value("count", 1), 0, static_cast<int>(kMaxSpares));
    int have = 0;
    for (const Spare& sp : spares) have += sp.key == key;
    for (; have < wanted; ++have) make_spare(req, key);
  }

  void make_spare(const json& req, const std::string& key) {
    const std::string base = req.value("staging_base", "");
    if (base.empty() || !req.contains("standby")) return;
    std::string scratch;
    try {
      StagingDir d = StagingDir::create(base, "worker-");
      scratch = d.release().string();
    } catch (const std::exception&) {
      return;
    }
    while (spares.size() >= kMaxSpares) {  // the oldest recipe's go first
      drop(spares.front());
      spares.erase(spares.begin());
    }
    int link[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, link) != 0) {
      remove_tree_quietly(scratch);
      return;
    }
    const pid_t k = fork_keeper([&] {
      ::close(link[0]);
      run_spare_keeper(link[1], req, scratch);
    });
    ::close(link[1]);
    if (k < 0) {
      ::close(link[0]);
      remove_tree_quietly(scratch);
      return;
    }
    spares.push_back({key, k, link[0], scratch});
  }

  // Hands a launch request to a spare of its recipe: true when one took it.
  bool claim_spare(int conn, const json& req, const int* fds) {
    const std::string key = spare_recipe_key(req);
    for (size_t i = 0; i < spares.size(); ++i) {
      if (spares[i].key != key) continue;
      Spare sp = spares[i];
      spares.erase(spares.begin() + static_cast<long>(i));
      const int three[3] = {conn, fds[0], fds[1]};
      const bool ok = send_fds(sp.link, three, 3);
      close_fd(sp.link);  // a keeper that did not take it (gone, broken) ends here
      if (ok) return true;
      return false;
    }
    return false;
  }

  void serve(int conn) {
    ucred cred{};
    socklen_t len = sizeof cred;
    if (::getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || cred.uid != ::getuid() ||
        is_own_descendant(cred.pid))
      return;  // silently: a worker or another user learns nothing
    int fds[2] = {-1, -1};
    const Deadline deadline = deadline_after(std::chrono::seconds(10));
    const int n = recv_fds(conn, fds, 2, deadline);
    struct Closer {
      int* f;
      ~Closer() {
        close_fd(f[0]);
        close_fd(f[1]);
      }
    } closer{fds};
    if (n < 0) return;
    FrameResult f = read_frame(conn, deadline);
    if (!f.ok() || !f.message.is_object()) return;
    const json& req = f.message;
    // "prepare": a spare for this recipe (no descriptors); else a worker now (two).
    const bool prepare = req.value("type", "") == "prepare";
    if (prepare ? n != 0 : n != 2) return;
    if (!broken.empty()) return refuse(conn, broken);
    if (req.value("exe", "") != exe)
      return refuse(conn, "the zygote runs another solbench executable (" + exe + ")");
    std::vector<std::string> env;
    if (req.contains("env") && req["env"].is_array())
      for (const auto& e : req["env"])
        if (e.is_string()) env.push_back(e.get<std::string>());
    for (const auto& [name, value] : import_env)
      if (environment_value(env, name) != value)
        return refuse(conn, "the zygote was started with another " + name);
    // The module groups a worker will want are imported once, for every later
    // worker; a worker asked for now is forked first (it imports what it uses on
    // its own: torch.compile's Dynamo and Inductor alone take 4-7 s to import on
    // the H200 machine, which were the first worker's wait), spares after.
    const auto preload = [&] {
      if (!req.contains("preload") || !req["preload"].is_array()) return;
      for (const auto& g : req["preload"]) {
        const std::string group = g.is_string() ? g.get<std::string>() : "";
        if (group.empty() || preloaded.count(group)) continue;
        try {
          py::module_::import("solbench_py.runtime").attr("zygote_preload")(group);
        } catch (py::error_already_set& e) {
          std::fprintf(stderr, "solbench zygote: preloading %s: %s\n", group.c_str(), e.what());
        }
        preloaded.insert(group);
      }
    };
    try {
      const std::string why =
          py::module_::import("solbench_py.runtime").attr("zygote_check")().cast<std::string>();
      if (!why.empty()) broken = "the zygote cannot fork workers: " + why;
    } catch (py::error_already_set& e) {
      broken = std::string("the zygote cannot fork workers: ") + e.what();
    }
    if (!broken.empty()) return refuse(conn, broken);
    if (prepare) {
      // Answered first: the requester (an evaluation about to exit) does not wait
      // for the forks.
      write_frame(conn, {{"type", "prepared"}}, deadline_after(std::chrono::seconds(5)));
      preload();
      make_spares(req);
      return;
    }
    if (const std::string entry = req.value("entry", ""); !entry.empty() && !find_entry(entry))
      return refuse(conn, "the zygote has no entry point \"" + entry + "\"");
    if (req.contains("standby") && claim_spare(conn, req, fds)) {
      preload();
      return;
    }
    const pid_t k = fork_keeper([&] { run_keeper(conn, req, fds[0], fds[1]); });
    if (k < 0) refuse(conn, std::string("fork: ") + std::strerror(errno));
    preload();
  }
};

}  // namespace

int zygote_main(const std::string& address, bool exit_on_stdin_eof) {
  // Import-time settings of the runtimes a worker would otherwise set before
  // Python starts (worker_policy.cc runtime_cache_env): Inductor sizes its compile
  // pool when its config is imported, and torch.cuda.is_available() must not
  // initialise the driver here (a forked child could not use it).
  ::setenv("TORCHINDUCTOR_COMPILE_THREADS", "1", 1);
  ::setenv("PYTORCH_NVML_BASED_CUDA_CHECK", "1", 1);
  ::signal(SIGPIPE, SIG_IGN);
  Zygote z;
  z.listen_fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  socklen_t len = 0;
  const sockaddr_un addr = abstract_address(address, len);
  if (z.listen_fd < 0 || ::bind(z.listen_fd, reinterpret_cast<const sockaddr*>(&addr), len) != 0 ||
      ::listen(z.listen_fd, 64) != 0) {
    std::fprintf(stderr, "solbench zygote: cannot listen on @%s: %s\n", address.c_str(),
                 std::strerror(errno));
    return 1;
  }
  // Requests queue in the backlog while torch is imported.
  try {
    bridge::ensure_interpreter();
    bridge::keep_bytecode();  // before torch: nothing of a solution has run here
    py::module_::import("solbench_py.runtime");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "solbench zygote: cannot start Python and torch: %s\n", e.what());
    return 1;
  }
  z.exe = exe_identity();
  const std::vector<std::string> env = environment_list();
  for (const char* name : kImportTimeEnv) z.import_env[name] = environment_value(env, name);
  std::fprintf(stderr, "solbench zygote: ready on @%s\n", address.c_str());
  std::fflush(stderr);
  for (;;) {
    pollfd p[2] = {{z.listen_fd, POLLIN, 0}, {0, POLLIN, 0}};
    const int r = ::poll(p, exit_on_stdin_eof ? 2 : 1, 1000);
    while (::waitpid(-1, nullptr, WNOHANG) > 0) {
    }  // keepers that ended
    if (r < 0) {
      if (errno == EINTR) continue;
      return 1;
    }
    if (exit_on_stdin_eof && (p[1].revents & (POLLIN | POLLHUP | POLLERR))) {
      char buf[64];
      if (::read(0, buf, sizeof buf) <= 0) {
        z.drop_all();
        return 0;
      }
    }
    if (p[0].revents & POLLIN) {
      int conn = ::accept4(z.listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
      if (conn < 0) continue;
      z.serve(conn);
      ::close(conn);
    }
  }
}

namespace {
bool own_zygote_running(const std::string& address);  // below, with this process's zygote
}  // namespace

ExternalStarter zygote_starter(std::string address, json request, std::chrono::duration<double> limit,
                               std::shared_ptr<std::string> spare_cwd) {
  return [address = std::move(address), request = std::move(request), limit, spare_cwd](
             const std::vector<std::string>& env, int out_fd, int channel_fd) {
    json r = request;
    r["env"] = env;
    const ZygoteLaunch z = launch_from_zygote(address, r, out_fd, channel_fd, deadline_after(limit));
    if (z.spare && spare_cwd) *spare_cwd = z.cwd;
    return ExternalStart{z.pid, z.pid_namespace, z.control_fd};
  };
}

ZygoteLaunch launch_from_zygote(const std::string& address, json request, int out_fd,
                                int channel_fd, Deadline deadline) {
  int s = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) throw ZygoteUnavailable(std::string("socket: ") + std::strerror(errno));
  socklen_t len = 0;
  const sockaddr_un addr = abstract_address(address, len);
  // This process's zygote, started a moment ago (a tracer asks at the evaluation's
  // start), may not be listening yet: while it runs, a refused connection is tried
  // again for a short while. Any other address fails at once.
  const Deadline listening = std::min(deadline, deadline_after(std::chrono::seconds(3)));
  while (::connect(s, reinterpret_cast<const sockaddr*>(&addr), len) != 0) {
    const int e = errno;
    if (e == EINTR) continue;
    if (e == ECONNREFUSED && Clock::now() < listening && own_zygote_running(address)) {
      ::usleep(5000);
      continue;
    }
    ::close(s);
    throw ZygoteUnavailable("no zygote at @" + address + ": " + std::strerror(e));
  }
  request["exe"] = exe_identity();
  const int fds[2] = {out_fd, channel_fd};
  if (!send_fds(s, fds, 2)) {
    const int e = errno;
    ::close(s);
    throw ZygoteUnavailable(std::string("sending descriptors to the zygote: ") + std::strerror(e));
  }
  if (FrameResult w = write_frame(s, request, deadline); !w.ok()) {
    ::close(s);
    throw ZygoteUnavailable("sending the request to the zygote: " + w.error);
  }
  // Byte-exact: the keeper's "exit" frame follows on the same stream.
  FrameResult r = read_frame(s, deadline);
  if (!r.ok() || r.message.value("type", "") != "started") {
    ::close(s);
    const std::string why = r.ok() ? r.message.value("message", "an unexpected answer")
                            : r.status == FrameStatus::Eof ? "it closed the connection"
                                                           : r.error;
    throw ZygoteUnavailable("the zygote did not start a worker: " + why);
  }
  ZygoteLaunch l;
  l.pid = r.message.value("pid", -1);
  l.pid_namespace = r.message.value("pid_namespace", false);
  l.control_fd = s;
  l.spare = r.message.value("spare", false);
  l.cwd = r.message.value("cwd", "");
  if (l.pid <= 0) {
    ::close(s);
    throw ZygoteUnavailable("the zygote answered without a pid");
  }
  return l;
}

bool prepare_spare(const std::string& address, json request, Deadline deadline) {
  int s = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) return false;
  socklen_t len = 0;
  const sockaddr_un addr = abstract_address(address, len);
  bool ok = false;
  if (::connect(s, reinterpret_cast<const sockaddr*>(&addr), len) == 0) {
    request["type"] = "prepare";
    request["exe"] = exe_identity();
    if (send_fds(s, nullptr, 0) && write_frame(s, request, deadline).ok()) {
      FrameResult r = read_frame(s, deadline);
      ok = r.ok() && r.message.value("type", "") == "prepared";
    }
  }
  ::close(s);
  return ok;
}

// ---- this process's zygote ----

namespace {

std::mutex g_mu;
bool g_started = false;
std::string g_address;
std::optional<Child>* g_child = nullptr;  // never destroyed before exit's own teardown

bool own_zygote_running(const std::string& address) {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_child && *g_child && address == g_address && !(*g_child)->poll();
}

std::string random_hex(size_t bytes) {
  std::string raw(bytes, '\0');
  size_t got = 0;
  while (got < bytes) {
    ssize_t r = ::getrandom(raw.data() + got, bytes - got, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += static_cast<size_t>(r);
  }
  std::string out;
  for (unsigned char c : raw) out += fmt::format("{:02x}", c);
  return out;
}

}  // namespace

void start_process_zygote(const std::filesystem::path& program) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_started) return;
  g_started = true;
  if (const std::string& s = settings().internal.zygote; !s.empty()) {
    g_address = (s == "0" || s == "off") ? "" : s;
    return;
  }
  if (!bridge::python_available()) return;
  const std::string address = fmt::format("solbench-zygote-{}-{}", ::getpid(), random_hex(16));
  SpawnOptions so;
  so.argv = {(program.empty() ? self_exe() : program).string(), "__zygote", "--address", address};
  so.output = OutputMode::Capture;
  so.log_limit_bytes = 16 << 10;
  so.die_with_parent = true;
  try {
    static std::optional<Child> child;  // killed (with its group) when this process exits
    child.emplace(Child::spawn(so));
    g_child = &child;
    g_address = address;
  } catch (const SpawnError&) {
    g_address.clear();  // workers are exec'd as before
  }
}

void register_zygote_entry(const std::string& name, ZygoteEntry entry) {
  std::lock_guard<std::mutex> lock(entries_mu());
  entries()[name] = entry;
}

std::string existing_zygote_address() {
  {
    std::lock_guard<std::mutex> lock(g_mu);
    // Named by $SOLBENCH_ZYGOTE (from `run` or Python) counts as started.
    if (!g_started && settings().internal.zygote.empty()) return "";
  }
  return process_zygote_address();
}

std::string process_zygote_address() {
  start_process_zygote();
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_child && *g_child && (*g_child)->poll()) return "";  // it ended: exec workers
  return g_address;
}

std::vector<std::pair<std::string, std::string>> zygote_environment() {
  {
    std::lock_guard<std::mutex> lock(g_mu);
    if (!g_started) return {};  // only one already started: never this executable by accident
  }
  const std::string a = process_zygote_address();
  if (a.empty()) return {};
  return {{"SOLBENCH_ZYGOTE", a}};
}

}  // namespace solbench::harness
