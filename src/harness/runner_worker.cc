// One worker process through its workloads (WorkerRun), and the loop that starts a
// fresh worker for the workloads left after one ended early (run_workers).
#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>
#include <utility>

#include <fmt/format.h>

#include "harness/framing.h"
#include "harness/runner_inbox.h"
#include "harness/runner_internal.h"
#include "harness/values.h"
#include "harness/worker/worker_policy.h"

namespace solbench::harness::runner_detail {

namespace {

int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// One worker process working through `indices` (positions in the full plan).
class WorkerRun {
 public:
  // `early`: a worker started ahead with the plan less its work (a Judge with
  // work_follows); it gets the work (a WorkOrder) instead of the plan.
  WorkerRun(const WorkerPlan& plan, std::vector<int> indices, const RunnerOptions& opts,
            RunnerResult& result, const RunHooks* hooks, std::optional<Launch> early)
      : plan_(plan), indices_(std::move(indices)), opts_(opts), result_(result), hooks_(hooks),
        launched_(std::move(early)), early_(launched_.has_value()) {}

  // Returns the outcomes it produced, keyed by plan index.
  std::vector<WorkloadOutcome> run();

 private:
  // run()'s steps.
  WorkerPlan sub_plan() const;
  bool launch();
  bool send_first(const WorkerPlan& sub);
  void start_go(std::mutex& write_mu);
  bool awaiting_go();  // true: a timeout that is no timeout yet (deadline_ moved on)
  ValueIssuer value_issuer() const;
  std::optional<std::pair<std::string, int>> workload_at(int pos) const;
  bool handle(std::optional<ChannelInbox::Item> item);  // false: the worker's run ended

  // What each frame does; those that return bool say whether to read on.
  void on_ready(const json& m);
  void on_load_failed(const json& m, bool fatal);
  bool on_keep(const json& m);
  bool on_begin(const json& m);
  void on_progress(const json& m);
  void on_rounds(const json& m);
  bool on_result(const json& m, const ChannelInbox::Item& item);
  void on_restart(const json& m);
  void on_done();

  // The ways a worker ends early.
  void on_timeout();
  void on_broken(const FrameResult& f);
  void end_worker(Status st, const std::string& why);
  void protocol_broken(const std::string& how, const std::string& why);
  // The workload in progress fails with `st`, `message` and its log; with none in
  // progress every one left fails with `rest`.
  void fail_from_here(Status st, const std::string& message, const std::string& rest);
  void fail_rest(size_t from, Status st, const std::string& log);
  void stop_reading();

  void event(RunnerEvent e) {
    if (opts_.on_event) opts_.on_event(e);
  }
  // A streamed Judge with its work sent already (RunHooks::streamed).
  bool streamed() const { return early_ && hooks_ && hooks_->streamed; }
  const std::string& uuid(int pos) const {
    return plan_.workloads[indices_[pos]].at("uuid").get_ref<const std::string&>();
  }
  Child& child() { return launched_->child; }
  json& record() { return launched_->record; }

  const WorkerPlan& plan_;
  std::vector<int> indices_;
  const RunnerOptions& opts_;
  RunnerResult& result_;
  const RunHooks* hooks_;
  std::optional<Launch> launched_;
  const bool early_;

