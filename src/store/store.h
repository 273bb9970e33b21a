// The results store: every trace solbench records, with the environment it ran
// in, the solution it evaluated and the run it belongs to, in one SQLite file
// (docs/store.md has the schema and the `solbench db` commands).
//
// Contents:
//   1. Records the store keeps: EnvironmentInfo, SolutionRecord, RunInfo,
//      TraceExtras, Skip, Baseline, ReferenceTime
//   2. Store: open (schema versioning), recording, resume look-ups (traces and
//      skips), baselines and reference times
//   3. Queries: leaderboard, best, history, export as public-format JSONL
//   4. Where the store lives by default; content hashes
//   5. Merging one store into another (shards of a cluster run, merge.cc)
//
// Durability: each record_trace is one transaction, committed before it
// returns, so a process killed (even by SIGKILL) loses nothing it had recorded.
// Concurrency: any number of processes may record into the same file at once
// (WAL journal, write transactions taken up front, a busy timeout). A Store
// object is one connection, which threads may share (its calls are
// serialised); open a new one in each process (never carry one across fork()).
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/json.h"
#include "core/trace.h"

namespace solbench {
struct Definition;
struct Solution;
}  // namespace solbench

namespace solbench::store {

// Every store failure: the message names the database file and what was expected.
class StoreError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The schema this build writes; it reads this one and migrates older ones.
inline constexpr int kSchemaVersion = 4;

// ---------------------------------------------------------------- 1. Records

// Where a trace was measured. Its hash (of every field) is its key: a change of
// driver, torch or timer is a different environment.
struct EnvironmentInfo {
  std::string gpu_model;  // e.g. "NVIDIA H100 80GB HBM3"; the CPU's name on CPU runs
  std::string driver;     // e.g. "550.54.15"; "" where there is none
  std::string cuda;       // CUDA runtime, e.g. "12.4"
  std::string torch;      // e.g. "2.4.0"
  std::string timer;      // the timer's name: "cupti", "events", "cpu-monotonic", ...
  std::string hostname;
  std::string hash() const;
  bool operator==(const EnvironmentInfo&) const = default;
};
// What a trace says about its environment (hardware, libs torch/cuda, the
// environment's "driver" or "solbench_driver" key, evaluation.solbench_timer),
// with this machine's host name.
EnvironmentInfo environment_from_trace(const Trace& t);

// A solution as evaluated; its key is the content hash of `content`.
struct SolutionRecord {
  std::string name;
  std::string definition;
  json content = json::object();  // the solution JSON
  std::string hash() const;       // content_hash(content)
  static SolutionRecord from(const Solution& s);
};

// One invocation of solbench that records traces.
struct RunInfo {
  std::string command_line;
  std::string dataset_path;      // the problem or data set folder; may be empty
  std::string environment_hash;  // may be empty: the worker reports it later
  std::string started;           // ISO 8601; empty: now
};

// What record_trace stores beside the public trace.
struct TraceExtras {
  std::string solution_hash;     // from put_solution (required)
  std::string environment_hash;  // from put_environment (required)
  std::optional<double> t_sol_ms;   // speed-of-light time
  std::optional<double> t_b_ms;     // scoring-baseline time
  std::optional<double> sol_score;  // SOL score in [0, 1]
  json extras = json::object();     // anything else solbench keeps (not exported)
};

// A workload evaluated without a trace: the worker skipped it. `solbench run`
// records only those that ran out of GPU memory with the GPU to themselves
// (runset::stores_skip), so that a resumed run does not pay for them again.
struct Skip {
  int64_t run = 0;               // the run that recorded it (record_skip's argument)
  std::string solution_hash;     // from put_solution (required)
  std::string environment_hash;  // from put_environment (required)
  std::string definition;
  std::string workload_uuid;     // required
  std::string reason;            // the worker's skip_reason (required)
  std::string recorded;          // ISO 8601; empty on record: now
  bool operator==(const Skip&) const = default;
};

// The scoring baseline T_b of one workload, per definition content and
// measuring environment. Every measurement is kept; baseline() returns the latest.
enum class BaselineMethod { TorchCompile, Eager };
std::string_view method_name(BaselineMethod m);  // "torch.compile", "eager"
std::optional<BaselineMethod> parse_method(std::string_view name);

struct BaselineKey {
  std::string definition_hash;  // definition_hash(definition)
  std::string workload_uuid;
  std::string gpu_model;
  std::string driver;
  std::string torch;
  std::string timer;
  bool operator==(const BaselineKey&) const = default;
};

struct Baseline {
  BaselineKey key;
  double t_b_ms = 0;
  BaselineMethod method = BaselineMethod::TorchCompile;
  std::string recorded;  // ISO 8601; empty on put: now
  // Why eager ("torch.compile failed on a call: ..."); "" when compiled, and for
  // rows recorded before schema version 2 (the reason was not kept).
  std::string reason;
  bool operator==(const Baseline&) const = default;
};

// The reference's own time T_ref of one workload (the eager reference, timed by
// the Judge as the solution is), kept under a baseline's key so that a later
// evaluation in the same environment takes it instead of timing it again
// (docs/store.md). Every measurement is kept; reference_time() returns the latest.
struct ReferenceTime {
  BaselineKey key;
  double t_ref_ms = 0;           // the timed loop's median
  json timing = json::object();  // the loop's result (harness TimingResult::to_json)
  std::string recorded;          // ISO 8601; empty on put: now
  bool operator==(const ReferenceTime&) const = default;
};

// ---------------------------------------------------------- rows of queries

// Query filters; an empty field matches everything.
struct Filter {
  std::string definition;  // definition name
  std::string solution;    // solution name
  std::string gpu_model;
};

// One stored trace, with its columns (the public trace itself is `trace_json`).
struct StoredTrace {
  int64_t id = 0;
  int64_t run = 0;
  std::string recorded;  // the trace's timestamp
  std::string definition;
  std::string solution;  // name
  std::string solution_hash;
  std::string workload_uuid;
  std::string environment_hash;
  std::string gpu_model;
  Status status = Status::Passed;
  std::optional<double> latency_ms;
  std::optional<double> reference_latency_ms;
  std::optional<double> t_sol_ms;
  std::optional<double> t_b_ms;
  std::optional<double> sol_score;
  std::string trace_json;  // the public-format trace, as recorded
  json extras = json::object();
  Trace trace() const;  // trace_json parsed
};

// One solution's standing on one definition and GPU model. Each workload counts
// with its latest trace: PASSED scores its SOL score (unknown without a
// baseline: left out of the mean, counted in `unscored`), any other status 0.
struct LeaderboardEntry {
  std::string definition;
  std::string gpu_model;
  int rank = 0;  // 1 = best: highest mean score, then lowest mean latency
  std::string solution;
  std::string solution_hash;
  int workloads = 0;  // with a trace
  int passed = 0;
  int unscored = 0;                       // PASSED without a score
  std::optional<double> mean_score;       // nullopt: nothing scored
  std::optional<double> mean_latency_ms;  // over timed PASSED workloads
};

// ------------------------------------------------------------- merging

// Two stores disagree: a trace of the same (solution, workload, environment)
// with another status, or a solution/environment hash with other contents.
struct MergeConflict {
  std::string kind;    // "result", "solution", "environment"
  std::string key;     // what it is about, e.g. "rmsnorm_cpp / workload 3f2a... in environment 1b9c..."
  std::string detail;  // e.g. "the target holds PASSED, the source RUNTIME_ERROR"
};

// What merging one source added. Rows are identified by content, not by id:
// a trace by (solution, workload, environment, timestamp, public trace), a run
// by (started, command line, data set), a baseline by all its columns. A row
// already present is not added again, so merging the same source twice adds
// nothing the second time.
struct MergeResult {
  std::filesystem::path source;
  size_t environments = 0, solutions = 0, runs = 0, traces = 0, baselines = 0;  // added
  size_t skips = 0;  // added (a skip is the same row with the same key, time and reason)
  size_t reference_times = 0;  // added (the same row: every column)
  size_t traces_present = 0;  // the source's traces the target already held
  std::vector<MergeConflict> conflicts;
};

// ---------------------------------------------------------------- 2. Store

class Store {
 public:
  enum class Mode {
    Create,    // create the file (and its folder) when missing
    Existing,  // the file must exist (queries: a typo is not a new empty store)
  };
  struct Options {
    Mode mode = Mode::Create;
    // How long a writer waits for another process's transaction.
    std::chrono::milliseconds busy_timeout{30000};
    // false: WAL with synchronous=NORMAL (a committed trace survives any process
    // crash; the latest may be lost on power failure). true: synchronous=FULL
    // (survives power failure; an fsync per trace).
    bool sync_every_commit = false;
  };

