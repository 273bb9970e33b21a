// solbench._native: the C++ half of `import solbench` (docs/python.md).
//
// It runs the `solbench` executable and hands its --json document to Python; it
// never evaluates anything itself. Evaluation stays in the executable's sandboxed
// workers, so no solution and no reference is ever loaded into the caller's
// process, and the executable's embedded interpreter is a process of its own, not
// a second interpreter inside this one.
//
// What is native here, and why:
//   - run(): spawns the executable in a process group of its own, collects its
//     stdout and stderr with the GIL released (other Python threads, e.g. an agent
//     evaluating several candidates at once, keep running), honours a timeout and
//     Ctrl-C by ending that whole group: SIGTERM, on which the executable kills its
//     workers and removes its scratch folders, then SIGKILL after a grace period;
//   - parse_json(): the document is parsed by the same JSON library that wrote it
//     (nlohmann, insertion-ordered) and converted to dicts and lists.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include <nlohmann/json.hpp>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

namespace py = pybind11;

namespace solbench::pyapi {
namespace {

using Clock = std::chrono::steady_clock;

// One pipe end, closed on scope exit.
class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  Fd(const Fd&) = delete;  // one owner per descriptor
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }
  int get() const { return fd_; }
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_;
};

[[noreturn]] void throw_errno(const std::string& what) {
  throw std::system_error(errno, std::generic_category(), what);
}

struct Finished {
  int exit_code = 0;  // the process's exit status; -N when signal N ended it
  std::string out;
  std::string err;
  bool timed_out = false;
};

int exit_code_of(int status) { return WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status); }

// How long an executable asked to end (SIGTERM) may take to kill its workers and
// remove its scratch folders (harness/interrupt.h) before it is killed.
constexpr auto kEndGrace = std::chrono::seconds(5);

// Spawns argv with stdin from /dev/null and stdout/stderr captured. env: the
// child's whole environment ("K=V" each). timeout_s <= 0: no limit.
Finished run_process(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                     double timeout_s) {
  if (argv.empty()) throw std::invalid_argument("run: empty argv");
  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) throw_errno("pipe");
  Fd out_r(out_pipe[0]), out_w(out_pipe[1]);
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) throw_errno("pipe");
  Fd err_r(err_pipe[0]), err_w(err_pipe[1]);

  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, out_w.get(), 1);
  posix_spawn_file_actions_adddup2(&fa, err_w.get(), 2);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  // A group of its own: a timeout or Ctrl-C ends the executable and its workers.
  posix_spawnattr_setpgroup(&attr, 0);
  // Python ignores SIGPIPE; the executable should see the defaults.
  sigset_t defaults;
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGPIPE);
  sigaddset(&defaults, SIGINT);
  sigaddset(&defaults, SIGTERM);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF |
                                      POSIX_SPAWN_SETSIGMASK);

  std::vector<char*> cargv, cenv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  for (const auto& e : env) cenv.push_back(const_cast<char*>(e.c_str()));
  cenv.push_back(nullptr);

  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, argv[0].c_str(), &fa, &attr, cargv.data(), cenv.data());
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    errno = rc;
    throw_errno("cannot start " + argv[0]);
  }
  out_w.reset();
  err_w.reset();

  Finished f;
  const auto deadline = timeout_s > 0
                            ? std::optional(Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                                               std::chrono::duration<double>(timeout_s)))
                            : std::nullopt;
  // A timeout or Ctrl-C in the caller ends the executable's group: SIGTERM first,
  // SIGKILL after kEndGrace. Its output is read meanwhile, so that a full pipe never
  // holds up its cleanup and its last words ("interrupted ...") are kept.
  std::optional<Clock::time_point> kill_at;
  bool caller_interrupted = false;
  auto end_group = [&] {
    ::kill(-pid, SIGTERM);
    kill_at = Clock::now() + kEndGrace;
  };
  bool out_open = true, err_open = true;
  char buf[65536];
  while (out_open || err_open) {
    if (!kill_at) {
      py::gil_scoped_acquire gil;
      if (PyErr_CheckSignals() != 0) {  // KeyboardInterrupt, raised once the group is gone
        caller_interrupted = true;
        end_group();
      }
    }
    if (!kill_at && deadline && Clock::now() >= *deadline) {
      f.timed_out = true;
      end_group();
    }
    if (kill_at && Clock::now() >= *kill_at) break;
    pollfd fds[2] = {{out_r.get(), POLLIN, 0}, {err_r.get(), POLLIN, 0}};
    const int n = ::poll(fds, 2, 100);  // wakes up for signals and the deadline
    if (n < 0 && errno != EINTR) throw_errno("poll");
    for (int i = 0; i < 2 && n > 0; ++i) {
      bool& open = i == 0 ? out_open : err_open;
      if (!open || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t got = ::read(fds[i].fd, buf, sizeof buf);
      if (got > 0)
        (i == 0 ? f.out : f.err).append(buf, static_cast<size_t>(got));
      else if (got == 0 || errno != EINTR)
        open = false;
    }
  }
  int status = 0;
  if (kill_at) {
    // Its output is closed; give it the rest of the grace period to exit.
    pid_t r;
    while ((r = ::waitpid(pid, &status, WNOHANG)) == 0 && Clock::now() < *kill_at) ::usleep(20 * 1000);
    if (r != pid) {
      ::kill(-pid, SIGKILL);
      while ((r = ::waitpid(pid, &status, 0)) < 0 && errno == EINTR) {
      }
    }
    ::kill(-pid, SIGKILL);  // stragglers the executable left behind
    f.exit_code = r == pid ? exit_code_of(status) : -SIGKILL;
    if (caller_interrupted) {
      py::gil_scoped_acquire gil;
      throw py::error_already_set();
    }
    return f;
  }
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) throw_errno("waitpid");
  f.exit_code = exit_code_of(status);
  return f;
}

