// The worker protocol: what the parent sends a worker (one plan) and what the
// worker streams back (frames), as JSON over the framed channel (framing.h).
//
//   frames       kFrames below: every frame type, its direction and fields, one
//                table that writers (make_frame) and readers (frame_type) use
//   WorkerPlan   the first frame: what to run, where, how, and in which WorkerRole
//   WorkOrder    a Judge started ahead of its work gets the work in a second frame
//   WorkloadOutcome / CallRecord   a result frame, and the evidence a Recorder
//                leaves for the judge
//   WorkloadPhase  the phases progress frames name
//
// Before each "begin" frame the worker also writes workload_log_marker(index) to its
// stderr. Output is captured by a thread reading a pipe, unordered with the frames;
// the marker puts the cut between two workloads' prints in stream order.
//
// t_ns is CLOCK_MONOTONIC (std::chrono::steady_clock) in nanoseconds, a system-wide
// clock, so the parent can place the worker's events on its own time line.
// Everything the worker reports is about untrusted code's behaviour and is treated
// as data: the parent validates frames and owns the statuses of crashes and hangs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/device.h"
#include "core/json.h"
#include "core/trace.h"
#include "harness/timing/clock.h"  // monotonic_ns
#include "harness/timing/timing.h"

namespace solbench::harness {

// "\x1esolbench workload <index>\n" (record separator first: not a line a solution prints).
inline constexpr std::string_view kWorkloadLogMarker = "\x1esolbench workload ";
std::string workload_log_marker(size_t index);
// `text` without the marker lines (for logs shown to people).
std::string strip_workload_markers(std::string text);

// ---------------------------------------------------------------- frames

enum class FrameType {
  Plan, Work, Cancel, Go,                                      // parent -> worker
  Hello, Ready, LoadFailed, Fatal, Keep, Begin, Progress, Rounds, Result, Restart,  // worker ->
  Done,                                                        //   parent
  Values,                                                      // both ways
};
enum class FrameFrom { Parent, Worker, Both };

struct FrameSpec {
  FrameType type;
  std::string_view name;     // the frame's "type"
  FrameFrom from;
  std::string_view fields;   // besides "type", "seal" (every frame after the plan but
                             // "hello") and "t_ns" (every frame from the worker but "values")
  std::string_view meaning;
};

inline constexpr FrameSpec kFrames[] = {
    {FrameType::Plan, "plan", FrameFrom::Parent, "...WorkerPlan", "the worker's first frame"},
    {FrameType::Work, "work", FrameFrom::Parent, "workloads, records?, part?",
     "a Judge's work (WorkOrder), for a plan with judge.work_follows; with judge.streamed "
     "one frame per workload, as the Recorder reports each"},
    {FrameType::Cancel, "cancel", FrameFrom::Parent, "",
     "nothing is left to judge (instead of \"work\"), or to measure (instead of \"go\" "
     "to a plan with gpu_after_go)"},
    {FrameType::Go, "go", FrameFrom::Parent, "",
     "a Judge with judge.timing_after_go may time the reference now (with judge.streamed: "
     "and no more work comes); a plan with "
     "gpu_after_go may run its workloads now"},
    {FrameType::Values, "values", FrameFrom::Both,
     "worker: what, round | call | calls; parent: seed, keep",
     "the seed of a round's or a call's values, asked when needed and answered at once "
     "(values.h)"},
    {FrameType::Hello, "hello", FrameFrom::Worker, "pid", "the process started (no seal yet)"},
    {FrameType::Ready, "ready", FrameFrom::Worker, "sandboxed_t_ns, env, phases_ms, sandbox",
     "Python, the reference and the solution loaded"},
    {FrameType::LoadFailed, "load_failed", FrameFrom::Worker, "message, skip, reward_hack",
     "the solution could not be loaded: every remaining workload fails (or is skipped) with it"},
    {FrameType::Fatal, "fatal", FrameFrom::Worker, "message",
     "the worker cannot go on (a malformed plan, a sandbox not applied, its own error): every "
     "remaining workload fails with it"},
    {FrameType::Keep, "keep", FrameFrom::Worker, "workloads",
     "a plan with hand_back, at \"go\": it measures only its first `workloads` workloads and "
     "hands the others back to the parent, which gives them to workers of its own"},
    {FrameType::Begin, "begin", FrameFrom::Worker, "index, judged_t_ns?",
     "a workload started (a streamed Judge's: its T_ref; judged_t_ns: when its judging began)"},
    {FrameType::Progress, "progress", FrameFrom::Worker, "index, phase, round?",
     "a phase of the workload in progress (WorkloadPhase)"},
    {FrameType::Rounds, "rounds", FrameFrom::Worker, "index, record",
     "a Recorder's correctness rounds, recorded, before it times the solution: a streamed "
     "Judge may judge them meanwhile (WorkOrder's RecordPart)"},
    {FrameType::Result, "result", FrameFrom::Worker, "...WorkloadOutcome, record?",
     "one per workload; a Recorder's carries its record"},
    {FrameType::Restart, "restart", FrameFrom::Worker, "reason",
     "its state is spoiled (a sticky CUDA error, processes left running, hardware counters "
     "read by --profile): it exits after its last result and a fresh worker takes the rest"},
    {FrameType::Done, "done", FrameFrom::Worker, "", "all workloads finished"},
};

std::string_view frame_name(FrameType t);
// The type of `frame` (its "type"), nullopt when it names none of kFrames.
std::optional<FrameType> frame_type(const json& frame);
// {"type": name, ...fields}, with "t_ns" (monotonic_ns()) in a frame from the worker.
json make_frame(FrameType t, json fields = json::object());

// What a workload's progress frames (and the runner's events) name.
enum class WorkloadPhase { None, Correctness, Timing, Judging, ReferenceTiming };
const char* phase_name(WorkloadPhase p);  // "" for None
WorkloadPhase parse_phase(std::string_view s);  // None for a name it does not know

// How the worker calls the solution.
enum class EntryKind {
  Native,          // dlopen(library) + dlsym(entry): include/solbench/kernel.h ABI
  TorchExtension,  // import the built module `module_name` from `library`, call `entry`
  Python,          // write `sources` into the scratch folder, import `entry_file`, call `entry`
  Reference,       // the definition's own reference, run as a solution (return style)
};
std::string_view entry_kind_name(EntryKind k);
std::optional<EntryKind> parse_entry_kind(std::string_view s);

// What the solution's worker leaves for the judge about one workload (runner.h,
// "judged" evaluations): the files (python/solbench_py/record.py) of its
// correctness rounds and of its sampled timed calls, each with the SHA-256 of its
// bytes, and where the solution's own evaluation stopped. Sent back in the result
// frame, then by the parent to the reference worker that judges it (with `dir`
// set to where the parent moved the files). from_json validates what an untrusted
// worker sends: file names of the form r<N>.rec / s<N>.rec, hex digests, rounds
// in order from 0, no call sampled twice.
struct RecordedCall {
  int round = -1;      // correctness round (rounds), or -1
  int call = -1;       // index among the timed calls (samples), or -1
  int pool_call = -1;  // index among the argument pool's calls (warm-up included)
  std::string file;    // a name in the record's folder
  std::string sha256;  // of the file's bytes, as the worker wrote them
  bool operator==(const RecordedCall&) const = default;
};

struct CallRecord {
  std::vector<RecordedCall> rounds;   // correctness rounds 0..n-1
  std::vector<RecordedCall> samples;  // sampled timed calls
  bool timed = false;                 // the timing loop ran to its end
  // Where the solution's own evaluation ended early: "" (it did not), "round"
  // (in correctness round `failed_round`: its call, or a check after it), "timing"
  // (during or after the timed calls), "after" (the worker failed the workload
  // after its evaluation, e.g. a sticky CUDA error).
  std::string failed_stage;
  int failed_round = -1;
  std::string dir;  // set by the parent only: the folder holding the files

