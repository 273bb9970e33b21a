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
  std::string path = path_env ? path_env : (std::getenv("PATH") ? std::getenv("PATH") : "");
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

  ~Impl() {
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

Child Child::spawn(const SpawnOptions& opts) {
  if (opts.argv.empty()) throw SpawnError("spawn: empty argv");
  if (opts.channel && opts.channel_fd < 3) throw SpawnError("spawn: channel_fd must be >= 3");

  // Everything the child needs is prepared before fork: after fork only
  // async-signal-safe calls are allowed (the parent may have other threads).
  const std::vector<std::string> env = child_environment(opts);

  const std::string path_value = environment_value(env, "PATH");
  auto program = find_program(opts.argv[0], path_value.empty() ? nullptr : path_value.c_str());
  if (!program)
    throw SpawnError("cannot execute " + opts.argv[0] + ": program not found or not executable",
                     ENOENT);
  const std::string program_s = program->string();

  std::vector<char*> argv_c;
  for (const auto& a : opts.argv) argv_c.push_back(const_cast<char*>(a.c_str()));
  argv_c.push_back(nullptr);
  std::vector<char*> env_c;
  for (const auto& e : env) env_c.push_back(const_cast<char*>(e.c_str()));
  env_c.push_back(nullptr);
  const std::string cwd_s = opts.cwd.string();

  auto impl = std::make_unique<Impl>();
  impl->log = BoundedLog(opts.log_limit_bytes);

  // File descriptors: all close-on-exec in the parent.
  int devnull = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  if (devnull < 0) throw SpawnError(std::string("open /dev/null: ") + std::strerror(errno), errno);
  int out_child = -1;
  int err_pipe[2] = {-1, -1};
  int chan[2] = {-1, -1};
  auto cleanup = [&] {
    close_fd(devnull);
    close_fd(out_child);
    close_fd(err_pipe[0]);
    close_fd(err_pipe[1]);
    close_fd(chan[0]);
    close_fd(chan[1]);
  };
  auto fail = [&](const std::string& what) {
    int e = errno;
    cleanup();
    throw SpawnError(what + ": " + std::strerror(e), e);
  };

  switch (opts.output) {
    case OutputMode::Capture: {
      int p[2];
      if (::pipe2(p, O_CLOEXEC) < 0) fail("pipe");
      impl->log_read = p[0];
      out_child = p[1];
      int s[2];
      if (::pipe2(s, O_CLOEXEC) < 0) fail("pipe");
      impl->stop_read = s[0];
      impl->stop_write = s[1];
      break;
    }
    case OutputMode::File:
      out_child = ::open(opts.output_file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
      if (out_child < 0) fail("open " + opts.output_file.string());
      break;
    case OutputMode::Inherit:
      break;
    case OutputMode::Discard:
      out_child = ::fcntl(devnull, F_DUPFD_CLOEXEC, 3);
      break;
  }
  if (::pipe2(err_pipe, O_CLOEXEC) < 0) fail("pipe");
  if (opts.channel && ::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, chan) < 0)
    fail("socketpair");

  // The parent's side once the child exists: its ends closed, the channel's kept.
  auto keep_parent_ends = [&] {
    close_fd(err_pipe[1]);
    close_fd(out_child);
    close_fd(devnull);
    if (opts.channel) {
      impl->channel = chan[0];
      chan[0] = -1;
      close_fd(chan[1]);
    }
  };
  // The Child, with its log drained from now on.
  auto started = [&] {
    if (opts.output == OutputMode::Capture) {
      Impl* raw = impl.get();
      impl->drain = std::thread([raw] { raw->drain_loop(); });
    }
    Child c;
    c.impl_ = std::move(impl);
    return c;
  };
  if (opts.starter) {
    try {
      ExternalStart x = opts.starter(env, out_child >= 0 ? out_child : 1, opts.channel ? chan[1] : -1);
      if (x.pid <= 0 || x.control_fd < 0) throw std::runtime_error("the starter returned no child");
      impl->external = true;
      impl->pid = x.pid;
      impl->pid_namespace = x.pid_namespace;
      impl->control = x.control_fd;
      impl->control_reader = std::make_unique<FrameReader>(x.control_fd);
      close_fd(err_pipe[0]);
      keep_parent_ends();
      return started();
    } catch (const std::exception& e) {
      impl->launch_note = e.what();  // fork and exec below, as without a starter
    }
  }

  const pid_t parent = ::getpid();
  const int highest_target = opts.channel ? opts.channel_fd : 2;
  // clone() with CLONE_NEWPID and no new stack behaves like fork() (the child
  // runs on a copy of this stack) but puts the child first in a new namespace.
  bool in_new_pidns = false;
  pid_t pid = -1;
  if (opts.new_pid_namespace) {
    pid = static_cast<pid_t>(::syscall(SYS_clone, CLONE_NEWPID | SIGCHLD, nullptr, nullptr,
                                       nullptr, nullptr));
    in_new_pidns = pid >= 0;
  }
  if (pid < 0) pid = ::fork();
  if (pid < 0) fail("fork");
  if (pid == 0) {
    // ---- child: async-signal-safe calls only ----
    auto die = [&](int stage) {
      int payload[2] = {stage, errno};
      ssize_t ignored = ::write(err_pipe[1], payload, sizeof payload);
      (void)ignored;
      ::_exit(127);
    };
    if (opts.die_with_parent) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      // In a new PID namespace the parent is outside it: getppid() reads 0.
      if (!in_new_pidns && ::getppid() != parent) ::_exit(127);
    }
    if (opts.new_session ? ::setsid() < 0 : ::setpgid(0, 0) < 0) die(1);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    for (int sig = 1; sig < NSIG; ++sig) {
      if (sig == SIGKILL || sig == SIGSTOP) continue;
      ::signal(sig, SIG_DFL);
    }
    // Move every source above the targets so dup2 cannot clobber one of them.
    auto lift = [&](int& fd) {
      if (fd >= 0 && fd <= highest_target) {
        int n = ::fcntl(fd, F_DUPFD_CLOEXEC, highest_target + 1);
        if (n < 0) die(2);
        fd = n;
      }
    };
    lift(devnull);
    lift(out_child);
    lift(err_pipe[1]);
    if (opts.channel) lift(chan[1]);
    if (::dup2(devnull, 0) < 0) die(2);
    if (out_child >= 0) {
      if (::dup2(out_child, 1) < 0 || ::dup2(out_child, 2) < 0) die(2);
    }
    if (opts.channel && ::dup2(chan[1], opts.channel_fd) < 0) die(2);
    // Close everything else except the exec-error pipe (close-on-exec anyway).
    const unsigned lo = static_cast<unsigned>(highest_target + 1);
    const unsigned keep = static_cast<unsigned>(err_pipe[1]);
#ifdef SYS_close_range
    if (keep > lo) ::syscall(SYS_close_range, lo, keep - 1, 0);
    if (::syscall(SYS_close_range, std::max(lo, keep + 1), ~0U, 0) < 0)
#endif
    {
      for (unsigned fd = lo; fd < 65536; ++fd)
        if (fd != keep) ::close(static_cast<int>(fd));
    }
    if (opts.no_core_dumps) {
      struct rlimit zero = {0, 0};
      ::setrlimit(RLIMIT_CORE, &zero);
    }
    if (!cwd_s.empty() && ::chdir(cwd_s.c_str()) < 0) die(3);
    ::execve(program_s.c_str(), argv_c.data(), env_c.data());
    die(4);
  }

  // ---- parent ----
  impl->pid = pid;
  impl->pid_namespace = in_new_pidns;
  if (!opts.new_session) ::setpgid(pid, pid);  // closes the race with the child's own call
  keep_parent_ends();
  int payload[2] = {0, 0};
  ssize_t got;
  do {
    got = ::read(err_pipe[0], payload, sizeof payload);
  } while (got < 0 && errno == EINTR);
  close_fd(err_pipe[0]);
  if (got == static_cast<ssize_t>(sizeof payload)) {
    int st;
    while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    impl->status = ExitStatus{};  // nothing to kill
    impl->pid = -1;
    static const char* stages[] = {"", "setpgid/setsid", "redirect", "chdir", "execve"};
    std::string what = payload[0] == 3 ? "chdir " + cwd_s : stages[std::clamp(payload[0], 0, 4)];
    throw SpawnError("cannot execute " + program_s + " (" + what + "): " +
                         std::strerror(payload[1]),
                     payload[1]);
  }
#ifdef SYS_pidfd_open
  impl->pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (impl->pidfd >= 0) ::fcntl(impl->pidfd, F_SETFD, FD_CLOEXEC);
#endif
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
