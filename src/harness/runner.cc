#include "harness/runner.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <future>
#include <mutex>
#include <optional>
#include <thread>
#include <random>
#include <system_error>

#include <fmt/format.h>

#include "harness/framing.h"
#include "harness/process.h"
#include "harness/staging.h"
#include "harness/values.h"
#include "harness/worker/worker_policy.h"
#include "harness/worker/zygote.h"

namespace solbench::harness {

namespace {

constexpr size_t kLogTailBytes = 16 << 10;
// How long a worker may take to accept the answer to a values request.
constexpr auto kReplyLimit = std::chrono::seconds(10);
constexpr const char* kExitingBesideJudge = "done (exiting beside the judge)";

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

// Called on every outcome a worker reported (not on those the runner decides),
// before it is reported: the worker's scratch folder is still there, and `pos` is
// the workload's position in that worker's plan (its records' folder name).
struct RunHooks {
  std::function<void(WorkloadOutcome&, const std::filesystem::path& scratch, size_t pos)>
      on_result;
  // The solution's worker of a judged evaluation: a worker that said "done" is not
  // waited for here but handed over, to exit beside the judging (timing_after_go).
  std::vector<Child>* exiting = nullptr;
  // A reference worker with timing_after_go: "go" is sent once this is ready.
  std::shared_future<void> go;
  // The evaluation's secret (values.h), which the judge shares; 0: the worker's
  // values come from a secret of its own run.
  uint64_t value_secret = 0;
};

// The secret every value of an evaluation is derived from (values.h): random, or
// from the plan's seed when one was asked for (reproducible, not secret).
uint64_t evaluation_secret(const WorkerPlan& plan) {
  if (plan.seed != 0) return value_seed(plan.seed, "solbench --seed", ValueKind::Round, 0) | 1;
  std::random_device rd;
  uint64_t secret = 0;
  while (secret == 0) secret = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  return secret;
}

// A worker process, its scratch folder and the start of its record.
struct Launch {
  StagingDir scratch;
  Child child;
  json record;
  std::string seal;  // sent with the plan (new_seal)
};

// A worker's frames carry the seal its plan, then each answer to a values request,
// gave it (protocol.h). It is held by the worker's C++ side only: a frame that
// code in the worker writes to the channel by itself (Python can find the
// descriptor) lacks it, so it shows as not the harness's.
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

// What a worker for `plan` does before it has the plan (zygote.h, "Spares").
json standby_of(const WorkerPlan& plan) {
  return {{"device", plan.device},
          {"sandbox", without_jit_cache(plan.sandbox)},
          {"timing_lock", plan.timing_lock}};
}

bool new_pid_namespace_for(const WorkerPlan& plan) {
  // Process 1 of its own PID namespace: whatever the solution starts dies with the
  // worker, however it detached itself (docs/sandbox.md).
  const char* pidns = std::getenv("SOLBENCH_WORKER_PIDNS");  // "0": off, for diagnosis
  return (!plan.sandbox.is_object() || plan.sandbox.value("enabled", true)) &&
         !(pidns && std::string(pidns) == "0");
}

// The zygote's request for a worker of `plan` (launch_worker adds cwd and env).
json zygote_request(const WorkerPlan& plan, const RunnerOptions& opts) {
  json request = {{"channel_fd", 3},
                  {"new_pid_namespace", new_pid_namespace_for(plan)},
                  {"no_core_dumps", true},
                  {"preload", json::array()}};
  // torch.compile (the baseline, Python solutions) wants Dynamo and Inductor,
  // seconds of imports the zygote then does once for every later worker.
  if (plan.entry.kind == EntryKind::Python || plan.baseline_compile)
    request["preload"].push_back("compile");
  if (opts.spares) {
    request["standby"] = standby_of(plan);
    request["staging_base"] = staging_base_of(opts).string();
  }
  return request;
}

// Starts a worker for `plan` (from the zygote where there is one), without sending
// it anything; throws SpawnError.
Launch launch_worker(const WorkerPlan& plan, const RunnerOptions& opts) {
  Launch l;
  l.record = {{"workloads", json::array()}};
  l.scratch = StagingDir::create(staging_base_of(opts), "worker-");
  if (opts.keep_scratch) l.scratch.keep();

  SpawnOptions so;
  so.argv = {self_exe().string(), "__worker", "--channel-fd", "3"};
  so.cwd = l.scratch.path();
  so.channel = true;
  so.channel_fd = 3;
  so.output = OutputMode::Capture;
  so.log_limit_bytes = opts.log_limit_bytes;
  so.new_pid_namespace = new_pid_namespace_for(plan);
  // A spare's scratch folder, which this launch then owns (set by the starter).
  auto spare_cwd = std::make_shared<std::string>();
  if (!opts.zygote.empty()) {
    json request = zygote_request(plan, opts);
    request["cwd"] = l.scratch.path().string();
    request["no_core_dumps"] = so.no_core_dumps;
    so.starter = [request, spare_cwd, address = opts.zygote, limit = opts.startup_timeout](
                     const std::vector<std::string>& env, int out_fd, int channel_fd) {
      json r = request;
      r["env"] = env;
      const ZygoteLaunch z = launch_from_zygote(address, r, out_fd, channel_fd, deadline_after(limit));
      if (z.spare) *spare_cwd = z.cwd;
      return ExternalStart{z.pid, z.pid_namespace, z.control_fd};
    };
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
  if (opts.keep_scratch) l.record["scratch"] = l.scratch.path().string();
  if (!l.child.launch_note().empty()) l.record["launch_note"] = l.child.launch_note();
  return l;
}

// Asks the zygote for a spare of each plan's recipe (RunnerOptions::spares).
void prepare_spares(const std::vector<const WorkerPlan*>& plans, const json& first_workload,
                    const RunnerOptions& opts) {
  if (!opts.spares || opts.zygote.empty()) return;
  // The environment launch_worker's workers get (the recipe's, entry for entry).
  SpawnOptions worker;
  worker.channel = true;
  worker.channel_fd = 3;
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
                         {"run_reference", p->entry.kind == EntryKind::Reference && p->reference_role}};
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
    if (same->contains("warm") && request.contains("warm"))
      (*same)["warm"]["run_reference"] =
          (*same)["warm"].value("run_reference", false) && request["warm"].value("run_reference", false);
    for (const auto& g : request["preload"])
      if (std::find((*same)["preload"].begin(), (*same)["preload"].end(), g) == (*same)["preload"].end())
        (*same)["preload"].push_back(g);
  }
  for (const json& r : requests) prepare_spare(opts.zygote, r, deadline_after(std::chrono::seconds(5)));
}

// A worker's channel, read on a thread of its own so that a values request is
// answered at once whatever the runner's thread is doing (an event callback may
// trace the reference for T_SOL: seconds on a cold start). In the stream's order it
// checks every frame's seal, answers values requests (values.h: the issuer begins
// with each "begin" frame) and queues every other frame for the runner's loop,
// a result with the issuer as it stood then.
class ChannelInbox {
 public:
  struct Item {
    FrameResult frame;
    std::string violation;                 // why the worker is to end as REWARD_HACK
    std::optional<ValueIssuer> at_result;  // for a "result" frame
  };
  // `workload(pos)`: the uuid and the number of kept calls of plan position pos
  // (nullopt: no such position). `answers`: false for a reference worker, which
  // draws its own values.
  using Workload = std::function<std::optional<std::pair<std::string, int>>(int)>;
  ChannelInbox(int fd, std::string seal, ValueIssuer issuer, bool answers, Workload workload,
               std::mutex& write_mu)
      : fd_(fd),
        seal_(std::move(seal)),
        issuer_(std::move(issuer)),
        answers_(answers),
        workload_(std::move(workload)),
        write_mu_(write_mu) {
    thread_ = std::thread([this] { loop(); });
  }
  ~ChannelInbox() { stop(); }
  ChannelInbox(const ChannelInbox&) = delete;
  ChannelInbox& operator=(const ChannelInbox&) = delete;

