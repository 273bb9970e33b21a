#include "harness/worker.h"

#include <optional>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <exception>

#include "harness/framing.h"
#include "harness/gpu/gpu_errors.h"
#include "harness/protocol.h"
#include "harness/worker_session.h"

namespace solbench::harness {

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
  return s;
}

int worker_main(int fd) {
  auto send = [fd](const json& frame) {
    if (!write_frame(fd, frame, deadline_after(kFrameWriteLimit)).ok()) quit(3);  // parent gone
  };
  send({{"type", "hello"}, {"t_ns", monotonic_ns()}, {"pid", ::getpid()}});

  FrameReader reader(fd);
  FrameResult first = reader.read(deadline_after(std::chrono::seconds(60)));
  if (!first.ok()) {
    std::fprintf(stderr, "solbench worker: no plan received (%s)\n", first.error.c_str());
    quit(2);
  }
  WorkerPlan plan;
  try {
    plan = WorkerPlan::from_json(first.message);
  } catch (const std::exception& e) {
    send({{"type", "fatal"}, {"t_ns", monotonic_ns()}, {"message", e.what()}});
    quit(2);
  }

  // Still single-threaded here: the sandbox must come before Python starts.
  json sandbox_report;
  try {
    SandboxOptions opts = sandbox_options_from(plan.sandbox);
    // The CUDA driver's cuInit connects, binds and listens on AF_UNIX sockets (see
    // SandboxOptions::allow_unix_ipc and docs/sandbox.md).
    if (plan.device.rfind("cuda", 0) == 0) opts.allow_unix_ipc = true;
    sandbox_report = apply_worker_sandbox(opts).to_json();
  } catch (const std::exception& e) {
    send({{"type", "fatal"}, {"t_ns", monotonic_ns()},
          {"message", std::string("the sandbox could not be applied: ") + e.what()}});
    quit(2);
  }
  const int64_t sandboxed_ns = monotonic_ns();

  WorkerSession session(plan, send);
  json started;
  try {
    started = session.start();
  } catch (const LoadError& e) {
    send({{"type", "load_failed"}, {"t_ns", monotonic_ns()}, {"message", e.what()}});
    quit(0);
  } catch (const std::exception& e) {
    send({{"type", "fatal"}, {"t_ns", monotonic_ns()}, {"message", e.what()}});
    quit(2);
  }
  send({{"type", "ready"},
        {"t_ns", monotonic_ns()},
        {"sandboxed_t_ns", sandboxed_ns},
        {"env", started["env"]},
        {"phases_ms", started["phases_ms"]},
        {"sandbox", sandbox_report}});

  for (size_t i = 0; i < plan.workloads.size(); ++i) {
    std::fflush(stdout);
    std::fputs(workload_log_marker(i).c_str(), stderr);
    std::fflush(stderr);
    send({{"type", "begin"}, {"t_ns", monotonic_ns()}, {"index", i}});
    WorkloadOutcome o = session.evaluate(i);
    // A sticky CUDA error (illegal address, launch failure) leaves the context
    // unusable: fail this workload and let a fresh worker take the rest.
    std::optional<solbench::gpu::CudaErrorStatus> cuda_error;
    if (plan.device.rfind("cuda", 0) == 0) {
      solbench::gpu::CudaErrorStatus e = solbench::gpu::poll_cuda_error(true);
      if (e.sticky) {
        cuda_error = e;
        o.status = Status::RuntimeError;
        o.correctness.reset();
        o.timing.reset();
        o.reference_timing.reset();
        o.log += (o.log.empty() ? "" : "\n") + ("sticky CUDA error " + e.name + ": " + e.message +
                                                 " (the worker restarts for the next workload)");
        o.extra["cuda_error"] = solbench::gpu::to_json(e);
      }
    }
    std::fflush(stdout);
    std::fflush(stderr);
    send(o.to_json());
    if (cuda_error) {
      send({{"type", "restart"}, {"t_ns", monotonic_ns()}, {"reason", cuda_error->name}});
      quit(0);
    }
  }
  send({{"type", "done"}, {"t_ns", monotonic_ns()}});
  quit(0);
}

}  // namespace solbench::harness
