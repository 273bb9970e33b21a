#include "harness/process.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <thread>

#include "core/settings.h"
#include "harness/interrupt.h"

extern char** environ;

namespace solbench::harness {
namespace fs = std::filesystem;

// ---------------------------------------------------------------- signal names

std::string signal_name(int sig) {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 32))
  if (const char* abbrev = ::sigabbrev_np(sig)) return std::string("SIG") + abbrev;
#endif
  return "signal " + std::to_string(sig);
}

std::string ExitStatus::describe() const {
  if (timed_out) return "timed out (process group killed)";
  if (exited) return "exit " + std::to_string(exit_code);
  if (signal != 0)
    return "killed by " + signal_name(signal) + (core_dumped ? " (core dumped)" : "");
  return "not finished";
}

// ---------------------------------------------------------------- BoundedLog

struct BoundedLog::State {
  mutable std::mutex mu;
  size_t head_limit = 0;
  size_t tail_limit = 0;
  std::string head;
  std::string tail;  // last bytes after the head; trimmed lazily to tail_limit
  uint64_t total = 0;

  std::string_view tail_kept() const {
    std::string_view t(tail);
    if (t.size() > tail_limit) t.remove_prefix(t.size() - tail_limit);
    return t;
  }
};

namespace {
std::string omitted_marker(uint64_t n) {
  return "\n[... " + std::to_string(n) + " bytes omitted ...]\n";
}
}  // namespace

BoundedLog::BoundedLog(size_t limit_bytes) : s_(std::make_shared<State>()) {
  s_->head_limit = limit_bytes / 4;
  s_->tail_limit = limit_bytes - s_->head_limit;
}

void BoundedLog::append(const char* data, size_t n) {
  std::lock_guard<std::mutex> lock(s_->mu);
  s_->total += n;
  if (s_->head.size() < s_->head_limit) {
    size_t take = std::min(n, s_->head_limit - s_->head.size());
    s_->head.append(data, take);
    data += take;
    n -= take;
  }
  if (n == 0) return;
  if (n >= s_->tail_limit) {
    s_->tail.assign(data + (n - s_->tail_limit), s_->tail_limit);
    return;
  }
  s_->tail.append(data, n);
  if (s_->tail.size() > 2 * s_->tail_limit) s_->tail.erase(0, s_->tail.size() - s_->tail_limit);
}

std::string BoundedLog::text() const { return text_since(0); }

std::string BoundedLog::text_since(uint64_t from) const {
  std::lock_guard<std::mutex> lock(s_->mu);
  const std::string_view tail = s_->tail_kept();
  const uint64_t tail_start = s_->total - tail.size();
  const uint64_t head_end = s_->head.size();
  std::string out;
  if (from >= s_->total) return out;
  if (from >= tail_start) {
    out.append(tail.substr(from - tail_start));
    return out;
  }
  if (from < head_end) {
    out.append(s_->head, from, std::string::npos);
    if (tail_start > head_end) out += omitted_marker(tail_start - head_end);
  } else {
    out += omitted_marker(tail_start - from);
  }
  out.append(tail);
  return out;
}

std::optional<uint64_t> BoundedLog::offset_after(uint64_t from, std::string_view needle) const {
  std::lock_guard<std::mutex> lock(s_->mu);
  const std::string_view tail = s_->tail_kept();
  const uint64_t tail_start = s_->total - tail.size();
  auto search = [&](std::string_view seg, uint64_t seg_start) -> std::optional<uint64_t> {
    if (from >= seg_start + seg.size()) return std::nullopt;
    const size_t at = seg.find(needle, from > seg_start ? from - seg_start : 0);
    if (at == std::string_view::npos) return std::nullopt;
    return seg_start + at + needle.size();
  };
  if (tail_start == s_->head.size())  // nothing dropped: one contiguous stream
    return search(s_->head + std::string(tail), 0);
  if (auto in_head = search(s_->head, 0)) return in_head;
  return search(tail, tail_start);
}

uint64_t BoundedLog::total_bytes() const {
  std::lock_guard<std::mutex> lock(s_->mu);
  return s_->total;
}

