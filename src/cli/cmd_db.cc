// `solbench db leaderboard|best|history|export`: queries over the results store
// (src/store/store.h, docs/store.md). Every query prints a table, or one JSON
// document with --json; export writes public-format JSONL. `db merge` gathers
// stores (the shards of a cluster run, docs/cluster.md) into one.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli/commands.h"
#include "core/json.h"
#include "core/text.h"
#include "score/sol_score.h"
#include "store/store.h"

namespace solbench::cli {

namespace {

namespace fs = std::filesystem;

struct DbOptions {
  std::string db;  // empty: store::default_db_path()
  bool json_output = false;
  store::Filter filter;
  int top = 0;             // leaderboard: ranks shown per definition (0: all)
  std::string output;      // export: file (empty: stdout)
  bool jsonl = false;      // export: the format (the only one; accepted for clarity)
};

store::Store open_store(const DbOptions& o) {
  store::Store::Options so;
  so.mode = store::Store::Mode::Existing;  // a query never creates a store
  return store::Store::open(o.db.empty() ? store::default_db_path() : fs::path(o.db), so);
}

json opt(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }

// Times in microseconds, as in every table (the JSON keeps milliseconds).
std::string us_text(const std::optional<double>& ms) { return ms ? quantity_text(*ms * 1e3) : "-"; }

std::string short_hash(const std::string& h) { return h.substr(0, 8); }

// A stored trace as one JSON object: its columns, and the public trace itself.
json row_json(const store::StoredTrace& t) {
  json j = json::object();
  j["trace_id"] = t.id;
  j["run"] = t.run;
  j["recorded"] = t.recorded;
  j["definition"] = t.definition;
  j["workload_uuid"] = t.workload_uuid;
  j["solution"] = t.solution;
  j["solution_hash"] = t.solution_hash;
  j["gpu_model"] = t.gpu_model;
  j["environment_hash"] = t.environment_hash;
  j["status"] = status_name(t.status);
  j["latency_ms"] = opt(t.latency_ms);
  j["reference_latency_ms"] = opt(t.reference_latency_ms);
  j["t_sol_ms"] = opt(t.t_sol_ms);
  j["t_b_ms"] = opt(t.t_b_ms);
  j["sol_score"] = opt(t.sol_score);
  j["extras"] = t.extras;
  j["trace"] = parse_json_text(t.trace_json, fmt::format("results store trace {}", t.id));
  return j;
}

void print_json(const store::Store& s, const char* key, json rows) {
  json doc = json::object();
  doc["db"] = s.file().string();
  doc[key] = std::move(rows);
  fmt::print("{}\n", doc.dump(2));
}

void print_nothing(const store::Store& s) {
  fmt::print("no traces match (store: {})\n", s.file().string());
}

int run_leaderboard(const DbOptions& o) {
  store::Store s = open_store(o);
  std::vector<store::LeaderboardEntry> rows = s.leaderboard(o.filter);
  if (o.top > 0)
    std::erase_if(rows, [&](const store::LeaderboardEntry& e) { return e.rank > o.top; });
  if (o.json_output) {
    json out = json::array();
    for (const auto& e : rows)
      out.push_back({{"definition", e.definition},
                     {"gpu_model", e.gpu_model},
                     {"rank", e.rank},
                     {"solution", e.solution},
                     {"solution_hash", e.solution_hash},
                     {"workloads", e.workloads},
                     {"passed", e.passed},
                     {"unscored", e.unscored},
                     {"mean_score", opt(e.mean_score)},
                     {"mean_latency_ms", opt(e.mean_latency_ms)}});
    print_json(s, "leaderboard", std::move(out));
    return 0;
  }
  if (rows.empty()) {
    print_nothing(s);
    return 0;
  }
  std::string group;
  for (const auto& e : rows) {
    const std::string g = e.definition + " on " + e.gpu_model;
    if (g != group) {
      fmt::print("{}{}\n", group.empty() ? "" : "\n", g);
      fmt::print("  {:>4}  {:<32} {:<8} {:>9} {:>6} {:>6} {:>12}\n", "rank", "solution", "hash",
                 "workloads", "passed", "mean S", "mean_lat_us");
      group = g;
    }
    fmt::print("  {:>4}  {:<32} {:<8} {:>9} {:>6} {:>6} {:>12}{}\n", e.rank, fit(e.solution, 32),
               short_hash(e.solution_hash), e.workloads, e.passed,
               score::score_text(e.mean_score), us_text(e.mean_latency_ms),
               e.unscored > 0 ? fmt::format("  ({} unscored)", e.unscored) : "");
  }
  return 0;
}

// Grouped by definition and GPU (a header line each time they change), so that
// a row fits a 100-column terminal.
void print_trace_table(const std::vector<store::StoredTrace>& rows, bool with_status) {
  const auto status = [&](std::string_view text) {
    return with_status ? fmt::format(" {:<19}", text) : std::string();
  };
  std::string group;
  for (const auto& t : rows) {
    const std::string g = t.definition + " on " + t.gpu_model;
    if (g != group) {
      fmt::print("{}{}\n", group.empty() ? "" : "\n", g);
      fmt::print("  {:<19} {:<8} {:<24}{} {:>10} {:>10} {:>6}\n", "recorded", "workload",
                 "solution", status("status"), "latency_us", "ref_us", "S");
      group = g;
    }
    fmt::print("  {:<19} {:<8} {:<24}{} {:>10} {:>10} {:>6}\n", t.recorded.substr(0, 19),
               short_uuid(t.workload_uuid), fit(t.solution, 24), status(status_name(t.status)),
               us_text(t.latency_ms), us_text(t.reference_latency_ms),
               score::score_text(t.sol_score, t.status != Status::Passed));
  }
}

int run_traces(const DbOptions& o, bool best) {
  store::Store s = open_store(o);
  const std::vector<store::StoredTrace> rows = best ? s.best(o.filter) : s.history(o.filter);
  if (o.json_output) {
    json out = json::array();
    for (const auto& t : rows) out.push_back(row_json(t));
    print_json(s, best ? "best" : "history", std::move(out));
    return 0;
  }
  if (rows.empty()) {
    print_nothing(s);
    return 0;
  }
  print_trace_table(rows, /*with_status=*/!best);
  return 0;
}

int run_export(const DbOptions& o) {
  if (o.json_output && o.output.empty()) {
    std::fprintf(stderr, "error: export --json prints a summary and needs -o FILE for the traces\n");
    return 2;
  }
  store::Store s = open_store(o);
  if (o.output.empty()) {
    s.export_jsonl(o.filter, std::cout);
    std::cout.flush();
    return std::cout ? 0 : 1;
  }
  // Written beside the target, then renamed: a failed export leaves no half file.
  const fs::path out = o.output;
  if (out.has_parent_path()) fs::create_directories(out.parent_path());
  const fs::path tmp = out.string() + ".tmp";
  size_t n = 0;
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) throw std::runtime_error(out.string() + ": cannot open " + tmp.string() + " for writing");
    n = s.export_jsonl(o.filter, f);
    f.close();
    if (!f) {
      std::error_code ec;
      fs::remove(tmp, ec);
      throw std::runtime_error(out.string() + ": cannot write the exported traces");
    }
  }
  fs::rename(tmp, out);
  if (o.json_output) {
    json doc = {{"db", s.file().string()}, {"output", out.string()}, {"exported", n}};
    fmt::print("{}\n", doc.dump(2));
  } else {
    fmt::print("exported {} trace(s) to {}\n", n, out.string());
  }
  return 0;
}