py::object to_python(const nlohmann::ordered_json& j) {
  using T = nlohmann::ordered_json::value_t;
  switch (j.type()) {
    case T::null: return py::none();
    case T::boolean: return py::bool_(j.get<bool>());
    case T::number_integer: return py::int_(j.get<int64_t>());
    case T::number_unsigned: return py::int_(j.get<uint64_t>());
    case T::number_float: return py::float_(j.get<double>());
    case T::string: return py::str(j.get_ref<const std::string&>());
    case T::array: {
      py::list l;
      for (const auto& e : j) l.append(to_python(e));
      return l;
    }
    case T::object: {
      py::dict d;
      for (const auto& [k, v] : j.items()) d[py::str(k)] = to_python(v);
      return d;
    }
    default: return py::none();  // binary and discarded values never come from the CLI
  }
}

}  // namespace
}  // namespace solbench::pyapi

PYBIND11_MODULE(_native, m) {
  using namespace solbench::pyapi;
  m.doc() = "solbench's native helpers: run the solbench executable, parse its JSON";
#ifdef SOLBENCH_BUILD_EXECUTABLE
  m.attr("build_executable") = SOLBENCH_BUILD_EXECUTABLE;
#else
  m.attr("build_executable") = "";
#endif
  m.def(
      "run",
      [](const std::vector<std::string>& argv, const std::vector<std::string>& env,
         double timeout_s) {
        Finished f;
        {
          py::gil_scoped_release nogil;
          f = run_process(argv, env, timeout_s);
        }
        return py::make_tuple(f.exit_code, py::bytes(f.out), py::bytes(f.err), f.timed_out);
      },
      py::arg("argv"), py::arg("env"), py::arg("timeout_s") = 0.0,
      "Run argv (argv[0] a path) with env; returns (exit_code, stdout, stderr, timed_out). "
      "exit_code is -N when signal N ended the process.");
  m.def(
      "parse_json",
      [](const std::string& text) {
        nlohmann::ordered_json j;
        try {
          j = nlohmann::ordered_json::parse(text);
        } catch (const nlohmann::json::parse_error& e) {
          throw py::value_error(std::string("not a JSON document: ") + e.what());
        }
        return to_python(j);
      },
      py::arg("text"), "Parse one JSON document into dicts, lists and scalars (key order kept)");
}