// ---------------------------------------------------------------- helpers

namespace {

void close_fd(int& fd) {
  if (fd >= 0) {
    ::close(fd);
    fd = -1;
  }
}

void env_put(std::vector<std::string>& env, const std::string& name, const std::string& value) {
  std::string entry = name + "=" + value;
  for (auto& e : env) {
    if (e.size() > name.size() && e.compare(0, name.size(), name) == 0 && e[name.size()] == '=') {
      e = entry;
      return;
    }
  }
  env.push_back(std::move(entry));
}

bool is_executable_file(const fs::path& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(p.c_str(), X_OK) == 0;
}

}  // namespace

std::vector<std::string> environment_list() {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) env.emplace_back(*e);
  return env;
}

std::string environment_value(const std::vector<std::string>& env, std::string_view name) {
  for (const auto& e : env)
    if (e.size() > name.size() && e.compare(0, name.size(), name) == 0 && e[name.size()] == '=')
      return e.substr(name.size() + 1);
  return {};
}

fs::path self_exe() {
  std::error_code ec;
  fs::path p = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return "/proc/self/exe";
  return p;
}

std::optional<fs::path> find_program(const std::string& name, const char* path_env) {
  if (name.empty()) return std::nullopt;
  if (name.find('/') != std::string::npos) {
    if (is_executable_file(name)) return fs::path(name);
    return std::nullopt;
  }
  std::string path = path_env ? path_env : settings().path_env;
  if (path.empty()) path = "/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find(':', start);
    if (end == std::string::npos) end = path.size();
    std::string dir = path.substr(start, end - start);
    if (dir.empty()) dir = ".";
    fs::path candidate = fs::path(dir) / name;
    if (is_executable_file(candidate)) return candidate;
    start = end + 1;
  }
  return std::nullopt;
}

// ---------------------------------------------------------------- Child

namespace {
struct ExecImage;
struct SpawnFds;
}  // namespace

struct Child::Impl {
  pid_t pid = -1;
  bool pid_namespace = false;
  int channel = -1;
  int log_read = -1;
  int stop_write = -1;  // tells the drain thread to finish
  int stop_read = -1;
  int pidfd = -1;
  BoundedLog log{64 << 10};
  // Held while bytes move from the pipe to `log`, so that sync_log() and the drain
  // thread never split one chunk between them.
  std::mutex drain_mu;
  std::thread drain;
  std::optional<ExitStatus> status;
  bool timed_out = false;
  // Started by an ExternalStarter: not our child; its status comes on `control`.
  bool external = false;
  int control = -1;
  std::unique_ptr<FrameReader> control_reader;
  std::string launch_note;
  // In interrupt.h's list of groups an interrupt kills, until reaped (or released).
  bool tracked = false;

  void track() {
    track_child_group(pid);
    tracked = true;
  }
  void untrack() {
    if (tracked) untrack_child_group(pid);
    tracked = false;
  }

  // Child::spawn's steps (below it).
  void open_fds(const SpawnOptions& opts, SpawnFds& fds);
  void keep_parent_ends(const SpawnOptions& opts, SpawnFds& fds);
  bool start_external(const SpawnOptions& opts, const std::vector<std::string>& env, SpawnFds& fds);
  void await_exec(const SpawnOptions& opts, SpawnFds& fds, const ExecImage& x);

