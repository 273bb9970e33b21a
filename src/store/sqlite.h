// A thin RAII layer over the SQLite C API, used only inside the store. Every
// call's result is checked here; failures throw StoreError naming the database
// file, what was being done and SQLite's own message.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

struct sqlite3;
struct sqlite3_stmt;

#include "store/store.h"

namespace solbench::store::detail {

// The database stayed locked by another connection for longer than the busy
// timeout (or a lock could not wait at all: switching the journal mode).
class BusyError : public StoreError {
 public:
  using StoreError::StoreError;
};

// Owns one connection.
class Database {
 public:
  // `create`: make the file when it is missing (else opening a missing file fails).
  Database(const std::filesystem::path& file, bool create);
  ~Database();
  Database(const Database&) = delete;  // owns the connection handle
  Database& operator=(const Database&) = delete;

  sqlite3* handle() const { return db_; }
  const std::string& file() const { return file_; }

  // Runs SQL without results (one or more statements).
  void exec(std::string_view sql, std::string_view doing);
  // Throws StoreError "FILE: DOING: SQLite's message"; `code` picks the wording
  // for busy (locked) errors.
  [[noreturn]] void fail(int code, std::string_view doing) const;
  int64_t last_insert_rowid() const;

 private:
  sqlite3* db_ = nullptr;
  std::string file_;
};

// Owns one prepared statement. Parameters are 1-based, columns 0-based (as in
// SQLite). A statement is reset when its results have been read (execute, step
// to the end) and before each new use, so no read transaction is left open.
class Statement {
 public:
  // `doing` names the statement in errors, e.g. "recording a trace".
  Statement(Database& db, std::string_view sql, std::string doing);
  ~Statement();
  Statement(const Statement&) = delete;  // owns the statement handle
  Statement& operator=(const Statement&) = delete;

  // Clears the previous use (results and bindings).
  Statement& start();
  Statement& bind(int i, std::string_view text);
  Statement& bind(int i, double v);
  Statement& bind(int i, int64_t v);
  Statement& bind(int i, std::optional<double> v);  // nullopt binds NULL
  Statement& bind_null(int i);

  // Steps once: true when a row is ready to read, false when done (then resets).
  bool step();
  // Steps to the end, ignoring rows.
  void execute();
  // Resets early (e.g. after reading the one row wanted).
  void reset();

  bool is_null(int col) const;
  std::string text(int col) const;
  double real(int col) const;
  int64_t integer(int col) const;
  std::optional<double> optional_real(int col) const;

 private:
  Database& db_;
  sqlite3_stmt* stmt_ = nullptr;
  std::string doing_;
};

// The first column of the one row `sql` gives, as a count (a `SELECT count(*) ...`);
// 0 when it gives none. `doing` names it in errors.
size_t count_rows(Database& db, std::string_view sql, std::string doing);

// BEGIN IMMEDIATE ... COMMIT: takes the write lock up front, so two writers
// wait for each other (busy_timeout) instead of failing on a lock upgrade.
// Rolls back unless commit() was called.
class WriteTransaction {
 public:
  WriteTransaction(Statement& begin, Statement& commit, Statement& rollback);
  ~WriteTransaction();
  WriteTransaction(const WriteTransaction&) = delete;  // one BEGIN, one COMMIT or ROLLBACK
  WriteTransaction& operator=(const WriteTransaction&) = delete;
  void commit();

 private:
  Statement& commit_;
  Statement& rollback_;
  bool open_ = true;
};

}  // namespace solbench::store::detail
