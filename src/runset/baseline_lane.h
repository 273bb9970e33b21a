// T_b ahead (docs/run.md, "T_b ahead"): while one problem is evaluated, `run`
// measures the scoring baseline of the problems after it (`solbench baseline`, a
// child process each), so that their evaluations find T_b in the store instead of
// compiling it themselves after their solution's workers.
//
// Most of a data set's time went to T_b's torch.compile (docs/run.md, "Where the
// seconds of sessions 43-45 went"), CPU work that an evaluation left to its own
// few workers, while the rest of the host waited for the GPU's timed loops. Jobs
// of the lane compile beside the evaluation in progress and take the GPU's timing
// lock as every worker does (shared for untimed steps, exclusively for a timed
// loop), so what they measure, and what the evaluation beside them measures, is
// timed alone.
//
// The lane is generic over what a job runs (a function), so that tests drive it
// without processes; run.cc gives it the child process.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace solbench::runset {

struct LaneJob {
  size_t problem = 0;               // the run's problem index
  std::vector<std::string> uuids;   // the workloads to measure
};

struct LaneOutcome {
  enum class State { Queued, Running, Done, Dropped };
  State state = State::Queued;
  double seconds = 0;  // the job's wall time (Done)
  double waited = 0;   // what evaluations waited for it, summed
  // From the child's summary: workloads measured now, found in the store, left
  // without a T_b (the evaluation measures those again).
  size_t measured = 0, cached = 0, without = 0;
  std::string error;  // the job failed (its evaluation measures T_b itself)
  // The job was stopped by pause() (its `preempt` flag): it is queued again.
  bool preempted = false;
  // The child's `baseline --json` document, kept for its evaluation (eval
  // --baselines-ahead); "" where there is none.
  std::string document;
};

class BaselineLane {
 public:
  // Runs one job on lane slot `slot` (0..concurrent-1); its State is ignored. A job
  // that sees `preempt` set stops (what it measured is kept by whoever measured it)
  // and says so (LaneOutcome::preempted).
  using RunJob = std::function<LaneOutcome(const LaneJob& job, size_t slot,
                                           const std::atomic<bool>& preempt)>;

  // Starts `concurrent` threads taking the jobs (one per problem) in order. `stop`
  // (optional): no job starts once it is true (a running one sees the flag itself).
  // `paused`: as if pause() had been called before any job started (resume() lets
  // them go).
  BaselineLane(std::vector<LaneJob> jobs, size_t concurrent, RunJob run,
               const std::atomic<bool>* stop = nullptr, bool paused = false);
  ~BaselineLane();  // finish()
  BaselineLane(const BaselineLane&) = delete;
  BaselineLane& operator=(const BaselineLane&) = delete;

  // Before `problem` is evaluated: its job is dropped if it has not started (the
  // evaluation measures its T_b itself), waited for if it runs. Returns the seconds
  // waited. A problem without a job: 0 at once.
  double claim(size_t problem);
  // What became of `problem`'s job; nullopt: it has none.
  std::optional<LaneOutcome> outcome(size_t problem) const;
  // `problem` needs no T_b any more (all its evaluations were resumed): its job is
  // dropped if it has not started.
  void drop(size_t problem);
  // Whether a job ran at any moment since `since`.
  bool busy_since(std::chrono::steady_clock::time_point since) const;
  // For an evaluation that needs the GPU to itself: no job starts until resume(),
  // and the running ones are stopped (preempt) and queued again; pause() returns
  // once they have ended (the seconds waited). Pauses nest.
  double pause();
  void resume();
  // Drops the jobs not started and waits for the others; the threads end.
  void finish();
  // Every job and what became of it, in the order given.
  std::vector<std::pair<LaneJob, LaneOutcome>> outcomes() const;

 private:
  void loop(size_t slot);
  // Under mu_: the index of `problem`'s job; nullopt: it has none.
  std::optional<size_t> find(size_t problem) const;

  std::vector<LaneJob> jobs_;
  std::vector<LaneOutcome> out_;
  RunJob run_;
  const std::atomic<bool>* stop_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  size_t next_ = 0;      // the first job that may still be Queued
  size_t running_ = 0;
  size_t paused_ = 0;  // pause() calls not resumed yet
  std::atomic<bool> preempt_{false};  // set by pause() until the running jobs end
  bool finishing_ = false;
  std::chrono::steady_clock::time_point last_busy_{};  // when the last job ended
  std::vector<std::thread> threads_;
};

}  // namespace solbench::runset