  ~Impl() {
    untrack();
    if (external) {
      // Signalled only while the control connection holds its pid reserved.
      if (pid > 0 && !status) {
        ::kill(-pid, SIGKILL);
        ::kill(pid, SIGKILL);
      }
      close_fd(control);  // the starter's side reaps it
      stop_drain();
      close_fd(channel);
      return;
    }
    if (pid > 0 && !status) {
      ::kill(-pid, SIGKILL);
      ::kill(pid, SIGKILL);
      int st;
      while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
      }
    }
    if (pid > 0) ::kill(-pid, SIGKILL);
    stop_drain();
    close_fd(channel);
    close_fd(pidfd);
  }

  // The "exit" frame of an external child (or the end of the connection: the
  // starter's side is gone, and the child with it).
  ExitStatus finish_external(const FrameResult& f) {
    ExitStatus s;
    if (f.ok() && f.message.value("type", "") == "exit") {
      s.exited = f.message.value("exited", false);
      s.exit_code = f.message.value("code", -1);
      s.signal = f.message.value("signal", 0);
      s.core_dumped = f.message.value("core", false);
    } else {
      s.signal = SIGKILL;
    }
    s.timed_out = timed_out;
    if (pid > 0) ::kill(-pid, SIGKILL);  // still reserved: the connection is open
    untrack();
    status = s;
    close_fd(control);
    stop_drain();
    return s;
  }

  void stop_drain() {
    if (drain.joinable()) {
      if (stop_write >= 0) {
        char c = 1;
        ssize_t ignored = ::write(stop_write, &c, 1);
        (void)ignored;
      }
      drain.join();
    }
    close_fd(stop_write);
    close_fd(stop_read);
    close_fd(log_read);
  }

  void drain_loop() {
    char buf[16 << 10];
    bool stopping = false;
    for (;;) {
      pollfd p[2] = {{log_read, POLLIN, 0}, {stop_read, POLLIN, 0}};
      int r = ::poll(p, stopping ? 1 : 2, stopping ? 0 : -1);
      if (r < 0) {
        if (errno == EINTR) continue;
        return;
      }
      if (!stopping && (p[1].revents & POLLIN)) {
        // The child is gone: take what is buffered, then stop (a stray
        // grandchild holding the pipe open must not keep us here).
        stopping = true;
        int fl = ::fcntl(log_read, F_GETFL);
        ::fcntl(log_read, F_SETFL, fl | O_NONBLOCK);
        continue;
      }
      if (r == 0 && stopping) return;
      if (p[0].revents & (POLLIN | POLLHUP | POLLERR)) {
        std::lock_guard<std::mutex> lock(drain_mu);
        // sync_log() may have taken the bytes poll() saw; only EOF is left to read then.
        int pending = 0;
        if (!(p[0].revents & (POLLHUP | POLLERR)) && ::ioctl(log_read, FIONREAD, &pending) == 0 &&
            pending == 0)
          continue;
        ssize_t n = ::read(log_read, buf, sizeof buf);
        if (n > 0) {
          log.append(buf, static_cast<size_t>(n));
          continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && stopping) return;
        if (n == 0 || n < 0) return;  // EOF or error
      }
    }
  }

  ExitStatus finish(int wstatus) {
    ExitStatus s;
    if (WIFEXITED(wstatus)) {
      s.exited = true;
      s.exit_code = WEXITSTATUS(wstatus);
    } else if (WIFSIGNALED(wstatus)) {
      s.signal = WTERMSIG(wstatus);
      s.core_dumped = WCOREDUMP(wstatus);
    }
    s.timed_out = timed_out;
    // Whatever the child left behind in its group dies with it.
    ::kill(-pid, SIGKILL);
    untrack();
    status = s;
    stop_drain();
    close_fd(pidfd);
    return s;
  }

  std::optional<ExitStatus> try_reap() {
    if (status) return status;
    if (external) {
      FrameResult f = control_reader->read(Clock::now());
      if (f.status == FrameStatus::Timeout) return std::nullopt;
      return finish_external(f);
    }
    int st;
    for (;;) {
      pid_t r = ::waitpid(pid, &st, WNOHANG);
      if (r == pid) return finish(st);
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) {
        // Reaped elsewhere (e.g. SIGCHLD ignored): report what we know.
        ExitStatus s;
        s.timed_out = timed_out;
        untrack();
        status = s;
        stop_drain();
        return s;
      }
      return std::nullopt;
    }
  }
};

Child::Child() = default;
Child::Child(Child&&) noexcept = default;
Child& Child::operator=(Child&&) noexcept = default;
Child::~Child() = default;

