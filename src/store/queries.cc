// Reading the store: leaderboard, best, history and export. Each query is one
// SQL statement over the traces joined with their solution and environment.
#include <ostream>
#include <string>

#include <fmt/format.h>

#include "store/store.h"
#include "store/store_impl.h"

namespace solbench::store {

using detail::Statement;

namespace {

// The traces matching a Filter (?1 definition, ?2 solution name, ?3 GPU model;
// '' matches all), with the solution's name and the GPU model beside each.
constexpr const char* kMatching = R"sql(
WITH matching AS (
  SELECT t.id, t.run, t.recorded, t.definition, s.name AS solution, t.solution_hash,
         t.workload_uuid, t.environment, e.gpu_model, t.status, t.latency_ms,
         t.reference_latency_ms, t.t_sol_ms, t.t_b_ms, t.sol_score, t.trace_json, t.extras_json
  FROM traces t
  JOIN solutions s ON s.hash = t.solution_hash
  JOIN environments e ON e.hash = t.environment
  WHERE (?1 = '' OR t.definition = ?1) AND (?2 = '' OR s.name = ?2)
    AND (?3 = '' OR e.gpu_model = ?3)
))sql";

constexpr const char* kColumns =
    "id, run, recorded, definition, solution, solution_hash, workload_uuid, environment, "
    "gpu_model, status, latency_ms, reference_latency_ms, t_sol_ms, t_b_ms, sol_score, "
    "trace_json, extras_json";

StoredTrace read_trace_row(const Statement& s, const std::string& file) {
  StoredTrace t;
  t.id = s.integer(0);
  t.run = s.integer(1);
  t.recorded = s.text(2);
  t.definition = s.text(3);
  t.solution = s.text(4);
  t.solution_hash = s.text(5);
  t.workload_uuid = s.text(6);
  t.environment_hash = s.text(7);
  t.gpu_model = s.text(8);
  // The schema's CHECK admits only known statuses.
  t.status = parse_status(s.text(9)).value_or(Status::RuntimeError);
  t.latency_ms = s.optional_real(10);
  t.reference_latency_ms = s.optional_real(11);
  t.t_sol_ms = s.optional_real(12);
  t.t_b_ms = s.optional_real(13);
  t.sol_score = s.optional_real(14);
  t.trace_json = s.text(15);
  t.extras = parse_json_text(s.text(16), fmt::format("{} (traces.id {}, extras_json)", file, t.id));
  return t;
}

Statement& bind_filter(Statement& s, const Filter& f) {
  return s.start().bind(1, f.definition).bind(2, f.solution).bind(3, f.gpu_model);
}

std::vector<StoredTrace> read_traces(detail::Database& db, const std::string& sql,
                                     const Filter& f, const char* doing) {
  Statement s(db, sql, doing);
  bind_filter(s, f);
  std::vector<StoredTrace> out;
  while (s.step()) out.push_back(read_trace_row(s, db.file()));
  return out;
}

}  // namespace

Trace StoredTrace::trace() const {
  const std::string where = fmt::format("results store trace {}", id);
  Diagnostics diags;
  Trace t = parse_trace(parse_json_text(trace_json, where), where, 0, diags);
  if (!diags.empty()) throw InputError(diags);
  return t;
}