struct MergeOptions {
  std::string output;               // the target store (created when missing)
  std::vector<std::string> inputs;  // the stores merged into it, in order
  bool json_output = false;
};

// Exit 0: merged without conflict; 1: a store error, or conflicts (everything
// else is merged all the same; shards of one run never conflict, so a conflict
// means overlapping inputs worth a look).
int run_merge(const MergeOptions& o) {
  store::Store out = store::Store::open(o.output);  // Mode::Create: a new file is fine
  json sources = json::array();
  size_t conflicts = 0;
  for (const std::string& in : o.inputs) {
    // Each source is its own transaction: a bad input stops the merge with the
    // sources before it merged, and a rerun adds only what is still missing.
    const store::MergeResult r = out.merge_from(in);
    conflicts += r.conflicts.size();
    json cj = json::array();
    for (const auto& c : r.conflicts)
      cj.push_back({{"kind", c.kind}, {"key", c.key}, {"detail", c.detail}});
    sources.push_back({{"source", in},
                       {"traces", r.traces},
                       {"traces_present", r.traces_present},
                       {"environments", r.environments},
                       {"solutions", r.solutions},
                       {"runs", r.runs},
                       {"baselines", r.baselines},
                       {"skips", r.skips},
                       {"reference_times", r.reference_times},
                       {"conflicts", std::move(cj)}});
    if (!o.json_output) {
      fmt::print("{}: {} trace(s) added, {} already present; {} environment(s), {} solution(s), "
                 "{} run(s), {} baseline(s), {} reference time(s), {} skip(s) added\n",
                 in, r.traces, r.traces_present, r.environments, r.solutions, r.runs,
                 r.baselines, r.reference_times, r.skips);
      for (const auto& c : r.conflicts)
        fmt::print("  conflict ({}): {}: {}\n", c.kind, c.key, c.detail);
    }
  }
  const size_t total = out.trace_count();
  if (o.json_output) {
    json doc = {{"db", out.file().string()},
                {"sources", std::move(sources)},
                {"traces", total},
                {"conflicts", conflicts}};
    fmt::print("{}\n", doc.dump(2));
  } else {
    fmt::print("{}: {} trace(s) in all, {} conflict(s)\n", out.file().string(), total, conflicts);
  }
  return conflicts > 0 ? 1 : 0;
}