  // Opens (or creates) the store and checks its schema: a store written by a
  // newer solbench, a file that is not SQLite, or a database without solbench's
  // meta table is refused with StoreError; an older schema is migrated.
  static Store open(const std::filesystem::path& file, const Options& options);
  static Store open(const std::filesystem::path& file) { return open(file, Options{}); }
  ~Store();
  Store(Store&&) noexcept;
  Store& operator=(Store&&) noexcept;

  const std::filesystem::path& file() const;
  int schema_version() const;

  // Recording. put_* insert once (the hash is the key) and return the hash.
  std::string put_environment(const EnvironmentInfo& env);
  std::string put_solution(const SolutionRecord& solution);
  int64_t begin_run(const RunInfo& run);
  void set_run_environment(int64_t run, const std::string& environment_hash);
  void finish_run(int64_t run);  // sets `finished`; a killed run keeps it empty
  // One committed transaction; returns the trace's id. The workload's uuid is
  // taken from trace.workload.uuid (required).
  int64_t record_trace(int64_t run, const Trace& trace, const TraceExtras& extras);

  // Resume: is there a trace (any status) of this solution on this workload in
  // this environment?
  bool has_result(const std::string& solution_hash, const std::string& workload_uuid,
                  const std::string& environment_hash);

  // One committed transaction; returns the skip's id. `skip.run` is ignored:
  // the row belongs to `run`.
  int64_t record_skip(int64_t run, const Skip& skip);
  // The skips of this solution on these workloads in this environment ("": in
  // any environment), oldest first (by commit order).
  std::vector<Skip> skips(const std::string& solution_hash, const std::vector<std::string>& uuids,
                          const std::string& environment_hash);
  size_t skip_count();