std::vector<LeaderboardEntry> Store::leaderboard(const Filter& filter) {
  const std::lock_guard lock(impl_->mutex);
  // Ranks are computed over every solution of a definition; the solution filter
  // (?4) applies to the ranked rows. A solution that passed no workload comes after
  // every one that passed some (a correct one without a score yet, --no-baseline,
  // is not beaten by a wrong one's 0). Scores are compared rounded to 1e-9 so that
  // means equal but for floating-point noise tie, and latency decides.
  const std::string sql = std::string(kMatching) + R"sql(,
latest AS (
  SELECT *, row_number() OVER (PARTITION BY solution_hash, workload_uuid, gpu_model
                               ORDER BY id DESC) AS k
  FROM matching),
per_solution AS (
  SELECT definition, gpu_model, solution, solution_hash,
         count(*) AS workloads,
         sum(status = 'PASSED') AS passed,
         sum(status = 'PASSED' AND sol_score IS NULL) AS unscored,
         avg(CASE WHEN status = 'PASSED' THEN sol_score ELSE 0.0 END) AS mean_score,
         avg(CASE WHEN status = 'PASSED' AND latency_ms > 0 THEN latency_ms END) AS mean_latency
  FROM latest WHERE k = 1
  GROUP BY definition, gpu_model, solution_hash),
ranked AS (
  SELECT *, row_number() OVER (PARTITION BY definition, gpu_model
                               ORDER BY passed = 0, mean_score IS NULL,
                                        round(mean_score, 9) DESC,
                                        mean_latency IS NULL, mean_latency, solution,
                                        solution_hash) AS rank
  FROM per_solution)
SELECT definition, gpu_model, rank, solution, solution_hash, workloads, passed, unscored,
       mean_score, mean_latency
FROM ranked WHERE ?4 = '' OR solution = ?4
ORDER BY definition, gpu_model, rank)sql";
  Statement s(impl_->db, sql, "reading the leaderboard");
  s.start().bind(1, filter.definition).bind(2, std::string_view()).bind(3, filter.gpu_model);
  s.bind(4, filter.solution);
  std::vector<LeaderboardEntry> out;
  while (s.step()) {
    LeaderboardEntry e;
    e.definition = s.text(0);
    e.gpu_model = s.text(1);
    e.rank = static_cast<int>(s.integer(2));
    e.solution = s.text(3);
    e.solution_hash = s.text(4);
    e.workloads = static_cast<int>(s.integer(5));
    e.passed = static_cast<int>(s.integer(6));
    e.unscored = static_cast<int>(s.integer(7));
    e.mean_score = s.optional_real(8);
    e.mean_latency_ms = s.optional_real(9);
    out.push_back(std::move(e));
  }
  return out;
}

std::vector<StoredTrace> Store::best(const Filter& filter) {
  const std::lock_guard lock(impl_->mutex);
  // Untimed PASSED traces (--no-timing) report latency 0 and do not compete.
  const std::string sql = std::string(kMatching) + fmt::format(R"sql(,
ranked AS (
  SELECT *, row_number() OVER (PARTITION BY definition, workload_uuid, gpu_model
                               ORDER BY latency_ms, id) AS k
  FROM matching WHERE status = 'PASSED' AND latency_ms > 0)
SELECT {} FROM ranked WHERE k = 1 ORDER BY definition, gpu_model, workload_uuid)sql",
                                                               kColumns);
  return read_traces(impl_->db, sql, filter, "reading the best traces");
}

std::vector<StoredTrace> Store::history(const Filter& filter) {
  const std::lock_guard lock(impl_->mutex);
  const std::string sql =
      std::string(kMatching) + fmt::format(" SELECT {} FROM matching ORDER BY recorded, id", kColumns);
  return read_traces(impl_->db, sql, filter, "reading the history");
}

size_t Store::export_jsonl(const Filter& filter, std::ostream& out) {
  const std::lock_guard lock(impl_->mutex);
  // Streamed: a whole data set's traces need not fit in memory twice.
  const std::string sql =
      std::string(kMatching) + " SELECT trace_json FROM matching ORDER BY recorded, id";
  Statement s(impl_->db, sql, "exporting traces");
  bind_filter(s, filter);
  size_t n = 0;
  while (s.step()) {
    out << s.text(0) << '\n';
    ++n;
  }
  return n;
}

size_t Store::trace_count() {
  const std::lock_guard lock(impl_->mutex);
  return detail::count_rows(impl_->db, "SELECT count(*) FROM traces", "counting traces");
}

}  // namespace solbench::store