// The options every `db` subcommand takes.
void add_common(CLI::App* cmd, DbOptions& o) {
  cmd->add_option("--db", o.db,
                  "results store (default: $SOLBENCH_CACHE_DIR/solbench.db, else "
                  "$XDG_CACHE_HOME/solbench/solbench.db, else ~/.cache/solbench/solbench.db)");
  cmd->add_flag("--json", o.json_output, "print one JSON document");
  cmd->add_option("--definition", o.filter.definition, "only this definition (name)");
  cmd->add_option("--solution", o.filter.solution, "only this solution (name)");
  cmd->add_option("--gpu", o.filter.gpu_model, "only this GPU model (as recorded, e.g. \"NVIDIA H100 80GB HBM3\")");
}

}  // namespace

void add_db_command(CLI::App& app) {
  auto* db = app.add_subcommand(
      "db", "Query the results store (leaderboard, best, history, export) or merge stores");
  db->require_subcommand(1);

  auto lb = std::make_shared<DbOptions>();
  auto* c = db->add_subcommand(
      "leaderboard",
      "Per definition and GPU: solutions ranked by mean SOL score over their workloads (ties: "
      "lower mean latency)");
  add_common(c, *lb);
  c->add_option("--top", lb->top, "show the first N ranks per definition (0: all)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  c->callback([lb] { exit_code() = run_leaderboard(*lb); });

  auto best = std::make_shared<DbOptions>();
  c = db->add_subcommand("best", "Per definition, workload and GPU: the fastest PASSED trace");
  add_common(c, *best);
  c->callback([best] { exit_code() = run_traces(*best, /*best=*/true); });

  auto hist = std::make_shared<DbOptions>();
  c = db->add_subcommand("history", "Every trace of a solution or definition, oldest first");
  add_common(c, *hist);
  c->callback([hist] { exit_code() = run_traces(*hist, /*best=*/false); });

  auto ex = std::make_shared<DbOptions>();
  c = db->add_subcommand("export", "Write the matching traces as public-format JSONL");
  add_common(c, *ex);
  c->add_flag("--jsonl", ex->jsonl, "JSON Lines, one public-format trace per line (the default)");
  c->add_option("-o,--output", ex->output, "write to FILE (default: standard output)");
  c->callback([ex] { exit_code() = run_export(*ex); });

  auto mg = std::make_shared<MergeOptions>();
  c = db->add_subcommand(
      "merge",
      "Merge stores into OUT (created when missing): rows OUT lacks are added, rows it holds "
      "are not added again, conflicting results are reported (exit 1)");
  c->add_option("out", mg->output, "the target store")->required();
  c->add_option("inputs", mg->inputs, "stores to merge into it, in order")->required();
  c->add_flag("--json", mg->json_output, "print one JSON document");
  c->callback([mg] { exit_code() = run_merge(*mg); });
}

}  // namespace solbench::cli
