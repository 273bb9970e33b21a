#include "harness/runner.h"

#include <cstdlib>
#include <optional>

#include <fmt/format.h>

#include "harness/framing.h"
#include "harness/process.h"
#include "harness/staging.h"
#include "harness/worker/zygote.h"

namespace solbench::harness {

namespace {

constexpr size_t kLogTailBytes = 16 << 10;

std::string tail(const std::string& text, size_t n = kLogTailBytes) {
  const std::string s = strip_workload_markers(text);
  if (s.size() <= n) return s;
  return "[... " + std::to_string(s.size() - n) + " bytes omitted ...]\n" + s.substr(s.size() - n);
}

RunnerEvent make_event(std::string kind, int workload = -1) {
  RunnerEvent e;
  e.kind = std::move(kind);
  e.workload = workload;
  return e;
}

WorkloadOutcome failed(int index, const std::string& uuid, Status st, std::string log) {
  WorkloadOutcome o;
  o.index = index;
  o.uuid = uuid;
  o.status = st;
  o.log = std::move(log);
  return o;
}

// A solution's PASSED, timed outcome gets T_ref from the reference worker's
// outcome for the same workload; a reference that could not be timed there is
// said in the log, as the in-worker timing did.
void merge_reference(WorkloadOutcome& o, const WorkloadOutcome& ref) {
  if (o.skipped || o.status != Status::Passed || !o.timing) return;
  o.extra["reference_timed_in"] = "reference worker";
  if (ref.reference_timing) {
    o.reference_timing = ref.reference_timing;
    if (auto it = ref.phases_ms.find("reference_timing_ms"); it != ref.phases_ms.end())
      o.phases_ms["reference_timing_ms"] = *it;
    return;
  }
  std::string why = ref.skipped ? ref.skip_reason : ref.log;
  if (why.size() > 500) why = why.substr(0, 500) + " [...]";
  o.log += std::string(o.log.empty() ? "" : "\n") +
           "timing the reference failed (in the reference worker): " +
           (why.empty() ? std::string(status_name(ref.status)) : why);
}

// One worker process working through `indices` (positions in the full plan).
class WorkerRun {
 public:
  WorkerRun(const WorkerPlan& plan, std::vector<int> indices, const RunnerOptions& opts,
            RunnerResult& result, const std::vector<WorkloadOutcome>* refs)
      : plan_(plan), indices_(std::move(indices)), opts_(opts), result_(result), refs_(refs) {}

  // Returns the outcomes it produced, keyed by plan index.
  std::vector<WorkloadOutcome> run();

 private:
  void event(RunnerEvent e) {
    if (opts_.on_event) opts_.on_event(e);
  }
  const std::string& uuid(int pos) const {
    return plan_.workloads[indices_[pos]].at("uuid").get_ref<const std::string&>();
  }
  void fail_rest(std::vector<WorkloadOutcome>& out, size_t from, Status st, const std::string& log) {
    for (size_t p = from; p < indices_.size(); ++p)
      out.push_back(failed(indices_[p], uuid(static_cast<int>(p)), st, log));
  }