int Child::pid() const { return impl_ ? impl_->pid : -1; }
int Child::pgid() const { return impl_ ? impl_->pid : -1; }
bool Child::pid_namespace() const { return impl_ && impl_->pid_namespace; }
std::string Child::launch() const { return impl_ && impl_->external ? "external" : "exec"; }
std::string Child::launch_note() const { return impl_ ? impl_->launch_note : std::string(); }
int Child::channel_fd() const { return impl_ ? impl_->channel : -1; }
void Child::close_channel() {
  if (impl_) close_fd(impl_->channel);
}
bool Child::running() const { return impl_ && !impl_->status; }

std::optional<ExitStatus> Child::poll() {
  if (!impl_) return std::nullopt;
  return impl_->try_reap();
}

void Child::kill_group(int sig) {
  if (!impl_ || impl_->pid <= 0 || impl_->status) return;
  ::kill(-impl_->pid, sig);
  ::kill(impl_->pid, sig);
}

ExitStatus Child::wait(Deadline deadline) {
  if (!impl_) return {};
  if (auto s = impl_->try_reap()) return *s;
  if (impl_->external) {
    FrameResult f = impl_->control_reader->read(deadline);
    if (f.status != FrameStatus::Timeout) return impl_->finish_external(f);
    impl_->timed_out = true;
    ::kill(-impl_->pid, SIGKILL);
    ::kill(impl_->pid, SIGKILL);
    // Its starter reports the end of what was just killed.
    return impl_->finish_external(impl_->control_reader->read(deadline_after(std::chrono::seconds(10))));
  }
  auto sleep_ms = std::chrono::milliseconds(1);
  for (;;) {
    if (auto s = impl_->try_reap()) return *s;
    auto now = Clock::now();
    if (now >= deadline) break;
    auto left = deadline - now;
    if (impl_->pidfd >= 0) {
      int ms = deadline == kNoDeadline
                   ? -1
                   : static_cast<int>(std::min<int64_t>(
                         std::chrono::duration_cast<std::chrono::milliseconds>(left).count() + 1,
                         1 << 30));
      pollfd p{impl_->pidfd, POLLIN, 0};
      int r = ::poll(&p, 1, ms);
      if (r < 0 && errno != EINTR) close_fd(impl_->pidfd);  // fall back to sleeping
    } else {
      auto nap = std::min<Clock::duration>(sleep_ms, left);
      std::this_thread::sleep_for(nap);
      sleep_ms = std::min(sleep_ms * 2, std::chrono::milliseconds(50));
    }
  }
  impl_->timed_out = true;
  ::kill(-impl_->pid, SIGKILL);
  ::kill(impl_->pid, SIGKILL);
  int st;
  for (;;) {
    pid_t r = ::waitpid(impl_->pid, &st, 0);
    if (r == impl_->pid) return impl_->finish(st);
    if (r < 0 && errno == EINTR) continue;
    ExitStatus s;
    s.timed_out = true;
    impl_->untrack();
    impl_->status = s;
    impl_->stop_drain();
    return s;
  }
}

std::string Child::log() const { return impl_ ? impl_->log.text() : std::string(); }
void Child::sync_log() {
  if (!impl_ || impl_->log_read < 0) return;
  std::lock_guard<std::mutex> lock(impl_->drain_mu);
  char buf[16 << 10];
  for (;;) {
    int pending = 0;
    if (::ioctl(impl_->log_read, FIONREAD, &pending) != 0 || pending <= 0) return;
    // Bytes are waiting and nobody else reads while we hold the lock: no blocking.
    ssize_t n = ::read(impl_->log_read, buf, std::min(sizeof buf, static_cast<size_t>(pending)));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    impl_->log.append(buf, static_cast<size_t>(n));
  }
}

std::string Child::log_since(uint64_t offset) const {
  return impl_ ? impl_->log.text_since(offset) : std::string();
}
std::optional<uint64_t> Child::log_offset_after(uint64_t from, std::string_view needle) const {
  return impl_ ? impl_->log.offset_after(from, needle) : std::nullopt;
}
uint64_t Child::log_bytes() const { return impl_ ? impl_->log.total_bytes() : 0; }