  json to_json() const;
  // Throws std::runtime_error naming the field.
  static CallRecord from_json(const json& j);
};

// What a worker calls: found by preparation (eval_plan.h prepare_solution) and
// carried as it is by the plan.
struct EntryPoint {
  EntryKind kind = EntryKind::Python;
  std::string library;      // Native / TorchExtension: the built shared object
  std::string module_name;  // TorchExtension
  std::string symbol;       // symbol or function name (the plan's "entry")
  std::string entry_file;   // Python: "pkg/main.py"
  json sources = json::array();  // Python: [{path, content}]
  bool dps = true;
  std::vector<std::string> languages;  // the solution's spec.languages (names)

  // The definition's own reference as a return-style entry point.
  static EntryPoint reference();
};

// Which worker a plan makes: what it loads and how it reaches its verdicts
// (worker/worker_session.h runs each role).
enum class WorkerRole {
  // The solution with the reference and every check beside it in one process: the
  // path before the judge (RunnerOptions::reference_worker false), for measuring
  // the judge's cost only.
  Solution,
  // The solution's worker of a judged evaluation (runner.h): it runs no reference
  // and decides no verdict on values; per workload it records its calls
  // (CallRecord, files under judge/<position>/ in its scratch folder) for the Judge.
  Recorder,
  // The reference worker: kind Reference, no solution loaded. Per workload with a
  // record (JudgeOptions) it judges the recorded calls and, when they pass, times
  // the reference (T_ref); without one it only times the reference. Its outcome's
  // status is the verdict.
  Judge,
  // The scoring baseline (docs/score.md): kind Reference, run under torch.compile
  // where this torch has it (eager otherwise, or when compiling fails), checked
  // and timed as a Solution; each outcome's extra["baseline"] says which and why.
  Baseline,
};
std::string_view worker_role_name(WorkerRole r);
std::optional<WorkerRole> parse_worker_role(std::string_view s);

// What a Judge gets beside the plan (its "judge" object on the wire).
struct JudgeOptions {
  // The secret every value of the evaluation is derived from (values.h
  // value_seed), so that the judge draws the very inputs the solution's worker
  // was handed, seed by seed, by the parent. Never in any other role's plan.
  uint64_t value_secret = 0;
  // One entry per workload (none: only T_ref).
  std::vector<std::optional<CallRecord>> records;
  // Started while the solution's worker still runs (runner_judged.cc), so
  // that its start (process, CUDA, the reference's import) is off the critical
  // path: its plan holds no workloads; they and their records come in a second
  // frame, WorkOrder, after it said "ready". Its warm-up (below) holds the GPU's
  // timing lock, so that it never runs kernels during a timed loop.
  bool work_follows = false;
  // With work_follows: a workload whose first correctness round the worker runs
  // (the reference and the comparison, results dropped) while it waits, so that
  // loading kernels and libraries is off the critical path too. null: none.
  json warm_up = nullptr;
  // It judges as soon as it has the records, but times the reference (T_ref) only
  // after a "go" frame, which the parent sends once the solution's worker has
  // exited (its CUDA teardown, 0.1 s on an H100, then overlaps the judging
  // instead of preceding it).
  bool timing_after_go = false;
  // With work_follows and timing_after_go: the work comes a workload at a time, in
  // "work" frames sent as the Recorder reports each, and "go" says that no more
  // comes. Each workload is judged as it arrives, every step of it holding the GPU's
  // timing lock (the Recorder's timed loops never run beside it); its outcome waits
  // for "go", after which T_ref is timed for each in turn and each is reported as
  // usual (begin, with judged_t_ns: when its judging began; result). It sends
  // nothing before "go": the parent reads its channel only then (runner_judged.cc).
  bool streamed = false;
};

struct WorkerPlan {
  WorkerRole role = WorkerRole::Solution;
  json definition = json::object();  // definition.json (core to_json)
  std::string solution_name;
  EntryPoint entry;

