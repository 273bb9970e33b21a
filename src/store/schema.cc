// Schema version 4 (version 1 and the migrations to 2, 3 and 4). Statuses, methods
// and key lengths are checked by the database itself, so a row written by any
// client is a valid row.
#include "store/schema.h"

#include <string>

#include <fmt/format.h>

#include "store/store.h"

namespace solbench::store::detail {

namespace {

constexpr const char* kSchemaV1 = R"sql(
CREATE TABLE meta (
  key   TEXT PRIMARY KEY,
  value TEXT NOT NULL
) STRICT;

CREATE TABLE environments (
  hash       TEXT PRIMARY KEY CHECK (length(hash) = 64),
  gpu_model  TEXT NOT NULL,
  driver     TEXT NOT NULL,
  cuda       TEXT NOT NULL,
  torch      TEXT NOT NULL,
  timer      TEXT NOT NULL,
  hostname   TEXT NOT NULL,
  first_seen TEXT NOT NULL
) STRICT;

CREATE TABLE solutions (
  hash       TEXT PRIMARY KEY CHECK (length(hash) = 64),
  name       TEXT NOT NULL,
  definition TEXT NOT NULL,
  json       TEXT NOT NULL,
  first_seen TEXT NOT NULL
) STRICT;
CREATE INDEX solutions_by_name ON solutions(name);

CREATE TABLE runs (
  id           INTEGER PRIMARY KEY,
  started      TEXT NOT NULL,
  finished     TEXT,
  command_line TEXT NOT NULL,
  environment  TEXT REFERENCES environments(hash),
  dataset_path TEXT NOT NULL
) STRICT;

CREATE TABLE traces (
  id                   INTEGER PRIMARY KEY,
  run                  INTEGER NOT NULL REFERENCES runs(id),
  solution_hash        TEXT NOT NULL REFERENCES solutions(hash),
  environment          TEXT NOT NULL REFERENCES environments(hash),
  definition           TEXT NOT NULL,
  workload_uuid        TEXT NOT NULL,
  status               TEXT NOT NULL CHECK (status IN ('PASSED', 'INCORRECT_SHAPE',
                         'INCORRECT_NUMERICAL', 'INCORRECT_DTYPE', 'RUNTIME_ERROR',
                         'COMPILE_ERROR', 'TIMEOUT', 'REWARD_HACK', 'INVALID_REFERENCE')),
  latency_ms           REAL,
  reference_latency_ms REAL,
  t_sol_ms             REAL,
  t_b_ms               REAL,
  sol_score            REAL,
  recorded             TEXT NOT NULL,
  trace_json           TEXT NOT NULL,
  extras_json          TEXT NOT NULL
) STRICT;
CREATE INDEX traces_resume ON traces(solution_hash, workload_uuid, environment);
CREATE INDEX traces_by_definition ON traces(definition, workload_uuid);
CREATE INDEX traces_by_run ON traces(run);

CREATE TABLE baselines (
  id              INTEGER PRIMARY KEY,
  definition_hash TEXT NOT NULL,
  workload_uuid   TEXT NOT NULL,
  gpu_model       TEXT NOT NULL,
  driver          TEXT NOT NULL,
  torch           TEXT NOT NULL,
  timer           TEXT NOT NULL,
  t_b_ms          REAL NOT NULL CHECK (t_b_ms > 0),
  method          TEXT NOT NULL CHECK (method IN ('torch.compile', 'eager')),
  recorded        TEXT NOT NULL
) STRICT;
CREATE INDEX baselines_by_key
  ON baselines(definition_hash, workload_uuid, gpu_model, driver, torch, timer);
)sql";

bool has_table(Database& db, const char* name) {
  Statement s(db, "SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = ?1",
              "reading the schema");
  s.start().bind(1, std::string_view(name));
  const bool found = s.step();
  s.reset();
  return found;
}

int table_count(Database& db) {
  return static_cast<int>(
      count_rows(db, "SELECT count(*) FROM sqlite_schema WHERE type = 'table'", "reading the schema"));
}

// The stored version; throws when the meta table has none or a non-integer.
int read_version(Database& db) {
  Statement s(db, "SELECT value FROM meta WHERE key = 'schema_version'", "reading the schema version");
  s.start();
  if (!s.step())
    throw StoreError(fmt::format(
        "{}: the meta table has no schema_version (expected a solbench results store)", db.file()));
  const std::string v = s.text(0);
  s.reset();
  size_t used = 0;
  int version = 0;
  try {
    version = std::stoi(v, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != v.size() || version < 1)
    throw StoreError(fmt::format("{}: schema_version is \"{}\" (expected a positive integer)",
                                 db.file(), v));
  return version;
}

// Migrations from version N to N+1, in order. A new store is version 1 migrated
// up, so that the two ways to the current schema cannot differ.
void migrate(Database& db, int from) {
  switch (from) {
    case 1:
      // Why a baseline is eager (docs/score.md); rows recorded before: "" (not kept).
      db.exec("ALTER TABLE baselines ADD COLUMN reason TEXT NOT NULL DEFAULT ''",
              "migrating the schema to version 2 (baselines.reason)");
      break;
    case 2:
      // Workloads skipped for running out of GPU memory with the GPU to themselves,
      // which resume does not try again (docs/run.md "Resume"). Other skips are not
      // kept: they are the user's to fix. Keyed like traces; every row is kept and
      // the latest counts.
      db.exec(R"sql(
CREATE TABLE skips (
  id            INTEGER PRIMARY KEY,
  run           INTEGER NOT NULL REFERENCES runs(id),
  solution_hash TEXT NOT NULL REFERENCES solutions(hash),
  environment   TEXT NOT NULL REFERENCES environments(hash),
  definition    TEXT NOT NULL,
  workload_uuid TEXT NOT NULL CHECK (workload_uuid != ''),
  reason        TEXT NOT NULL CHECK (reason != ''),
  recorded      TEXT NOT NULL
) STRICT;
CREATE INDEX skips_resume ON skips(solution_hash, workload_uuid, environment);
)sql",
              "migrating the schema to version 3 (the skips table)");
      break;
    case 3:
      // The reference's time T_ref per workload and environment, keyed as a
      // baseline: an evaluation that finds it times no reference (docs/store.md).
      db.exec(R"sql(
CREATE TABLE reference_times (
  id              INTEGER PRIMARY KEY,
  definition_hash TEXT NOT NULL,
  workload_uuid   TEXT NOT NULL CHECK (workload_uuid != ''),
  gpu_model       TEXT NOT NULL,
  driver          TEXT NOT NULL,
  torch           TEXT NOT NULL,
  timer           TEXT NOT NULL,
  t_ref_ms        REAL NOT NULL CHECK (t_ref_ms > 0),
  timing_json     TEXT NOT NULL,
  recorded        TEXT NOT NULL
) STRICT;
CREATE INDEX reference_times_by_key
  ON reference_times(definition_hash, workload_uuid, gpu_model, driver, torch, timer);
)sql",
              "migrating the schema to version 4 (the reference_times table)");
      break;
    default:
      throw StoreError(fmt::format("{}: no migration from schema version {}", db.file(), from));
  }
}

}  // namespace

