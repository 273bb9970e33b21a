// Schema creation, version checks and refusing files that are not a store.
#include <fstream>

#include "store_test_util.h"

namespace solbench::store {
namespace {

namespace fs = std::filesystem;
using testing::sql_value;
using testing::store_error;
using testing::TempDir;

TEST(StoreSchema, CreatesEveryTableWithTheVersionInMeta) {
  TempDir dir;
  const fs::path db = dir.path() / "sub" / "folder" / "solbench.db";  // folders are created
  {
    Store s = Store::open(db);
    EXPECT_EQ(s.schema_version(), kSchemaVersion);
    EXPECT_EQ(s.file(), db);
  }
  EXPECT_EQ(sql_value(db, "SELECT value FROM meta WHERE key = 'schema_version'"),
            std::to_string(kSchemaVersion));
  for (const char* table :
       {"meta", "environments", "solutions", "runs", "traces", "baselines", "skips"})
    EXPECT_EQ(sql_value(db, std::string("SELECT count(*) FROM sqlite_schema WHERE type = 'table' "
                                        "AND name = '") + table + "'"),
              "1")
        << table;
  EXPECT_EQ(sql_value(db, "PRAGMA journal_mode"), "wal");
  // Reopening an up-to-date store changes nothing.
  Store again = Store::open(db);
  EXPECT_EQ(again.schema_version(), kSchemaVersion);
  EXPECT_EQ(sql_value(db, "SELECT count(*) FROM meta WHERE key = 'schema_version'"), "1");
}

TEST(StoreSchema, RefusesAStoreWrittenByANewerSolbench) {
  TempDir dir;
  const fs::path db = dir.path() / "solbench.db";
  { Store s = Store::open(db); }
  sql_value(db, "UPDATE meta SET value = '99' WHERE key = 'schema_version'");
  const std::string msg = store_error([&] { Store::open(db); });
  EXPECT_HAS(msg, db.string());
  EXPECT_HAS(msg, "schema version 99");
  EXPECT_HAS(msg, "newer solbench");
  EXPECT_HAS(msg, "up to " + std::to_string(kSchemaVersion));
  // Nothing was rewritten.
  EXPECT_EQ(sql_value(db, "SELECT value FROM meta WHERE key = 'schema_version'"), "99");
}

TEST(StoreSchema, RefusesAVersionThatIsNotAnInteger) {
  TempDir dir;
  const fs::path db = dir.path() / "solbench.db";
  { Store s = Store::open(db); }
  sql_value(db, "UPDATE meta SET value = 'one' WHERE key = 'schema_version'");
  const std::string msg = store_error([&] { Store::open(db); });
  EXPECT_HAS(msg, db.string());
  EXPECT_HAS(msg, "\"one\" (expected a positive integer)");
}

TEST(StoreSchema, RefusesAFileThatIsNotSqlite) {
  TempDir dir;
  const fs::path db = dir.path() / "traces.jsonl";
  std::ofstream(db) << "{\"definition\": \"not a database, but long enough to have a header\"}\n";
  const std::string msg = store_error([&] { Store::open(db); });
  EXPECT_HAS(msg, db.string());
  EXPECT_HAS(msg, "not an SQLite database");
}

TEST(StoreSchema, RefusesAnotherProgramsDatabase) {
  TempDir dir;
  const fs::path db = dir.path() / "other.db";
  sqlite3* h = nullptr;
  ASSERT_EQ(sqlite3_open(db.c_str(), &h), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(h, "CREATE TABLE people(name TEXT)", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(h);
  const std::string msg = store_error([&] { Store::open(db); });
  EXPECT_HAS(msg, db.string());
  EXPECT_HAS(msg, "no solbench meta table");
  // Its tables are left alone.
  EXPECT_EQ(sql_value(db, "SELECT count(*) FROM sqlite_schema WHERE type = 'table'"), "1");
}

TEST(StoreSchema, ExistingModeRefusesAMissingFileAndCreatesNothing) {
  TempDir dir;
  const fs::path db = dir.path() / "typo.db";
  Store::Options o;
  o.mode = Store::Mode::Existing;
  const std::string msg = store_error([&] { Store::open(db, o); });
  EXPECT_HAS(msg, db.string());
  EXPECT_HAS(msg, "no results store here");
  EXPECT_FALSE(fs::exists(db));
  // An empty file is not turned into a store either.
  std::ofstream(db).close();
  const std::string empty = store_error([&] { Store::open(db, o); });
  EXPECT_HAS(empty, db.string());
  EXPECT_HAS(empty, "the database is empty");
  EXPECT_EQ(fs::file_size(db), 0u);
  // So is an SQLite file without tables.
  const fs::path bare = dir.path() / "bare.db";
  sqlite3* h = nullptr;
  ASSERT_EQ(sqlite3_open(bare.c_str(), &h), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(h, "PRAGMA user_version = 7", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(h);
  ASSERT_GT(fs::file_size(bare), 0u);
  EXPECT_HAS(store_error([&] { Store::open(bare, o); }), "the database is empty");
  EXPECT_EQ(sql_value(bare, "SELECT count(*) FROM sqlite_schema"), "0");
  // Create mode makes a store of it.
  EXPECT_EQ(Store::open(db).schema_version(), kSchemaVersion);
}

// A version 1 store (no baselines.reason) is migrated when opened: its rows stay,
// with an empty reason, and new rows keep theirs.
TEST(StoreSchema, MigratesAVersion1StoreKeepingItsBaselines) {
  TempDir dir;
  const fs::path db = dir.path() / "v1.db";
  const BaselineKey key{std::string(64, 'd'), "u1", "gpu", "", "2.4.0", "cupti"};
  {
    Store s = Store::open(db);
    s.put_baseline(Baseline{key, 2.0, BaselineMethod::Eager, "2026-01-01T00:00:00Z", "dropped"});
  }
  // Back to version 1's tables, as an older solbench wrote them.
  sql_value(db, "ALTER TABLE baselines DROP COLUMN reason");
  sql_value(db, "DROP TABLE skips");  // version 3's
  sql_value(db, "DROP TABLE reference_times");  // version 4's
  sql_value(db, "UPDATE meta SET value = '1' WHERE key = 'schema_version'");
  Store s = Store::open(db);
  EXPECT_EQ(s.schema_version(), kSchemaVersion);
  EXPECT_EQ(sql_value(db, "SELECT value FROM meta WHERE key = 'schema_version'"),
            std::to_string(kSchemaVersion));
  std::optional<Baseline> old = s.baseline(key);
  ASSERT_TRUE(old);
  EXPECT_EQ(old->t_b_ms, 2.0);
  EXPECT_EQ(old->method, BaselineMethod::Eager);
  EXPECT_EQ(old->reason, "");  // not kept by version 1
  s.put_baseline(Baseline{key, 1.0, BaselineMethod::Eager, "", "torch.compile failed: X"});
  EXPECT_EQ(s.baseline(key)->reason, "torch.compile failed: X");
  // A new store has the same table as a migrated one.
  const fs::path fresh = dir.path() / "fresh.db";
  Store::open(fresh);
  EXPECT_EQ(sql_value(fresh, "SELECT sql FROM sqlite_schema WHERE name = 'baselines'"),
            sql_value(db, "SELECT sql FROM sqlite_schema WHERE name = 'baselines'"));
}

TEST(StoreSchema, ForeignKeysAreEnforcedWithAClearMessage) {
  TempDir dir;
  const fs::path db = dir.path() / "solbench.db";
  Store s = Store::open(db);
  const std::string env = s.put_environment(testing::h100_env());
  const int64_t run = s.begin_run(RunInfo{"test", "", env, ""});
  TraceExtras x;
  x.solution_hash = std::string(64, 'a');  // never put
  x.environment_hash = env;
  const Trace t = testing::make_trace("d", "s", "u1", Status::Passed, 0.5);
  std::string msg = store_error([&] { s.record_trace(run, t, x); });
  EXPECT_HAS(msg, db.string());
  EXPECT_HAS(msg, "solution " + x.solution_hash);
  EXPECT_HAS(msg, "put_solution first");
  x.solution_hash = s.put_solution(testing::solution_record("s", "d"));
  msg = store_error([&] { s.record_trace(run + 7, t, x); });
  EXPECT_HAS(msg, "run " + std::to_string(run + 7) + " (begin_run first)");
  EXPECT_EQ(s.trace_count(), 0u);
  s.record_trace(run, t, x);
  EXPECT_EQ(s.trace_count(), 1u);
}

}  // namespace
}  // namespace solbench::store