std::vector<std::string> child_environment(const SpawnOptions& opts) {
  std::vector<std::string> env = opts.env ? *opts.env : environment_list();
  for (const auto& [k, v] : opts.env_set) env_put(env, k, v);
  if (opts.channel) env_put(env, "SOLBENCH_CHANNEL_FD", std::to_string(opts.channel_fd));
  return env;
}

namespace {

// What execve needs, made before fork: after fork only async-signal-safe calls
// are allowed (the parent may have other threads).
struct ExecImage {
  std::vector<std::string> env;
  std::string program;
  std::vector<char*> argv, envp;  // into opts.argv and env
  std::string cwd;
};

ExecImage prepare_exec(const SpawnOptions& opts) {
  ExecImage x;
  x.env = child_environment(opts);
  const std::string path_value = environment_value(x.env, "PATH");
  auto program = find_program(opts.argv[0], path_value.empty() ? nullptr : path_value.c_str());
  if (!program)
    throw SpawnError("cannot execute " + opts.argv[0] + ": program not found or not executable",
                     ENOENT);
  x.program = program->string();
  for (const auto& a : opts.argv) x.argv.push_back(const_cast<char*>(a.c_str()));
  x.argv.push_back(nullptr);
  for (const auto& e : x.env) x.envp.push_back(const_cast<char*>(e.c_str()));
  x.envp.push_back(nullptr);
  x.cwd = opts.cwd.string();
  return x;
}

// The descriptors a spawn opens, all close-on-exec in the parent: what the child
// gets as stdin and stdout/stderr, the exec-error pipe, the channel's socketpair.
struct SpawnFds {
  int devnull = -1;
  int out_child = -1;
  int err_pipe[2] = {-1, -1};
  int chan[2] = {-1, -1};

  void close_all() {
    close_fd(devnull);
    close_fd(out_child);
    close_fd(err_pipe[0]);
    close_fd(err_pipe[1]);
    close_fd(chan[0]);
    close_fd(chan[1]);
  }
  // Closes everything and throws `what` with errno's message.
  [[noreturn]] void fail(const std::string& what) {
    int e = errno;
    close_all();
    throw SpawnError(what + ": " + std::strerror(e), e);
  }
};

// Starts the child: clone() with CLONE_NEWPID and no new stack behaves like fork()
// (the child runs on a copy of this stack) but puts the child first in a new
// namespace; fork() where that is not asked for or refused. -1 when both fail.
pid_t fork_child(const SpawnOptions& opts, bool* in_new_pidns) {
  *in_new_pidns = false;
  pid_t pid = -1;
  if (opts.new_pid_namespace) {
    pid = static_cast<pid_t>(::syscall(SYS_clone, CLONE_NEWPID | SIGCHLD, nullptr, nullptr,
                                       nullptr, nullptr));
    *in_new_pidns = pid >= 0;
  }
  if (pid < 0) pid = ::fork();
  return pid;
}

// ---- the child's side, between fork and exec: async-signal-safe calls only ----

// Reports the failed stage and errno through the exec-error pipe, and exits.
[[noreturn]] void die_in_child(int err_fd, int stage) {
  int payload[2] = {stage, errno};
  ssize_t ignored = ::write(err_fd, payload, sizeof payload);
  (void)ignored;
  ::_exit(127);
}

// stdin from /dev/null, stdout and stderr to the output, the channel at its fd;
// every other descriptor closed except the exec-error pipe (close-on-exec anyway).
void redirect_child_fds(const SpawnOptions& opts, SpawnFds& fds) {
  const int highest_target = opts.channel ? opts.channel_fd : 2;
  // Move every source above the targets so dup2 cannot clobber one of them.
  auto lift = [&](int& fd) {
    if (fd >= 0 && fd <= highest_target) {
      int n = ::fcntl(fd, F_DUPFD_CLOEXEC, highest_target + 1);
      if (n < 0) die_in_child(fds.err_pipe[1], 2);
      fd = n;
    }
  };
  lift(fds.devnull);
  lift(fds.out_child);
  lift(fds.err_pipe[1]);
  if (opts.channel) lift(fds.chan[1]);
  if (::dup2(fds.devnull, 0) < 0) die_in_child(fds.err_pipe[1], 2);
  if (fds.out_child >= 0) {
    if (::dup2(fds.out_child, 1) < 0 || ::dup2(fds.out_child, 2) < 0) die_in_child(fds.err_pipe[1], 2);
  }
  if (opts.channel && ::dup2(fds.chan[1], opts.channel_fd) < 0) die_in_child(fds.err_pipe[1], 2);
  const unsigned lo = static_cast<unsigned>(highest_target + 1);
  const unsigned keep = static_cast<unsigned>(fds.err_pipe[1]);
#ifdef SYS_close_range
  if (keep > lo) ::syscall(SYS_close_range, lo, keep - 1, 0);
  if (::syscall(SYS_close_range, std::max(lo, keep + 1), ~0U, 0) < 0)
#endif
  {
    for (unsigned fd = lo; fd < 65536; ++fd)
      if (fd != keep) ::close(static_cast<int>(fd));
  }
}

// The child after fork: its own process group (or session), default signals,
// redirected descriptors, no core dumps, its folder, then the program.
[[noreturn]] void exec_in_child(const SpawnOptions& opts, SpawnFds& fds, const ExecImage& x,
                                pid_t parent, bool in_new_pidns) {
  if (opts.die_with_parent) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    // In a new PID namespace the parent is outside it: getppid() reads 0.
    if (!in_new_pidns && ::getppid() != parent) ::_exit(127);
  }
  if (opts.new_session ? ::setsid() < 0 : ::setpgid(0, 0) < 0) die_in_child(fds.err_pipe[1], 1);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig == SIGKILL || sig == SIGSTOP) continue;
    ::signal(sig, SIG_DFL);
  }
  redirect_child_fds(opts, fds);
  if (opts.no_core_dumps) {
    struct rlimit zero = {0, 0};
    ::setrlimit(RLIMIT_CORE, &zero);
  }
  if (!x.cwd.empty() && ::chdir(x.cwd.c_str()) < 0) die_in_child(fds.err_pipe[1], 3);
  ::execve(x.program.c_str(), x.argv.data(), x.envp.data());
  die_in_child(fds.err_pipe[1], 4);
}

}  // namespace

