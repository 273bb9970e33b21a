// The worker process (`solbench __worker`): receives one plan over the channel,
// applies the sandbox to itself, starts Python, loads the reference and the
// solution, evaluates the plan's workloads in order and streams frames back
// (protocol.h). The parent kills it on a timeout and replaces it after a crash.
#pragma once

#include "core/json.h"
#include "harness/worker/sandbox.h"

namespace solbench::harness {

// Runs the worker on the channel `fd` and returns its exit code; normally it ends
// the process itself (_exit) so that no Python or solution teardown runs.
int worker_main(int channel_fd);

// SandboxOptions with the plan's overrides applied ({"seccomp": false, ...};
// {"enabled": false} turns everything off).
SandboxOptions sandbox_options_from(const json& overrides);

}  // namespace solbench::harness
