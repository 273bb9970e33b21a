#include "runset/summary.h"

#include "score/sol_score.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/text.h"

namespace solbench::runset {

namespace {

// Reasons listed under the total for PASSED results without a score.
constexpr size_t kUnscoredReasonsShown = 5;

// One line per workload that did not pass (its status and why), a few at most.
std::string failure_lines(const EvaluationReport& e) {
  constexpr size_t kShown = 5;
  std::string out;
  size_t failed = 0;
  for (const auto& r : e.results) {
    if (!r || !r->status || *r->status == Status::Passed) continue;
    if (++failed <= kShown)
      out += fmt::format("    {} {}: {}\n", short_uuid(r->uuid), status_name(*r->status),
                         r->reason.empty() ? std::string("(no log)") : r->reason);
  }
  if (failed > kShown) out += fmt::format("    ... and {} more\n", failed - kShown);
  return out;
}

}  // namespace

std::optional<double> sol_score_of(const Trace& t) {
  auto it = t.evaluation.extra.find("solbench_sol_score");
  if (it == t.evaluation.extra.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

namespace {

// The method and reason of the T_b a trace's score used, or why it has none, and
// why the score is null (docs/score.md, "Fields").
void read_t_b(const Trace& t, WorkloadResult& r) {
  const json& x = t.evaluation.extra;
  if (auto why = x.find(std::string(score::kScoreReasonKey)); why != x.end() && why->is_string())
    r.score_reason = *why;
  auto d = x.find(std::string(score::kScoreDetailsKey));
  if (d == x.end() || !d->is_object()) return;
  auto b = d->find("t_b");
  if (b == d->end() || !b->is_object()) return;
  if (b->contains("reason") && (*b)["reason"].is_string()) r.t_b_reason = (*b)["reason"];
  if (!b->contains("t_b_ms") || !(*b)["t_b_ms"].is_number()) return;
  if (b->contains("method") && (*b)["method"].is_string()) r.t_b_method = (*b)["method"];
}

}  // namespace

namespace {
std::optional<double> number_at(const Trace& t, std::string_view key) {
  auto it = t.evaluation.extra.find(std::string(key));
  if (it == t.evaluation.extra.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}
void read_bounds(const Trace& t, WorkloadResult& r) {
  r.t_sol_ms = number_at(t, score::kTSolKey);
  r.t_attainable_ms = number_at(t, score::kTAttainableKey);
}
}  // namespace

WorkloadResult result_of(const Trace& t) {
  WorkloadResult r;
  r.uuid = t.workload.value("uuid", "");
  r.status = t.evaluation.status;
  r.sol_score = sol_score_of(t);
  read_bounds(t, r);
  read_t_b(t, r);
  if (*r.status != Status::Passed) r.reason = failure_line(t.evaluation.log, 150);
  return r;
}

WorkloadResult result_of(const store::StoredTrace& st) {
  WorkloadResult r;
  r.uuid = st.workload_uuid;
  r.status = st.status;
  const Trace t = st.trace();
  r.sol_score = sol_score_of(t);
  if (!r.sol_score) r.sol_score = st.sol_score;
  read_bounds(t, r);
  read_t_b(t, r);
  if (*r.status != Status::Passed) r.reason = failure_line(t.evaluation.log, 150);
  r.resumed = true;
  return r;
}

WorkloadResult result_of(const store::Skip& s) {
  WorkloadResult r;
  r.uuid = s.workload_uuid;
  r.skip_reason = fmt::format("{}{}recorded {} with the GPU to itself; --rerun skipped evaluates "
                              "it again)",
                              s.reason, kFromTheStore, s.recorded);
  r.resumed = true;
  return r;
}

void Tally::add(const EvaluationReport& e) {
  ++evaluations;
  if (!e.error.empty()) ++errors;
  for (const auto& r : e.results) {
    ++workloads;
    if (!r) {
      ++not_run;
      continue;
    }
    (r->resumed ? resumed : evaluated) += 1;
    if (!r->status) {
      ++skipped;
      continue;
    }
    ++statuses[std::string(status_name(*r->status))];
    if (r->sol_score) any_score = true;
    if (r->t_b_method == "eager") {
      ++eager_baselines;
      ++eager_reasons[r->t_b_reason];
    }
    if (*r->status == Status::Passed) {
      if (r->sol_score) {
        ++scored;
        score_sum += *r->sol_score;
      } else {
        ++unscored;
        ++unscored_reasons[r->score_reason];
      }
    } else {
      ++scored;  // a failure scores 0
    }
  }
}

void Tally::add(const Tally& t) {
  evaluations += t.evaluations;
  workloads += t.workloads;
  for (const auto& [k, v] : t.statuses) statuses[k] += v;
  skipped += t.skipped;
  not_run += t.not_run;
  evaluated += t.evaluated;
  resumed += t.resumed;
  scored += t.scored;
  score_sum += t.score_sum;
  any_score = any_score || t.any_score;
  errors += t.errors;
  eager_baselines += t.eager_baselines;
  for (const auto& [k, v] : t.eager_reasons) eager_reasons[k] += v;
  unscored += t.unscored;
  for (const auto& [k, v] : t.unscored_reasons) unscored_reasons[k] += v;
}

size_t Tally::failed() const {
  size_t n = 0;
  for (const auto& [k, v] : statuses)
    if (k != status_name(Status::Passed)) n += v;
  return n;
}

std::optional<double> Tally::mean_sol_score() const {
  if (!any_score || scored == 0) return std::nullopt;
  return score_sum / static_cast<double>(scored);
}

json Tally::to_json() const {
  json j = json::object();
  j["evaluations"] = evaluations;
  j["results"] = workloads;
  json st = json::object();
  for (const auto& [k, v] : statuses) st[k] = v;
  j["statuses"] = st;
  j["skipped"] = skipped;
  j["not_run"] = not_run;
  j["failed"] = failed();
  j["errors"] = errors;
  j["evaluated"] = evaluated;
  j["resumed"] = resumed;
  j["scored"] = scored;
  j["mean_sol_score"] = or_null(mean_sol_score());
  j["eager_baselines"] = eager_baselines;
  j["unscored"] = unscored;
  return j;
}

std::string Tally::text() const {
  std::string s;
  auto add = [&](size_t n, const std::string& what) {
    if (n) s += fmt::format("{}{} {}", s.empty() ? "" : ", ", n, what);
  };
  // PASSED first, then the failures by name.
  auto passed = statuses.find(std::string(status_name(Status::Passed)));
  if (passed != statuses.end()) add(passed->second, passed->first);
  for (const auto& [k, v] : statuses)
    if (k != status_name(Status::Passed)) add(v, k);
  add(skipped, "skipped");
  add(not_run, "not run");
  return s.empty() ? "nothing" : s;
}

json summary_json(const RunReport& r) {
  json j = json::object();
  j["dataset"] = r.dataset;
  j["layout"] = layout_name(r.layout);
  j["slots"] = r.slots;
  j["db"] = r.db;
  j["recording"] = r.recording;
  j["interrupted"] = r.interrupted;
  if (!r.usage_error.empty()) j["usage_error"] = r.usage_error;
  j["seconds"] = r.seconds;
  j["environment_probes"] = r.environment_probes;
  if (r.baseline_ahead) {
    json jobs = json::array();
    for (const auto& [problem, workloads, o] : *r.baseline_ahead)
      jobs.push_back({{"problem", problem},
                      {"state", o.state == LaneOutcome::State::Done ? "done" : "dropped"},
                      {"workloads", workloads}, {"measured", o.measured}, {"cached", o.cached},
                      {"without", o.without}, {"seconds", o.seconds}, {"waited", o.waited},
                      {"error", or_null(o.error)}});
    j["baseline_ahead"] = {{"jobs_at_once", r.baseline_ahead_jobs}, {"jobs", jobs}};
  }
  if (r.shard)
    j["shard"] = {{"index", r.shard->index},
                  {"count", r.shard->count},
                  {"pairs", r.shard->pairs},
                  {"total_pairs", r.shard->total_pairs},
                  {"predicted_seconds", r.shard->predicted_s},
                  {"max_over_mean", r.shard->max_over_mean}};

  json problems = json::array();
  std::map<std::string, std::pair<size_t, Tally>> cats;  // problems, tally
  std::map<std::string, size_t> cat_workloads;
  Tally total;
  size_t total_workloads = 0;
  for (const auto& p : r.problems) {
    json pj = json::object();
    pj["category"] = p.where.category;
    pj["problem"] = p.where.name;
    pj["folder"] = p.where.dir.string();
    pj["definition"] = or_null(p.definition);
    pj["workloads"] = p.workloads;
    pj["error"] = or_null(p.error);
    Tally pt;
    if (!p.error.empty()) ++pt.errors;
    json sols = json::array();
    for (const auto& e : p.evaluations) {
      Tally et;
      et.add(e);
      pt.add(et);
      json ej = json::object();
      ej["solution"] = e.solution;
      ej["solution_hash"] = e.solution_hash;
      ej["solution_file"] = or_null(e.solution_file);
      ej["device"] = or_null(e.device);
      ej["seconds"] = e.seconds;
      if (e.baseline_wait_seconds > 0) ej["baseline_wait_seconds"] = e.baseline_wait_seconds;
      if (!e.part.empty()) ej["part"] = e.part;
      ej["error"] = or_null(e.error);
      ej["workloads"] = e.uuids.size();
      ej.update(et.to_json());
      json rs = json::array();
      for (size_t k = 0; k < e.uuids.size(); ++k) {
        const auto& res = e.results[k];
        json rj = {{"uuid", e.uuids[k]}};
        if (!res) {
          rj["status"] = nullptr;
          rj["not_run"] = true;
        } else {
          rj["status"] = res->status ? json(status_name(*res->status)) : json(nullptr);
          if (!res->status) rj["skip_reason"] = res->skip_reason;
          if (!res->reason.empty()) rj["reason"] = res->reason;
          rj["sol_score"] = or_null(res->sol_score);
          rj["t_sol_ms"] = or_null(res->t_sol_ms);
          if (res->t_attainable_ms) rj["t_attainable_ms"] = *res->t_attainable_ms;
          rj["t_b_method"] = or_null(res->t_b_method);
          // Why the T_b is eager, or why there is none; and why there is no score.
          if (res->t_b_method != "torch.compile" && !res->t_b_reason.empty())
            rj["t_b_reason"] = res->t_b_reason;
          if (!res->sol_score && !res->score_reason.empty()) rj["score_reason"] = res->score_reason;
          rj["resumed"] = res->resumed;
        }
        rs.push_back(std::move(rj));
      }
      ej["workload_results"] = std::move(rs);
      sols.push_back(std::move(ej));
    }
    pj["solutions"] = std::move(sols);
    pj.update(pt.to_json());
    problems.push_back(std::move(pj));
    auto& c = cats[p.where.category];
    ++c.first;
    c.second.add(pt);
    cat_workloads[p.where.category] += p.workloads;
    total.add(pt);
    total_workloads += p.workloads;
  }
  j["problems"] = std::move(problems);
  json categories = json::array();
  for (const auto& [name, c] : cats) {
    json cj = {{"category", name}, {"problems", c.first}, {"workloads", cat_workloads[name]}};
    cj.update(c.second.to_json());
    categories.push_back(std::move(cj));
  }
  j["categories"] = std::move(categories);
  json tj = {{"problems", r.problems.size()}, {"workloads", total_workloads}};
  tj.update(total.to_json());
  j["total"] = std::move(tj);
  j["errors"] = r.errors;
  j["unmatched_solutions"] = r.unmatched_solutions;
  return j;
}

namespace {
// The solution as a row names it: "[k/n]" after a part of its workloads.
std::string row_name(const EvaluationReport& e) {
  return e.part.empty() ? e.solution : e.solution + " [" + e.part + "]";
}
}  // namespace

std::string summary_table(const RunReport& r) {
  // Columns as wide as the names, up to widths that keep a row within 100
  // columns (longer names are cut in the middle).
  size_t wp = 7, ws = 8;
  for (const auto& p : r.problems) {
    wp = std::max(wp, p.where.label().size());
    for (const auto& e : p.evaluations) ws = std::max(ws, row_name(e).size());
  }
  wp = std::min<size_t>(wp, 36);
  ws = std::min<size_t>(ws, 28);
  std::string out = fmt::format("{:<{}}  {:<{}}  {:>9}  {:>7}  {}\n", "problem", wp, "solution", ws,
                                "workloads", "score", "results");
  std::map<std::string, std::pair<size_t, Tally>> cats;
  Tally total;
  for (const auto& p : r.problems) {
    Tally pt;
    if (!p.error.empty()) {
      ++pt.errors;
      out += fmt::format("{:<{}}  {:<{}}  {:>9}  {:>7}  invalid: {}\n", fit(p.where.label(), wp), wp,
                         "-", ws,
                         p.workloads, "-", first_line(p.error));
    } else if (p.evaluations.empty()) {
      out += fmt::format("{:<{}}  {:<{}}  {:>9}  {:>7}  no solution\n", fit(p.where.label(), wp), wp,
                         "-", ws,
                         p.workloads, "-");
    }
    for (const auto& e : p.evaluations) {
      Tally et;
      et.add(e);
      pt.add(et);
      out += fmt::format("{:<{}}  {:<{}}  {:>9}  {:>7}  {}\n", fit(p.where.label(), wp), wp,
                         fit(row_name(e), ws), ws,
                         e.uuids.size(), score::score_text(et.mean_sol_score()), et.text());
      if (!e.error.empty()) out += fmt::format("    error: {}\n", first_line(e.error, 150));
      out += failure_lines(e);
      for (const auto& [why, n] : et.eager_reasons)
        out += fmt::format("    warning: T_b of {} workload(s) is eager ({}), not torch.compile\n", n,
                           why.empty() ? std::string("reason unknown") : first_line(why, 200));
    }
    auto& c = cats[p.where.category];
    ++c.first;
    c.second.add(pt);
    total.add(pt);
  }
  auto line = [](const std::string& what, size_t problems, const Tally& t) {
    return fmt::format("{}: {} problem(s), {} evaluation(s), {} result(s): {}; mean SOL score {}\n",
                       what, problems, t.evaluations, t.workloads, t.text(),
                       score::score_text(t.mean_sol_score()));
  };
  if (cats.size() > 1 || (cats.size() == 1 && !cats.begin()->first.empty())) {
    out += "\n";
    for (const auto& [name, c] : cats)
      out += line("category " + (name.empty() ? std::string("(none)") : name), c.first, c.second);
  }
  out += line("total", r.problems.size(), total);
  if (total.eager_baselines)
    out += fmt::format("warning: {} result(s) scored against an eager T_b, not the reference under "
                       "torch.compile (see the rows above)\n",
                       total.eager_baselines);
  if (total.unscored) {
    // Most frequent first, each reason once: a missing T_b or T_SOL is never silent.
    std::vector<std::pair<size_t, std::string>> why;
    for (const auto& [k, v] : total.unscored_reasons) why.emplace_back(v, k);
    std::stable_sort(why.begin(), why.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    out += fmt::format("note: {} PASSED result(s) have no SOL score and are left out of the means:\n",
                       total.unscored);
    const size_t shown = std::min<size_t>(why.size(), kUnscoredReasonsShown);
    for (size_t i = 0; i < shown; ++i)
      out += fmt::format("    {} {}\n", why[i].first,
                         why[i].second.empty() ? std::string("(no reason recorded)")
                                               : first_line(why[i].second, 200));
    if (why.size() > shown)
      out += fmt::format("    and {} other reason(s) (run --json: score_reason per result)\n",
                         why.size() - shown);
  }
  if (r.interrupted) out += "interrupted: the evaluations not run are listed as such\n";
  if (!r.usage_error.empty())
    out += "usage error: " + r.usage_error + " (nothing of it was recorded; the run stopped)\n";
  return out;
}

int exit_code(const RunReport& r) {
  if (!r.usage_error.empty()) return 2;
  if (!r.errors.empty()) return 1;
  for (const auto& p : r.problems) {
    if (!p.error.empty()) return 1;
    for (const auto& e : p.evaluations) {
      if (!e.error.empty()) return 1;
      for (const auto& res : e.results)
        if (!res || (res->status && *res->status != Status::Passed)) return 1;
    }
  }
  return 0;
}

}  // namespace solbench::runset