  // Scoring baselines.
  void put_baseline(const Baseline& b);
  std::optional<Baseline> baseline(const BaselineKey& key);
  // Reference times (T_ref), keyed as baselines.
  void put_reference_time(const ReferenceTime& r);
  std::optional<ReferenceTime> reference_time(const BaselineKey& key);

  // ---------------------------------------------------------- 3. Queries
  // Per definition and GPU model, solutions ranked (LeaderboardEntry).
  // `filter.solution` keeps that solution's rows but does not change the ranks.
  std::vector<LeaderboardEntry> leaderboard(const Filter& filter);
  // Per definition, workload and GPU model: the fastest PASSED, timed trace.
  std::vector<StoredTrace> best(const Filter& filter);
  // Every matching trace, oldest first.
  std::vector<StoredTrace> history(const Filter& filter);
  // Writes the matching traces (oldest first) to `out` as public-format JSONL,
  // which solbench::load_traces reads back; returns how many.
  size_t export_jsonl(const Filter& filter, std::ostream& out);
  size_t trace_count();

  // ---------------------------------------------------------- 5. Merging
  // Copies into this store what `source` (another store file) holds and this
  // one lacks (MergeResult; docs/store.md), in one transaction.
  MergeResult merge_from(const std::filesystem::path& source);

 private:
  struct Impl;
  explicit Store(std::unique_ptr<Impl> impl);
  // Runs `insert` (it binds and executes one INSERT of a row that refers to a run, a
  // solution and an environment) in a write transaction and returns the new row's
  // id; where it fails because one of those is not in the store, the error names it.
  // The caller holds the mutex.
  int64_t insert_referring(const std::string& what, int64_t run,
                           const std::string& solution_hash,
                           const std::string& environment_hash,
                           const std::function<void()>& insert);
  std::unique_ptr<Impl> impl_;
};

// ---------------------------------------- 4. Default location, content hashes

// $SOLBENCH_CACHE_DIR/solbench.db, else $XDG_CACHE_HOME/solbench/solbench.db,
// else ~/.cache/solbench/solbench.db.
std::filesystem::path default_db_path();

// SHA-256 (64 hex digits) of j.dump(): the compact text in the JSON's own key
// order (order matters: a definition's inputs are its argument order).
std::string content_hash(const json& j);
std::string definition_hash(const Definition& d);  // content_hash(to_json(d))

}  // namespace solbench::store
