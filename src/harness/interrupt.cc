#include "harness/interrupt.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <ctime>
#include <cstdio>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "harness/process.h"
#include "harness/staging.h"

namespace solbench::harness {

namespace {

constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP};

std::atomic<int> g_signal{0};           // the first signal (set in the handler)
std::atomic<bool> g_exiting{false};     // the thread is ending the process
std::atomic<bool> g_stopped{false};     // the first signal went to an InterruptStop
int g_pipe[2] = {-1, -1};

std::mutex g_stop_mu;
std::atomic<bool>* g_stop_target = nullptr;  // guarded by g_stop_mu

// Never destroyed: the thread may use it while the process exits.
struct Groups {
  std::mutex mu;
  std::set<int> pids;
};
Groups& groups() {
  static Groups* g = new Groups();
  return *g;
}

void kill_group_now(int pid) {
  ::kill(-pid, SIGKILL);
  ::kill(pid, SIGKILL);
}

// The default action of `sig`, now (or, in a handler, when it returns).
void raise_default(int sig) {
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  ::sigaction(sig, &dfl, nullptr);
  sigset_t one;
  sigemptyset(&one);
  sigaddset(&one, sig);
  ::pthread_sigmask(SIG_UNBLOCK, &one, nullptr);
  ::raise(sig);
}

int64_t now_ms() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);  // async-signal-safe
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

std::atomic<int64_t> g_signal_ms{0};  // when the first signal came

void on_signal(int sig) {
  const int saved = errno;
  int none = 0;
  if (g_signal.compare_exchange_strong(none, sig)) {
    g_signal_ms = now_ms();
    const char c = static_cast<char>(sig);
    const ssize_t ignored = ::write(g_pipe[1], &c, 1);
    (void)ignored;
  } else if (sig != none || now_ms() - g_signal_ms.load() > 1000) {
    // The second one ends the process at once; the same signal again within a
    // second is the first one twice (a sender that signals the process and its
    // group, a double tap), not a second request.
    raise_default(sig);
  }
  errno = saved;
}

void say(const std::string& line) {
  // write(2), not stdio: the main thread may hold stderr's lock.
  const std::string text = (::isatty(2) ? "\n" : "") + line + "\n";
  const ssize_t ignored = ::write(2, text.data(), text.size());
  (void)ignored;
}

// Waits (at most `limit`) until the killed processes are gone, so that none of them
// still writes into a folder being removed.
void wait_gone(const std::vector<int>& pids, std::chrono::milliseconds limit) {
  std::vector<pollfd> fds;
#ifdef SYS_pidfd_open
  for (int pid : pids) {
    const int fd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
    if (fd >= 0) fds.push_back({fd, POLLIN, 0});
  }
#endif
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!fds.empty()) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    const int r = ::poll(fds.data(), fds.size(), static_cast<int>(left.count()));
    if (r < 0 && errno != EINTR) break;
    for (size_t i = fds.size(); i-- > 0;)
      if (fds[i].revents) {
        ::close(fds[i].fd);
        fds.erase(fds.begin() + static_cast<long>(i));
      }
  }
  for (const pollfd& p : fds) ::close(p.fd);
}

[[noreturn]] void end_process(int sig) {
  g_exiting = true;
  // Nothing more reaches stdout: what the main thread would still print (workloads
  // failed by the deaths below) is no result.
  if (const int null = ::open("/dev/null", O_WRONLY | O_CLOEXEC); null >= 0) {
    ::dup2(null, 1);
    ::close(null);
  }
  Groups& g = groups();
  g.mu.lock();  // deliberately never unlocked: a child started from now on is killed
  const std::vector<int> pids(g.pids.begin(), g.pids.end());
  for (int pid : pids) kill_group_now(pid);
  wait_gone(pids, std::chrono::seconds(2));
  const size_t removed = remove_registered_scratch_for_exit();
  say("solbench: interrupted by " + signal_name(sig) + "; removed " + std::to_string(removed) +
      " scratch folder(s)");
  raise_default(sig);
  ::_exit(128 + sig);  // not reached
}

void watch() {
  for (;;) {
    char c = 0;
    const ssize_t n = ::read(g_pipe[0], &c, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    const int sig = g_signal.load();
    {
      std::lock_guard<std::mutex> lock(g_stop_mu);
      if (g_stop_target) {
        g_stop_target->store(true);
        g_stopped = true;
        say("solbench: interrupted by " + signal_name(sig) +
            "; stopping (once more to end at once)");
        continue;
      }
    }
    end_process(sig);
  }
}

}  // namespace

void install_interrupt_handling() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (::pipe2(g_pipe, O_CLOEXEC) != 0) return;
    ::fcntl(g_pipe[1], F_SETFL, O_NONBLOCK);
    std::thread(watch).detach();
    for (int sig : kSignals) {
      struct sigaction old {};
      if (::sigaction(sig, nullptr, &old) == 0 && old.sa_handler == SIG_IGN) continue;
      struct sigaction sa {};
      sa.sa_handler = on_signal;
      sigemptyset(&sa.sa_mask);
      for (int s : kSignals) sigaddset(&sa.sa_mask, s);
      sa.sa_flags = SA_RESTART;
      ::sigaction(sig, &sa, nullptr);
    }
  });
}

int interrupt_signal() { return g_signal.load(); }

InterruptStop::InterruptStop(std::atomic<bool>* stop) {
  std::lock_guard<std::mutex> lock(g_stop_mu);
  g_stop_target = stop;
}

InterruptStop::~InterruptStop() {
  std::lock_guard<std::mutex> lock(g_stop_mu);
  g_stop_target = nullptr;
}

void await_interrupt_exit() {
  const int sig = g_signal.load();
  if (sig == 0 || g_stopped.load()) return;
  // The thread ends the process once the scratch is gone; should it not, after a
  // minute, the exit status still says what happened.
  for (int i = 0; i < 600; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (g_stopped.load()) return;
  }
  ::_exit(128 + sig);
}

void track_child_group(int pid) {
  if (pid <= 0) return;
  Groups& g = groups();
  while (!g.mu.try_lock()) {
    if (g_exiting) {  // the ending thread holds the lock for good and may have listed
      kill_group_now(pid);  // the groups already: this one dies here
      g.mu.lock();  // and this thread waits for the end
    }
    std::this_thread::yield();
  }
  std::lock_guard<std::mutex> lock(g.mu, std::adopt_lock);
  g.pids.insert(pid);
}

void untrack_child_group(int pid) {
  if (pid <= 0) return;
  Groups& g = groups();
  std::lock_guard<std::mutex> lock(g.mu);
  g.pids.erase(pid);
}

}  // namespace solbench::harness
