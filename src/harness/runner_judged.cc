// A judged evaluation (runner.h RunnerOptions::reference_worker): per batch of
// workloads a Recorder runs the solution and records its calls, then a Judge that
// never loads solution code judges the records and times the reference; the two
// outcomes of a workload are merged into one.
#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <future>
#include <thread>

#include <fmt/format.h>

#include "core/settings.h"
#include "harness/framing.h"
#include "harness/runner_internal.h"
#include "harness/worker/worker_policy.h"

namespace solbench::harness::runner_detail {

namespace fs = std::filesystem;

WorkerPlan reference_plan(const WorkerPlan& plan, const RunnerOptions& opts) {
  WorkerPlan rp = plan;
  rp.role = WorkerRole::Judge;
  rp.solution_name = plan.solution_name + "/reference";
  rp.entry = EntryPoint::reference();
  rp.time_solution = false;
  // --profile stays: the reference's call is profiled after T_ref's timed loop, in
  // the worker that times it (WorkloadOutcome::reference_profile).
  rp.workloads.clear();
  rp.judge = JudgeOptions{};
  rp.sandbox = opts.reference_sandbox;
  return rp;
}

WorkloadOutcome merge_judged(WorkloadOutcome o, const WorkloadOutcome& judge,
                             const std::optional<TimingResult>& known) {
  // A workload that did not pass has no time, nor a profile of one.
  const auto untimed = [](WorkloadOutcome& w) {
    w.timing.reset();
    w.reference_timing.reset();
    w.profile = nullptr;
    w.reference_profile = nullptr;
    return std::move(w);
  };
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
    return untimed(o);
  }
  if (judge.status != Status::Passed) {
    std::string why = judge.log;
    if (judge.status == Status::RuntimeError || judge.status == Status::Timeout)
      why = "judging in the reference worker: " + why;
    o.status = judge.status;
    o.log = why + (o.log.empty() ? "" : "\n" + o.log);
    if (judge.status == Status::IncorrectNumerical) o.correctness = judge.correctness;
    else o.correctness.reset();
    return untimed(o);
  }
  if (o.status != Status::Passed) {  // the solution's own failure stands
    o.correctness.reset();
    return untimed(o);
  }
  o.correctness = judge.correctness;
  if (!o.timing) return o;
  o.extra["reference_timed_in"] = "reference worker";
  if (judge.reference_timing) {
    o.reference_timing = judge.reference_timing;
    o.reference_profile = judge.reference_profile;  // --profile: where T_ref was timed
    return o;
  }
  if (known) {
    o.reference_timing = known;
    o.extra["reference_timing_cached"] = true;
    return o;
  }
  std::string why = judge.log;
  if (why.size() > 500) why = why.substr(0, 500) + " [...]";
  o.log += std::string(o.log.empty() ? "" : "\n") +
           "timing the reference failed (in the reference worker): " +
           (why.empty() ? std::string("no timing reported") : why);
  return o;
}