int ensure_schema(Database& db, bool may_create) {
  // The common case, without taking the write lock: an up-to-date store.
  if (has_table(db, "meta")) {
    const int v = read_version(db);
    if (v == kSchemaVersion) return v;
  }
  // Creation or migration: under the write lock, so that two processes opening
  // a new file at once create the schema once.
  db.exec("BEGIN IMMEDIATE", "locking the store to create its schema");
  try {
    int version = 0;
    if (has_table(db, "meta")) {
      version = read_version(db);
    } else if (table_count(db) > 0) {
      throw StoreError(fmt::format(
          "{}: this SQLite database has tables but no solbench meta table (expected a solbench "
          "results store, or a new file)",
          db.file()));
    } else if (!may_create) {
      throw StoreError(fmt::format(
          "{}: the database is empty (expected a solbench results store with its tables)",
          db.file()));
    }
    if (version > kSchemaVersion)
      throw StoreError(fmt::format(
          "{}: the store has schema version {}, written by a newer solbench (this build reads "
          "versions up to {}); use that solbench, or another --db file",
          db.file(), version, kSchemaVersion));
    if (version == 0) {
      db.exec(kSchemaV1, "creating the schema");
      for (int v = 1; v < kSchemaVersion; ++v) migrate(db, v);
      db.exec(fmt::format("INSERT INTO meta(key, value) VALUES ('schema_version', '{}'), "
                          "('created', strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))",
                          kSchemaVersion),
              "writing the schema version");
    } else {
      for (int v = version; v < kSchemaVersion; ++v) migrate(db, v);
      db.exec(fmt::format("UPDATE meta SET value = '{}' WHERE key = 'schema_version'",
                          kSchemaVersion),
              "writing the schema version");
    }
    db.exec("COMMIT", "committing the schema");
  } catch (...) {
    try {
      db.exec("ROLLBACK", "rolling back the schema");
    } catch (const StoreError&) {
      // The original error is the one to report.
    }
    throw;
  }
  return kSchemaVersion;
}

}  // namespace solbench::store::detail