  const WorkerPlan& plan_;
  std::vector<int> indices_;
  const RunnerOptions& opts_;
  RunnerResult& result_;
  const std::vector<WorkloadOutcome>* refs_;  // reference worker's outcomes, by plan index
};

std::vector<WorkloadOutcome> WorkerRun::run() {
  std::vector<WorkloadOutcome> out;
  WorkerPlan sub = plan_;
  sub.workloads.clear();
  for (int i : indices_) sub.workloads.push_back(plan_.workloads[i]);

  json record = {{"workloads", json::array()}};
  StagingDir scratch = StagingDir::create(
      opts_.staging_base.empty() ? default_staging_base() : opts_.staging_base, "worker-");
  if (opts_.keep_scratch) {
    scratch.keep();
    record["scratch"] = scratch.path().string();
  }

  SpawnOptions so;
  so.argv = {self_exe().string(), "__worker", "--channel-fd", "3"};
  so.cwd = scratch.path();
  so.channel = true;
  so.channel_fd = 3;
  so.output = OutputMode::Capture;
  so.log_limit_bytes = opts_.log_limit_bytes;
  // Process 1 of its own PID namespace: whatever the solution starts dies with the
  // worker, however it detached itself (docs/sandbox.md).
  const char* pidns = std::getenv("SOLBENCH_WORKER_PIDNS");  // "0": off, for diagnosis
  so.new_pid_namespace = (!plan_.sandbox.is_object() || plan_.sandbox.value("enabled", true)) &&
                         !(pidns && std::string(pidns) == "0");
  if (!opts_.zygote.empty()) {
    json request = {{"cwd", scratch.path().string()},
                    {"channel_fd", so.channel_fd},
                    {"new_pid_namespace", so.new_pid_namespace},
                    {"no_core_dumps", so.no_core_dumps},
                    {"preload", json::array()}};
    // torch.compile (the baseline, Python solutions) wants Dynamo and Inductor,
    // seconds of imports the zygote then does once for every later worker.
    if (plan_.kind == EntryKind::Python || plan_.baseline_compile)
      request["preload"].push_back("compile");
    so.starter = [request, address = opts_.zygote, limit = opts_.startup_timeout](
                     const std::vector<std::string>& env, int out_fd, int channel_fd) {
      json r = request;
      r["env"] = env;
      const ZygoteLaunch l = launch_from_zygote(address, r, out_fd, channel_fd, deadline_after(limit));
      return ExternalStart{l.pid, l.pid_namespace, l.control_fd};
    };
  }
  record["spawn_t_ns"] = monotonic_ns();
  std::optional<Child> child_slot;  // a Child is only ever constructed by spawn()
  try {
    child_slot.emplace(Child::spawn(so));
  } catch (const SpawnError& e) {
    fail_rest(out, 0, Status::RuntimeError, std::string("cannot start a worker: ") + e.what());
    result_.workers.push_back(record);
    return out;
  }
  Child& child = *child_slot;
  record["pid_namespace"] = child.pid_namespace();
  record["launch"] = child.launch() == "external" ? "zygote" : "exec";
  if (!child.launch_note().empty()) record["launch_note"] = child.launch_note();
  event(make_event("worker_start"));

  Deadline deadline = deadline_after(opts_.startup_timeout);
  if (!write_frame(child.channel_fd(), sub.to_json(), deadline).ok()) {
    child.kill_group();
    ExitStatus st = child.wait(deadline_after(std::chrono::seconds(5)));
    fail_rest(out, 0, Status::RuntimeError,
              "the worker did not accept its plan (" + st.describe() + ")\n" + tail(child.log()));
    result_.workers.push_back(record);
    return out;
  }

  FrameReader reader(child.channel_fd());
  int current = -1;  // position being evaluated
  uint64_t log_offset = 0;
  bool ready = false;
  size_t next_pos = 0;  // positions before this have outcomes
  std::string end_how;
  for (;;) {
    FrameResult f = reader.read(deadline);
    if (f.status == FrameStatus::Timeout) {
      child.kill_group();
      ExitStatus st = child.wait(deadline_after(std::chrono::seconds(10)));
      end_how = "killed after a timeout";
      if (current >= 0) {
        const double limit = opts_.workload_timeout.count();
        out.push_back(failed(indices_[current], uuid(current), Status::Timeout,
                             fmt::format("the workload did not finish within {:g} s; the worker "
                                         "was killed ({})\n",
                                         limit, st.describe()) +
                                 tail(child.log_since(log_offset))));
        next_pos = current + 1;
      } else {
        fail_rest(out, next_pos, Status::Timeout,
                  fmt::format("the worker did not {} within {:g} s\n",
                              ready ? "start the next workload" : "start",
                              (ready ? opts_.workload_timeout : opts_.startup_timeout).count()) +
                      tail(child.log()));
        next_pos = indices_.size();
      }
      break;
    }
    if (!f.ok()) {
      // The worker died or broke the protocol.
      if (f.status == FrameStatus::Error) child.kill_group();
      ExitStatus st = child.wait(deadline_after(std::chrono::seconds(10)));
      end_how = st.describe();
      std::string why = f.status == FrameStatus::Eof
                            ? "the worker ended unexpectedly (" + st.describe() + ")"
                            : "the worker broke the protocol (" + f.error + "; " + st.describe() +
                                  ")";
      if (current >= 0) {
        out.push_back(failed(indices_[current], uuid(current), Status::RuntimeError,
                             why + "\n" + tail(child.log_since(log_offset))));
        next_pos = current + 1;
      } else {
        fail_rest(out, next_pos, Status::RuntimeError, why + "\n" + tail(child.log()));
        next_pos = indices_.size();
      }
      break;
    }
    const json& m = f.message;
    const std::string type = m.value("type", "");
    if (type == "hello") {
      record["hello_t_ns"] = m.value("t_ns", int64_t{0});
      record["pid"] = m.value("pid", 0);
    } else if (type == "ready") {
      ready = true;
      record["ready_t_ns"] = m.value("t_ns", int64_t{0});
      record["sandboxed_t_ns"] = m.value("sandboxed_t_ns", int64_t{0});
      record["phases_ms"] = m.value("phases_ms", json::object());
      result_.env = m.value("env", json::object());
      result_.sandbox = m.value("sandbox", json::object());
      deadline = deadline_after(opts_.workload_timeout);
      RunnerEvent e = make_event("ready");
      e.env = &result_.env;
      event(e);
    } else if (type == "load_failed" || type == "fatal") {
      const std::string msg = m.value("message", "");
      child.close_channel();
      ExitStatus st = child.wait(deadline_after(std::chrono::seconds(10)));
      end_how = st.describe();
      const size_t first_failed = out.size();
      fail_rest(out, next_pos,
                m.value("reward_hack", false) ? Status::RewardHack : Status::RuntimeError,
                msg + (type == "fatal" ? "\n" + tail(child.log()) : std::string()));
      // Not runnable here (WorkerSession's LoadError::skip): skipped, with the reason.
      if (type == "load_failed" && m.value("skip", false))
        for (size_t p = first_failed; p < out.size(); ++p) {
          out[p].skipped = true;
          out[p].skip_reason = msg;
          out[p].log.clear();
        }
      next_pos = indices_.size();
      break;
    } else if (type == "begin") {
      const int pos = m.value("index", -1);
      if (pos < 0 || static_cast<size_t>(pos) != next_pos) {
        child.kill_group();
        child.wait(deadline_after(std::chrono::seconds(10)));
        end_how = "killed: out-of-order frame";
        fail_rest(out, next_pos, Status::RuntimeError,
                  "the worker broke the protocol (workload " + std::to_string(pos) +
                      " out of order)");
        next_pos = indices_.size();
        break;
      }
      current = pos;
      // This workload's prints start after its marker, which the worker wrote before
      // the frame (the drain thread may already hold some of them, or not yet all
      // of the previous workload's).
      child.sync_log();
      log_offset = child.log_offset_after(log_offset, workload_log_marker(static_cast<size_t>(pos)))
                       .value_or(child.log_bytes());
      deadline = deadline_after(opts_.workload_timeout);
      record["workloads"].push_back(
          {{"index", indices_[pos]}, {"begin_t_ns", m.value("t_ns", int64_t{0})}});
      event(make_event("begin", indices_[pos]));
    } else if (type == "progress") {
      if (current >= 0)
        {
          RunnerEvent e = make_event("progress", indices_[current]);
          e.phase = m.value("phase", "");
          e.round = m.value("round", -1);
          event(e);
        }
    } else if (type == "result") {
      WorkloadOutcome o;
      try {
        o = WorkloadOutcome::from_json(m);
      } catch (const std::exception& e) {
        o = failed(-1, "", Status::RuntimeError,
                   std::string("the worker sent a malformed result: ") + e.what());
        o.index = current;
      }
      if (current < 0 || o.index != current) {
        child.kill_group();
        child.wait(deadline_after(std::chrono::seconds(10)));
        end_how = "killed: result for a workload not begun";
        fail_rest(out, next_pos, Status::RuntimeError,
                  "the worker broke the protocol (a result for a workload not begun)");
        next_pos = indices_.size();
        break;
      }
      // The log the trace carries: what the worker wrote while on this workload
      // (the solution's prints), then the evaluation's own message.
      child.sync_log();  // the worker printed before it sent the result
      std::string captured = child.log_since(log_offset);
      if (!captured.empty()) o.log = tail(captured) + (o.log.empty() ? "" : "\n" + o.log);
      o.index = indices_[current];
      o.uuid = uuid(current);
      if (refs_ && static_cast<size_t>(o.index) < refs_->size())
        merge_reference(o, (*refs_)[o.index]);
      if (!record["workloads"].empty())
        record["workloads"].back()["result_t_ns"] = m.value("t_ns", int64_t{0});
      out.push_back(std::move(o));
      {
        RunnerEvent e = make_event("result", indices_[current]);
        e.outcome = &out.back();
        event(e);
      }
      next_pos = current + 1;
      current = -1;
      deadline = deadline_after(opts_.workload_timeout);
    } else if (type == "restart") {
      // The worker's state is spoiled (a sticky CUDA error): it reported its last
      // workload and exits; the workloads after it go to a fresh worker.
      child.close_channel();
      ExitStatus st = child.wait(deadline_after(std::chrono::seconds(30)));
      end_how = "restart requested (" + m.value("reason", std::string()) + "); " + st.describe();
      break;
    } else if (type == "done") {
      child.close_channel();
      ExitStatus st = child.wait(deadline_after(std::chrono::seconds(30)));
      end_how = st.describe();
      if (next_pos < indices_.size())
        fail_rest(out, next_pos, Status::RuntimeError,
                  "the worker finished without evaluating this workload");
      next_pos = indices_.size();
      break;
    }
    // Unknown frame types are ignored (forward compatibility).
  }
  record["exit"] = end_how;
  result_.workers.push_back(record);
  RunnerEvent e = make_event("worker_exit");
  e.message = end_how;
  event(e);
  return out;
}

RunnerResult run_workers(const WorkerPlan& plan, const RunnerOptions& opts,
                         const std::vector<WorkloadOutcome>* refs) {
  RunnerResult result;
  const int n = static_cast<int>(plan.workloads.size());
  std::vector<std::optional<WorkloadOutcome>> slots(n);
  std::vector<int> remaining;
  for (int i = 0; i < n; ++i) remaining.push_back(i);
  // Outcomes the runner decides itself (crash, timeout, failed start) are reported
  // through on_event too, after the worker ended, so callers see every result once.
  std::vector<bool> reported(n, false);
  RunnerOptions wopts = opts;
  wopts.on_event = [&](const RunnerEvent& e) {
    if (e.kind == "result" && e.workload >= 0 && e.workload < n) reported[e.workload] = true;
    if (opts.on_event) opts.on_event(e);
  };
  while (!remaining.empty()) {
    WorkerRun run(plan, remaining, wopts, result, refs);
    std::vector<WorkloadOutcome> got = run.run();
    for (const auto& o : got) {
      if (o.index < 0 || o.index >= n || reported[o.index]) continue;
      reported[o.index] = true;
      RunnerEvent e = make_event("result", o.index);
      e.outcome = &o;
      if (opts.on_event) opts.on_event(e);
    }
    if (got.empty()) {  // cannot happen by construction; never loop forever
      for (int i : remaining)
        slots[i] = failed(i, plan.workloads[i].value("uuid", ""), Status::RuntimeError,
                          "the worker produced no result");
      break;
    }
    for (auto& o : got)
      if (o.index >= 0 && o.index < n && !slots[o.index]) slots[o.index] = std::move(o);
    remaining.clear();
    for (int i = 0; i < n; ++i)
      if (!slots[i]) remaining.push_back(i);
  }
  for (auto& s : slots) result.outcomes.push_back(std::move(*s));
  return result;
}

}  // namespace

RunnerResult run_plan(const WorkerPlan& plan, const RunnerOptions& opts) {
  if (!opts.reference_worker || !plan.time_solution || !plan.time_reference ||
      plan.reference_role)
    return run_workers(plan, opts, nullptr);

  // The reference worker first, over all workloads, and gone before any solution
  // code is loaded: it cannot be reached from the solution's process. It gets
  // the definition and the workloads, nothing of the solution.
  WorkerPlan rp = plan;
  rp.solution_name = plan.solution_name + "/reference";
  rp.kind = EntryKind::Reference;
  rp.library.clear();
  rp.module_name.clear();
  rp.entry = "run";
  rp.entry_file.clear();
  rp.sources = json::array();
  rp.dps = false;
  rp.languages.clear();
  rp.baseline_compile = false;
  rp.reference_role = true;
  rp.time_solution = false;
  rp.sandbox = opts.reference_sandbox;
  RunnerOptions ro = opts;
  ro.reference_worker = false;
  ro.on_event = [&](const RunnerEvent& e) {
    if (!opts.on_event) return;
    if (e.kind == "worker_start") {
      RunnerEvent x = make_event("worker_start");
      x.message = "reference";
      opts.on_event(x);
    } else if ((e.kind == "begin" || e.kind == "progress") && e.workload >= 0) {
      RunnerEvent x = make_event("progress", e.workload);
      x.phase = "reference_timing";
      opts.on_event(x);
    }
  };
  RunnerResult refs = run_workers(rp, ro, nullptr);

  WorkerPlan sp = plan;
  sp.time_reference = false;  // T_ref comes from the reference worker
  RunnerResult result = run_workers(sp, opts, &refs.outcomes);
  result.reference_workers = std::move(refs.workers);
  return result;
}

}  // namespace solbench::harness
