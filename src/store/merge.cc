// Merging one results store into another (`solbench db merge`): the stores the
// shards of a cluster run write, gathered into one. Rows are matched by
// content, never by id (ids are per file), so a merge is idempotent.
#include <system_error>

#include <fmt/format.h>

#include "store/store.h"
#include "store/store_impl.h"

namespace solbench::store {

namespace fs = std::filesystem;
using detail::Statement;

namespace {

// The source is attached under this name for the merge's duration.
constexpr const char* kSource = "merge_source";

int64_t changes(detail::Database& db) {
  Statement s(db, "SELECT changes()", "counting merged rows");
  s.start();
  const int64_t n = s.step() ? s.integer(0) : 0;
  s.reset();
  return n;
}

std::string short_hash(const std::string& h) { return h.substr(0, 12); }

// Detaches the source whatever happens (ATTACH/DETACH cannot run inside a transaction).
class Attached {
 public:
  Attached(detail::Database& db, const fs::path& file) : db_(db) {
    Statement s(db, fmt::format("ATTACH DATABASE ?1 AS {}", kSource), "attaching the source store");
    s.start().bind(1, file.string()).execute();
  }
  ~Attached() {
    try {
      db_.exec(fmt::format("DETACH DATABASE {}", kSource), "detaching the source store");
    } catch (const StoreError&) {
      // Nothing to do: the connection closes with the Store.
    }
  }
  Attached(const Attached&) = delete;  // one ATTACH, one DETACH
  Attached& operator=(const Attached&) = delete;