  std::vector<WorkloadOutcome> out_;
  std::vector<WorkloadOutcome> handed_back_;  // after "keep": not this worker's any more
  Deadline deadline_;
  int current_ = -1;  // position being evaluated
  uint64_t log_offset_ = 0;
  bool ready_ = false;
  size_t next_pos_ = 0;  // positions before this have outcomes
  std::string end_how_;
  // While the channel is read (run()'s own): the inbox and the "go" thread.
  ChannelInbox* inbox_ = nullptr;
  std::thread* go_thread_ = nullptr;
  std::atomic<int64_t> go_sent_ns_{0};  // gpu_after_go: when "go" (or "cancel") was sent
};

WorkerPlan WorkerRun::sub_plan() const {
  WorkerPlan sub = plan_;
  sub.seed = 0;  // the parent's alone (evaluation_secret)
  sub.workloads.clear();
  for (int i : indices_) sub.workloads.push_back(plan_.workloads[i]);
  if (!plan_.judge.records.empty()) {
    sub.judge.records.clear();
    for (int i : indices_) sub.judge.records.push_back(plan_.judge.records.at(static_cast<size_t>(i)));
  }
  return sub;
}

bool WorkerRun::launch() {
  if (!launched_) {
    try {
      launched_.emplace(launch_worker(plan_, opts_));
    } catch (const SpawnError& e) {
      fail_rest(0, Status::RuntimeError, std::string("cannot start a worker: ") + e.what());
      result_.workers.push_back({{"workloads", json::array()}, {"exit", "not started"}});
      return false;
    }
  }
  if (early_) record()["started_early"] = true;
  if (streamed()) record()["streamed"] = true;
  event(make_event(EventKind::WorkerStart));
  return true;
}

// The plan (sealed), or an early worker's work.
bool WorkerRun::send_first(const WorkerPlan& sub) {
  if (streamed()) return true;  // its work went to it as the Recorder reported it
  if (!early_) launched_->seal = new_seal();
  const json first = early_ ? WorkOrder{false, sub.workloads, sub.judge.records}.to_json()
                            : sealed_plan(sub, launched_->seal);
  if (write_frame(child().channel_fd(), first, deadline_).ok()) return true;
  child().kill_group();
  ExitStatus st = child().wait(deadline_after(std::chrono::seconds(5)));
  fail_rest(0, Status::RuntimeError,
            std::string("the worker did not accept its ") + (early_ ? "work" : "plan") + " (" +
                st.describe() + ")\n" + tail(child().log()));
  result_.workers.push_back(record());
  return false;
}

// "go" from a thread of its own: to a Judge (JudgeOptions::timing_after_go) once
// the Recorder has exited; to a plan with gpu_after_go once RunnerOptions::go
// holds (or "cancel"). Joined before the channel closes or the run returns.
void WorkerRun::start_go(std::mutex& write_mu) {
  const int fd = child().channel_fd();
  const auto send = [fd, &write_mu](FrameType type, json fields = json::object()) {
    std::lock_guard<std::mutex> lock(write_mu);
    write_frame(fd, make_frame(type, std::move(fields)), deadline_after(std::chrono::seconds(10)));
  };
  if (plan_.gpu_after_go) {
    if (!opts_.go.valid()) {  // nobody will say: go now
      send(FrameType::Go);
      go_sent_ns_ = steady_ns();
      return;
    }
    *go_thread_ = std::thread([this, go = opts_.go, send] {
      send(go_given(go) ? FrameType::Go : FrameType::Cancel);
      go_sent_ns_ = steady_ns();
    });
    return;
  }
  if (!hooks_ || !hooks_->go.valid() || !plan_.judge.timing_after_go) return;
  *go_thread_ = std::thread([go = hooks_->go, send,
                             known = positions_in_worker(hooks_->reference_known, indices_)] {
    go.wait();
    send(FrameType::Go, {{"reference_known", known}});
  });
}

// A worker of a plan with gpu_after_go that said "ready" has no deadline until its
// "go" is sent, then workload_timeout from then on to begin its first workload
// (it ends the compile in progress first). Checked once a second.
bool WorkerRun::awaiting_go() {
  if (!plan_.gpu_after_go || !ready_ || current_ >= 0) return false;
  const int64_t sent = go_sent_ns_.load();
  const auto now = std::chrono::steady_clock::now();
  if (sent == 0) {
    deadline_ = now + std::chrono::seconds(1);
    return true;
  }
  const auto until =
      std::chrono::steady_clock::time_point(std::chrono::nanoseconds(sent)) +
      std::chrono::duration_cast<std::chrono::steady_clock::duration>(opts_.workload_timeout);
  if (until <= now) return false;
  deadline_ = until;
  return true;
}

// The seeds of the values, handed out on request while a workload runs (values.h).
ValueIssuer WorkerRun::value_issuer() const {
  return ValueIssuer(hooks_ && hooks_->value_secret ? hooks_->value_secret : evaluation_secret(plan_),
                     plan_.rounds + std::max(2, plan_.input_sets), max_calls(plan_.timing));
}

std::optional<std::pair<std::string, int>> WorkerRun::workload_at(int pos) const {
  if (pos < 0 || static_cast<size_t>(pos) >= indices_.size()) return std::nullopt;
  const json& spec = plan_.workloads[indices_[pos]];
  return std::make_pair(uuid(pos),
                        plan_.time_solution ? sampled_calls(plan_.verify_samples, spec) : 0);
}

std::vector<WorkloadOutcome> WorkerRun::run() {
  const WorkerPlan sub = sub_plan();
  if (!launch()) return std::move(out_);
  // The plan's compile caches move into the worker's scratch folder before it has
  // its plan, and back once it is done (worker_policy.h).
  const std::filesystem::path scratch = launched_->scratch.path();
  if (!early_) lend_caches(plan_.sandbox, scratch);
  struct TakeBack {
    const json& sandbox;
    const std::filesystem::path& scratch;
    bool done = false;
    void operator()() {
      if (!std::exchange(done, true)) take_back_caches(sandbox, scratch);
    }
    ~TakeBack() { (*this)(); }
  } take_back{plan_.sandbox, scratch};
  deadline_ = deadline_after(opts_.startup_timeout);
  if (!send_first(sub)) return std::move(out_);

  std::mutex write_mu;  // the go thread's and the inbox's answers
  std::thread go_thread;
  struct JoinGo {
    std::thread& t;
    ~JoinGo() {
      if (t.joinable()) t.join();
    }
  } join_go{go_thread};
  go_thread_ = &go_thread;
  start_go(write_mu);
  ChannelInbox inbox(child().channel_fd(), launched_->seal, value_issuer(),
                     plan_.role != WorkerRole::Judge,
                     [this](int pos) { return workload_at(pos); }, write_mu);
  inbox_ = &inbox;
  while (handle(inbox.next(deadline_))) {
  }
  // What a call's tail costs after the worker's last frame (docs/speed.md): the
  // caches' check and move, then the record.
  const int64_t ended_ns = monotonic_ns();
  take_back();
  record()["take_back_ms"] = static_cast<double>(monotonic_ns() - ended_ns) / 1e6;
  record()["end_t_ns"] = monotonic_ns();
  record()["exit"] = end_how_;
  result_.workers.push_back(record());
  RunnerEvent e = make_event(EventKind::WorkerExit);
  e.message = end_how_;
  event(e);
  inbox.stop();
  inbox_ = nullptr;
  for (auto& o : handed_back_) out_.push_back(std::move(o));
  return std::move(out_);
}

bool WorkerRun::handle(std::optional<ChannelInbox::Item> item) {
  if (!item || item->frame.status == FrameStatus::Timeout) {
    if (awaiting_go()) return true;
    on_timeout();
    return false;
  }
  const FrameResult& f = item->frame;
  if (!f.ok()) {
    on_broken(f);
    return false;
  }
  if (!item->violation.empty()) {
    end_worker(Status::RewardHack, item->violation);
    return false;
  }
  const json& m = f.message;
  const std::optional<FrameType> type = frame_type(m);
  if (!type) return true;  // unknown frame types are ignored (forward compatibility)
  switch (*type) {
    case FrameType::Hello:
      record()["hello_t_ns"] = m.value("t_ns", int64_t{0});
      record()["pid"] = m.value("pid", 0);
      return true;
    case FrameType::Ready:
      on_ready(m);
      return true;
    case FrameType::LoadFailed:
    case FrameType::Fatal:
      on_load_failed(m, *type == FrameType::Fatal);
      return false;
    case FrameType::Keep:
      return on_keep(m);
    case FrameType::Begin:
      return on_begin(m);
    case FrameType::Progress:
      on_progress(m);
      return true;
    case FrameType::Rounds:
      on_rounds(m);
      return true;
    case FrameType::Result:
      return on_result(m, *item);
    case FrameType::Restart:
      on_restart(m);
      return false;
    case FrameType::Done:
      on_done();
      return false;
    default:
      return true;  // the parent's own frame types: nothing a worker sends
  }
}

void WorkerRun::on_ready(const json& m) {
  ready_ = true;
  record()["ready_t_ns"] = m.value("t_ns", int64_t{0});
  record()["sandboxed_t_ns"] = m.value("sandboxed_t_ns", int64_t{0});
  record()["phases_ms"] = m.value("phases_ms", json::object());
  result_.env = m.value("env", json::object());
  result_.sandbox = m.value("sandbox", json::object());
  deadline_ = deadline_after(opts_.workload_timeout);
  // A streamed Judge says nothing until it has judged all it was sent and timed
  // the first T_ref: each workload's allowance, for all of them.
  if (streamed())
    deadline_ = deadline_after(opts_.workload_timeout * static_cast<double>(indices_.size()));
  (void)awaiting_go();  // before "go": no workload deadline yet
  RunnerEvent e = make_event(EventKind::Ready);
  e.env = &result_.env;
  event(e);
}

void WorkerRun::on_load_failed(const json& m, bool fatal) {
  const std::string msg = m.value("message", "");
  stop_reading();
  child().close_channel();
  ExitStatus st = child().wait(deadline_after(std::chrono::seconds(10)));
  end_how_ = st.describe();
  const size_t first_failed = out_.size();
  fail_rest(next_pos_, m.value("reward_hack", false) ? Status::RewardHack : Status::RuntimeError,
            msg + (fatal ? "\n" + tail(child().log()) : std::string()));
  // Not runnable here (WorkerSession's LoadError::skip): skipped, with the reason.
  if (!fatal && m.value("skip", false))
    for (size_t p = first_failed; p < out_.size(); ++p) {
      out_[p].skipped = true;
      out_[p].skip_reason = msg;
      out_[p].log.clear();
    }
  next_pos_ = indices_.size();
}

// A worker of a plan with hand_back answers "go" with how many of its workloads it
// keeps (WorkerPlan::hand_back): the others are handed back, unmeasured, each with
// a HandedBack event, and it owes only the ones it kept.
bool WorkerRun::on_keep(const json& m) {
  const int64_t kept = m.value("workloads", int64_t{-1});
  if (!plan_.hand_back || record().contains("kept") || next_pos_ != 0 || current_ >= 0 ||
      kept < 1 || kept > static_cast<int64_t>(indices_.size())) {
    protocol_broken("an unexpected keep", "\"keep\" of " + std::to_string(kept) + " of " +
                                              std::to_string(indices_.size()) + " workloads");
    return false;
  }
  for (size_t p = static_cast<size_t>(kept); p < indices_.size(); ++p) {
    WorkloadOutcome o = failed(indices_[p], uuid(static_cast<int>(p)), Status::RuntimeError,
                               "handed back unmeasured at \"go\"");
    o.handed_back = true;
    handed_back_.push_back(std::move(o));
    event(make_event(EventKind::HandedBack, indices_[p]));
  }
  indices_.resize(static_cast<size_t>(kept));
  record()["kept"] = kept;
  return true;
}

bool WorkerRun::on_begin(const json& m) {
  const int pos = m.value("index", -1);
  if (pos < 0 || static_cast<size_t>(pos) != next_pos_) {
    protocol_broken("out-of-order frame", "workload " + std::to_string(pos) + " out of order");
    return false;
  }
  current_ = pos;
  // This workload's prints start after its marker, which the worker wrote before
  // the frame (the drain thread may already hold some of them, or not yet all
  // of the previous workload's).
  child().sync_log();
  log_offset_ = child()
                    .log_offset_after(log_offset_, workload_log_marker(static_cast<size_t>(pos)))
                    .value_or(child().log_bytes());
  deadline_ = deadline_after(opts_.workload_timeout);
  record()["workloads"].push_back(
      {{"index", indices_[pos]}, {"begin_t_ns", m.value("t_ns", int64_t{0})}});
  if (m.contains("judged_t_ns"))  // a streamed Judge: when its judging began
    record()["workloads"].back()["judged_t_ns"] = m.value("judged_t_ns", int64_t{0});
  event(make_event(EventKind::Begin, indices_[pos]));
  return true;
}

void WorkerRun::on_progress(const json& m) {
  if (current_ < 0) return;
  RunnerEvent e = make_event(EventKind::Progress, indices_[current_]);
  e.phase = parse_phase(m.value("phase", ""));
  e.round = m.value("round", -1);
  event(e);
}

// Whatever is wrong with it, the frame is let go: the result frame's record,
// checked as always, decides.
void WorkerRun::on_rounds(const json& m) {
  if (current_ < 0 || !hooks_ || !hooks_->on_rounds || m.value("index", -1) != current_) return;
  CallRecord r;
  try {
    r = CallRecord::from_json(m.at("record"));
  } catch (const std::exception&) {
    return;
  }
  r.dir.clear();
  if (r.rounds.size() != static_cast<size_t>(plan_.rounds) || !r.samples.empty() || r.timed ||
      !r.failed_stage.empty())
    return;
  hooks_->on_rounds(r, launched_->scratch.path(), static_cast<size_t>(current_),
                    static_cast<size_t>(indices_[current_]));
}

bool WorkerRun::on_result(const json& m, const ChannelInbox::Item& item) {
  WorkloadOutcome o;
  try {
    o = WorkloadOutcome::from_json(m);
  } catch (const std::exception& e) {
    o = failed(-1, "", Status::RuntimeError,
               std::string("the worker sent a malformed result: ") + e.what());
    o.index = current_;
  }
  if (current_ < 0 || o.index != current_) {
    protocol_broken("result for a workload not begun", "a result for a workload not begun");
    return false;
  }
  // The log the trace carries: what the worker wrote while on this workload
  // (the solution's prints), then the evaluation's own message.
  child().sync_log();  // the worker printed before it sent the result
  std::string captured = child().log_since(log_offset_);
  if (!captured.empty()) o.log = tail(captured) + (o.log.empty() ? "" : "\n" + o.log);
  o.index = indices_[current_];
  o.uuid = uuid(current_);
  // What the worker reports against what the parent handed out and saw.
  if (const std::string why = item.at_result ? item.at_result->check(o) : std::string();
      !why.empty()) {
    o.status = Status::RewardHack;
    o.log = "the worker's report cannot be believed: " + why + (o.log.empty() ? "" : "\n" + o.log);
    o.correctness.reset();
    o.timing.reset();
    o.reference_timing.reset();
    o.record.reset();
  }
  // Compile caches over their limit, a tmpfs found full (worker_policy.h).
  const std::filesystem::path& scratch = launched_->scratch.path();
  check_worker_writes(plan_.sandbox, result_.sandbox, scratch, o);
  if (hooks_ && hooks_->on_result) hooks_->on_result(o, scratch, current_);
  if (!record()["workloads"].empty())
    record()["workloads"].back()["result_t_ns"] = m.value("t_ns", int64_t{0});
  out_.push_back(std::move(o));
  RunnerEvent e = make_event(EventKind::Result, indices_[current_]);
  e.outcome = &out_.back();
  event(e);
  next_pos_ = current_ + 1;
  current_ = -1;
  deadline_ = deadline_after(opts_.workload_timeout);
  return true;
}

// The worker's state is spoiled (a sticky CUDA error): it reported its last
// workload and exits; the workloads after it go to a fresh worker.
void WorkerRun::on_restart(const json& m) {
  stop_reading();
  child().close_channel();
  ExitStatus st = child().wait(deadline_after(std::chrono::seconds(30)));
  end_how_ = "restart requested (" + m.value("reason", std::string()) + "); " + st.describe();
}

void WorkerRun::on_done() {
  // When it said it was done, and (below) when it was seen to exit: what CUDA's
  // teardown costs before a Judge may time T_ref (RunHooks::exiting).
  record()["done_t_ns"] = monotonic_ns();
  stop_reading();
  child().close_channel();
  if (plan_.role == WorkerRole::Judge && hooks_ && hooks_->exiting) {
    // Another batch follows (runner_judged.cc): it begins once this one has exited,
    // so that the GPU memory its judging held is free again.
    end_how_ = "done (its exit awaited before the next batch)";
    hooks_->exiting->push_back(std::move(child()));
  } else if (plan_.role == WorkerRole::Judge) {
    // A Judge ran no solution code and has reported everything: its exit (CUDA's
    // teardown, 0.15 s on an H100) is not waited for; the Child's end signals what
    // is left of it (a zygote's keeper reaps it).
    end_how_ = "done (its exit not awaited)";
  } else if (hooks_ && hooks_->exiting) {
    // The judge waits for it before it times anything (RunHooks::exiting).
    end_how_ = kExitingBesideJudge;  // the exit status replaces it (runner_judged.cc)
    hooks_->exiting->push_back(std::move(child()));
  } else {
    ExitStatus st = child().wait(deadline_after(std::chrono::seconds(30)));
    record()["exit_t_ns"] = monotonic_ns();
    end_how_ = st.describe();
  }
  if (next_pos_ < indices_.size())
    fail_rest(next_pos_, Status::RuntimeError, "the worker finished without evaluating this workload");
  next_pos_ = indices_.size();
}

void WorkerRun::on_timeout() {
  child().kill_group();
  ExitStatus st = child().wait(deadline_after(std::chrono::seconds(10)));
  end_how_ = "killed after a timeout";
  fail_from_here(Status::Timeout,
                 fmt::format("the workload did not finish within {:g} s; the worker was killed "
                             "({})\n",
                             opts_.workload_timeout.count(), st.describe()),
                 fmt::format("the worker did not {} within {:g} s\n",
                             ready_ ? "start the next workload" : "start",
                             (ready_ ? opts_.workload_timeout : opts_.startup_timeout).count()) +
                     tail(child().log()));
}

// The worker died or broke the framing.
void WorkerRun::on_broken(const FrameResult& f) {
  if (f.status == FrameStatus::Error) child().kill_group();
  ExitStatus st = child().wait(deadline_after(std::chrono::seconds(10)));
  end_how_ = st.describe();
  const std::string why =
      f.status == FrameStatus::Eof
          ? "the worker ended unexpectedly (" + st.describe() + ")"
          : "the worker broke the protocol (" + f.error + "; " + st.describe() + ")";
  fail_from_here(Status::RuntimeError, why + "\n", why + "\n" + tail(child().log()));
}

// Ends this worker for something it sent: the workload in progress (else every
// one left) fails with `st`; a new worker takes the rest.
void WorkerRun::end_worker(Status st, const std::string& why) {
  child().kill_group();
  ExitStatus es = child().wait(deadline_after(std::chrono::seconds(10)));
  end_how_ = "killed: " + why.substr(0, 200) + " (" + es.describe() + ")";
  fail_from_here(st, why + "\n", why);
}

void WorkerRun::protocol_broken(const std::string& how, const std::string& why) {
  child().kill_group();
  child().wait(deadline_after(std::chrono::seconds(10)));
  end_how_ = "killed: " + how;
  fail_rest(next_pos_, Status::RuntimeError, "the worker broke the protocol (" + why + ")");
  next_pos_ = indices_.size();
}

void WorkerRun::fail_from_here(Status st, const std::string& message, const std::string& rest) {
  if (current_ >= 0) {
    out_.push_back(failed(indices_[current_], uuid(current_), st,
                          message + tail(child().log_since(log_offset_))));
    next_pos_ = current_ + 1;
  } else if (streamed() && next_pos_ == 0) {
    // It ended while judging ahead (which workload is not known here): a fresh
    // Judge judges them all again, each under its own deadline.
    next_pos_ = indices_.size();
  } else {
    fail_rest(next_pos_, st, rest);
    next_pos_ = indices_.size();
  }
}

void WorkerRun::fail_rest(size_t from, Status st, const std::string& log) {
  for (size_t p = from; p < indices_.size(); ++p)
    out_.push_back(failed(indices_[p], uuid(static_cast<int>(p)), st, log));
}

void WorkerRun::stop_reading() {
  if (go_thread_ && go_thread_->joinable()) go_thread_->join();
  if (inbox_) inbox_->stop();
}

}  // namespace

std::vector<size_t> positions_in_worker(const std::vector<size_t>& plan_positions,
                                        const std::vector<int>& indices) {
  std::vector<size_t> out;
  for (size_t k = 0; k < indices.size(); ++k)
    if (std::find(plan_positions.begin(), plan_positions.end(), static_cast<size_t>(indices[k])) !=
        plan_positions.end())
      out.push_back(k);
  return out;
}

RunnerResult run_workers(const WorkerPlan& plan, const RunnerOptions& opts,
                         const RunHooks* hooks, std::optional<Launch> early) {
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
    if (e.kind == EventKind::Result && e.workload >= 0 && e.workload < n) reported[e.workload] = true;
    if (opts.on_event) opts.on_event(e);
  };
  while (!remaining.empty()) {
    // A streamed Judge may end with no outcome at all (RunHooks::streamed); the
    // next worker is started the usual way, so this happens once.
    const bool may_end_empty = early && hooks && hooks->streamed;
    WorkerRun run(plan, remaining, wopts, result, hooks, std::move(early));
    early.reset();
    std::vector<WorkloadOutcome> got = run.run();
    for (const auto& o : got) {
      if (o.index < 0 || o.index >= n || reported[o.index]) continue;
      reported[o.index] = true;
      if (o.handed_back) continue;  // said by its HandedBack event; no result is owed
      RunnerEvent e = make_event(EventKind::Result, o.index);
      e.outcome = &o;
      if (opts.on_event) opts.on_event(e);
    }
    if (got.empty() && !may_end_empty) {  // cannot happen otherwise; never loop forever
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

}  // namespace solbench::harness::runner_detail