  // One entry per workload, in evaluation order: {index, uuid, axes, inputs, outputs,
  // tolerance, op_type, dataset_root} (see python/solbench_py/workload.py Workload).
  std::vector<json> workloads;

  Device device;  // "device" on the wire: its text
  int rounds = 5;
  // The evaluation's values (values.h) are drawn from a secret the parent makes:
  // at random when this is 0, else from this seed (reproducible, and predictable
  // by whoever knows it: for debugging, not for scoring). Never sent to a worker
  // that may load solution code.
  uint64_t seed = 0;
  int input_sets = 4;            // distinct input sets rotated through timed calls
  int verify_samples = 8;        // timed calls whose outputs are re-checked
  bool time_solution = true;
  bool time_reference = true;
  TimingOptions timing;
  json timer_options = json::object();  // make_timer(device, stream, options): GPU timer keys
  // `eval --profile`: after each workload's timed loop, one call traced kernel by
  // kernel and one with hardware counters (WorkloadOutcome::profile, docs/profile.md);
  // after T_ref's timed loop the same for the reference (reference_profile).
  bool profile = false;
  // The GPU's timing lock (timing/device_lock.h), held for each timed loop; "": none.
  std::string timing_lock;
  // Role Baseline on a GPU: the prefix of the GPU's memory shares and how many there
  // are (timing/memory_shares.h); each workload's GPU work holds its footprint's
  // shares. "": none (nothing waits for memory).
  std::string memory_shares;
  int memory_share_units = 0;
  // Role Baseline only: started beside the solution's evaluation, the worker
  // compiles its workloads' shapes (baseline.precompile; on a GPU only) after
  // "ready" until the parent's "go", which comes once the solution's workers are
  // done, and runs no workload before it; a "cancel" instead ends it (no T_b is
  // needed). Its kernels in the meantime hold the timing lock, as a precompile's
  // always do.
  bool gpu_after_go = false;
  // With gpu_after_go: at "go" the worker keeps what it compiled, the one it is
  // compiling and what it would compile within about kKeepAheadSeconds more
  // (kept_at_go), says so ("keep"), and hands the rest back: fresh workers, started
  // now that the GPU is T_b's, compile those side by side instead of this one in a row.
  bool hand_back = false;
  json sandbox = json::object(); // SandboxOptions overrides: {"seccomp": false, ...}
  JudgeOptions judge;            // role Judge only

