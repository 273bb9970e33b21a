// The worker process (`solbench __worker`): receives one plan over the channel,
// applies the sandbox to itself, starts Python, loads the reference and the
// solution, evaluates the plan's workloads in order and streams frames back
// (protocol.h). The parent kills it on a timeout and replaces it after a crash.
#pragma once

#include "core/device.h"
#include "core/json.h"
#include "harness/worker/sandbox.h"

namespace solbench::harness {

// A worker that entered its sandbox and started its runtime before it had a plan
// (a spare, zygote.h): what it applied, which the plan must match exactly.
struct PreparedWorker {
  Device device;
  json sandbox;  // WorkerPlan::sandbox without jit_cache (worker_policy.h)
  json sandbox_report;
  int64_t sandboxed_t_ns = 0;
  // The workload (uuid) whose inputs, reference and check the spare's warm-up ran
  // (WorkerSession::warm_spare, all three steps); "" where it ran fewer.
  std::string warmed_reference_of;
};

// Runs the worker on the channel `fd` and returns its exit code; normally it ends
// the process itself (_exit) so that no Python or solution teardown runs.
// `prepared`: a spare's sandbox and runtime are already in place.
int worker_main(int channel_fd, const PreparedWorker* prepared = nullptr);

// Applies a plan's sandbox (WorkerPlan::sandbox) to this process, for `device`,
// with the runtime environment it implies (caches, TMPDIR, the programs Python may
// run) and the private mounts (sandbox.h enter_private_mounts: /proc, a tmpfs of
// the plan's limits.tmp_bytes for $TMPDIR and /dev/shm); the caller must still be
// single-threaded. Returns the sandbox report;
// throws std::runtime_error when it cannot be applied.
json enter_worker_sandbox(const json& sandbox, const Device& device);

// SandboxOptions with the plan's overrides applied ({"seccomp": false, ...};
// {"enabled": false} turns everything off).
SandboxOptions sandbox_options_from(const json& overrides);

}  // namespace solbench::harness
