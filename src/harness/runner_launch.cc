// Starting a worker process for a plan (from the zygote where there is one, else
// exec'd), its sealed plan, and spares for the next evaluation (runner_internal.h).
#include <algorithm>
#include <cstdlib>
#include <memory>
#include <random>

#include <fmt/format.h>

#include "core/settings.h"
#include "harness/runner_internal.h"
#include "harness/worker/worker_policy.h"
#include "harness/worker/zygote.h"

namespace solbench::harness::runner_detail {

std::string new_seal() {
  std::random_device rd;
  return fmt::format("{:08x}{:08x}{:08x}{:08x}", rd(), rd(), rd(), rd());
}

// `plan` as its first frame, sealed.
json sealed_plan(const WorkerPlan& plan, const std::string& seal) {
  json j = plan.to_json();
  j["seal"] = seal;
  return j;
}

std::filesystem::path staging_base_of(const RunnerOptions& opts) {
  return opts.staging_base.empty() ? default_staging_base() : opts.staging_base;
}

namespace {

// What a worker for `plan` does before it has the plan (zygote.h, "Spares").
json standby_of(const WorkerPlan& plan) {
  return {{"device", plan.device},
          {"sandbox", without_jit_cache(plan.sandbox)},
          {"timing_lock", plan.timing_lock}};
}

bool new_pid_namespace_for(const WorkerPlan& plan) {
  // Process 1 of its own PID namespace: whatever the solution starts dies with the
  // worker, however it detached itself (docs/sandbox.md).
  return (!plan.sandbox.is_object() || plan.sandbox.value("enabled", true)) &&
         settings().worker_pidns;  // SOLBENCH_WORKER_PIDNS=0: off, for diagnosis
}

// The zygote's request for a worker of `plan` (launch_worker adds cwd and env).
json zygote_request(const WorkerPlan& plan, const RunnerOptions& opts) {
  json request = {{"channel_fd", 3},
                  {"new_pid_namespace", new_pid_namespace_for(plan)},
                  {"no_core_dumps", true},
                  {"preload", json::array()}};
  // torch.compile (the baseline, Python solutions) wants Dynamo and Inductor,
  // seconds of imports the zygote then does once for every later worker.
  if (plan.entry.kind == EntryKind::Python || plan.role == WorkerRole::Baseline)
    request["preload"].push_back("compile");
  // Not for a scratch folder to keep: a spare's is named (staging.h) by the zygote.
  if (opts.spares && !opts.keep_scratch) {
    request["standby"] = standby_of(plan);
    request["staging_base"] = staging_base_of(opts).string();
  }
  return request;
}

// What every worker of these options gets in its environment besides the
// parent's: its GPU alone (RunnerOptions::visible_gpu).
void isolate(SpawnOptions& so, const RunnerOptions& opts) {
  if (opts.visible_gpu) so.env_set.emplace_back("CUDA_VISIBLE_DEVICES", *opts.visible_gpu);
}

}  // namespace

Launch launch_worker(const WorkerPlan& plan, const RunnerOptions& opts) {
  Launch l;
  l.record = {{"workloads", json::array()}};
  l.scratch = StagingDir::create(staging_base_of(opts), "worker-", opts.keep_scratch);

  SpawnOptions so;
  so.argv = {self_exe().string(), "__worker", "--channel-fd", "3"};
  so.cwd = l.scratch.path();
  so.channel = true;
  so.channel_fd = 3;
  so.output = OutputMode::Capture;
  so.log_limit_bytes = opts.log_limit_bytes;
  so.new_pid_namespace = new_pid_namespace_for(plan);
  isolate(so, opts);
  // A spare's scratch folder, which this launch then owns (set by the starter).
  auto spare_cwd = std::make_shared<std::string>();
  if (!opts.zygote.empty()) {
    json request = zygote_request(plan, opts);
    request["cwd"] = l.scratch.path().string();
    request["no_core_dumps"] = so.no_core_dumps;
    so.starter = zygote_starter(opts.zygote, request, opts.startup_timeout, spare_cwd);
  }
  l.record["spawn_t_ns"] = monotonic_ns();
  l.child = Child::spawn(so);
  l.record["pid_namespace"] = l.child.pid_namespace();
  l.record["launch"] = l.child.launch() == "external" ? "zygote" : "exec";
  if (!spare_cwd->empty()) {
    // The spare's own folder (made by the zygote under the same staging base).
    const bool keep = l.scratch.kept();
    l.scratch = StagingDir::adopt(*spare_cwd);
    l.scratch.keep(keep);
    l.record["launch"] = "spare";
  }
  if (opts.visible_gpu) l.record["visible_gpus"] = *opts.visible_gpu;
  if (opts.keep_scratch) l.record["scratch"] = l.scratch.path().string();
  if (!l.child.launch_note().empty()) l.record["launch_note"] = l.child.launch_note();
  return l;
}

void prepare_spares(const std::vector<const WorkerPlan*>& plans, const json& first_workload,
                    const RunnerOptions& opts) {
  if (!opts.spares || opts.zygote.empty()) return;
  // The environment launch_worker's workers get (the recipe's, entry for entry).
  SpawnOptions worker;
  worker.channel = true;
  worker.channel_fd = 3;
  isolate(worker, opts);
  const std::vector<std::string> env = child_environment(worker);
  // One request per recipe, with how many workers of it an evaluation starts (a
  // Python solution's worker and the reference worker share theirs).
  std::vector<json> requests;
  for (const WorkerPlan* p : plans) {
    json request = zygote_request(*p, opts);
    request["env"] = env;
    // The warm-up hint (not part of the recipe): this evaluation's first workload.
    if (!first_workload.is_null()) {
      const json& def = p->definition;
      request["warm"] = {{"workload", first_workload},
                         {"reference_source", def.value("reference", "")},
                         {"custom_inputs_entrypoint", def.value("custom_inputs_entrypoint", json(""))},
                         {"run_reference", p->role == WorkerRole::Judge},
                         // A Python solution may launch Triton kernels (its own, Inductor's).
                         {"triton", p->role != WorkerRole::Judge && p->entry.kind == EntryKind::Python}};
    }
    const std::string key = spare_recipe_key(request);
    auto same = std::find_if(requests.begin(), requests.end(),
                             [&](const json& r) { return spare_recipe_key(r) == key; });
    if (same == requests.end()) {
      requests.push_back(std::move(request));
      continue;
    }
    (*same)["count"] = same->value("count", 1) + 1;
    // Spares of one recipe may serve either worker: the reference runs in the
    // warm-up only when none of them may be the solution's.
    // Triton is warmed when any of them may be a Python solution's.
    if (same->contains("warm") && request.contains("warm")) {
      (*same)["warm"]["run_reference"] =
          (*same)["warm"].value("run_reference", false) && request["warm"].value("run_reference", false);
      (*same)["warm"]["triton"] =
          (*same)["warm"].value("triton", false) || request["warm"].value("triton", false);
    }
    for (const auto& g : request["preload"])
      if (std::find((*same)["preload"].begin(), (*same)["preload"].end(), g) == (*same)["preload"].end())
        (*same)["preload"].push_back(g);
  }
  for (const json& r : requests) prepare_spare(opts.zygote, r, deadline_after(std::chrono::seconds(5)));
}

}  // namespace solbench::harness::runner_detail