  json to_json() const;
  // Throws std::runtime_error when malformed: a role with another entry kind than
  // it needs, judge options outside a Judge, a Judge without the secret, ...
  static WorkerPlan from_json(const json& j);
};

// The second frame of a plan with judge.work_follows: {"type": "work", workloads,
// records}, or {"type": "cancel"} when nothing is left to judge.
// A streamed Judge may get one workload's record in two parts ("part"): its
// correctness rounds while the Recorder still times the solution (Rounds), then
// the whole record once the Recorder reported (Rest; no record: the workload is
// not the Judge's after all, and what it judged of the rounds is dropped).
enum class RecordPart { Whole, Rounds, Rest };

struct WorkOrder {
  bool cancel = false;
  std::vector<json> workloads;
  std::vector<std::optional<CallRecord>> records;
  RecordPart part = RecordPart::Whole;  // Rounds and Rest: one workload
  json to_json() const;
  static WorkOrder from_json(const json& j);  // throws std::runtime_error when malformed
};

// How a skip reason starts when the harness's own work (inputs, the reference, its
// copies) ran out of GPU memory: not the solution's failure, and with other
// evaluations on the GPU perhaps not this one's either (`run` retries those alone).
inline constexpr const char* kOutOfGpuMemory = "out of GPU memory";

// The worker's report for one workload.
struct WorkloadOutcome {
  int index = -1;
  std::string uuid;
  Status status = Status::RuntimeError;
  bool skipped = false;        // could not be evaluated here (missing blob, dtype, GPU)
  std::string skip_reason;
  std::string log;
  std::optional<Correctness> correctness;
  std::optional<TimingResult> timing;            // the solution's
  std::optional<TimingResult> reference_timing;
  json phases_ms = json::object();               // inputs, reference, correctness, timing, ...
  json extra = json::object();                   // verification, threads, ...
  // `--profile`: the kernel breakdown and counters of one extra call
  // (harness/timing/kernel_profile.h); null when not asked for.
  json profile = nullptr;
  // The same of one more call of the reference, made by the worker that timed
  // T_ref after its timed loop; null when not asked for or T_ref was not timed.
  json reference_profile = nullptr;
  // Parent-side only (never in a frame): the worker handed this workload back
  // unmeasured ("keep"); the caller measures it elsewhere.
  bool handed_back = false;
  // A Recorder's evidence for the judge (a skipped workload has none). The
  // status is then only the solution's own failure (a call that raised, a thread
  // left running, ...), or PASSED for "nothing wrong seen in this process".
  std::optional<CallRecord> record;

