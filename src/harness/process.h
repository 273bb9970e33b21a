// Child processes: spawn in a new process group, capture output with a bound,
// wait with a wall-clock deadline, and kill the whole group on expiry or when the
// owner goes away. Used for compilers (run_command) and for workers (spawn with a
// channel).
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "harness/framing.h"  // Clock, Deadline

namespace solbench::harness {

// Raised when a child cannot be started (program missing, exec failed, fork failed).
class SpawnError : public std::runtime_error {
 public:
  explicit SpawnError(const std::string& what, int err = 0)
      : std::runtime_error(what), err_(err) {}
  int error_code() const { return err_; }

 private:
  int err_;
};

// "SIGSEGV", "SIGKILL", ...; "signal N" for unknown numbers.
std::string signal_name(int sig);

struct ExitStatus {
  bool exited = false;    // normal exit; see exit_code
  int exit_code = -1;
  int signal = 0;         // terminating signal when !exited (0 when not terminated)
  bool timed_out = false; // the deadline passed and the group was killed
  bool core_dumped = false;

  bool success() const { return exited && exit_code == 0 && !timed_out; }
  // "exit 0", "exit 3", "killed by SIGSEGV", "timed out after deadline (killed)".
  std::string describe() const;
};

// Bounded capture of a stream: keeps the first `head` bytes and the last `tail`
// bytes, counting what was dropped between them. Thread-safe.
class BoundedLog {
 public:
  explicit BoundedLog(size_t limit_bytes = 64 << 10);
  void append(const char* data, size_t n);
  // Head + "\n[... N bytes omitted ...]\n" + tail when something was dropped.
  std::string text() const;
  // What was captured from byte offset `from` (of the whole stream) on; when part
  // of that range was dropped, an omission marker replaces it.
  std::string text_since(uint64_t from) const;
  uint64_t total_bytes() const;
  // Stream offset just past the first `needle` at or after `from`, among the bytes
  // still kept; nullopt when it is not there.
  std::optional<uint64_t> offset_after(uint64_t from, std::string_view needle) const;

 private:
  struct State;
  std::shared_ptr<State> s_;
};

enum class OutputMode {
  Capture,  // stdout+stderr into a pipe drained by a thread into a BoundedLog
  File,     // stdout+stderr appended to `output_file` (unbounded: trusted children only)
  Inherit,  // the parent's stdout/stderr
  Discard,  // /dev/null
};

// A child started by something other than fork+exec: the worker zygote
// (harness/worker/zygote.h), which forks workers from a process that has already
// imported torch.
struct ExternalStart {
  int pid = -1;                // the child, leader of its own process group
  bool pid_namespace = false;  // process 1 of its own PID namespace
  // Its exit status arrives here as one frame (framing.h) {"type": "exit",
  // "exited", "code" | "signal", "core"}; end of file without one means it was
  // killed. Owned by the Child from then on; closing it releases the child's pid.
  int control_fd = -1;
};
// Gets the child's full environment ("NAME=VALUE"), the descriptor for its stdout
// and stderr and its end of the channel (-1 without one), duplicates what it needs
// and starts the child; throws (any std::exception) to decline.
using ExternalStarter = std::function<ExternalStart(const std::vector<std::string>& env,
                                                    int out_fd, int channel_fd)>;

struct SpawnOptions {
  // argv[0] is the program: a path, or a bare name looked up in PATH (of `env` if
  // given, else of the parent). Use self_exe() to re-execute solbench.
  std::vector<std::string> argv;
  std::filesystem::path cwd;  // empty: inherit
  // Full environment "NAME=VALUE" when set; else the parent's environment.
  std::optional<std::vector<std::string>> env;
  // Added to (or replacing in) the environment above.
  std::vector<std::pair<std::string, std::string>> env_set;

  OutputMode output = OutputMode::Capture;
  size_t log_limit_bytes = 64 << 10;   // Capture: bytes kept (head + tail)
  std::filesystem::path output_file;   // File mode

  // A bidirectional channel (AF_UNIX socketpair): the child's end is at fd
  // `channel_fd` (its number is also in the environment as SOLBENCH_CHANNEL_FD),
  // the parent's end is Child::channel_fd(). Use framing.h on both ends.
  bool channel = false;
  int channel_fd = 3;