 private:
  detail::Database& db_;
};

void find_conflicts(detail::Database& db, std::vector<MergeConflict>& out) {
  // Hashes are of the contents: the same hash with other contents means a file
  // was edited by hand or corrupted, which the merge must not hide.
  {
    Statement s(db,
                fmt::format("SELECT s.hash, s.name FROM {0}.solutions s JOIN main.solutions m "
                            "ON m.hash = s.hash WHERE m.json != s.json ORDER BY s.hash",
                            kSource),
                "comparing solutions");
    s.start();
    while (s.step())
      out.push_back({"solution", fmt::format("solution {} ({})", s.text(1), short_hash(s.text(0))),
                     "the same hash with other JSON in the target and the source (one of the "
                     "files was altered); the target's is kept"});
  }
  {
    Statement s(db,
                fmt::format("SELECT s.hash FROM {0}.environments s JOIN main.environments m "
                            "ON m.hash = s.hash WHERE m.gpu_model != s.gpu_model OR "
                            "m.driver != s.driver OR m.cuda != s.cuda OR m.torch != s.torch OR "
                            "m.timer != s.timer OR m.hostname != s.hostname ORDER BY s.hash",
                            kSource),
                "comparing environments");
    s.start();
    while (s.step())
      out.push_back({"environment", fmt::format("environment {}", short_hash(s.text(0))),
                     "the same hash with other fields in the target and the source; the "
                     "target's is kept"});
  }
  // A result: the target holds a trace of the same (solution, workload,
  // environment) with another status, and that trace did not come from this
  // source (after a first merge the source's own traces are in the target:
  // they must not conflict with themselves, so a second merge reports exactly
  // what the first did). Latencies are not compared: they differ by noise.
  Statement s(db,
              fmt::format(
                  "SELECT DISTINCT t.definition, sol.name, t.workload_uuid, t.environment, "
                  "x.status, t.status FROM {0}.traces t "
                  "JOIN main.traces x ON x.solution_hash = t.solution_hash AND "
                  "x.workload_uuid = t.workload_uuid AND x.environment = t.environment "
                  "JOIN {0}.solutions sol ON sol.hash = t.solution_hash "
                  "WHERE x.status != t.status AND NOT EXISTS (SELECT 1 FROM {0}.traces y "
                  "WHERE y.solution_hash = x.solution_hash AND y.workload_uuid = x.workload_uuid "
                  "AND y.environment = x.environment AND y.recorded = x.recorded AND "
                  "y.trace_json = x.trace_json) "
                  "ORDER BY t.definition, sol.name, t.workload_uuid, t.environment, x.status, "
                  "t.status",
                  kSource),
              "comparing results");
  s.start();
  while (s.step())
    out.push_back({"result",
                   fmt::format("{} / {} on workload {} in environment {}", s.text(0), s.text(1),
                               s.text(2), short_hash(s.text(3))),
                   fmt::format("the target holds {}, the source {} (both kept: queries take the "
                               "latest)",
                               s.text(4), s.text(5))});
}

// Each source run is matched to a target run with the same start time, command
// line and data set (a run merged before), else added; the map translates
// trace.run ids.
size_t merge_runs(detail::Database& db) {
  db.exec("CREATE TEMP TABLE IF NOT EXISTS merge_run_map (source_id INTEGER PRIMARY KEY, "
          "target_id INTEGER NOT NULL)",
          "preparing the run map");
  db.exec("DELETE FROM temp.merge_run_map", "clearing the run map");
  Statement runs(db,
                 fmt::format("SELECT id, started, finished, command_line, environment, "
                             "dataset_path FROM {}.runs ORDER BY id",
                             kSource),
                 "reading the source's runs");
  Statement find(db,
                 "SELECT id FROM main.runs WHERE started = ?1 AND command_line = ?2 AND "
                 "dataset_path = ?3 ORDER BY id LIMIT 1",
                 "matching a run");
  Statement insert(db,
                   "INSERT INTO main.runs(started, finished, command_line, environment, "
                   "dataset_path) VALUES (?1, ?2, ?3, ?4, ?5)",
                   "adding a run");
  Statement map(db, "INSERT INTO temp.merge_run_map(source_id, target_id) VALUES (?1, ?2)",
                "mapping a run");
  size_t added = 0;
  runs.start();
  while (runs.step()) {
    const int64_t source_id = runs.integer(0);
    const std::string started = runs.text(1), command = runs.text(3), dataset = runs.text(5);
    find.start().bind(1, started).bind(2, command).bind(3, dataset);
    int64_t target_id = 0;
    if (find.step()) {
      target_id = find.integer(0);
      find.reset();
    } else {
      insert.start().bind(1, started);
      if (runs.is_null(2)) insert.bind_null(2); else insert.bind(2, runs.text(2));
      insert.bind(3, command);
      if (runs.is_null(4)) insert.bind_null(4); else insert.bind(4, runs.text(4));
      insert.bind(5, dataset).execute();
      target_id = db.last_insert_rowid();
      ++added;
    }
    map.start().bind(1, source_id).bind(2, target_id).execute();
  }
  return added;
}

}  // namespace

MergeResult Store::merge_from(const fs::path& source) {
  MergeResult r;
  r.source = source;
  {
    std::error_code ec;
    if (fs::equivalent(source, impl_->file, ec))
      throw StoreError(fmt::format("{}: cannot merge a store into itself (expected another "
                                   "store file)",
                                   source.string()));
  }
  // Opening it checks that it is a store of a schema this build reads (and
  // migrates an older one), with the message every store command gives.
  {
    Options o;
    o.mode = Mode::Existing;
    Store check = Store::open(source, o);
    if (check.schema_version() != impl_->version)
      throw StoreError(fmt::format("{}: schema version {} (expected {})", source.string(),
                                   check.schema_version(), impl_->version));
  }

  const std::lock_guard lock(impl_->mutex);
  detail::Database& db = impl_->db;
  Attached attached(db, source);
  detail::WriteTransaction tx(impl_->begin, impl_->commit, impl_->rollback);
  find_conflicts(db, r.conflicts);

  db.exec(fmt::format("INSERT INTO main.environments SELECT * FROM {0}.environments s "
                      "WHERE NOT EXISTS (SELECT 1 FROM main.environments m WHERE m.hash = s.hash) "
                      "ORDER BY s.first_seen, s.hash",
                      kSource),
          "merging environments");
  r.environments = static_cast<size_t>(changes(db));
  db.exec(fmt::format("INSERT INTO main.solutions SELECT * FROM {0}.solutions s "
                      "WHERE NOT EXISTS (SELECT 1 FROM main.solutions m WHERE m.hash = s.hash) "
                      "ORDER BY s.first_seen, s.hash",
                      kSource),
          "merging solutions");
  r.solutions = static_cast<size_t>(changes(db));
  r.runs = merge_runs(db);

  // In the source's commit order, so the target's ids (which history and
  // "latest" use to break ties) keep the source's order.
  const size_t source_traces = detail::count_rows(
      db, fmt::format("SELECT count(*) FROM {}.traces", kSource), "counting rows to merge");
  db.exec(fmt::format(
              "INSERT INTO main.traces(run, solution_hash, environment, definition, workload_uuid, "
              "status, latency_ms, reference_latency_ms, t_sol_ms, t_b_ms, sol_score, recorded, "
              "trace_json, extras_json) "
              "SELECT m.target_id, t.solution_hash, t.environment, t.definition, t.workload_uuid, "
              "t.status, t.latency_ms, t.reference_latency_ms, t.t_sol_ms, t.t_b_ms, t.sol_score, "
              "t.recorded, t.trace_json, t.extras_json FROM {0}.traces t "
              "JOIN temp.merge_run_map m ON m.source_id = t.run "
              "WHERE NOT EXISTS (SELECT 1 FROM main.traces x WHERE "
              "x.solution_hash = t.solution_hash AND x.workload_uuid = t.workload_uuid AND "
              "x.environment = t.environment AND x.recorded = t.recorded AND "
              "x.trace_json = t.trace_json) ORDER BY t.id",
              kSource),
          "merging traces");
  r.traces = static_cast<size_t>(changes(db));
  r.traces_present = source_traces - r.traces;

  // Skips as traces: the source's commit order, the run translated, a row the
  // target holds (same key, time and reason) not added again.
  db.exec(fmt::format(
              "INSERT INTO main.skips(run, solution_hash, environment, definition, workload_uuid, "
              "reason, recorded) "
              "SELECT m.target_id, k.solution_hash, k.environment, k.definition, k.workload_uuid, "
              "k.reason, k.recorded FROM {0}.skips k "
              "JOIN temp.merge_run_map m ON m.source_id = k.run "
              "WHERE NOT EXISTS (SELECT 1 FROM main.skips x WHERE "
              "x.solution_hash = k.solution_hash AND x.workload_uuid = k.workload_uuid AND "
              "x.environment = k.environment AND x.recorded = k.recorded AND "
              "x.reason = k.reason) ORDER BY k.id",
              kSource),
          "merging skips");
  r.skips = static_cast<size_t>(changes(db));

  db.exec(fmt::format(
              "INSERT INTO main.baselines(definition_hash, workload_uuid, gpu_model, driver, "
              "torch, timer, t_b_ms, method, recorded, reason) "
              "SELECT b.definition_hash, b.workload_uuid, b.gpu_model, b.driver, b.torch, "
              "b.timer, b.t_b_ms, b.method, b.recorded, b.reason FROM {0}.baselines b "
              "WHERE NOT EXISTS (SELECT 1 FROM main.baselines x WHERE "
              "x.definition_hash = b.definition_hash AND x.workload_uuid = b.workload_uuid AND "
              "x.gpu_model = b.gpu_model AND x.driver = b.driver AND x.torch = b.torch AND "
              "x.timer = b.timer AND x.t_b_ms = b.t_b_ms AND x.method = b.method AND "
              "x.recorded = b.recorded AND x.reason = b.reason) ORDER BY b.id",
              kSource),
          "merging baselines");
  r.baselines = static_cast<size_t>(changes(db));

  db.exec(fmt::format(
              "INSERT INTO main.reference_times(definition_hash, workload_uuid, gpu_model, "
              "driver, torch, timer, t_ref_ms, timing_json, recorded) "
              "SELECT t.definition_hash, t.workload_uuid, t.gpu_model, t.driver, t.torch, "
              "t.timer, t.t_ref_ms, t.timing_json, t.recorded FROM {0}.reference_times t "
              "WHERE NOT EXISTS (SELECT 1 FROM main.reference_times x WHERE "
              "x.definition_hash = t.definition_hash AND x.workload_uuid = t.workload_uuid AND "
              "x.gpu_model = t.gpu_model AND x.driver = t.driver AND x.torch = t.torch AND "
              "x.timer = t.timer AND x.t_ref_ms = t.t_ref_ms AND "
              "x.timing_json = t.timing_json AND x.recorded = t.recorded) ORDER BY t.id",
              kSource),
          "merging reference times");
  r.reference_times = static_cast<size_t>(changes(db));
  tx.commit();
  return r;
}

}  // namespace solbench::store
