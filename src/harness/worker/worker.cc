#include "harness/worker/worker.h"

#include <dlfcn.h>
#include <limits.h>
#include <malloc.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <functional>
#include <mutex>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <optional>
#include <thread>

#include <pybind11/embed.h>

#include "core/settings.h"
#include "harness/framing.h"
#include "harness/timing/device_lock.h"
#include "harness/timing/gpu/gpu_errors.h"
#include "harness/process.h"
#include "harness/protocol.h"
#include "harness/worker/worker_policy.h"
#include "harness/worker/worker_session.h"

namespace solbench::harness {
namespace py = pybind11;

namespace {

constexpr auto kFrameWriteLimit = std::chrono::seconds(120);

[[noreturn]] void quit(int code) {
  std::fflush(stdout);
  std::fflush(stderr);
  ::_exit(code);
}

}  // namespace

SandboxOptions sandbox_options_from(const json& o) {
  SandboxOptions s;
  if (!o.is_object()) return s;
  if (!o.value("enabled", true)) {
    s.no_core_dumps = true;  // harmless, and keeps crash handling fast
    s.not_dumpable = false;
    s.private_network = false;
    s.drop_capabilities = false;
    s.no_new_privs = false;
    s.seccomp = false;
    s.deny_process_creation = false;
    s.signals_to_self_only = false;
    return s;
  }
  s.no_core_dumps = o.value("no_core_dumps", s.no_core_dumps);
  s.not_dumpable = o.value("not_dumpable", s.not_dumpable);
  s.private_network = o.value("private_network", s.private_network);
  s.drop_capabilities = o.value("drop_capabilities", s.drop_capabilities);
  s.no_new_privs = o.value("no_new_privs", s.no_new_privs);
  s.seccomp = o.value("seccomp", s.seccomp);
  s.deny_process_creation = o.value("deny_process_creation", s.deny_process_creation);
  s.signals_to_self_only = o.value("signals_to_self_only", s.signals_to_self_only);
  s.allow_unix_sockets = o.value("allow_unix_sockets", s.allow_unix_sockets);
  s.require_seccomp = o.value("require_seccomp", s.require_seccomp);
  s.restrict_fs = o.value("restrict_fs", s.restrict_fs);
  auto strings = [&](const char* key) {
    std::vector<std::string> v;
    if (o.contains(key) && o[key].is_array())
      for (const auto& x : o[key])
        if (x.is_string()) v.push_back(x.get<std::string>());
    return v;
  };
  s.fs.writable = strings("writable");
  s.fs.device_files = strings("device_files");
  s.fs.executable = strings("executable");
  return s;
}

namespace {

// The worker's own environment for its runtimes, set before Python starts: the
// plan's compile caches, and $TMPDIR, <scratch>/tmp (its private tmpfs goes there,
// private_mounts).
void set_runtime_environment(const json& sandbox) {
  std::error_code ec;
  const std::filesystem::path cwd = std::filesystem::current_path(ec);
  if (ec) return;
  // The compile caches, lent by the parent into <scratch>/jit (worker_policy.h).
  if (sandbox.is_object() && sandbox.value("jit", "") == "scratch")
    for (const auto& [k, v] : runtime_cache_env(cwd / kScratchJitFolder)) {
      ::setenv(k.c_str(), v.c_str(), 1);
      if (k.find("_DIR") != std::string::npos || k == "CUDA_CACHE_PATH" || k == "XDG_CACHE_HOME")
        std::filesystem::create_directories(v, ec);
    }
  if (sandbox.is_object() && sandbox.contains("env") && sandbox["env"].is_object())
    for (const auto& [k, v] : sandbox["env"].items())
      if (v.is_string()) ::setenv(k.c_str(), v.get<std::string>().c_str(), 1);
  // The programs the sandbox lets the solution run, for the Python side's message
  // (runtime.install_exec_guard); the kernel enforces the same list.
  if (sandbox.is_object() && sandbox.value("restrict_fs", false) && sandbox.contains("executable")) {
    std::string list;
    for (const auto& p : sandbox["executable"])
      if (p.is_string()) list += (list.empty() ? "" : ":") + p.get<std::string>();
    ::setenv("SOLBENCH_EXEC_ALLOW", list.c_str(), 1);
  }
  const std::filesystem::path tmp = cwd / "tmp";
  std::filesystem::create_directories(tmp, ec);
  if (!ec)
    for (const char* var : {"TMPDIR", "TEMP", "TMP"}) ::setenv(var, tmp.c_str(), 1);
}

// The worker's private mounts (sandbox.h enter_private_mounts): as process 1 of its
// own PID namespace (runner_launch.cc) it mounts a /proc of that namespace, so that
// /proc/<getpid()> is itself (the CUDA driver and others read /proc by pid) and the
// host's processes, its parent's command line among them, are out of view; and
// $TMPDIR and /dev/shm go on a tmpfs of the plan's size (limits.tmp_bytes), which
// vanishes with the worker. `proc` says what became of /proc, for the report.
PrivateMountReport private_mounts(const json& sandbox, std::string& proc) {
  PrivateMountOptions o;
  if (::getpid() != 1) {
    proc = "not in a new PID namespace";
  } else if (!settings().worker_proc) {
    proc = "off (SOLBENCH_WORKER_PROC=0)";
  } else {
    o.mount_proc = true;
  }
  if (sandbox.is_object() && sandbox.contains("limits") && sandbox["limits"].is_object())
    o.tmp_bytes = sandbox["limits"].value("tmp_bytes", uint64_t{0});
  // Diagnosis and tests only: "0" none (the fallback: $TMPDIR in the scratch
  // folder, /dev/shm not writable); "userns" through a user namespace.
  const std::string& mode = settings().worker_private_tmp;
  if (mode == "0") o.tmp_bytes = 0;
  o.force_user_namespace = mode == "userns";
  std::error_code ec;
  o.tmp_dir = (std::filesystem::current_path(ec) / "tmp").string();
  PrivateMountReport r = enter_private_mounts(o);
  if (o.mount_proc) proc = r.proc;
  return r;
}

// Triton looks libcuda up by running `ldconfig -p` unless TRITON_LIBCUDA_PATH names
// its folder; the worker knows it from the loader, and saves Triton the process.
void point_triton_at_libcuda() {
  if (settings().triton_libcuda_path) return;
  void* h = ::dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (!h) return;
  char origin[PATH_MAX] = {};
  if (::dlinfo(h, RTLD_DI_ORIGIN, origin) == 0 && origin[0]) ::setenv("TRITON_LIBCUDA_PATH", origin, 1);
  // Kept loaded: CUDA loads it again anyway.
}

// A worker forked from the zygote (zygote.h) finds Python running, with copies of
// the environment taken when the zygote started: they follow the process's.
void adopt_environment_in_python() {
  if (!Py_IsInitialized()) return;
  py::dict env;
  for (const std::string& s : environment_list()) {
    const size_t eq = s.find('=');
    if (eq != std::string::npos && eq > 0) env[py::str(s.substr(0, eq))] = py::str(s.substr(eq + 1));
  }
  py::module_::import("solbench_py.runtime").attr("after_fork")(env);
}

}  // namespace

json enter_worker_sandbox(const json& sandbox, const Device& device) {
  // glibc hands freed memory at the heap's top back to the kernel (trimming) and
  // serves large blocks with fresh mmaps, so whether a call pays page faults for
  // its outputs depended on what the harness allocated between calls: the same
  // code timed 2-9x faster as a solution (sampled outputs kept between calls
  // pinned the heap) than as the reference (L1/006 hyena on the CPU). One fixed
  // policy for every call: keep freed memory, mmap only blocks over 32 MiB.
  ::mallopt(M_MMAP_THRESHOLD, 32 << 20);
  ::mallopt(M_TRIM_THRESHOLD, 1 << 30);

  SandboxOptions opts = sandbox_options_from(sandbox);
  // The CUDA driver's cuInit connects, binds and listens on AF_UNIX sockets (see
  // SandboxOptions::allow_unix_ipc and docs/sandbox.md).
  if (device.is_cuda()) opts.allow_unix_ipc = true;
  // The scratch folder (the working directory) is the worker's own to write.
  if (opts.restrict_fs) opts.fs.writable.push_back(std::filesystem::current_path().string());
  // Diagnosis only: "0" no Landlock, "exec" / "writes" one half of it.
  if (const std::string& mode = settings().sandbox_landlock; !mode.empty()) {
    if (mode == "0") opts.restrict_fs = false;
    if (mode == "exec") opts.fs.restrict_writes = false;
    if (mode == "writes") opts.fs.restrict_exec = false;
  }
  for (const auto& dir : settings().sandbox_writable_extra)  // diagnosis only
    opts.fs.writable.push_back(dir);
  set_runtime_environment(sandbox);
  adopt_environment_in_python();
  std::string proc;
  const PrivateMountReport mounts = private_mounts(sandbox, proc);
  // /dev/shm is writable only where it is the worker's own; without an IPC
  // namespace, System V segments and queues would outlive the worker.
  if (opts.restrict_fs && mounts.shm_private) opts.fs.writable.push_back("/dev/shm");
  if (!mounts.ipc_namespace) opts.deny_sysv_ipc = true;
  // The CUDA driver names its threads through /proc/self/task/<tid>/comm and
  // fails cuInit (304) when it cannot: the worker's own /proc files stay writable
  // (found with tests/gpu/fs_trace_shim.c on the H100).
  if (opts.restrict_fs) {
    std::error_code ec;
    const auto self = std::filesystem::canonical("/proc/self", ec);
    if (!ec) opts.fs.device_files.push_back(self.string());
  }
  json report = apply_worker_sandbox(opts).to_json();
  report["proc"] = proc;
  report["private_tmp"] = mounts.to_json();
  if (device.is_cuda()) point_triton_at_libcuda();
  return report;
}

namespace {

// The worker's end of its channel. Every frame after the plan carries the seal
// the parent gave (the plan's, then each values answer's): held here only, out of
// reach of Python, so a frame that other code in this process writes to the
// channel lacks it (runner_inbox.cc).
class WorkerChannel {
 public:
  explicit WorkerChannel(int fd) : fd_(fd), reader_(fd) {}

