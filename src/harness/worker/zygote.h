// The warm worker template ("zygote"): a process that has started the embedded
// Python and imported torch (and, on request, the compiler stack), and that forks
// one fresh worker per request instead of every worker paying that start again.
//
// What a worker inherits is the template's state, and the template never runs
// solution or reference code and never initialises CUDA: every worker is still a
// new process that never saw another solution, applies its sandbox to itself
// after the fork (it is single-threaded there) and initialises CUDA itself.
//
//   requester (eval)              zygote                      keeper          worker
//   connect ------------------->  accept, check the peer
//   fds (log, channel) + request  import what it asks for
//                                 fork ------------------->   [new PID ns]
//                                                             fork ---------> PID 1: worker_main
//   <------------------------------------------------------- "started" {pid}
//   ... the channel, as for an exec'd worker ...
//   <------------------------------------------------------- "exit" {status}
//   close ------------------------------------------------->  reap, exit
//
// The keeper (one per worker, outside the sandbox) is what a spawned worker's
// parent is for an exec'd one: it relays the exit status, keeps the worker's pid
// from being reused until the requester has it, and SIGKILLs the worker (process 1
// of its namespace: everything it started dies too) when the requester goes away.
//
// The socket has an abstract name (no file), which a worker cannot reach from its
// private network namespace; the zygote also refuses any peer that is one of its
// own descendants and any other user. A request whose import-time environment
// (PYTHONPATH, LD_LIBRARY_PATH, ...) or executable differs from the zygote's is
// refused, and the requester falls back to exec'ing a worker.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "core/json.h"
#include "harness/framing.h"
#include "harness/process.h"

namespace solbench::harness {

// `solbench __zygote --address NAME`: serves until SIGTERM/SIGKILL, until its
// parent dies, or (exit_on_stdin_eof) until its standard input reaches end of file
// (the Python module holds a pipe to it). Returns the process's exit code.
int zygote_main(const std::string& address, bool exit_on_stdin_eof);

// Raised by launch_from_zygote when no worker was started; the caller starts one
// the ordinary way.
class ZygoteUnavailable : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct ZygoteLaunch {
  int pid = -1;               // the worker, as this process sees it (its group leader)
  bool pid_namespace = false; // process 1 of its own PID namespace
  int control_fd = -1;        // to the keeper: the "exit" frame comes here; close when done
  bool spare = false;         // a spare made ahead (below); it runs in `cwd`
  std::string cwd;            // a spare's scratch folder, the requester's from now on
};

// Asks the zygote at `address` for a worker. `request` holds cwd, env (the full
// environment, "NAME=VALUE" strings), channel_fd, new_pid_namespace, no_core_dumps
// and preload (module groups the worker will want: "compile"); `out_fd` becomes the
// worker's stdout and stderr, `channel_fd` its channel (both are duplicated into
// the worker; the caller keeps and closes its own). Waits until `deadline` for the
// zygote (it may still be importing torch).
ZygoteLaunch launch_from_zygote(const std::string& address, json request, int out_fd,
                                int channel_fd, Deadline deadline);

// Child::spawn's starter (SpawnOptions::starter) that asks the zygote at `address`
// for the child of `request` (launch_from_zygote, with the child's environment and
// descriptors, waiting up to `limit`); where the zygote hands over a spare, its
// scratch folder goes to `*spare_cwd` when given.
ExternalStarter zygote_starter(std::string address, json request, std::chrono::duration<double> limit,
                               std::shared_ptr<std::string> spare_cwd = nullptr);

// Spares. A request with "standby" ({device, sandbox, timing_lock}: what the worker
// does before its plan, which names nothing of a solution) and "staging_base" may
// get a spare of the same recipe (standby, environment, namespaces, staging base)
// that the zygote made ahead: its worker already entered that sandbox in its own
// scratch folder (ZygoteLaunch::cwd, which the requester adopts) and started the
// runtime (the CUDA context), so the requester does not wait for either.
// prepare_spare asks for such a spare (at most one per recipe, the four most recent
// recipes); an evaluation asks once its timed work is done. True when the zygote
// took the request. A spare has run nothing but solbench's own code, serves one
// worker's work and dies with the zygote (docs/sandbox.md, "Spares").
bool prepare_spare(const std::string& address, json request, Deadline deadline);
// A request's recipe, as the zygote matches spares by it: what the worker does
// before it has a plan (standby), its environment, its namespaces, its staging
// folder; not what the zygote imports for itself (preload), the warm-up hint or
// the count.
std::string spare_recipe_key(const json& request);

// Entry points a zygote may fork besides the worker (a request's "entry"; none:
// the worker): processes that serve frames on their channel, such as `sol`'s
// tracer (cmd_sol.cc). Every solbench process registers the same ones at its
// start, the zygote included; the function gets the channel's descriptor and
// returns the exit code. A request naming no registered entry is refused.
using ZygoteEntry = int (*)(int channel_fd);
void register_zygote_entry(const std::string& name, ZygoteEntry entry);

// The zygote this process's workers fork from: $SOLBENCH_ZYGOTE when it names one
// (an address; "0" or "off": none), else one this process starts on first use, as
// its own child (it dies with this process). "" when there is none.
std::string process_zygote_address();
// The same, but never starting one: the address where this process has started
// its zygote or $SOLBENCH_ZYGOTE names one, else "" (`sol`'s tracers fork from a
// zygote only where an evaluation, `run` or Python already keeps one).
std::string existing_zygote_address();
// Starts this process's zygote now (a no-op when $SOLBENCH_ZYGOTE is set), so that
// its imports overlap with other work (the build, T_SOL). `program` is the solbench
// executable whose workers it will fork (default: this one; `run` passes the one
// it starts its evaluations with, which is another when a test runs it in-process).
// Call it from a thread that lives as long as the zygote is wanted (it dies with it).
void start_process_zygote(const std::filesystem::path& program = {});
// The environment that points child `solbench` processes at this process's
// zygote ("SOLBENCH_ZYGOTE", address); empty when none was started.
std::vector<std::pair<std::string, std::string>> zygote_environment();

}  // namespace solbench::harness
