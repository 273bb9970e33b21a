// Opening the store and recording into it: environments, solutions, runs,
// traces, skips and baselines.
#include "store/store.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "core/solution.h"
#include "store/schema.h"
#include "store/store_impl.h"

namespace solbench::store {

namespace fs = std::filesystem;
using detail::Statement;
using detail::WriteTransaction;

namespace {

std::string now_or(const std::string& iso) { return iso.empty() ? iso8601_now() : iso; }

std::string local_hostname() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "";
  return buf;
}

const json* string_at(const json& obj, const char* key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? &*it : nullptr;
}

// The journal mode is switched once per file; a second process doing the same
// at that moment may find the file locked, whatever the busy timeout.
void set_wal(detail::Database& db, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    try {
      Statement s(db, "PRAGMA journal_mode = WAL", "switching to the WAL journal");
      s.start();
      const std::string mode = s.step() ? s.text(0) : "";
      s.reset();
      if (mode != "wal")
        throw StoreError(fmt::format(
            "{}: the journal mode stayed \"{}\" (expected wal: the store needs a file on a local "
            "file system)",
            db.file(), mode));
      return;
    } catch (const detail::BusyError&) {
      if (std::chrono::steady_clock::now() >= deadline) throw;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
}

detail::Database open_database(const fs::path& file, const Store::Options& o) {
  if (o.mode == Store::Mode::Existing) {
    std::error_code ec;
    if (!fs::exists(file, ec))
      throw StoreError(fmt::format(
          "{}: no results store here (expected an existing solbench database; `solbench eval` "
          "with a store creates one)",
          file.string()));
    // Checked before anything (switching to WAL) writes a header into it.
    if (fs::is_regular_file(file, ec) && fs::file_size(file, ec) == 0)
      throw StoreError(fmt::format(
          "{}: the database is empty (expected a solbench results store with its tables)",
          file.string()));
  } else if (file.has_parent_path()) {
    std::error_code ec;
    fs::create_directories(file.parent_path(), ec);
    if (ec)
      throw StoreError(fmt::format("{}: cannot create the folder {}: {}", file.string(),
                                   file.parent_path().string(), ec.message()));
  }
  return detail::Database(file, o.mode == Store::Mode::Create);
}

bool row_exists(detail::Database& db, const char* table, const char* column,
                const std::string& value) {
  // Table and column names come from this file only.
  Statement s(db, fmt::format("SELECT 1 FROM {} WHERE {} = ?1", table, column),
              "looking up a reference");
  s.start().bind(1, value);
  const bool found = s.step();
  s.reset();
  return found;
}

// What a failed insert referenced that the store lacks ("" when it has them
// all), named rather than SQLite's "FOREIGN KEY constraint failed".
std::string missing_reference(detail::Database& db, int64_t run, const std::string& solution_hash,
                              const std::string& environment_hash) {
  if (!row_exists(db, "runs", "id", std::to_string(run)))
    return fmt::format("run {} (begin_run first)", run);
  if (!row_exists(db, "solutions", "hash", solution_hash))
    return fmt::format("solution {} (put_solution first)", solution_hash);
  if (!row_exists(db, "environments", "hash", environment_hash))
    return fmt::format("environment {} (put_environment first)", environment_hash);
  return "";
}

}  // namespace

// ------------------------------------------------------------------ records

std::string EnvironmentInfo::hash() const {
  json j = json::object();
  j["gpu_model"] = gpu_model;
  j["driver"] = driver;
  j["cuda"] = cuda;
  j["torch"] = torch;
  j["timer"] = timer;
  j["hostname"] = hostname;
  return content_hash(j);
}

EnvironmentInfo environment_from_trace(const Trace& t) {
  const Environment& e = t.evaluation.environment;
  EnvironmentInfo env;
  env.gpu_model = e.hardware;
  for (const auto& [name, version] : e.libs) {
    if (name == "torch") env.torch = version;
    if (name == "cuda") env.cuda = version;
  }
  for (const char* key : {"driver", "solbench_driver"})
    if (const json* d = string_at(e.extra, key)) env.driver = d->get<std::string>();
  if (const json* timer = string_at(t.evaluation.extra, "solbench_timer"))
    env.timer = timer->get<std::string>();
  env.hostname = local_hostname();
  return env;
}

std::string SolutionRecord::hash() const { return content_hash(content); }

SolutionRecord SolutionRecord::from(const Solution& s) {
  return SolutionRecord{s.name, s.definition, to_json(s)};
}

std::string_view method_name(BaselineMethod m) {
  return m == BaselineMethod::TorchCompile ? "torch.compile" : "eager";
}

std::optional<BaselineMethod> parse_method(std::string_view name) {
  if (name == "torch.compile") return BaselineMethod::TorchCompile;
  if (name == "eager") return BaselineMethod::Eager;
  return std::nullopt;
}

// -------------------------------------------------------------------- open

namespace {

// Sets the connection up and checks the schema; returns the schema version.
int configure(detail::Database& db, const Store::Options& o) {
  db.exec(fmt::format("PRAGMA busy_timeout = {}", o.busy_timeout.count()),
          "setting the busy timeout");
  db.exec("PRAGMA foreign_keys = ON", "enabling foreign keys");
  set_wal(db, o.busy_timeout);
  db.exec(o.sync_every_commit ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = NORMAL",
          "setting the synchronous mode");
  return detail::ensure_schema(db, o.mode == Store::Mode::Create);
}

}  // namespace

// Members initialise in declaration order: the connection, its set-up and
// schema, then the statements prepared against that schema.
Store::Impl::Impl(const fs::path& f, const Options& o)
    : file(f),
      db(open_database(f, o)),
      version(configure(db, o)),
      begin(db, "BEGIN IMMEDIATE", "starting a write transaction"),
      commit(db, "COMMIT", "committing"),
      rollback(db, "ROLLBACK", "rolling back"),
      insert_trace(db,
                   "INSERT INTO traces(run, solution_hash, environment, definition, workload_uuid, "
                   "status, latency_ms, reference_latency_ms, t_sol_ms, t_b_ms, sol_score, "
                   "recorded, trace_json, extras_json) "
                   "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
                   "recording a trace"),
      find_result(db,
                  "SELECT 1 FROM traces WHERE solution_hash = ?1 AND workload_uuid = ?2 AND "
                  "environment = ?3 LIMIT 1",
                  "looking up a result") {}

Store Store::open(const fs::path& file, const Options& options) {
  return Store(std::make_unique<Impl>(file, options));
}

Store::Store(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Store::~Store() = default;
Store::Store(Store&&) noexcept = default;
Store& Store::operator=(Store&&) noexcept = default;

const fs::path& Store::file() const { return impl_->file; }
int Store::schema_version() const { return impl_->version; }

// --------------------------------------------------------------- recording

std::string Store::put_environment(const EnvironmentInfo& env) {
  const std::lock_guard lock(impl_->mutex);
  const std::string hash = env.hash();
  Statement s(impl_->db,
              "INSERT INTO environments(hash, gpu_model, driver, cuda, torch, timer, hostname, "
              "first_seen) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) ON CONFLICT(hash) DO NOTHING",
              "recording an environment");
  s.start()
      .bind(1, hash)
      .bind(2, env.gpu_model)
      .bind(3, env.driver)
      .bind(4, env.cuda)
      .bind(5, env.torch)
      .bind(6, env.timer)
      .bind(7, env.hostname)
      .bind(8, iso8601_now())
      .execute();
  return hash;
}

std::string Store::put_solution(const SolutionRecord& solution) {
  const std::lock_guard lock(impl_->mutex);
  if (solution.name.empty())
    throw StoreError(fmt::format("{}: cannot record a solution without a name", file().string()));
  const std::string hash = solution.hash();
  Statement s(impl_->db,
              "INSERT INTO solutions(hash, name, definition, json, first_seen) "
              "VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT(hash) DO NOTHING",
              "recording a solution");
  s.start()
      .bind(1, hash)
      .bind(2, solution.name)
      .bind(3, solution.definition)
      .bind(4, solution.content.dump())
      .bind(5, iso8601_now())
      .execute();
  return hash;
}

int64_t Store::begin_run(const RunInfo& run) {
  const std::lock_guard lock(impl_->mutex);
  Statement s(impl_->db,
              "INSERT INTO runs(started, command_line, environment, dataset_path) "
              "VALUES (?1, ?2, ?3, ?4)",
              "recording a run");
  s.start().bind(1, now_or(run.started)).bind(2, run.command_line);
  if (run.environment_hash.empty())
    s.bind_null(3);
  else
    s.bind(3, run.environment_hash);
  s.bind(4, run.dataset_path);
  try {
    s.execute();
  } catch (const StoreError&) {
    if (!run.environment_hash.empty() && !row_exists(impl_->db, "environments", "hash", run.environment_hash))
      throw StoreError(fmt::format(
          "{}: cannot begin a run in environment {}: it is not in the store (put_environment "
          "first)",
          file().string(), run.environment_hash));
    throw;
  }
  return impl_->db.last_insert_rowid();
}

void Store::set_run_environment(int64_t run, const std::string& environment_hash) {
  const std::lock_guard lock(impl_->mutex);
  Statement s(impl_->db, "UPDATE runs SET environment = ?2 WHERE id = ?1",
              "recording a run's environment");
  s.start().bind(1, run).bind(2, environment_hash).execute();
}

void Store::finish_run(int64_t run) {
  const std::lock_guard lock(impl_->mutex);
  Statement s(impl_->db, "UPDATE runs SET finished = ?2 WHERE id = ?1", "finishing a run");
  s.start().bind(1, run).bind(2, iso8601_now()).execute();
}

int64_t Store::record_trace(int64_t run, const Trace& trace, const TraceExtras& extras) {
  const std::lock_guard lock(impl_->mutex);
  const std::string what = fmt::format("the trace of {} / {}", trace.definition, trace.solution);
  const json* uuid = string_at(trace.workload, "uuid");
  if (!uuid)
    throw StoreError(fmt::format("{}: cannot record {}: workload.uuid is missing (expected the "
                                 "workload object with its uuid string)",
                                 file().string(), what));
  if (extras.solution_hash.empty() || extras.environment_hash.empty())
    throw StoreError(fmt::format("{}: cannot record {}: the {} hash is empty (expected the hash "
                                 "returned by put_{})",
                                 file().string(), what,
                                 extras.solution_hash.empty() ? "solution" : "environment",
                                 extras.solution_hash.empty() ? "solution" : "environment"));
  const Evaluation& e = trace.evaluation;
  const std::string trace_text = to_json(trace).dump();
  const std::string extras_text = extras.extras.dump();
  Statement& s = impl_->insert_trace;
  return insert_referring(what, run, extras.solution_hash, extras.environment_hash, [&] {
    s.start()
        .bind(1, run)
        .bind(2, extras.solution_hash)
        .bind(3, extras.environment_hash)
        .bind(4, trace.definition)
        .bind(5, uuid->get_ref<const std::string&>())
        .bind(6, status_name(e.status))
        .bind(7, e.performance ? std::optional(e.performance->latency_ms) : std::nullopt)
        .bind(8, e.performance ? std::optional(e.performance->reference_latency_ms)
                               : std::nullopt)
        .bind(9, extras.t_sol_ms)
        .bind(10, extras.t_b_ms)
        .bind(11, extras.sol_score)
        .bind(12, now_or(e.timestamp))
        .bind(13, trace_text)
        .bind(14, extras_text)
        .execute();
  });
}

int64_t Store::insert_referring(const std::string& what, int64_t run,
                                const std::string& solution_hash,
                                const std::string& environment_hash,
                                const std::function<void()>& insert) {
  try {
    WriteTransaction tx(impl_->begin, impl_->commit, impl_->rollback);
    insert();
    const int64_t id = impl_->db.last_insert_rowid();
    tx.commit();
    return id;
  } catch (const StoreError&) {
    const std::string missing = missing_reference(impl_->db, run, solution_hash, environment_hash);
    if (missing.empty()) throw;
    throw StoreError(fmt::format("{}: cannot record {}: {} is not in the store", file().string(),
                                 what, missing));
  }
}

int64_t Store::record_skip(int64_t run, const Skip& skip) {
  const std::lock_guard lock(impl_->mutex);
  const std::string what =
      fmt::format("the skip of {} on workload {}", skip.definition, skip.workload_uuid);
  // The first required field that is empty, and what it should hold.
  using Field = std::pair<const char*, const char*>;
  const Field empty = skip.solution_hash.empty()
                          ? Field{"solution_hash", "the hash returned by put_solution"}
                      : skip.environment_hash.empty()
                          ? Field{"environment_hash", "the hash returned by put_environment"}
                      : skip.workload_uuid.empty() ? Field{"workload_uuid", "the workload's uuid"}
                      : skip.reason.empty()        ? Field{"reason", "the worker's skip_reason"}
                                                   : Field{nullptr, nullptr};
  if (empty.first)
    throw StoreError(fmt::format("{}: cannot record {}: {} is empty (expected {})",
                                 file().string(), what, empty.first, empty.second));
  Statement s(impl_->db,
              "INSERT INTO skips(run, solution_hash, environment, definition, workload_uuid, "
              "reason, recorded) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
              "recording a skip");
  return insert_referring(what, run, skip.solution_hash, skip.environment_hash, [&] {
    s.start()
        .bind(1, run)
        .bind(2, skip.solution_hash)
        .bind(3, skip.environment_hash)
        .bind(4, skip.definition)
        .bind(5, skip.workload_uuid)
        .bind(6, skip.reason)
        .bind(7, now_or(skip.recorded))
        .execute();
  });
}

std::vector<Skip> Store::skips(const std::string& solution_hash,
                               const std::vector<std::string>& uuids,
                               const std::string& environment_hash) {
  const std::lock_guard lock(impl_->mutex);
  // One look-up per uuid on the resume index; rows in commit order across them.
  Statement s(impl_->db,
              "SELECT id, run, solution_hash, environment, definition, workload_uuid, reason, "
              "recorded FROM skips WHERE solution_hash = ?1 AND workload_uuid = ?2 AND "
              "(?3 = '' OR environment = ?3) ORDER BY id",
              "looking up skips");
  std::vector<std::pair<int64_t, Skip>> rows;
  const std::set<std::string> distinct(uuids.begin(), uuids.end());
  for (const std::string& uuid : distinct) {
    s.start().bind(1, solution_hash).bind(2, uuid).bind(3, environment_hash);
    while (s.step())
      rows.push_back({s.integer(0), Skip{s.integer(1), s.text(2), s.text(3), s.text(4), s.text(5),
                                         s.text(6), s.text(7)}});
  }
  std::sort(rows.begin(), rows.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<Skip> out;
  for (auto& [id, skip] : rows) out.push_back(std::move(skip));
  return out;
}

size_t Store::skip_count() {
  const std::lock_guard lock(impl_->mutex);
  return detail::count_rows(impl_->db, "SELECT count(*) FROM skips", "counting skips");
}

bool Store::has_result(const std::string& solution_hash, const std::string& workload_uuid,
                       const std::string& environment_hash) {
  const std::lock_guard lock(impl_->mutex);
  Statement& s = impl_->find_result;
  s.start().bind(1, solution_hash).bind(2, workload_uuid).bind(3, environment_hash);
  const bool found = s.step();
  s.reset();
  return found;
}

// ------------------------------------------- baselines and reference times

namespace {

// A measured time kept under a key (T_b, T_ref): a time > 0, a definition and a workload.
void check_measurement(const std::filesystem::path& file, const BaselineKey& key, double ms,
                       const char* what, const char* name) {
  if (!std::isfinite(ms) || ms <= 0)
    throw StoreError(fmt::format("{}: cannot record the {} of workload {}: {} is {} ms "
                                 "(expected a time > 0)",
                                 file.string(), what, key.workload_uuid, name, ms));
  if (key.definition_hash.empty() || key.workload_uuid.empty())
    throw StoreError(fmt::format("{}: cannot record a {} without a definition hash and a "
                                 "workload uuid",
                                 file.string(), what));
}

// Binds a key's six columns to parameters 1-6, in BaselineKey's order.
Statement& bind_key(Statement& s, const BaselineKey& key) {
  return s.bind(1, key.definition_hash)
      .bind(2, key.workload_uuid)
      .bind(3, key.gpu_model)
      .bind(4, key.driver)
      .bind(5, key.torch)
      .bind(6, key.timer);
}

constexpr const char* kKeyMatches =
    "definition_hash = ?1 AND workload_uuid = ?2 AND gpu_model = ?3 AND driver = ?4 AND "
    "torch = ?5 AND timer = ?6";

// The newest row of `table` under `key` (its `columns`), as `read` makes it of the
// statement at that row; nullopt when there is none.
template <typename Read>
auto latest_under(detail::Database& db, const char* columns, const char* table, const BaselineKey& key,
                  const char* doing, Read&& read) -> decltype(read(std::declval<Statement&>())) {
  Statement s(db,
              fmt::format("SELECT {} FROM {} WHERE {} ORDER BY id DESC LIMIT 1", columns, table,
                          kKeyMatches),
              doing);
  bind_key(s.start(), key);
  if (!s.step()) return std::nullopt;
  auto row = read(s);
  s.reset();
  return row;
}

}  // namespace

void Store::put_baseline(const Baseline& b) {
  const std::lock_guard lock(impl_->mutex);
  check_measurement(file(), b.key, b.t_b_ms, "baseline", "T_b");
  Statement s(impl_->db,
              "INSERT INTO baselines(definition_hash, workload_uuid, gpu_model, driver, torch, "
              "timer, t_b_ms, method, recorded, reason) "
              "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
              "recording a baseline");
  bind_key(s.start(), b.key)
      .bind(7, b.t_b_ms)
      .bind(8, method_name(b.method))
      .bind(9, now_or(b.recorded))
      .bind(10, b.reason)
      .execute();
}

std::optional<Baseline> Store::baseline(const BaselineKey& key) {
  const std::lock_guard lock(impl_->mutex);
  return latest_under(impl_->db, "t_b_ms, method, recorded, reason", "baselines", key,
                      "looking up a baseline", [&](Statement& s) {
                        Baseline b;
                        b.key = key;
                        b.t_b_ms = s.real(0);
                        // The schema's CHECK admits only the two names.
                        b.method = parse_method(s.text(1)).value_or(BaselineMethod::Eager);
                        b.recorded = s.text(2);
                        b.reason = s.text(3);
                        return std::optional<Baseline>(std::move(b));
                      });
}

void Store::put_reference_time(const ReferenceTime& r) {
  const std::lock_guard lock(impl_->mutex);
  check_measurement(file(), r.key, r.t_ref_ms, "reference time", "T_ref");
  Statement s(impl_->db,
              "INSERT INTO reference_times(definition_hash, workload_uuid, gpu_model, driver, "
              "torch, timer, t_ref_ms, timing_json, recorded) "
              "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
              "recording a reference time");
  bind_key(s.start(), r.key)
      .bind(7, r.t_ref_ms)
      .bind(8, r.timing.dump())
      .bind(9, now_or(r.recorded))
      .execute();
}

std::optional<ReferenceTime> Store::reference_time(const BaselineKey& key) {
  const std::lock_guard lock(impl_->mutex);
  return latest_under(impl_->db, "t_ref_ms, timing_json, recorded", "reference_times", key,
                      "looking up a reference time", [&](Statement& s) {
                        ReferenceTime r;
                        r.key = key;
                        r.t_ref_ms = s.real(0);
                        // Written by put_reference_time, but the file is anyone's: a
                        // row that does not parse is no hit.
                        r.timing = json::parse(s.text(1), nullptr, /*allow_exceptions=*/false);
                        r.recorded = s.text(2);
                        return r.timing.is_object() ? std::optional<ReferenceTime>(std::move(r))
                                                    : std::nullopt;
                      });
}

}  // namespace solbench::store