  void send(const json& frame) {
    json sealed = frame;
    if (!seal_.empty()) sealed["seal"] = seal_;
    if (!write_frame(fd_, sealed, deadline_after(kFrameWriteLimit)).ok()) quit(3);  // parent gone
  }
  // A frame that ends the worker: the parent fails what is left with `message`.
  [[noreturn]] void fatal(const std::string& message) {
    send(make_frame(FrameType::Fatal, {{"message", message}}));
    quit(2);
  }
  FrameResult read(Deadline deadline) { return reader_.read(deadline); }

  // The plan, the first frame; its seal is the first one.
  json read_plan() {
    FrameResult first = reader_.read(deadline_after(std::chrono::seconds(60)));
    if (!first.ok()) {
      std::fprintf(stderr, "solbench worker: no plan received (%s)\n", first.error.c_str());
      quit(2);
    }
    if (first.message.is_object() && first.message.contains("seal")) {
      seal_ = first.message.value("seal", "");
      first.message.erase("seal");
    }
    return first.message;
  }

  // The seeds of the values, from the parent, when the harness needs them
  // (values.h); nothing else reads the channel while a workload runs.
  json ask(const json& request) {
    send(request);
    // The answer comes within tens of microseconds: look for it a while before
    // sleeping in poll (a wake-up from poll costs as much again on a VM).
    FrameResult reply;
    const auto spin_until = std::chrono::steady_clock::now() + std::chrono::microseconds(300);
    do {
      reply = reader_.read(std::chrono::steady_clock::now());
    } while (reply.status == FrameStatus::Timeout && std::chrono::steady_clock::now() < spin_until);
    if (reply.status == FrameStatus::Timeout)
      reply = reader_.read(deadline_after(std::chrono::seconds(120)));
    if (!reply.ok() || !reply.message.is_object() || !reply.message.contains("seal")) {
      std::fprintf(stderr, "solbench worker: no answer to a values request (%s)\n",
                   reply.error.c_str());
      quit(3);
    }
    seal_ = reply.message.value("seal", "");
    reply.message.erase("seal");
    return reply.message;
  }