// Opens the child's output (and, capturing, the log and stop pipes) and the
// exec-error pipe and channel of `fds`.
void Child::Impl::open_fds(const SpawnOptions& opts, SpawnFds& fds) {
  fds.devnull = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  if (fds.devnull < 0) throw SpawnError(std::string("open /dev/null: ") + std::strerror(errno), errno);
  switch (opts.output) {
    case OutputMode::Capture: {
      int p[2];
      if (::pipe2(p, O_CLOEXEC) < 0) fds.fail("pipe");
      log_read = p[0];
      fds.out_child = p[1];
      int s[2];
      if (::pipe2(s, O_CLOEXEC) < 0) fds.fail("pipe");
      stop_read = s[0];
      stop_write = s[1];
      break;
    }
    case OutputMode::File:
      fds.out_child = ::open(opts.output_file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
      if (fds.out_child < 0) fds.fail("open " + opts.output_file.string());
      break;
    case OutputMode::Inherit:
      break;
    case OutputMode::Discard:
      fds.out_child = ::fcntl(fds.devnull, F_DUPFD_CLOEXEC, 3);
      break;
  }
  if (::pipe2(fds.err_pipe, O_CLOEXEC) < 0) fds.fail("pipe");
  if (opts.channel && ::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds.chan) < 0)
    fds.fail("socketpair");
}

// The parent's side once the child exists: its ends closed, the channel's kept.
void Child::Impl::keep_parent_ends(const SpawnOptions& opts, SpawnFds& fds) {
  close_fd(fds.err_pipe[1]);
  close_fd(fds.out_child);
  close_fd(fds.devnull);
  if (opts.channel) {
    channel = fds.chan[0];
    fds.chan[0] = -1;
    close_fd(fds.chan[1]);
  }
}

