#include "harness/evaluate.h"

#include <algorithm>

#include "core/settings.h"
#include "core/text.h"
#include "harness/timing/device_lock.h"
#include "harness/timing/gpu/device.h"
#include "harness/timing/memory_shares.h"
#include "harness/worker/worker_policy.h"
#include "harness/worker/zygote.h"

namespace solbench::harness {

namespace {

// A worker's sandbox policy: processes, writes and compile caches by the kind
// of code it loads (worker_policy.h); its caches are keyed by `content`.
json sandbox_for(const HarnessRequest& r, EntryKind kind, const std::string& content) {
  if (r.no_sandbox) return {{"enabled", false}};
  WorkerPolicyRequest pr;
  pr.kind = kind;
  pr.device = r.device;
  pr.content = content;
  return worker_sandbox_plan(pr);
}

// Sampled timed calls re-checked where the code timed is the definition's reference
// (`--reference`) or its compiled form (T_b): a solution's 8 guard against code
// written to compute differently when timed; the reference is the yardstick itself,
// and two calls still catch a timed call that goes wrong (an Inductor graph, a CUDA
// graph's replay) on values the rounds did not see. The checks of 8 were 28 % of a
// `run --reference` worker's time over the public set (docs/run.md, session 50).
constexpr int kTrustedVerifySamples = 2;

WorkerPlan plan_for(const HarnessRequest& r, const WorkerGpu& gpu) {
  WorkerPlan plan;
  plan.definition = r.definition;
  plan.workloads = r.workloads;
  plan.device = gpu.device;
  plan.rounds = std::max(1, r.rounds);
  plan.seed = r.seed;
  plan.timing = r.timing;
  plan.timer_options = r.timer_options;
  plan.timing_lock = gpu_timing_lock_path(r.device);
  const std::string definition = r.definition.dump();
  if (r.role == Role::Baseline) {
    plan.solution_name = r.definition.value("name", "") + "/baseline";
    plan.role = WorkerRole::Baseline;
    plan.entry = EntryPoint::reference();
    plan.time_solution = r.timed;  // the compiled reference, timed as solutions are
    plan.time_reference = false;   // the eager reference only checks its outputs
    plan.verify_samples = kTrustedVerifySamples;
    plan.gpu_after_go = r.go.valid();
    plan.hand_back = r.hand_back && plan.gpu_after_go;
    if (r.memory_share_units > 0 && r.device.is_cuda()) {
      plan.memory_shares = prepare_memory_shares(plan.timing_lock, r.memory_share_units);
      if (!plan.memory_shares.empty()) plan.memory_share_units = static_cast<int>(r.memory_share_units);
    }
    // Its own compile caches (Inductor, Triton): keyed by the definition.
    plan.sandbox = sandbox_for(r, EntryKind::Reference, definition + "\nsolbench baseline");
  } else {
    plan.solution_name = r.name;
    plan.entry = r.entry;
    plan.time_solution = r.timed;
    plan.time_reference = r.timed;
    if (r.entry.kind == EntryKind::Reference) plan.verify_samples = kTrustedVerifySamples;
    plan.profile = r.profile && r.timed;  // the profile follows a timed loop
    plan.sandbox = sandbox_for(r, r.entry.kind, r.cache_key.empty() ? definition : r.cache_key);
  }
  return plan;
}

RunnerOptions runner_options(const HarnessRequest& r, const WorkerGpu& gpu) {
  RunnerOptions ro;
  ro.visible_gpu = gpu.visible;
  ro.zygote = process_zygote_address();
  ro.workload_timeout = r.workload_timeout;
  ro.keep_scratch = r.keep_scratch;
  ro.on_event = r.on_event;
  if (r.role == Role::Baseline) {
    ro.go = r.go;
    return ro;
  }
  // Spare workers made ahead by the zygote (runner.h RunnerOptions::spares):
  // SOLBENCH_SPARE_WORKERS=1, which the Python module sets for its evaluations.
  ro.spares = settings().spare_workers;
  // Every verdict on values and T_ref from a reference worker that never loads
  // the solution (runner.h, docs/harness.md "Judging").
  // SOLBENCH_REFERENCE_WORKER=0 runs the reference and the checks in the
  // solution's worker instead: for measuring what the judge costs, not for
  // evaluations (a solution can change the reference's values there).
  // The definition's own reference as the solution (`--reference`) loads no
  // solution code: judged, it would be compared with itself in a second process
  // after every call's outputs were recorded (2-4x its evaluation's time on large
  // outputs), so it is evaluated in one worker, as the baseline is.
  ro.reference_worker = settings().reference_worker && r.entry.kind != EntryKind::Reference;
  ro.reference_sandbox = sandbox_for(r, EntryKind::Reference,
                                     r.definition.dump() + "\nsolbench reference");
  // --profile makes the reference's profile after its timed loop: timed then.
  if (!r.profile) ro.known_reference = r.known_reference;
  return ro;
}

}  // namespace

WorkerGpu worker_gpu(const Device& device) {
  if (!device.is_cuda()) return {"", device};
  const int ordinal = device.ordinal();
  // No NVML or driver here: the worker will say so; CUDA's numbering names the GPU.
  std::string visible = gpu::device_uuid(ordinal);
  if (visible.empty()) {
    // CUDA's own numbering: this process's list (entries up to the first
    // invalid one count, as CUDA reads it), else the ordinal itself.
    visible = std::to_string(ordinal);
    if (const auto& list = settings().cuda_visible_devices) {
      const std::vector<std::string> entries = split_trimmed(*list, ',');
      if (static_cast<size_t>(ordinal) < entries.size()) visible = entries[ordinal];
    }
  }
  return {visible, Device::cuda(0)};
}

RunnerResult evaluate(const HarnessRequest& request) {
  const WorkerGpu gpu = worker_gpu(request.device);
  return run_plan(plan_for(request, gpu), runner_options(request, gpu));
}

}  // namespace solbench::harness