 private:
  int fd_;
  std::string seal_;
  FrameReader reader_;
};

WorkerPlan receive_plan(WorkerChannel& ch, const PreparedWorker* prepared) {
  const json message = ch.read_plan();
  try {
    WorkerPlan plan = WorkerPlan::from_json(message);
    // A spare (zygote.h) applied its sandbox before the plan existed: the plan must
    // ask for exactly that one (the parent chose the spare by it).
    if (prepared && (plan.device != prepared->device ||
                     without_jit_cache(plan.sandbox) != prepared->sandbox))
      throw std::runtime_error(
          "this spare worker was prepared for another device or sandbox than the plan's");
    return plan;
  } catch (const std::exception& e) {
    ch.fatal(e.what());
  }
}

// The plan's sandbox (still single-threaded here: before Python starts), or the
// one a spare applied. Returns its report; `sandboxed_ns` is when it was applied.
json sandbox_for(WorkerChannel& ch, const WorkerPlan& plan, const PreparedWorker* prepared,
                 int64_t& sandboxed_ns) {
  if (prepared) {
    json report = prepared->sandbox_report;
    report["spare"] = true;
    sandboxed_ns = prepared->sandboxed_t_ns;
    return report;
  }
  try {
    json report = enter_worker_sandbox(plan.sandbox, plan.device);
    sandboxed_ns = monotonic_ns();
    return report;
  } catch (const std::exception& e) {
    ch.fatal(std::string("the sandbox could not be applied: ") + e.what());
  }
}

json start_session(WorkerChannel& ch, WorkerSession& session) {
  try {
    return session.start();
  } catch (const LoadError& e) {
    ch.send(make_frame(FrameType::LoadFailed, {{"message", e.what()},
                                               {"skip", e.skip()},
                                               {"reward_hack", e.reward_hack()}}));
    quit(0);
  } catch (const std::exception& e) {
    ch.fatal(e.what());
  }
}

// A Judge started ahead of its work (JudgeOptions::work_follows), beside the
// solution's worker: its warm-up runs kernels, so each step holds the GPU's timing
// lock, shared as any untimed step, and never runs during a timed loop; it yields
// to timed loops, too: a step starts only while no timed loop holds the lock or
// waits for it, and the warm-up ends at the first refusal. (Holding the lock for
// the whole warm-up made the solution's first timed loop wait 0.28-0.47 s on the
// H100; each step holding it exclusively made the solution's correctness rounds
// wait 90-135 ms of a warm call on the H200. Creating the context, above, runs no
// kernel and holds nothing.)
void warm_up_ahead(WorkerSession& session, const WorkerPlan& plan, json& started) {
  DeviceLock lock(plan.device.is_cuda() ? plan.timing_lock : std::string());
  const int64_t t = monotonic_ns();
  const int steps = session.warm_up(
      plan.judge.warm_up, [&] { return lock.try_acquire(LockMode::Shared); },
      [&] {
        lock.release(LockMode::Shared);
        // A timed loop waiting in flock gets its turn before the next step asks.
        ::usleep(1000);
      });
  started["phases_ms"]["warm_up_ms"] = static_cast<double>(monotonic_ns() - t) / 1e6;
  started["phases_ms"]["warm_up_steps"] = steps;
}

// A "work" frame to a Judge started ahead; a cancel ends the worker.
WorkOrder work_order(WorkerChannel& ch, const WorkerPlan& plan, const json& frame) {
  WorkOrder order;
  try {
    order = WorkOrder::from_json(frame);
    if (!order.records.empty() && plan.judge.value_secret == 0)
      throw std::runtime_error("malformed work order: records need the plan's value_secret");
  } catch (const std::exception& e) {
    ch.fatal(e.what());
  }
  if (order.cancel) {
    ch.send(make_frame(FrameType::Done));
    quit(0);
  }
  return order;
}

// A Judge started ahead: its work, which the parent sends once the solution's
// worker has ended (no limit here: a closed channel, the parent's end, ends this
// process too). Returns the number of workloads; a cancel ends the worker.
size_t receive_work(WorkerChannel& ch, WorkerSession& session, const WorkerPlan& plan) {
  FrameResult next = ch.read(deadline_after(std::chrono::hours(24 * 365)));
  if (!next.ok()) quit(0);
  WorkOrder order = work_order(ch, plan, next.message);
  const size_t n = order.workloads.size();
  session.add_work(std::move(order.workloads), std::move(order.records));
  return n;
}

// A baseline worker started beside the solution's evaluation (WorkerPlan::
// gpu_after_go): compiles its workloads' shapes until the parent says "go", then
// runs them. A thread of its own waits for that frame, so that a "cancel" (no T_b
// is needed after all) ends the worker at once, in the middle of a compile; the
// worker sends nothing while it compiles, so the thread's "done" or "keep" is the
// only frame. With hand_back the thread answers "go" with how many workloads the
// worker keeps (AheadTally: the compiles done from the first on, and their pace);
// the rest are the parent's again. Returns how many it runs.
size_t compile_until_go(WorkerChannel& ch, WorkerSession& session, const WorkerPlan& plan) {
  const size_t n = plan.workloads.size();
  std::mutex mu;  // the compiles' count and "go", read together by both threads
  bool go = false, compiling = false;
  size_t kept = n;
  AheadTally tally;
  std::chrono::steady_clock::time_point began;
  const auto on_frame = [&](const FrameResult& f) {
    if (!f.ok()) quit(0);  // the parent is gone
    const std::optional<FrameType> type = frame_type(f.message);
    if (type == FrameType::Cancel) {
      ch.send(make_frame(FrameType::Done));
      quit(0);
    }
    if (type != FrameType::Go) ch.fatal("expected \"go\" or \"cancel\" before the workloads");
    std::lock_guard<std::mutex> lock(mu);
    go = true;
    if (!plan.hand_back) return;
    kept = tally.kept(n, compiling);
    ch.send(make_frame(FrameType::Keep, {{"workloads", kept}}));
  };
  // "go" before the first compile (the evaluation was over before this worker was
  // ready): nothing to compile ahead of it.
  if (FrameResult f = ch.read(deadline_after(std::chrono::seconds(0)));
      f.status != FrameStatus::Timeout) {
    on_frame(f);
    return kept;
  }
  std::thread watch([&] { on_frame(ch.read(deadline_after(std::chrono::hours(24 * 365)))); });
  session.compile_ahead(
      [&] {  // before each workload: stop once "go" came
        std::lock_guard<std::mutex> lock(mu);
        if (go) return true;
        compiling = true;
        began = std::chrono::steady_clock::now();
        return false;
      },
      [&](bool ok) {
        std::lock_guard<std::mutex> lock(mu);
        compiling = false;
        tally.add(ok, std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count());
      });
  watch.join();
  return kept;
}

// A sticky CUDA error (illegal address, launch failure) leaves the context
// unusable: the workload fails and a fresh worker takes the rest.
std::optional<solbench::gpu::CudaErrorStatus> sticky_cuda_error(const WorkerPlan& plan,
                                                                WorkloadOutcome& o) {
  if (!plan.device.is_cuda()) return std::nullopt;
  solbench::gpu::CudaErrorStatus e = solbench::gpu::poll_cuda_error(true);
  if (!e.sticky) return std::nullopt;
  // GPU work left running is the solution's reward hack (reported once).
  const bool reported = e.work_left_running && o.status == Status::RewardHack;
  o.status = e.work_left_running ? Status::RewardHack : Status::RuntimeError;
  o.correctness.reset();
  o.timing.reset();
  o.reference_timing.reset();
  if (!reported)
    o.log += (o.log.empty() ? "" : "\n") +
             (e.work_left_running ? e.message
                                  : "sticky CUDA error " + e.name + ": " + e.message +
                                        " (the worker restarts for the next workload)");
  o.extra["cuda_error"] = solbench::gpu::to_json(e);
  return e;
}

// Each workload in order: begin (with what `on_begin` adds), `evaluate(i)`, its
// result; a spoiled worker (a sticky CUDA error, processes left running, hardware
// counters read) asks for a restart and exits.
[[noreturn]] void run_workloads(
    WorkerChannel& ch, WorkerSession& session, const WorkerPlan& plan, size_t workloads,
    const std::function<WorkloadOutcome(size_t)>& evaluate,
    const std::function<void(size_t, json&)>& on_begin = [](size_t, json&) {}) {
  for (size_t i = 0; i < workloads; ++i) {
    std::fflush(stdout);
    std::fputs(workload_log_marker(i).c_str(), stderr);
    std::fflush(stderr);
    json begin = make_frame(FrameType::Begin, {{"index", i}});
    on_begin(i, begin);
    ch.send(begin);
    WorkloadOutcome o = evaluate(i);
    const auto cuda_error = sticky_cuda_error(plan, o);
    std::fflush(stdout);
    std::fflush(stderr);
    ch.send(o.to_json());
    if (cuda_error) {
      ch.send(make_frame(FrameType::Restart, {{"reason", cuda_error->name}}));
      quit(0);
    }
    if (session.processes_left()) {
      ch.send(make_frame(FrameType::Restart, {{"reason", "processes left running"}}));
      quit(0);
    }
    if (i + 1 < workloads && session.counters_read()) {
      ch.send(make_frame(FrameType::Restart,
                         {{"reason", "hardware counters were read here (--profile)"}}));
      quit(0);
    }
  }
  ch.send(make_frame(FrameType::Done));
  quit(0);
}

// A streamed Judge (JudgeOptions::streamed): judges each workload as its "work"
// frame comes, while the Recorder still records the next ones, and holds the
// outcomes until "go" (the Recorder has exited; no more work comes); then times
// T_ref for each in turn and reports each through run_workloads, its begin frame
// saying when its judging began (a restart asked for there, after --profile read
// counters with the reference's, leaves the rest to a fresh Judge). It sends
// nothing before "go": the parent reads its channel only then, and a frame that
// found the channel full would block the worker, perhaps while it holds the GPU's
// timing lock. A sticky CUDA error ends
// the judging: after "go" the worker asks for a restart at once, and a fresh Judge
// takes all its workloads (those judged here were judged in a context that broke).
// A record may come in two parts (RecordPart): its rounds, judged at once, then
// its rest, read in the middle of that judging (or after it, where a round failed
// first); a withdrawn one is taken off again and nothing is held for it.
[[noreturn]] void judge_streamed(WorkerChannel& ch, WorkerSession& session,
                                 const WorkerPlan& plan) {
  std::vector<std::pair<WorkloadOutcome, int64_t>> held;  // and when its judging began
  std::string spoiled;  // the sticky CUDA error's name
  const auto read_rest = [&ch, &plan]() -> std::optional<CallRecord> {
    FrameResult f = ch.read(deadline_after(std::chrono::hours(24 * 365)));
    if (!f.ok()) quit(0);  // the parent is gone
    WorkOrder rest = work_order(ch, plan, f.message);
    if (rest.part != RecordPart::Rest) ch.fatal("expected the rest of a record whose rounds came");
    return std::move(rest.records.front());
  };
  for (;;) {
    FrameResult f = ch.read(deadline_after(std::chrono::hours(24 * 365)));
    if (!f.ok()) quit(0);  // the parent is gone
    if (frame_type(f.message) == FrameType::Go) {
      session.set_reference_known(f.message);
      break;
    }
    WorkOrder order = work_order(ch, plan, f.message);
    if (order.part == RecordPart::Rest) {
      if (!spoiled.empty()) continue;  // the rest of rounds not judged here
      ch.fatal("the rest of a record whose rounds never came");
    }
    const bool rounds_only = order.part == RecordPart::Rounds;
    const size_t n = order.workloads.size();
    const size_t first = session.add_work(std::move(order.workloads), std::move(order.records));
    for (size_t i = first; i < first + n && spoiled.empty(); ++i) {
      const int64_t began = monotonic_ns();
      if (rounds_only) session.expect_rest(i, read_rest);
      WorkloadOutcome o = session.judge_ahead(i);
      if (const auto e = sticky_cuda_error(plan, o)) spoiled = e->name;
      if (rounds_only && !session.settle_rest(i)) continue;  // withdrawn
      held.emplace_back(std::move(o), began);
    }
  }
  if (!spoiled.empty()) {
    ch.send(make_frame(FrameType::Restart, {{"reason", spoiled}}));
    quit(0);
  }
  run_workloads(
      ch, session, plan, held.size(),
      [&](size_t i) { return session.time_owed_reference(i, std::move(held[i].first)); },
      [&](size_t i, json& begin) { begin["judged_t_ns"] = held[i].second; });
}

}  // namespace

int worker_main(int fd, const PreparedWorker* prepared) {
  // The address of the zygote that may have forked us is nothing a worker needs.
  ::unsetenv("SOLBENCH_ZYGOTE");
  WorkerChannel ch(fd);
  ch.send(make_frame(FrameType::Hello, {{"pid", ::getpid()}}));
  const WorkerPlan plan = receive_plan(ch, prepared);
  int64_t sandboxed_ns = 0;
  const json sandbox_report = sandbox_for(ch, plan, prepared, sandboxed_ns);

  WorkerSession session(plan, [&ch](const json& f) { ch.send(f); },
                        [&ch](const json& request) { return ch.ask(request); });
  json started = start_session(ch, session);
  const JudgeOptions& judge = plan.judge;
  // A spare whose warm-up ran this workload's reference has its kernels loaded: a
  // second warm-up would only hold the GPU's lock while the solution's rounds wait
  // for it (98 ms of a warm call's rounds on the H200, docs/speed.md).
  const bool warmed = prepared && !prepared->warmed_reference_of.empty() &&
                      judge.warm_up.is_object() &&
                      judge.warm_up.value("uuid", "") == prepared->warmed_reference_of;
  if (warmed) started["phases_ms"]["warm_up_by_spare"] = 1;
  if (judge.work_follows && !judge.warm_up.is_null() && !warmed) warm_up_ahead(session, plan, started);
  ch.send(make_frame(FrameType::Ready, {{"sandboxed_t_ns", sandboxed_ns},
                                        {"env", started["env"]},
                                        {"phases_ms", started["phases_ms"]},
                                        {"sandbox", sandbox_report}}));
  const size_t kept =
      plan.gpu_after_go ? compile_until_go(ch, session, plan) : plan.workloads.size();
  if (judge.streamed) judge_streamed(ch, session, plan);
  const size_t workloads = judge.work_follows ? receive_work(ch, session, plan) : kept;
  if (judge.timing_after_go)
    session.set_timing_gate([&ch, &session] {
      FrameResult go = ch.read(deadline_after(std::chrono::seconds(120)));
      if (!go.ok() || frame_type(go.message) != FrameType::Go) {
        std::fprintf(stderr, "solbench worker: no \"go\" before timing the reference (%s)\n",
                     go.ok() ? "another frame" : go.error.c_str());
        quit(2);
      }
      session.set_reference_known(go.message);
    });
  run_workloads(ch, session, plan, workloads, [&](size_t i) { return session.evaluate(i); });
}

}  // namespace solbench::harness