// Asks opts.starter to start the child; false (and launch_note says why) when it
// declines, and the caller forks and execs as without one.
bool Child::Impl::start_external(const SpawnOptions& opts, const std::vector<std::string>& env,
                                 SpawnFds& fds) {
  try {
    ExternalStart x =
        opts.starter(env, fds.out_child >= 0 ? fds.out_child : 1, opts.channel ? fds.chan[1] : -1);
    if (x.pid <= 0 || x.control_fd < 0) throw std::runtime_error("the starter returned no child");
    external = true;
    pid = x.pid;
    pid_namespace = x.pid_namespace;
    control = x.control_fd;
    control_reader = std::make_unique<FrameReader>(x.control_fd);
    close_fd(fds.err_pipe[0]);
    keep_parent_ends(opts, fds);
    return true;
  } catch (const std::exception& e) {
    launch_note = e.what();
    return false;
  }
}

// The parent after fork: waits for exec to happen (the exec-error pipe closes) or
// to fail (the child reports the stage and errno: reaped, and a SpawnError thrown).
void Child::Impl::await_exec(const SpawnOptions& opts, SpawnFds& fds, const ExecImage& x) {
  if (!opts.new_session) ::setpgid(pid, pid);  // closes the race with the child's own call
  keep_parent_ends(opts, fds);
  int payload[2] = {0, 0};
  ssize_t got;
  do {
    got = ::read(fds.err_pipe[0], payload, sizeof payload);
  } while (got < 0 && errno == EINTR);
  close_fd(fds.err_pipe[0]);
  if (got == static_cast<ssize_t>(sizeof payload)) {
    int st;
    while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    status = ExitStatus{};  // nothing to kill
    pid = -1;
    static const char* stages[] = {"", "setpgid/setsid", "redirect", "chdir", "execve"};
    std::string what = payload[0] == 3 ? "chdir " + x.cwd : stages[std::clamp(payload[0], 0, 4)];
    throw SpawnError("cannot execute " + x.program + " (" + what + "): " + std::strerror(payload[1]),
                     payload[1]);
  }
#ifdef SYS_pidfd_open
  pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (pidfd >= 0) ::fcntl(pidfd, F_SETFD, FD_CLOEXEC);
#endif
}

Child Child::spawn(const SpawnOptions& opts) {
  if (opts.argv.empty()) throw SpawnError("spawn: empty argv");
  if (opts.channel && opts.channel_fd < 3) throw SpawnError("spawn: channel_fd must be >= 3");
  const ExecImage x = prepare_exec(opts);
  auto impl = std::make_unique<Impl>();
  impl->log = BoundedLog(opts.log_limit_bytes);
  SpawnFds fds;
  impl->open_fds(opts, fds);
  // The Child, with its log drained from now on.
  auto started = [&] {
    impl->track();
    if (opts.output == OutputMode::Capture) {
      Impl* raw = impl.get();
      impl->drain = std::thread([raw] { raw->drain_loop(); });
    }
    Child c;
    c.impl_ = std::move(impl);
    return c;
  };
  if (opts.starter && impl->start_external(opts, x.env, fds)) return started();

  const pid_t parent = ::getpid();
  bool in_new_pidns = false;
  const pid_t pid = fork_child(opts, &in_new_pidns);
  if (pid < 0) fds.fail("fork");
  if (pid == 0) exec_in_child(opts, fds, x, parent, in_new_pidns);
  impl->pid = pid;
  impl->pid_namespace = in_new_pidns;
  impl->await_exec(opts, fds, x);
  return started();
}

// ---------------------------------------------------------------- run_command

CommandResult run_command(const std::vector<std::string>& argv, const RunOptions& opts) {
  CommandResult result;
  SpawnOptions so;
  so.argv = argv;
  so.cwd = opts.cwd;
  so.env = opts.env;
  so.env_set = opts.env_set;
  so.output = OutputMode::Capture;
  so.log_limit_bytes = opts.log_limit_bytes;
  const auto start = Clock::now();
  try {
    Child child = Child::spawn(so);
    result.status = child.wait(deadline_after(opts.timeout));
    result.output = child.log();
  } catch (const SpawnError& e) {
    result.spawn_error = e.what();
  }
  result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return result;
}

}  // namespace solbench::harness