  json to_json() const;
  static WorkloadOutcome from_json(const json& j);  // throws std::runtime_error
};

// Bytes of storage of a workload spec's tensor inputs and of its outputs
// (runtime.Workload's spec).
uint64_t workload_input_bytes(const json& spec);
uint64_t workload_output_bytes(const json& spec);
// A process evaluating a workload holds its inputs, outputs and the timed loop's
// input sets on the device: about kValuesFootprint times its bytes. Work started
// beside an evaluation on the same GPU (T_b's workers ahead, a streamed Judge)
// keeps what it adds for the largest workload within kBesideEvaluationBytes.
inline constexpr uint64_t kValuesFootprint = 8;
inline constexpr uint64_t kBesideEvaluationBytes = 16ull << 30;
// Whether a workload's values fit beside an evaluation by that rule (a streamed
// Judge's workloads, the workload a Judge warms up on).
bool fits_beside_evaluation(const json& spec);

// What a worker of a plan with hand_back keeps at "go" (WorkerPlan::hand_back), of
// its `n` workloads: the `compiled` ones it compiled ahead, the one it is compiling
// (`compiling`: it finishes), at least one, and as many more as it would compile
// within kKeepAheadSeconds at the pace of those compiled (`compiled_seconds` in
// all, `first_seconds` of them the first's, which carries Inductor's own start-up
// and counts in the pace only when it is the only one). A fresh worker's start and
// first compile cost about this much (that start-up, 1.3-3.5 s on an H100 host, and
// CUDA's), so a workload this one would reach later goes sooner to a new one. Where
// nothing compiles ahead (the CPU, an eager baseline) it keeps one.
inline constexpr double kKeepAheadSeconds = 5.0;
size_t kept_at_go(size_t n, size_t compiled, bool compiling, double compiled_seconds,
                  double first_seconds);

// kept_at_go's inputs, kept as a worker ahead tries its workloads in order. What it
// keeps is a prefix of them, so only compiles done from the first workload on count:
// past one not compiled (a compile a benchmark stopped, a graph break, a failure) the
// prefix ends there, and the one in progress is not at its end either.
struct AheadTally {
  size_t compiled = 0;      // workloads 0 .. compiled-1 compiled ahead
  double compiled_s = 0;    // their compiles' seconds
  double first_s = 0;       // the first's
  bool gap = false;         // a workload tried and not compiled

  void add(bool done, double seconds);
  size_t kept(size_t n, bool compiling) const {
    return kept_at_go(n, compiled, compiling && !gap, compiled_s, first_s);
  }
};

// How many timed calls of a workload the worker samples for verification:
// `verify_samples`, fewer when the outputs are large (their copies are kept
// until the timing loop ends: about 256 MiB of them, but at least one call).
int sampled_calls(int verify_samples, const json& spec);

}  // namespace solbench::harness