  bool no_core_dumps = true;  // RLIMIT_CORE 0 in the child before exec
  bool new_session = false;   // setsid() instead of setpgid(0, 0)
  // Ask the kernel to SIGKILL the child when the spawning thread exits (PDEATHSIG).
  bool die_with_parent = true;
  // Start the child as process 1 of a new PID namespace, so that the kernel kills
  // every process it leaves behind (daemons, setsid escapes included) when it
  // exits. Needs CAP_SYS_ADMIN; where refused the child starts normally and
  // Child::pid_namespace() says so. Inside, the child's getpid() is 1 and signals
  // it sends itself without a handler are ignored (crashes still kill it).
  bool new_pid_namespace = false;
  // When set, the child is started by it instead of by fork+exec of argv (which is
  // still checked and used when it declines: Child::launch_note() then says why).
  // die_with_parent, the working directory and new_pid_namespace are then the
  // starter's to honour.
  ExternalStarter starter;
};

// The environment Child::spawn gives a child for `opts`: SpawnOptions::env (else
// this process's), env_set applied, and SOLBENCH_CHANNEL_FD with a channel.
std::vector<std::string> child_environment(const SpawnOptions& opts);

// A running (or finished) child and its process group. Destruction kills the whole
// group with SIGKILL and reaps the child. Not copyable (one owner kills), movable.
class Child {
 public:
  // Throws SpawnError when the program cannot be executed (the exec error is
  // reported back through a close-on-exec pipe, so this is synchronous).
  static Child spawn(const SpawnOptions& opts);

  Child();
  Child(Child&&) noexcept;
  Child& operator=(Child&&) noexcept;
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  ~Child();

  int pid() const;
  int pgid() const;
  // True when the child runs as process 1 of its own PID namespace.
  bool pid_namespace() const;
  // "external" when SpawnOptions::starter started it, else "exec"; with "exec", why
  // a starter declined ("" when there was none or it did not decline).
  std::string launch() const;
  std::string launch_note() const;
  // Parent's end of the channel (-1 without one). Owned by the Child.
  int channel_fd() const;
  // Closes the parent's end (the child then reads EOF).
  void close_channel();

  // Non-blocking: the exit status once the child has exited (reaped), else nullopt.
  std::optional<ExitStatus> poll();
  // Waits until the child exits or `deadline` passes; on expiry SIGKILLs the whole
  // group and returns with timed_out = true. The group is also SIGKILLed after a
  // normal exit (grandchildren left behind die with it).
  ExitStatus wait(Deadline deadline = kNoDeadline);
  // SIGKILL to the whole group (no reaping; wait() afterwards). Safe to repeat.
  void kill_group(int sig = 9);
  bool running() const;

  // Captured output (OutputMode::Capture); empty otherwise. Complete after wait().
  std::string log() const;
  std::string log_since(uint64_t offset) const;
  uint64_t log_bytes() const;
  std::optional<uint64_t> log_offset_after(uint64_t from, std::string_view needle) const;
  // Moves whatever the child has written so far into the log now, instead of
  // whenever the drain thread gets to it: a message that arrives on the channel
  // after a print then finds the print in log_since().
  void sync_log();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// This process's environment as "NAME=VALUE" strings, and the value of NAME in
// such a list ("" when absent).
std::vector<std::string> environment_list();
std::string environment_value(const std::vector<std::string>& env, std::string_view name);

// The running executable (/proc/self/exe resolved), for re-executing solbench in
// worker mode.
std::filesystem::path self_exe();

// Looks a bare program name up in PATH (`path_env`, default: $PATH); a name with a
// slash is returned as is when executable.
std::optional<std::filesystem::path> find_program(const std::string& name,
                                                  const char* path_env = nullptr);

struct CommandResult {
  ExitStatus status;
  std::string output;        // stdout+stderr, bounded
  double seconds = 0;        // wall time
  std::string spawn_error;   // non-empty when the program could not be started
  bool ok() const { return spawn_error.empty() && status.success(); }
};

struct RunOptions {
  std::filesystem::path cwd;
  std::chrono::duration<double> timeout = std::chrono::hours(24);
  std::optional<std::vector<std::string>> env;
  std::vector<std::pair<std::string, std::string>> env_set;
  size_t log_limit_bytes = 64 << 10;
};

// Runs a command to completion (compilers, `--version` probes) in its own process
// group with stdin from /dev/null; on timeout the group is killed and
// status.timed_out is set. Never throws for a failing program.
CommandResult run_command(const std::vector<std::string>& argv, const RunOptions& opts = {});

}  // namespace solbench::harness
