// The runner's parts (runner.h), shared between its files; include from them only
// (and unit tests of them).
//
//   runner.cc          run_plan; outcomes and events the runner makes itself
//   runner_launch.cc   a worker process for a plan (from the zygote or exec'd), its
//                      sealed plan, spares for the next evaluation
//   runner_inbox.h/cc  a worker's channel, read on a thread of its own
//   runner_worker.cc   one worker through its workloads (WorkerRun) and the restart
//                      loop over workers (run_workers)
//   runner_judged.cc   a judged evaluation: per batch a Recorder, then a Judge
#pragma once

#include <filesystem>
#include <functional>
#include <future>
#include <optional>
#include <string>
#include <vector>

#include "harness/process.h"
#include "harness/protocol.h"
#include "harness/runner.h"
#include "harness/staging.h"

namespace solbench::harness::runner_detail {

// The exit a Recorder's record says until its exit status is known (runner_judged.cc).
inline constexpr const char* kExitingBesideJudge = "done (exiting beside the judge)";

// The last `n` bytes of a worker's log, without the workload markers.
std::string tail(const std::string& text, size_t n = 16 << 10);
RunnerEvent make_event(EventKind kind, int workload = -1);
WorkloadOutcome failed(int index, const std::string& uuid, Status st, std::string log);

// The secret every value of an evaluation is derived from (values.h): random, or
// from the plan's seed when one was asked for (reproducible, not secret).
uint64_t evaluation_secret(const WorkerPlan& plan);

// Called on every outcome a worker reported (not on those the runner decides),
// before it is reported: the worker's scratch folder is still there, and `pos` is
// the workload's position in that worker's plan (its records' folder name).
struct RunHooks {
  std::function<void(WorkloadOutcome&, const std::filesystem::path& scratch, size_t pos)>
      on_result;
  // A Recorder's correctness rounds, recorded before it times the solution
  // (FrameType::Rounds): all of the plan's rounds, validated, no sample; the
  // worker's scratch folder holds their files. `index`: the workload's in the plan.
  std::function<void(const CallRecord&, const std::filesystem::path& scratch, size_t pos,
                     size_t index)>
      on_rounds;
  // A Recorder that said "done" is not waited for here but handed over, to exit
  // beside the judging (JudgeOptions::timing_after_go); so is a Judge whose batch
  // another follows, which begins once it has exited (runner_judged.cc).
  std::vector<Child>* exiting = nullptr;
  // A Judge with timing_after_go: "go" is sent once this is ready, naming the
  // workloads whose T_ref it does not time (RunnerOptions::known_reference): plan
  // positions here, each worker's own in its "go" (positions_in_worker).
  std::shared_future<void> go;
  std::vector<size_t> reference_known;
  // The evaluation's secret (values.h), which the judge shares; 0: the worker's
  // values come from a secret of its own run.
  uint64_t value_secret = 0;
  // The early worker is a streamed Judge (JudgeOptions::streamed) that has all its
  // work already: nothing more is sent to it but "go". It has the workload timeout
  // of all its workloads to begin the first; if it ends before beginning one, they
  // go to a fresh Judge instead of failing.
  bool streamed = false;
};

// ---------------------------------------------------------------- runner_launch.cc

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
std::string new_seal();
// `plan` as its first frame, sealed.
json sealed_plan(const WorkerPlan& plan, const std::string& seal);
std::filesystem::path staging_base_of(const RunnerOptions& opts);
// Starts a worker for `plan` (from the zygote where there is one), without sending
// it anything; throws SpawnError.
Launch launch_worker(const WorkerPlan& plan, const RunnerOptions& opts);
// Asks the zygote for a spare of each plan's recipe (RunnerOptions::spares).
void prepare_spares(const std::vector<const WorkerPlan*>& plans, const json& first_workload,
                    const RunnerOptions& opts);

// ---------------------------------------------------------------- runner_worker.cc

// Every workload of `plan` through workers, a fresh one after each that ended
// early. `early`: the first worker, started ahead (a Judge with work_follows).
RunnerResult run_workers(const WorkerPlan& plan, const RunnerOptions& opts,
                         const RunHooks* hooks, std::optional<Launch> early = {});
// Of `plan_positions`, those a worker whose plan holds the plan's workloads
// `indices` (in that order) has, as its own positions. Unit-tested.
std::vector<size_t> positions_in_worker(const std::vector<size_t>& plan_positions,
                                        const std::vector<int>& indices);

// ---------------------------------------------------------------- runner_judged.cc

// The Judge's plan: the definition and the workloads, nothing of the solution.
WorkerPlan reference_plan(const WorkerPlan& plan, const RunnerOptions& opts);
// The outcome of a judged workload: the judge's verdict on what was recorded, then
// the solution's own failure, then PASSED with the solution's T_k (and profile) and
// the reference worker's T_ref (and the reference's profile). Unit-tested.
// `known`: the workload's T_ref from RunnerOptions::known_reference, which the
// Judge was told not to time; it stands for the Judge's own.
WorkloadOutcome merge_judged(WorkloadOutcome solution, const WorkloadOutcome& judge,
                             const std::optional<TimingResult>& known = std::nullopt);
RunnerResult run_judged(const WorkerPlan& plan, const RunnerOptions& opts);

}  // namespace solbench::harness::runner_detail