  // The next item, or nullopt once `deadline` passed.
  std::optional<Item> next(Deadline deadline) {
    std::unique_lock<std::mutex> lock(mu_);
    if (!cv_.wait_until(lock, deadline, [&] { return !items_.empty(); })) return std::nullopt;
    Item it = std::move(items_.front());
    items_.pop_front();
    return it;
  }
  // Nothing is read after this (before the channel is closed).
  void stop() {
    stopping_ = true;
    if (thread_.joinable()) thread_.join();
  }

 private:
  void push(Item it) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      items_.push_back(std::move(it));
    }
    cv_.notify_one();
  }
  void loop() {
    FrameReader reader(fd_);
    bool in_workload = false;
    while (!stopping_) {
      Item it;
      it.frame = reader.read(deadline_after(std::chrono::milliseconds(100)));
      if (it.frame.status == FrameStatus::Timeout) continue;  // nothing lost
      if (!it.frame.ok()) {
        push(std::move(it));
        return;
      }
      const json& m = it.frame.message;
      const std::string type = m.value("type", "");
      if (type != "hello" && m.value("seal", "") != seal_) {
        it.violation = fmt::format(
            "a \"{}\" frame on the worker's channel without the harness's seal: something in "
            "the worker other than the harness wrote it",
            type.substr(0, 20));
        push(std::move(it));
        return;
      }
      if (type == "values") {
        json reply;
        try {
          if (!answers_ || !in_workload) throw ValueViolation("a values request outside a workload");
          reply = issuer_.answer(m, monotonic_ns());
        } catch (const ValueViolation& e) {
          it.violation = std::string("the worker asked for values the harness never asks for (") +
                         e.what() + "): something in it other than the harness used its channel";
          push(std::move(it));
          return;
        }
        seal_ = new_seal();  // the next frames carry this one
        reply["seal"] = seal_;
        std::lock_guard<std::mutex> lock(write_mu_);
        if (!write_frame(fd_, reply, deadline_after(kReplyLimit)).ok()) {
          it.frame.status = FrameStatus::Error;
          it.frame.error = "the worker did not take the seed of its values";
          push(std::move(it));
          return;
        }
        continue;
      }
      if (type == "begin") {
        const auto w = workload_(m.value("index", -1));
        in_workload = w.has_value();
        if (w) issuer_.begin(w->first, w->second);
      } else if (type == "result") {
        it.at_result = issuer_;
        in_workload = false;
      }
      push(std::move(it));
    }
  }

  int fd_;
  std::string seal_;
  ValueIssuer issuer_;
  bool answers_;
  Workload workload_;
  std::mutex& write_mu_;
  std::atomic<bool> stopping_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Item> items_;
  std::thread thread_;
};

