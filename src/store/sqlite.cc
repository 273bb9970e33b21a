// The SQLite RAII layer: every return code is checked here.
#include "store/sqlite.h"

#include <sqlite3.h>

#include <utility>

#include <fmt/format.h>


namespace solbench::store::detail {

Database::Database(const std::filesystem::path& file, bool create) : file_(file.string()) {
  int flags = SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0);
  // The Store serialises its calls (store_impl.h): SQLite's own mutex is not needed.
  flags |= SQLITE_OPEN_NOMUTEX;
  const int rc = sqlite3_open_v2(file_.c_str(), &db_, flags, nullptr);
  if (rc != SQLITE_OK) {
    const std::string msg = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
    sqlite3_close(db_);
    db_ = nullptr;
    throw StoreError(fmt::format("{}: cannot open the results store: {}", file_, msg));
  }
  sqlite3_extended_result_codes(db_, 1);
}

Database::~Database() {
  // Statements are finalised first (they belong to the Store, destroyed before
  // this); close_v2 would defer the close if one were left.
  sqlite3_close_v2(db_);
}

void Database::exec(std::string_view sql, std::string_view doing) {
  const std::string text(sql);
  const int rc = sqlite3_exec(db_, text.c_str(), nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) fail(rc, doing);
}

void Database::fail(int code, std::string_view doing) const {
  const int primary = code & 0xff;
  if (primary == SQLITE_BUSY || primary == SQLITE_LOCKED)
    throw BusyError(fmt::format(
        "{}: {}: the database stayed locked by another process for longer than the busy "
        "timeout ({})",
        file_, doing, sqlite3_errmsg(db_)));
  if (primary == SQLITE_NOTADB)
    throw StoreError(fmt::format("{}: {}: not an SQLite database (expected a solbench results "
                                 "store)",
                                 file_, doing));
  throw StoreError(fmt::format("{}: {}: {}", file_, doing,
                               db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(code)));
}

int64_t Database::last_insert_rowid() const { return sqlite3_last_insert_rowid(db_); }

Statement::Statement(Database& db, std::string_view sql, std::string doing)
    : db_(db), doing_(std::move(doing)) {
  const int rc = sqlite3_prepare_v3(db.handle(), sql.data(), static_cast<int>(sql.size()),
                                    SQLITE_PREPARE_PERSISTENT, &stmt_, nullptr);
  if (rc != SQLITE_OK) db_.fail(rc, "preparing the statement for " + doing_);
}

Statement::~Statement() { sqlite3_finalize(stmt_); }

Statement& Statement::start() {
  sqlite3_reset(stmt_);  // its code repeats the last step's error, already reported
  sqlite3_clear_bindings(stmt_);
  return *this;
}

Statement& Statement::bind(int i, std::string_view text) {
  // A null data pointer would bind SQL NULL; an empty string_view means "".
  const int rc = sqlite3_bind_text(stmt_, i, text.data() ? text.data() : "",
                                   static_cast<int>(text.size()), SQLITE_TRANSIENT);
  if (rc != SQLITE_OK) db_.fail(rc, doing_);
  return *this;
}

Statement& Statement::bind(int i, double v) {
  const int rc = sqlite3_bind_double(stmt_, i, v);
  if (rc != SQLITE_OK) db_.fail(rc, doing_);
  return *this;
}

Statement& Statement::bind(int i, int64_t v) {
  const int rc = sqlite3_bind_int64(stmt_, i, v);
  if (rc != SQLITE_OK) db_.fail(rc, doing_);
  return *this;
}

Statement& Statement::bind(int i, std::optional<double> v) {
  return v ? bind(i, *v) : bind_null(i);
}

Statement& Statement::bind_null(int i) {
  const int rc = sqlite3_bind_null(stmt_, i);
  if (rc != SQLITE_OK) db_.fail(rc, doing_);
  return *this;
}

bool Statement::step() {
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  sqlite3_reset(stmt_);
  if (rc == SQLITE_DONE) return false;
  db_.fail(rc, doing_);
}

void Statement::execute() {
  while (step()) {
  }
}

void Statement::reset() { sqlite3_reset(stmt_); }

bool Statement::is_null(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }

std::string Statement::text(int col) const {
  const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, col));
  if (!p) return {};
  return std::string(p, static_cast<size_t>(sqlite3_column_bytes(stmt_, col)));
}

double Statement::real(int col) const { return sqlite3_column_double(stmt_, col); }

int64_t Statement::integer(int col) const { return sqlite3_column_int64(stmt_, col); }

std::optional<double> Statement::optional_real(int col) const {
  if (is_null(col)) return std::nullopt;
  return real(col);
}

WriteTransaction::WriteTransaction(Statement& begin, Statement& commit, Statement& rollback)
    : commit_(commit), rollback_(rollback) {
  begin.start().execute();
}

WriteTransaction::~WriteTransaction() {
  if (!open_) return;
  try {
    rollback_.start().execute();
  } catch (const StoreError&) {
    // Already failing; SQLite rolls an unfinished transaction back on close anyway.
  }
}

void WriteTransaction::commit() {
  commit_.start().execute();
  open_ = false;
}

size_t count_rows(Database& db, std::string_view sql, std::string doing) {
  Statement s(db, sql, std::move(doing));
  s.start();
  const int64_t n = s.step() ? s.integer(0) : 0;
  s.reset();
  return static_cast<size_t>(n);
}

}  // namespace solbench::store::detail