namespace {

std::shared_future<void> ready_future() {
  std::promise<void> p;
  p.set_value();
  return p.get_future().share();
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

// Moves the files `names` (every entry where `names` is empty) of the Recorder's
// record folder scratch/judge/<pos> into `dst`, which exists, and says whether all
// of them moved. The worker may still run (its rounds are moved while it times):
// nothing on the way is followed if it is a symbolic link, so that a folder of its
// scratch swapped for one cannot make the parent move (then delete) files of its
// own; an entry that is a link moves as the link, which the Judge refuses to read.
bool move_recorded(const fs::path& scratch, size_t pos, const fs::path& dst,
                   const std::vector<std::string>& names) {
  constexpr int kDir = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
  struct Fd {
    int fd;
    ~Fd() {
      if (fd >= 0) ::close(fd);
    }
  };
  const Fd top{::open(scratch.c_str(), kDir)};
  const Fd judge{top.fd < 0 ? -1 : ::openat(top.fd, "judge", kDir)};
  const Fd src{judge.fd < 0 ? -1 : ::openat(judge.fd, std::to_string(pos).c_str(), kDir)};
  const Fd to{::open(dst.c_str(), kDir)};
  if (src.fd < 0 || to.fd < 0) return false;
  std::vector<std::string> all = names;
  if (all.empty()) {
    const int listed = ::dup(src.fd);
    DIR* d = listed < 0 ? nullptr : ::fdopendir(listed);
    if (!d) {
      if (listed >= 0) ::close(listed);
      return false;
    }
    while (const dirent* e = ::readdir(d))
      if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0)
        all.emplace_back(e->d_name);
    ::closedir(d);
  }
  bool moved = true;
  for (const std::string& n : all)
    if (::renameat(src.fd, n.c_str(), to.fd, n.c_str()) != 0) moved = false;
  return moved;
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
  if (const auto b = settings().record_budget_bytes) budget = *b;  // tests, diagnosis
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


// Waits, on a thread of its own, for the Recorders handed over to exit beside the
// judging (RunHooks::exiting); `gone()` is ready then. Their records in
// `workers` from `from` on get their exit status once it is known.
class Reaper {
 public:
  Reaper(std::vector<Child>& exiting, json& workers, size_t from)
      : exiting_(exiting), workers_(workers), from_(from), exits_(exiting.size()),
        exit_t_ns_(exiting.size()) {
    gone_future_ = gone_.get_future().share();
    thread_ = std::thread([this] {
      for (size_t i = 0; i < exiting_.size(); ++i) {
        exits_[i] = exiting_[i].wait(deadline_after(std::chrono::seconds(30))).describe();
        exit_t_ns_[i] = monotonic_ns();
      }
      gone_.set_value();
    });
  }
  ~Reaper() {
    thread_.join();
    size_t k = 0;
    for (size_t i = from_; i < workers_.size() && k < exits_.size(); ++i)
      if (workers_[i].value("exit", "") == kExitingBesideJudge) {
        workers_[i]["exit_t_ns"] = exit_t_ns_[k];
        workers_[i]["exit"] = exits_[k++];
      }
  }
  Reaper(const Reaper&) = delete;
  Reaper& operator=(const Reaper&) = delete;
  std::shared_future<void> gone() const { return gone_future_; }

 private:
  std::vector<Child>& exiting_;
  json& workers_;
  size_t from_;
  std::vector<std::string> exits_;
  std::vector<int64_t> exit_t_ns_;  // when each exit was seen (monotonic_ns)
  std::promise<void> gone_;
  std::shared_future<void> gone_future_;
  std::thread thread_;
};

// One batch of a judged evaluation: the Recorder records its calls, then the Judge
// judges them; every outcome goes into `final`, by plan index.
class JudgedBatch {
 public:
  // `judge_exiting`: where the Judge goes once done when another batch follows
  // (nullptr for the last), to be awaited before that batch begins.
  JudgedBatch(const WorkerPlan& plan, const std::vector<int>& batch, const RunnerOptions& opts,
              const fs::path& base, RunnerResult& result,
              std::vector<std::optional<WorkloadOutcome>>& final,
              std::vector<Child>* judge_exiting)
      : plan_(plan), batch_(batch), opts_(opts), result_(result), final_(final),
        judge_exiting_(judge_exiting),
        records_(StagingDir::create(base, "records-", opts.keep_scratch)) {
    // The records leave the solution's scratch folder as soon as its result frame
    // arrives: the parent's folder is not in the solution's writable domain.
  }
  void run(uint64_t secret);

 private:
  WorkerPlan recorder_plan() const;
  RunHooks recorder_hooks(uint64_t secret, std::vector<Child>* exiting);
  RunnerOptions recorder_options();
  bool may_stream() const;
  std::optional<Launch> start_judge_early(const json& warm_up, bool streamed);
  // Why the Recorder's outcome at `pos`, which has a record, cannot go to the Judge
  // ("" when it can: its record is then made ready for it).
  std::string not_for_judge(size_t pos, WorkloadOutcome& o) const;
  bool send_to_judge(const WorkOrder& work);
  void stream_rounds(const CallRecord& r, const fs::path& scratch, size_t pos, size_t index);
  void withdraw_ahead();
  void stream(WorkloadOutcome& o);
  void hand_over();
  // known_ and the Judge's positions it holds (what "go" names).
  std::vector<size_t> look_up_known_references();
  bool may_leave_recorder_exiting() const;
  void leave_exiting(size_t first_recorder);
  RunnerOptions judge_options();
  void emit(const RunnerEvent& e) {
    if (opts_.on_event) opts_.on_event(e);
  }

  const WorkerPlan& plan_;
  const std::vector<int>& batch_;
  const RunnerOptions& opts_;
  RunnerResult& result_;
  std::vector<std::optional<WorkloadOutcome>>& final_;
  std::vector<Child>* judge_exiting_;
  StagingDir records_;
  // A streamed early Judge (JudgeOptions::streamed): its channel, and the batch
  // positions sent to it so far, in order; -1 once a send failed.
  int stream_fd_ = -1;
  std::vector<size_t> streamed_;
  // The position whose rounds it got ahead of the rest (RecordPart::Rounds), and
  // those rounds: the rest (or a withdrawal) is owed before anything else.
  std::optional<size_t> ahead_;
  std::vector<RecordedCall> ahead_rounds_;
  WorkerPlan judge_plan_;
  RunnerResult recorded_;       // the Recorder's outcomes, by position in the batch
  std::vector<size_t> judged_;  // positions in the batch the Judge gets
  // By index in judged_: T_ref known already (RunnerOptions::known_reference).
  std::vector<std::optional<TimingResult>> known_;
};

WorkerPlan JudgedBatch::recorder_plan() const {
  WorkerPlan sp = plan_;
  sp.role = WorkerRole::Recorder;
  sp.workloads.clear();
  for (int i : batch_) sp.workloads.push_back(plan_.workloads[i]);
  sp.time_reference = false;  // T_ref comes from the Judge
  return sp;
}

RunHooks JudgedBatch::recorder_hooks(uint64_t secret, std::vector<Child>* exiting) {
  RunHooks hooks;
  hooks.value_secret = secret;
  hooks.exiting = exiting;
  hooks.on_rounds = [this](const CallRecord& r, const fs::path& scratch, size_t pos,
                           size_t index) {
    if (stream_fd_ >= 0 && settings().rounds_ahead.value_or(true))
      stream_rounds(r, scratch, pos, index);
  };
  hooks.on_result = [this](WorkloadOutcome& o, const fs::path& scratch, size_t pos) {
    if (ahead_ && *ahead_ != static_cast<size_t>(o.index)) withdraw_ahead();  // its worker died
    if (!o.record) {
      if (ahead_) withdraw_ahead();
      return;
    }
    const fs::path dst = records_.path() / std::to_string(o.index);
    std::error_code ec;
    fs::create_directory(dst, ec);  // or made when its rounds went ahead
    move_recorded(scratch, pos, dst, {});
    o.record->dir = dst.string();
    if (stream_fd_ >= 0) stream(o);
  };
  return hooks;
}

bool JudgedBatch::send_to_judge(const WorkOrder& work) {
  if (write_frame(stream_fd_, work.to_json(), deadline_after(std::chrono::seconds(5))).ok())
    return true;
  stream_fd_ = -1;
  streamed_.clear();
  ahead_.reset();
  return false;
}

// The Recorder's rounds of the workload at batch position `index`, judged while
// it times the solution: their files leave its scratch folder now (their digests
// are in the frame, so what it writes to them later only fails its own record).
void JudgedBatch::stream_rounds(const CallRecord& r, const fs::path& scratch, size_t pos,
                                size_t index) {
  if (ahead_) withdraw_ahead();  // an earlier workload's result never came
  if (index >= batch_.size()) return;
  const fs::path dst = records_.path() / std::to_string(index);
  std::error_code ec;
  if (!fs::create_directory(dst, ec)) return;
  std::vector<std::string> files;
  for (const RecordedCall& c : r.rounds) files.push_back(c.file);
  if (!move_recorded(scratch, pos, dst, files)) return;  // the whole record at its result
  WorkOrder work;
  work.part = RecordPart::Rounds;
  work.workloads = {plan_.workloads[batch_[index]]};
  work.records = {r};
  work.records[0]->dir = dst.string();
  if (!send_to_judge(work)) return;
  ahead_ = index;
  ahead_rounds_ = r.rounds;
}

// The workload whose rounds went ahead is not the Judge's after all.
void JudgedBatch::withdraw_ahead() {
  WorkOrder work;
  work.part = RecordPart::Rest;
  work.workloads = {plan_.workloads[batch_[*ahead_]]};
  work.records = {std::nullopt};
  ahead_.reset();
  send_to_judge(work);
}

// The Judge's work, one workload at a time, as the Recorder reports each (its
// record is complete and out of the solution's reach by then). A send that fails
// (the Judge died, or stopped reading) ends the streaming: the batch is judged
// the usual way once the Recorder is done.
void JudgedBatch::stream(WorkloadOutcome& o) {
  const size_t pos = static_cast<size_t>(o.index);
  const bool rest = ahead_ == pos;
  if (rest && o.record->rounds != ahead_rounds_) {
    // The harness reports the rounds it sent ahead: other ones are not its report.
    o.status = Status::RewardHack;
    o.log = "the worker's report cannot be believed: its correctness rounds are not the ones it "
            "reported before timing" + (o.log.empty() ? "" : "\n" + o.log);
    o.correctness.reset();
    o.timing.reset();
    o.reference_timing.reset();
    if (!opts_.keep_scratch) remove_tree_quietly(o.record->dir);
    o.record.reset();
  }
  if (pos >= batch_.size() || !o.record || !not_for_judge(pos, o).empty()) {
    if (rest) withdraw_ahead();
    return;
  }
  WorkOrder work;
  work.part = rest ? RecordPart::Rest : RecordPart::Whole;
  work.workloads = {plan_.workloads[batch_[pos]]};
  work.records = {*o.record};
  ahead_.reset();
  if (send_to_judge(work)) streamed_.push_back(pos);
}

// The Recorder's events with plan indices; its recorded results wait for the Judge.
RunnerOptions JudgedBatch::recorder_options() {
  RunnerOptions so = opts_;
  so.on_event = [this](const RunnerEvent& e) {
    RunnerEvent x = e;
    if (e.workload >= 0) x.workload = batch_.at(static_cast<size_t>(e.workload));
    if (e.kind == EventKind::Result && e.outcome) {
      if (e.outcome->record) return;  // reported once judged
      WorkloadOutcome o = *e.outcome;
      o.index = x.workload;
      x.outcome = &o;
      emit(x);
      return;
    }
    emit(x);
  };
  return so;
}

// Whether an early Judge may judge beside the Recorder (JudgeOptions::streamed):
// both then hold a workload's values on the device at once, so only where every
// workload of the batch is small enough (protocol.h kBesideEvaluationBytes, the
// rule of T_b's workers ahead). SOLBENCH_STREAM_JUDGE=0: never.
bool JudgedBatch::may_stream() const {
  if (!settings().stream_judge.value_or(true)) return false;
  for (int i : batch_)
    if (!fits_beside_evaluation(plan_.workloads[i])) return false;
  return true;
}

// On a GPU the Judge starts now, beside the Recorder, and gets its work when the
// records exist (JudgeOptions::work_follows): its start is off the critical path.
// Streamed, it gets each workload as soon as its record exists and judges it
// while the Recorder goes on. Not on the CPU, where its start would share the
// cores with the solution's timed calls. SOLBENCH_EARLY_REFERENCE_WORKER=0 / 1:
// never / always.
std::optional<Launch> JudgedBatch::start_judge_early(const json& warm_up, bool streamed) {
  if (!settings().early_reference_worker.value_or(plan_.device.is_cuda())) return {};
  WorkerPlan head = judge_plan_;
  head.judge.work_follows = true;
  head.judge.streamed = streamed;
  head.judge.warm_up = warm_up;
  try {
    Launch l = launch_worker(head, opts_);
    lend_caches(head.sandbox, l.scratch.path());
    l.seal = new_seal();
    if (write_frame(l.child.channel_fd(), sealed_plan(head, l.seal),
                    deadline_after(opts_.startup_timeout))
            .ok())
      return l;
    take_back_caches(head.sandbox, l.scratch.path());
  } catch (const SpawnError&) {
    // Started the usual way later, which reports the failure if it repeats.
  }
  return {};
}

std::string JudgedBatch::not_for_judge(size_t pos, WorkloadOutcome& o) const {
  std::string why = record_problem(plan_, plan_.workloads[batch_[pos]], o);
  if (why.empty() && o.status != Status::Passed && o.record->failed_stage.empty())
    o.record->failed_stage = "after";
  return why;
}

// The Recorder's outcomes: final where there is nothing to judge (or the record is
// incomplete), else handed to the Judge with their records.
void JudgedBatch::hand_over() {
  for (size_t pos = 0; pos < batch_.size(); ++pos) {
    WorkloadOutcome& o = recorded_.outcomes[pos];
    const int idx = batch_[pos];
    o.index = idx;
    if (!o.record) {  // decided without a verdict on values: reported already
      final_[idx] = o;
      continue;
    }
    if (const std::string why = not_for_judge(pos, o); !why.empty()) {
      final_[idx] = failed(idx, o.uuid, Status::RuntimeError,
                           "the solution's worker sent an incomplete record: " + why);
      RunnerEvent e = make_event(EventKind::Result, idx);
      e.outcome = &*final_[idx];
      emit(e);
      if (!opts_.keep_scratch) remove_tree_quietly(o.record->dir);
      continue;
    }
    judged_.push_back(pos);
    judge_plan_.workloads.push_back(plan_.workloads[idx]);
    judge_plan_.judge.records.push_back(*o.record);
  }
}

std::vector<size_t> JudgedBatch::look_up_known_references() {
  known_.assign(judged_.size(), std::nullopt);
  std::vector<size_t> known;
  if (!opts_.known_reference || !plan_.time_reference) return known;
  for (size_t j = 0; j < judged_.size(); ++j) {
    const WorkloadOutcome& o = recorded_.outcomes[judged_[j]];
    if (o.status != Status::Passed || !o.timing) continue;  // no T_ref is owed
    known_[j] = opts_.known_reference(recorded_.env, o.uuid);
    if (known_[j]) known.push_back(j);
  }
  return known;
}

// Whether the evaluation may end without seeing the Recorder exit: nothing waits
// for it (every T_ref is known, no batch follows) and what it can hold on the GPU
// is small (its largest workload's inputs and outputs within kUnawaitedBytes), so
// that its memory is not one a next evaluation could miss while CUDA tears its
// context down (about 0.1 s on an H200, after its last result).
bool JudgedBatch::may_leave_recorder_exiting() const {
  constexpr uint64_t kUnawaitedBytes = 1ull << 30;
  if (judge_exiting_ != nullptr) return false;
  for (int i : batch_) {
    const json& spec = plan_.workloads[static_cast<size_t>(i)];
    if (workload_input_bytes(spec) + workload_output_bytes(spec) > kUnawaitedBytes) return false;
  }
  return true;
}

// The Recorders said "done" and exit on their own: their Children's end (with
// this batch) kills what is left of them, as for a Judge, and the zygote's keeper
// reaps them.
void JudgedBatch::leave_exiting(size_t first_recorder) {
  for (size_t i = first_recorder; i < result_.workers.size(); ++i)
    if (result_.workers[i].value("exit", "") == kExitingBesideJudge)
      result_.workers[i]["exit"] = "done (its exit not awaited)";
}

// The Judge's events as the Recorder's workloads' (RunnerOptions::reference_worker);
// each result merged with the Recorder's outcome and reported.
RunnerOptions JudgedBatch::judge_options() {
  RunnerOptions ro = opts_;
  ro.reference_worker = false;
  ro.on_event = [this](const RunnerEvent& e) {
    const int idx = e.workload >= 0 ? batch_[judged_.at(static_cast<size_t>(e.workload))] : -1;
    if (e.kind == EventKind::WorkerStart) {
      RunnerEvent x = make_event(EventKind::WorkerStart);
      x.message = "reference";
      emit(x);
    } else if ((e.kind == EventKind::Begin || e.kind == EventKind::Progress) && idx >= 0) {
      RunnerEvent x = make_event(EventKind::Progress, idx);
      x.phase = e.kind == EventKind::Begin ? WorkloadPhase::Judging : e.phase;
      x.round = e.round;
      emit(x);
    } else if (e.kind == EventKind::Result && e.outcome && idx >= 0 && !final_[idx]) {
      const WorkloadOutcome& sol = recorded_.outcomes[judged_.at(static_cast<size_t>(e.workload))];
      if (!opts_.keep_scratch && sol.record) remove_tree_quietly(sol.record->dir);
      final_[idx] = merge_judged(sol, *e.outcome, known_.at(static_cast<size_t>(e.workload)));
      RunnerEvent x = make_event(EventKind::Result, idx);
      x.outcome = &*final_[idx];
      emit(x);
    }
  };
  return ro;
}

void JudgedBatch::run(uint64_t secret) {
  judge_plan_ = reference_plan(plan_, opts_);
  judge_plan_.judge.value_secret = secret;
  judge_plan_.judge.timing_after_go = true;
  const WorkerPlan sp = recorder_plan();
  const bool streamed = may_stream();
  std::optional<Launch> early = start_judge_early(sp.workloads.front(), streamed);
  if (early && streamed) stream_fd_ = early->child.channel_fd();

  // The Recorder, done, exits while the Judge judges; T_ref is timed only once it
  // has (JudgeOptions::timing_after_go).
  std::vector<Child> exiting;
  const RunHooks hooks = recorder_hooks(secret, &exiting);
  recorded_ = run_workers(sp, recorder_options(), &hooks);
  if (stream_fd_ >= 0 && ahead_) withdraw_ahead();  // its Recorder ended without a result
  const size_t first_recorder = result_.workers.size();
  for (auto& w : recorded_.workers) result_.workers.push_back(std::move(w));
  if (!recorded_.env.empty()) result_.env = recorded_.env;
  if (!recorded_.sandbox.empty()) result_.sandbox = recorded_.sandbox;

  const bool was_streaming = stream_fd_ >= 0;
  stream_fd_ = -1;
  hand_over();
  // What went to a streamed Judge must be what the hand-over gives it; a Judge
  // that missed some (a send failed) is not used: a fresh one judges the batch.
  const bool streamed_all = was_streaming && streamed_ == judged_;
  if (judged_.empty() || (early && streamed && !streamed_all)) {  // an early Judge unused
    if (early) take_back_caches(judge_plan_.sandbox, early->scratch.path());
    early.reset();
    if (judged_.empty()) {
      const Reaper awaited(exiting, result_.workers, first_recorder);  // its end awaits the exits
      return;
    }
  }
  RunHooks judge_hooks;
  judge_hooks.reference_known = look_up_known_references();
  // Nothing is timed after the Recorder's exit when every T_ref is known: "go" at once.
  const bool all_known = judge_hooks.reference_known.size() == judged_.size();
  std::optional<Reaper> reaper;
  if (all_known && may_leave_recorder_exiting())
    leave_exiting(first_recorder);
  else
    reaper.emplace(exiting, result_.workers, first_recorder);
  judge_hooks.go = all_known ? ready_future() : reaper->gone();
  judge_hooks.streamed = early && streamed_all;
  judge_hooks.exiting = judge_exiting_;
  RunnerResult jr = run_workers(judge_plan_, judge_options(), &judge_hooks, std::move(early));
  for (auto& w : jr.workers) result_.reference_workers.push_back(std::move(w));
  for (size_t j = 0; j < judged_.size(); ++j) {  // every result was reported; be safe
    const int idx = batch_[judged_[j]];
    if (!final_[idx])
      final_[idx] = merge_judged(recorded_.outcomes[judged_[j]], jr.outcomes.at(j), known_.at(j));
  }
}

}  // namespace

RunnerResult run_judged(const WorkerPlan& plan, const RunnerOptions& opts) {
  RunnerResult result;
  const fs::path base = staging_base_of(opts);
  const uint64_t secret = evaluation_secret(plan);
  std::vector<std::optional<WorkloadOutcome>> final(plan.workloads.size());
  const std::vector<std::vector<int>> batches = record_batches(plan, base);
  // Several batches mean large records, so large values on the GPU: a batch begins
  // once the Judge before it has exited. (Without this, L1/026's first round of a
  // batch found 40 GiB of an H100 held by another process, most likely the Judge
  // before it.) The last Judge's exit is not awaited.
  std::vector<Child> judge_exiting;
  for (size_t b = 0; b < batches.size(); ++b) {
    for (Child& c : judge_exiting) c.wait(deadline_after(std::chrono::seconds(30)));
    judge_exiting.clear();
    JudgedBatch(plan, batches[b], opts, base, result, final,
                b + 1 < batches.size() ? &judge_exiting : nullptr)
        .run(secret);
  }
  for (size_t i = 0; i < final.size(); ++i)
    result.outcomes.push_back(final[i] ? std::move(*final[i])
                                       : failed(static_cast<int>(i),
                                                plan.workloads[i].value("uuid", ""),
                                                Status::RuntimeError, "no outcome was produced"));
  return result;
}

}  // namespace solbench::harness::runner_detail