// One worker process working through `indices` (positions in the full plan).
class WorkerRun {
 public:
  // `early`: a worker started ahead with the plan less its work (work_follows); it
  // gets the work (a WorkOrder) instead of the plan.
  WorkerRun(const WorkerPlan& plan, std::vector<int> indices, const RunnerOptions& opts,
            RunnerResult& result, const RunHooks* hooks, std::optional<Launch> early = {})
      : plan_(plan), indices_(std::move(indices)), opts_(opts), result_(result), hooks_(hooks),
        early_(std::move(early)) {}

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
  const RunHooks* hooks_;
  std::optional<Launch> early_;
};

std::vector<WorkloadOutcome> WorkerRun::run() {
  std::vector<WorkloadOutcome> out;
  WorkerPlan sub = plan_;
  sub.seed = 0;  // the parent's alone (evaluation_secret)
  sub.workloads.clear();
  for (int i : indices_) sub.workloads.push_back(plan_.workloads[i]);
  if (!plan_.records.empty()) {
    sub.records.clear();
    for (int i : indices_) sub.records.push_back(plan_.records.at(static_cast<size_t>(i)));
  }

  std::optional<Launch> launched = std::move(early_);
  const bool early = launched.has_value();
  if (!launched) {
    try {
      launched.emplace(launch_worker(plan_, opts_));
    } catch (const SpawnError& e) {
      fail_rest(out, 0, Status::RuntimeError, std::string("cannot start a worker: ") + e.what());
      result_.workers.push_back({{"workloads", json::array()}, {"exit", "not started"}});
      return out;
    }
  }
  json& record = launched->record;
  StagingDir& scratch = launched->scratch;
  Child& child = launched->child;
  if (early) record["started_early"] = true;
  event(make_event("worker_start"));

  // The plan's compile caches move into the worker's scratch folder before it has
  // its plan, and back once it is done (worker_policy.h).
  if (!early) lend_caches(plan_.sandbox, scratch.path());
  struct TakeBack {
    const json& sandbox;
    const std::filesystem::path& scratch;
    ~TakeBack() { take_back_caches(sandbox, scratch); }
  } take_back{plan_.sandbox, scratch.path()};
  Deadline deadline = deadline_after(opts_.startup_timeout);
  if (!early) launched->seal = new_seal();
  std::string seal = launched->seal;
  const json first =
      early ? WorkOrder{false, sub.workloads, sub.records}.to_json() : sealed_plan(sub, seal);
  // "go" (WorkerPlan::timing_after_go) from a thread of its own once the solution's
  // worker has exited; joined before the channel closes or the run returns.
  std::thread go_thread;
  struct JoinGo {
    std::thread& t;
    ~JoinGo() {
      if (t.joinable()) t.join();
    }
  } join_go{go_thread};
  auto stop_go = [&] {
    if (go_thread.joinable()) go_thread.join();
  };
  if (!write_frame(child.channel_fd(), first, deadline).ok()) {
    child.kill_group();
    ExitStatus st = child.wait(deadline_after(std::chrono::seconds(5)));
    fail_rest(out, 0, Status::RuntimeError,
              std::string("the worker did not accept its ") + (early ? "work" : "plan") + " (" +
                  st.describe() + ")\n" + tail(child.log()));
    result_.workers.push_back(record);
    return out;
  }

  std::mutex write_mu;  // the go thread's and the inbox's answers
  if (hooks_ && hooks_->go.valid() && plan_.timing_after_go)
    go_thread = std::thread([fd = child.channel_fd(), go = hooks_->go, &write_mu] {
      go.wait();
      std::lock_guard<std::mutex> lock(write_mu);
      write_frame(fd, {{"type", "go"}}, deadline_after(std::chrono::seconds(10)));
    });
  // The seeds of the values, handed out on request while a workload runs (values.h).
  ChannelInbox inbox(
      child.channel_fd(), seal,
      ValueIssuer(hooks_ && hooks_->value_secret ? hooks_->value_secret : evaluation_secret(plan_),
                  plan_.rounds + std::max(2, plan_.input_sets), max_calls(plan_.timing)),
      !plan_.reference_role,
      [this](int pos) -> std::optional<std::pair<std::string, int>> {
        if (pos < 0 || static_cast<size_t>(pos) >= indices_.size()) return std::nullopt;
        const json& spec = plan_.workloads[indices_[pos]];
        return std::make_pair(uuid(pos), plan_.time_solution
                                             ? sampled_calls(plan_.verify_samples, spec)
                                             : 0);
      },
      write_mu);
  auto stop_reading = [&] {
    stop_go();
    inbox.stop();
  };
  int current = -1;  // position being evaluated
  uint64_t log_offset = 0;
  bool ready = false;
  size_t next_pos = 0;  // positions before this have outcomes
  std::string end_how;
  // Ends this worker for something it sent: the workload in progress (else every
  // one left) fails with `st`; a new worker takes the rest.
  auto end_worker = [&](Status st, const std::string& why) {
    child.kill_group();
    ExitStatus es = child.wait(deadline_after(std::chrono::seconds(10)));
    end_how = "killed: " + why.substr(0, 200) + " (" + es.describe() + ")";
    if (current >= 0) {
      out.push_back(failed(indices_[current], uuid(current), st,
                           why + "\n" + tail(child.log_since(log_offset))));
      next_pos = current + 1;
    } else {
      fail_rest(out, next_pos, st, why);
      next_pos = indices_.size();
    }
  };
  for (;;) {
    std::optional<ChannelInbox::Item> item = inbox.next(deadline);
    FrameResult f;
    if (item) f = std::move(item->frame);
    else f.status = FrameStatus::Timeout;
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
    if (!item->violation.empty()) {
      end_worker(Status::RewardHack, item->violation);
      break;
    }
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
      stop_reading();
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
      // What the worker reports against what the parent handed out and saw.
      if (const std::string why = item->at_result ? item->at_result->check(o) : std::string();
          !why.empty()) {
        o.status = Status::RewardHack;
        o.log = "the worker's report cannot be believed: " + why + (o.log.empty() ? "" : "\n" + o.log);
        o.correctness.reset();
        o.timing.reset();
        o.reference_timing.reset();
        o.record.reset();
      }
      // Compile caches over their limit, a tmpfs found full (worker_policy.h).
      check_worker_writes(plan_.sandbox, result_.sandbox, scratch.path(), o);
      if (hooks_ && hooks_->on_result) hooks_->on_result(o, scratch.path(), current);
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
      stop_reading();
      child.close_channel();
      ExitStatus st = child.wait(deadline_after(std::chrono::seconds(30)));
      end_how = "restart requested (" + m.value("reason", std::string()) + "); " + st.describe();
      break;
    } else if (type == "done") {
      stop_reading();
      child.close_channel();
      if (plan_.reference_role && plan_.entry.kind == EntryKind::Reference) {
        // A reference worker ran no solution code and has reported everything:
        // its exit (CUDA's teardown, 0.15 s on an H100) is not waited for; the
        // Child's end signals what is left of it (a zygote's keeper reaps it).
        end_how = "done (its exit not awaited)";
      } else if (hooks_ && hooks_->exiting) {
        // The judge waits for it before it times anything (RunHooks::exiting).
        end_how = kExitingBesideJudge;  // the exit status replaces it (judge_batch)
        hooks_->exiting->push_back(std::move(child));
      } else {
        ExitStatus st = child.wait(deadline_after(std::chrono::seconds(30)));
        end_how = st.describe();
      }
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

// `early`: the first worker, started ahead (WorkerRun).
RunnerResult run_workers(const WorkerPlan& plan, const RunnerOptions& opts,
                         const RunHooks* hooks, std::optional<Launch> early = {}) {
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
    WorkerRun run(plan, remaining, wopts, result, hooks, std::move(early));
    early.reset();
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

// ---------------------------------------------------------------- judged runs

// The reference worker's plan: the definition and the workloads, nothing of the
// solution (no sources, no library path, no entry).
WorkerPlan reference_plan(const WorkerPlan& plan, const RunnerOptions& opts) {
  WorkerPlan rp = plan;
  rp.solution_name = plan.solution_name + "/reference";
  rp.entry = EntryPoint::reference();
  rp.baseline_compile = false;
  rp.reference_role = true;
  rp.record_calls = false;
  rp.time_solution = false;
  rp.workloads.clear();
  rp.records.clear();
  rp.sandbox = opts.reference_sandbox;
  return rp;
}

// Why a record cannot be judged as complete (the solution's worker says it found
// nothing wrong, so every round and the sampled calls must be there), or "".
std::string record_problem(const WorkerPlan& plan, const json& spec, const WorkloadOutcome& o) {
  const CallRecord& r = *o.record;
  if (o.status != Status::Passed) return "";
  if (!r.failed_stage.empty()) return "a failure stage (" + r.failed_stage + ") on a PASSED outcome";
  if (static_cast<int>(r.rounds.size()) != plan.rounds)
    return fmt::format("{} correctness rounds recorded, {} run", r.rounds.size(), plan.rounds);
  if (!plan.time_solution) return "";
  if (!r.timed || !o.timing) return "the timed calls were not recorded";
  // Kept among every call of the loop, warm-up included (values.h).
  const int timed = o.timing->stats.count;
  const int calls = timed + o.timing->warmup_calls;
  const size_t expected =
      static_cast<size_t>(std::min(sampled_calls(plan.verify_samples, spec), calls));
  if (r.samples.size() != expected)
    return fmt::format("{} sampled calls recorded, {} expected", r.samples.size(), expected);
  for (const RecordedCall& c : r.samples)
    if (c.call >= timed || c.pool_call >= calls)
      return fmt::format("timed call {} (pool call {}) of {} calls", c.call, c.pool_call, calls);
  return "";
}

// The outcome of a judged workload: the judge's verdict on what was recorded,
// then the solution's own failure, then PASSED with the solution's T_k and the
// reference worker's T_ref.
WorkloadOutcome merge_judged(WorkloadOutcome o, const WorkloadOutcome& judge) {
  o.record.reset();
  o.extra["judged_in"] = "reference worker";
  // The reference worker's phases (reference_ms, check_ms, verify_ms, ...), under
  // judge_* where the solution's worker has the same name (inputs_ms, total_ms).
  for (const auto& [k, v] : judge.phases_ms.items())
    o.phases_ms[k == "total_ms" ? std::string("judge_ms")
                : o.phases_ms.contains(k) ? "judge_" + k
                                          : k] = v;
  if (auto it = judge.extra.find("verification"); it != judge.extra.end())
    o.extra["verification"] = *it;
  if (judge.skipped) {
    o.skipped = true;
    o.skip_reason = judge.skip_reason;
    o.status = Status::RuntimeError;
    o.log.clear();
    o.correctness.reset();
    o.timing.reset();
    o.reference_timing.reset();
    return o;
  }
  if (judge.status != Status::Passed) {
    std::string why = judge.log;
    if (judge.status == Status::RuntimeError || judge.status == Status::Timeout)
      why = "judging in the reference worker: " + why;
    o.status = judge.status;
    o.log = why + (o.log.empty() ? "" : "\n" + o.log);
    if (judge.status == Status::IncorrectNumerical) o.correctness = judge.correctness;
    else o.correctness.reset();
    o.timing.reset();
    o.reference_timing.reset();
    return o;
  }
  if (o.status != Status::Passed) {  // the solution's own failure stands
    o.correctness.reset();
    o.timing.reset();
    o.reference_timing.reset();
    return o;
  }
  o.correctness = judge.correctness;
  if (!o.timing) return o;
  o.extra["reference_timed_in"] = "reference worker";
  if (judge.reference_timing) {
    o.reference_timing = judge.reference_timing;
    return o;
  }
  std::string why = judge.log;
  if (why.size() > 500) why = why.substr(0, 500) + " [...]";
  o.log += std::string(o.log.empty() ? "" : "\n") +
           "timing the reference failed (in the reference worker): " +
           (why.empty() ? std::string("no timing reported") : why);
  return o;
}

// Workloads per batch, so that the records on disk stay within a budget: one
// batch is one solution's worker and one reference worker. A workload's record
// holds its outputs once per correctness round and per sampled timed call.
std::vector<std::vector<int>> record_batches(const WorkerPlan& plan,
                                             const std::filesystem::path& base) {
  uint64_t budget = 16ull << 30;
  std::error_code ec;
  std::filesystem::create_directories(base, ec);
  const std::filesystem::space_info sp = std::filesystem::space(base, ec);
  if (!ec) budget = std::min<uint64_t>(budget, sp.available / 2);
  if (const char* v = std::getenv("SOLBENCH_RECORD_BUDGET_BYTES"))  // tests, diagnosis
    budget = std::strtoull(v, nullptr, 10);
  std::vector<std::vector<int>> batches(1);
  uint64_t used = 0;
  for (size_t i = 0; i < plan.workloads.size(); ++i) {
    const json& spec = plan.workloads[i];
    const uint64_t calls = static_cast<uint64_t>(plan.rounds) +
                           (plan.time_solution ? sampled_calls(plan.verify_samples, spec) : 0);
    const uint64_t bytes = calls * (workload_output_bytes(spec) + 4096);
    if (!batches.back().empty() && used + bytes > budget) {
      batches.emplace_back();
      used = 0;
    }
    batches.back().push_back(static_cast<int>(i));
    used += bytes;
  }
  return batches;
}

// One batch of a judged evaluation: the solution's worker records its calls, then
// the reference worker judges them; every outcome goes into `final`, by plan index.
void judge_batch(const WorkerPlan& plan, const std::vector<int>& batch, uint64_t secret,
                 const RunnerOptions& opts, const std::filesystem::path& base,
                 RunnerResult& result, std::vector<std::optional<WorkloadOutcome>>& final) {
  namespace fs = std::filesystem;
  auto emit = [&](RunnerEvent e) {
    if (opts.on_event) opts.on_event(e);
  };
  WorkerPlan sp = plan;
  sp.workloads.clear();
  for (int i : batch) sp.workloads.push_back(plan.workloads[i]);
  sp.record_calls = true;
  sp.time_reference = false;  // T_ref comes from the reference worker

  // The records leave the solution's scratch folder as soon as its result frame
  // arrives: the parent's folder is not in the solution's writable domain.
  StagingDir records = StagingDir::create(base, "records-");
  if (opts.keep_scratch) records.keep();
  RunHooks hooks;
  hooks.value_secret = secret;
  hooks.on_result = [&](WorkloadOutcome& o, const fs::path& scratch, size_t pos) {
    if (!o.record) return;
    const fs::path src = scratch / "judge" / std::to_string(pos);
    const fs::path dst = records.path() / std::to_string(o.index);
    std::error_code ec;
    if (fs::is_directory(fs::symlink_status(src, ec))) fs::rename(src, dst, ec);
    if (!fs::is_directory(fs::symlink_status(dst, ec))) fs::create_directory(dst, ec);
    o.record->dir = dst.string();
  };
  RunnerOptions so = opts;
  so.on_event = [&](const RunnerEvent& e) {
    RunnerEvent x = e;
    if (e.workload >= 0) x.workload = batch.at(static_cast<size_t>(e.workload));
    if (e.kind == "result" && e.outcome) {
      if (e.outcome->record) return;  // reported once judged
      WorkloadOutcome o = *e.outcome;
      o.index = x.workload;
      x.outcome = &o;
      emit(x);
      return;
    }
    emit(x);
  };
  WorkerPlan jp = reference_plan(plan, opts);
  jp.value_secret = secret;
  jp.timing_after_go = true;
  // On a GPU the reference worker starts now, beside the solution's, and gets its
  // work when the records exist (WorkerPlan::work_follows): its start is off the
  // critical path. Not on the CPU, where its start would share the cores with the
  // solution's timed calls. SOLBENCH_EARLY_REFERENCE_WORKER=0 / 1: never / always.
  std::optional<Launch> early;
  const char* early_env = std::getenv("SOLBENCH_EARLY_REFERENCE_WORKER");
  const std::string early_mode = early_env ? early_env : "";
  if (early_mode == "1" || (early_mode != "0" && plan.device.rfind("cuda", 0) == 0)) {
    WorkerPlan head = jp;
    head.work_follows = true;
    head.warm_up = sp.workloads.front();
    try {
      Launch l = launch_worker(head, opts);
      lend_caches(head.sandbox, l.scratch.path());
      l.seal = new_seal();
      if (write_frame(l.child.channel_fd(), sealed_plan(head, l.seal),
                      deadline_after(opts.startup_timeout))
              .ok())
        early.emplace(std::move(l));
      else
        take_back_caches(head.sandbox, l.scratch.path());
    } catch (const SpawnError&) {
      // Started the usual way below, which reports the failure if it repeats.
    }
  }

  // The solution's worker, done, exits while the judge judges; T_ref is timed only
  // once it has (WorkerPlan::timing_after_go).
  std::vector<Child> exiting;
  hooks.exiting = &exiting;
  RunnerResult sr = run_workers(sp, so, &hooks);
  std::promise<void> gone;
  RunHooks judge_hooks;
  judge_hooks.go = gone.get_future().share();
  std::vector<std::string> exits(exiting.size());
  std::thread reaper([&exiting, &exits, &gone] {
    for (size_t i = 0; i < exiting.size(); ++i)
      exits[i] = exiting[i].wait(deadline_after(std::chrono::seconds(30))).describe();
    gone.set_value();
  });
  // The handed-over workers' records get their exit status once it is known.
  const size_t first_record = result.workers.size();
  struct JoinReaper {
    std::thread& t;
    std::vector<std::string>& exits;
    json& records;
    size_t from;
    ~JoinReaper() {
      t.join();
      size_t k = 0;
      for (size_t i = from; i < records.size() && k < exits.size(); ++i)
        if (records[i].value("exit", "") == kExitingBesideJudge) records[i]["exit"] = exits[k++];
    }
  } join_reaper{reaper, exits, result.workers, first_record};
  for (auto& w : sr.workers) result.workers.push_back(std::move(w));
  if (!sr.env.empty()) result.env = sr.env;
  if (!sr.sandbox.empty()) result.sandbox = sr.sandbox;

  std::vector<size_t> judged;  // positions in the batch
  for (size_t pos = 0; pos < batch.size(); ++pos) {
    WorkloadOutcome& o = sr.outcomes[pos];
    const int idx = batch[pos];
    o.index = idx;
    if (!o.record) {  // decided without a verdict on values: reported already
      final[idx] = o;
      continue;
    }
    if (const std::string why = record_problem(plan, plan.workloads[idx], o); !why.empty()) {
      WorkloadOutcome f = failed(idx, o.uuid, Status::RuntimeError,
                                 "the solution's worker sent an incomplete record: " + why);
      final[idx] = std::move(f);
      RunnerEvent e = make_event("result", idx);
      e.outcome = &*final[idx];
      emit(e);
      if (!opts.keep_scratch) remove_tree_quietly(o.record->dir);
      continue;
    }
    if (o.status != Status::Passed && o.record->failed_stage.empty())
      o.record->failed_stage = "after";
    judged.push_back(pos);
    jp.workloads.push_back(plan.workloads[idx]);
    jp.records.push_back(*o.record);
  }
  if (judged.empty()) {  // an early reference worker is killed unused
    if (early) take_back_caches(jp.sandbox, early->scratch.path());
    return;
  }

  RunnerOptions ro = opts;
  ro.reference_worker = false;
  ro.on_event = [&](const RunnerEvent& e) {
    const int idx = e.workload >= 0 ? batch[judged.at(static_cast<size_t>(e.workload))] : -1;
    if (e.kind == "worker_start") {
      RunnerEvent x = make_event("worker_start");
      x.message = "reference";
      emit(x);
    } else if ((e.kind == "begin" || e.kind == "progress") && idx >= 0) {
      RunnerEvent x = make_event("progress", idx);
      x.phase = e.kind == "begin" ? "judging" : e.phase;
      x.round = e.round;
      emit(x);
    } else if (e.kind == "result" && e.outcome && idx >= 0 && !final[idx]) {
      const WorkloadOutcome& sol = sr.outcomes[judged.at(static_cast<size_t>(e.workload))];
      if (!opts.keep_scratch && sol.record) remove_tree_quietly(sol.record->dir);
      final[idx] = merge_judged(sol, *e.outcome);
      RunnerEvent x = make_event("result", idx);
      x.outcome = &*final[idx];
      emit(x);
    }
  };
  RunnerResult jr = run_workers(jp, ro, &judge_hooks, std::move(early));
  for (auto& w : jr.workers) result.reference_workers.push_back(std::move(w));
  for (size_t j = 0; j < judged.size(); ++j) {  // every result was reported; be safe
    const int idx = batch[judged[j]];
    if (!final[idx]) final[idx] = merge_judged(sr.outcomes[judged[j]], jr.outcomes.at(j));
  }
}

RunnerResult run_judged(const WorkerPlan& plan, const RunnerOptions& opts) {
  RunnerResult result;
  const std::filesystem::path base =
      opts.staging_base.empty() ? default_staging_base() : opts.staging_base;
  const uint64_t secret = evaluation_secret(plan);
  std::vector<std::optional<WorkloadOutcome>> final(plan.workloads.size());
  for (const std::vector<int>& batch : record_batches(plan, base))
    judge_batch(plan, batch, secret, opts, base, result, final);
  for (size_t i = 0; i < final.size(); ++i)
    result.outcomes.push_back(final[i] ? std::move(*final[i])
                                       : failed(static_cast<int>(i),
                                                plan.workloads[i].value("uuid", ""),
                                                Status::RuntimeError, "no outcome was produced"));
  return result;
}

}  // namespace

RunnerResult run_plan(const WorkerPlan& plan, const RunnerOptions& opts) {
  const json first = plan.workloads.empty() ? json(nullptr) : plan.workloads.front();
  if (!opts.reference_worker || plan.reference_role || plan.record_calls) {
    RunnerResult r = run_workers(plan, opts, nullptr);
    prepare_spares({&plan}, first, opts);
    return r;
  }
  RunnerResult r = run_judged(plan, opts);
  const WorkerPlan rp = reference_plan(plan, opts);
  prepare_spares({&plan, &rp}, first, opts);
  return r;
}

}  // namespace solbench::harness
