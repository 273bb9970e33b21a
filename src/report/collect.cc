// collect(): the store's traces, grouped per problem (definition and GPU
// model), with the SOL analysis of each workload from its problem folder and
// the points of the roofline charts.
#include <fnmatch.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <map>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "core/diagnostics.h"
#include "report/html.h"
#include "report/problem_index.h"
#include "report/report.h"
#include "sol/analysis.h"
#include "sol/calibration.h"

namespace solbench::report {

namespace {

// The value at `path` in `j`, or nullptr.
const json* at(const json& j, std::initializer_list<const char*> path) {
  const json* p = &j;
  for (const char* k : path) {
    if (!p->is_object() || !p->contains(k)) return nullptr;
    p = &(*p)[k];
  }
  return p;
}

// (achieved intensity, achieved FLOP/s) from a profile's roofline position, or
// nullopt where the counters gave no FLOPs or no bytes.
std::optional<std::pair<double, double>> measured_point(const json& profile, double t_k_ms) {
  const json* r = at(profile, {"roofline"});
  if (!r) return std::nullopt;
  const json* in = at(*r, {"intensity", "achieved"});
  const json* ach = at(*r, {"achieved"});
  if (!in || !in->is_number() || !ach || !ach->is_object()) return std::nullopt;
  double flops = 0;
  if (auto it = ach->find("tensor_flops"); it != ach->end() && it->is_object())
    for (const auto& [k, v] : it->items())
      if (v.is_number()) flops += v.get<double>();
  if (auto it = ach->find("fp32_flops"); it != ach->end() && it->is_number())
    flops += it->get<double>();
  if (!(flops > 0) || !(in->get<double>() > 0)) return std::nullopt;
  return std::make_pair(in->get<double>(), flops / (t_k_ms / 1e3));
}

std::string string_at(const json& j, std::initializer_list<const char*> path) {
  const json* v = at(j, path);
  return v && v->is_string() ? v->get<std::string>() : std::string();
}

// How a trace's T_b was measured: the store's extras (t_b_method, t_b_reason),
// else the trace's own solbench_score.t_b (docs/score.md).
void t_b_method_of(const store::StoredTrace& t, const json& trace, std::string& method,
                   std::string& reason) {
  auto text = [&](const char* key, const char* field) {
    if (t.extras.contains(key) && t.extras[key].is_string()) return t.extras[key].get<std::string>();
    return string_at(trace, {"evaluation", "solbench_score", "t_b", field});
  };
  method = text("t_b_method", "method");
  reason = text("t_b_reason", "reason");
}

json parsed_trace(const store::StoredTrace& t) {
  try {
    return parse_json_text(t.trace_json, fmt::format("results store trace {}", t.id));
  } catch (const std::exception&) {
    return json::object();
  }
}

std::string axes_label(const json& trace, const std::string& uuid) {
  const json* axes = at(trace, {"workload", "axes"});
  std::string s;
  if (axes && axes->is_object())
    for (const auto& [k, v] : axes->items())
      s += (s.empty() ? "" : ", ") + k + "=" + (v.is_string() ? v.get<std::string>() : v.dump());
  return s.empty() ? uuid.substr(0, 8) : s;
}

std::string ms(double v) { return fmt::format("{:.4g} ms", v); }
std::string rate(double flops) { return fmt::format("{:.3g} TFLOP/s", flops / 1e12); }

bool selected(const std::string& definition, const std::vector<std::string>& globs) {
  if (globs.empty()) return true;
  for (const auto& g : globs)
    if (::fnmatch(g.c_str(), definition.c_str(), 0) == 0) return true;
  return false;
}

json default_analyse(const Problem& p, size_t i, const sol::HardwareModel& hw) {
  return sol::analyse_workload(p, i, hw, sol::AnalysisOptions{});
}

// The traces of one problem: the latest per workload and solution.
struct Group {
  std::vector<std::string> uuids;  // in the order first recorded
  std::map<std::string, std::map<std::string, store::StoredTrace>> latest;  // uuid -> hash -> trace
  std::map<std::string, json> parsed;  // uuid -> the latest trace of any solution (parsed)
  std::map<std::string, int> archs;    // recorded hardware model -> traces
};

std::string selection_text(const ReportOptions& o) {
  std::vector<std::string> parts;
  if (!o.filter.definition.empty()) parts.push_back("definition " + o.filter.definition);
  for (const auto& g : o.problem_globs) parts.push_back("problem " + g);
  if (!o.filter.solution.empty()) parts.push_back("solution " + o.filter.solution);
  if (!o.filter.gpu_model.empty()) parts.push_back("GPU " + o.filter.gpu_model);
  std::string s;
  for (const auto& p : parts) s += (s.empty() ? "" : "; ") + p;
  return s;
}

class Collector {
 public:
  Collector(const ReportOptions& o, Report& r) : o_(o), r_(r), index_(o.problem_dirs) {
    analyse_ = o.analyse ? o.analyse : AnalyseFn(default_analyse);
    try {
      models_ = sol::load_all_hardware();
      // Measured models too (hw calibrate): traces scored on one (--arch cpu) name it.
      for (auto& m : sol::load_calibrations()) models_.push_back(std::move(m));
    } catch (const std::exception& e) {
      r_.notes.push_back(std::string("no hardware models could be read, so no roofs are drawn: ") +
                         e.what());
    }
    if (!o.arch.empty()) {
      arch_ = sol::find_hardware(models_, o.arch);
      if (!arch_) {
        std::string known;
        for (const auto& m : models_) known += (known.empty() ? "" : ", ") + m.name;
        throw InputError("", 0, "--arch",
                         fmt::format("no hardware model named \"{}\" (known: {})", o.arch, known));
      }
    }
    if (o.problem_dirs.empty())
      r_.notes.push_back(
          "No problem folders were given (--problems DIR), so the SOL analysis could not run and "
          "no point is on the charts: the store keeps T_SOL but not the work and bytes a point "
          "needs.");
  }

  void problem(const std::string& definition, const std::string& gpu, const Group& g,
               const std::vector<store::LeaderboardEntry>& ranked, std::string anchor);

 private:
  std::optional<sol::HardwareModel> hardware_for(const std::string& gpu, const Group& g,
                                                 ProblemReport& p);
  void workload(ProblemReport& p, const Group& g, const std::string& uuid,
                const IndexedProblem* ip, const std::optional<sol::HardwareModel>& hw,
                const std::string& work_missing, const std::map<std::string, int>& series);

  const ReportOptions& o_;
  Report& r_;
  ProblemIndex index_;
  AnalyseFn analyse_;
  std::vector<sol::HardwareModel> models_;
  std::optional<sol::HardwareModel> arch_;
};

std::optional<sol::HardwareModel> Collector::hardware_for(const std::string& gpu, const Group& g,
                                                          ProblemReport& p) {
  std::optional<sol::HardwareModel> hw = arch_;
  std::string why = "--arch";
  if (!hw && !g.archs.empty()) {
    const auto most = std::max_element(g.archs.begin(), g.archs.end(), [](auto& a, auto& b) {
      return a.second < b.second;
    });
    hw = sol::find_hardware(models_, most->first);
    why = "the model the traces were scored on";
  }
  const std::optional<sol::HardwareModel> own = sol::find_hardware(models_, gpu);
  if (!hw) {
    hw = own;
    why.clear();
  }
  if (!hw) {
    p.notes.push_back(fmt::format(
        "No hardware model for \"{}\" and none recorded with the traces: no roofs and no points "
        "(pass --arch NAME; `solbench hw list` names the models).",
        gpu));
    return hw;
  }
  if (!own || own->name != hw->name)
    p.notes.push_back(fmt::format(
        "Measured on {}; the roofs and T_SOL are those of {} ({}, {}): the points compare times "
        "measured here with another chip's peak rates.",
        gpu, hw->display_name, hw->name, why));
  return hw;
}

void Collector::problem(const std::string& definition, const std::string& gpu, const Group& g,
                        const std::vector<store::LeaderboardEntry>& ranked, std::string anchor) {
  ProblemReport p;
  p.definition = definition;
  p.gpu_model = gpu;
  p.anchor = std::move(anchor);

  // Solutions by rank; a name with two versions shows the hashes.
  std::map<std::string, std::set<std::string>> versions;
  for (const auto& e : ranked) versions[e.solution].insert(e.solution_hash);
  std::map<std::string, int> series;
  for (const auto& e : ranked) {
    SolutionSummary s;
    s.name = versions[e.solution].size() > 1
                 ? fmt::format("{} ({})", e.solution, e.solution_hash.substr(0, 8))
                 : e.solution;
    s.hash = e.solution_hash;
    s.rank = e.rank;
    s.workloads = e.workloads;
    s.passed = e.passed;
    s.unscored = e.unscored;
    s.mean_score = e.mean_score;
    s.mean_latency_ms = e.mean_latency_ms;
    series[e.solution_hash] = int(p.solutions.size());
    p.solutions.push_back(std::move(s));
  }
  // A solution with traces but no leaderboard row (not expected) still gets a series.
  for (const auto& [uuid, by_hash] : g.latest)
    for (const auto& [hash, t] : by_hash)
      if (!series.count(hash)) {
        series[hash] = int(p.solutions.size());
        p.solutions.push_back({t.solution, hash, 0, 0, 0, 0, std::nullopt, std::nullopt});
      }

  const IndexedProblem* ip = index_.empty() ? nullptr : index_.find(definition);
  p.category = ip && !ip->where.category.empty() ? ip->where.category : "all";
  std::string work_missing;
  if (ip) {
    p.folder = ip->where.dir.string();
    if (!ip->errors.empty())
      p.notes.push_back(fmt::format("The problem folder {} has {} error(s); the first: {}",
                                    p.folder, ip->errors.size(), ip->errors.front()));
  } else {
    work_missing =
        index_.empty()
            ? "no problem folder: the work and bytes come from the SOL analysis of the problem "
              "folder (pass --problems DIR)"
            : fmt::format("no problem folder under --problems has the definition \"{}\"",
                          definition);
    p.notes.push_back("No point could be placed: " + work_missing + ".");
  }
  const std::optional<sol::HardwareModel> hw = hardware_for(gpu, g, p);
  if (!hw && work_missing.empty()) work_missing = "no hardware model (pass --arch NAME)";

  // Workloads in the problem folder's order, then any the folder lacks.
  std::vector<std::string> order = g.uuids;
  if (ip)
    std::stable_sort(order.begin(), order.end(), [&](const std::string& a, const std::string& b) {
      const auto ia = ip->workload(a), ib = ip->workload(b);
      return ia.value_or(SIZE_MAX) < ib.value_or(SIZE_MAX);
    });
  for (const auto& uuid : order) workload(p, g, uuid, ip, hw, work_missing, series);
  if (hw) {
    std::set<std::string> tensor, cuda;  // the classes the problem's work uses
    for (const auto& w : p.workloads)
      if (w.work) {
        tensor.insert(w.work->tensor_classes.begin(), w.work->tensor_classes.end());
        cuda.insert(w.work->cuda_classes.begin(), w.work->cuda_classes.end());
      }
    p.roofs = roofs_of(*hw, tensor, cuda);
  }

  // Scores against an eager T_b: said above the chart too, never only in a cell.
  std::map<std::string, int> eager;
  for (const auto& w : p.workloads)
    for (const auto& row : w.rows)
      if (row.t_b_ms && row.t_b_method == "eager") ++eager[row.t_b_reason];
  for (const auto& [why, n] : eager)
    p.notes.push_back(fmt::format("{} trace(s) scored against a T_b that is {}, not the reference "
                                  "under torch.compile.",
                                  n, score::eager_note("eager", why)));

  // The problem's score: its best solution's (rank 1).
  std::vector<score::ScoredWorkload> best;
  for (const auto& w : p.workloads)
    for (const auto& row : w.rows)
      if (row.series == 0) {
        score::ScoredWorkload s{row.status == Status::Passed, row.score, row.sol_violation};
        best.push_back(s);
        p.histogram.add(s);
      }
  p.score = score::problem_score(best);
  r_.problems.push_back(std::move(p));
}

void Collector::workload(ProblemReport& p, const Group& g, const std::string& uuid,
                         const IndexedProblem* ip, const std::optional<sol::HardwareModel>& hw,
                         const std::string& work_missing, const std::map<std::string, int>& series) {
  WorkloadReport w;
  w.uuid = uuid;
  w.label = axes_label(g.parsed.at(uuid), uuid);
  w.anchor = p.anchor + "-w-" + anchor_id(uuid);
  const auto& by_hash = g.latest.at(uuid);

  // The analysis of this workload on the chart's model.
  if (!work_missing.empty()) {
    w.work_reason = work_missing;
  } else if (const auto index = ip->workload(uuid); !index) {
    w.work_reason = fmt::format("the workload is not in {}", problem_paths(ip->where.dir).workloads.string());
  } else {
    try {
      WorkOrReason wr = work_from_analysis(analyse_(ip->problem, *index, *hw));
      w.work = wr.work;
      w.work_reason = wr.reason;
    } catch (const std::exception& e) {
      w.work_reason = std::string("the SOL analysis failed: ") + e.what();
    }
  }

  // Rows by rank; T_SOL and T_b as the latest trace that has them recorded them.
  const store::StoredTrace* latest_sol = nullptr;
  const store::StoredTrace* latest_b = nullptr;
  // The reference as measured (`eval --profile`'s reference profile, over T_ref):
  // one ring per workload, from the latest trace that has one (every solution's
  // evaluation profiled the same reference), linked to that trace's row.
  std::optional<ChartPoint> reference_ring;
  int64_t reference_ring_id = -1;
  for (const auto& [hash, t] : by_hash) {
    if (t.t_sol_ms && (!latest_sol || t.id > latest_sol->id)) latest_sol = &t;
    if (t.t_b_ms && (!latest_b || t.id > latest_b->id)) latest_b = &t;
    const json trace = parsed_trace(t);
    Row row;
    row.series = series.at(hash);
    row.anchor = w.anchor + "-s" + std::to_string(row.series);
    row.status = t.status;
    row.t_k_ms = t.latency_ms;
    row.t_b_ms = t.t_b_ms;
    if (t.t_b_ms) t_b_method_of(t, trace, row.t_b_method, row.t_b_reason);
    row.t_sol_ms = t.t_sol_ms;
    if (t.extras.contains("t_attainable_ms") && t.extras["t_attainable_ms"].is_number())
      row.t_attainable_ms = t.extras["t_attainable_ms"].get<double>();
    row.score = t.sol_score;
    row.sol_violation = t.extras.value("sol_violation", false);
    row.score_reason = t.extras.contains("score_reason") && t.extras["score_reason"].is_string()
                           ? t.extras["score_reason"].get<std::string>()
                           : string_at(trace, {"evaluation", "solbench_score_reason"});
    row.log = string_at(trace, {"evaluation", "log"});
    row.recorded = t.recorded;
    if (const json* prof = at(trace, {"evaluation", "solbench_profile"}); prof && prof->is_object())
      row.profile = *prof;
    if (const json* ref = at(row.profile, {"reference"});
        ref && t.status == Status::Passed && t.reference_latency_ms &&
        *t.reference_latency_ms > 0 && t.id > reference_ring_id)
      if (const auto m = measured_point(*ref, *t.reference_latency_ms)) {
        reference_ring_id = t.id;
        reference_ring = ChartPoint{
            PointKind::ReferenceMeasured, -1, m->first, m->second,
            fmt::format("reference on {}, as measured (eval --profile): T_ref {}, {} at {:.3g} "
                        "FLOP/byte",
                        w.label, ms(*t.reference_latency_ms), rate(m->second), m->first),
            row.anchor};
      }
    w.rows.push_back(std::move(row));
  }
  std::sort(w.rows.begin(), w.rows.end(),
            [](const Row& a, const Row& b) { return a.series < b.series; });
  if (latest_sol) w.t_sol_ms = latest_sol->t_sol_ms;
  if (latest_b) {
    w.t_b_ms = latest_b->t_b_ms;
    t_b_method_of(*latest_b, parsed_trace(*latest_b), w.t_b_method, w.t_b_reason);
  }

  if (!w.work) {
    p.not_placed.push_back({"every point", w.label, w.work_reason, w.anchor});
    for (auto& row : w.rows) row.not_placed = w.work_reason;
    p.workloads.push_back(std::move(w));
    return;
  }
  const WorkloadWork& work = *w.work;
  const auto add = [&](PointKind kind, int s, const std::string& what, std::optional<double> t,
                       std::string_view missing, const std::string& target) -> std::string {
    const Placement pl = place(work, t, missing);
    if (!pl.placed()) {
      p.not_placed.push_back({what, w.label, pl.reason, target});
      return pl.reason;
    }
    p.points.push_back({kind, s, pl.intensity, pl.flops_per_s,
                        fmt::format("{} on {}: {}, {} at {:.3g} FLOP/byte", what, w.label, ms(*t),
                                    rate(pl.flops_per_s), pl.intensity),
                        target});
    return "";
  };
  add(PointKind::Sol, -1, "T_SOL", work.t_sol_ms > 0 ? std::optional<double>(work.t_sol_ms) : std::nullopt,
      "the SOL analysis gives no T_SOL", w.anchor);
  const std::string eager = score::eager_note(w.t_b_method, w.t_b_reason);
  add(PointKind::Baseline, -1, eager.empty() ? "baseline T_b" : "baseline T_b, " + eager, w.t_b_ms,
      "no baseline T_b recorded for this workload", w.anchor);
  for (auto& row : w.rows) {
    const std::string what = "solution " + p.solutions[row.series].name;
    const std::string missing =
        row.status != Status::Passed
            ? fmt::format("status {}: no latency", status_name(row.status))
            : std::string("no latency recorded");
    row.not_placed = add(PointKind::Solution, row.series, what,
                         row.status == Status::Passed ? row.t_k_ms : std::nullopt, missing,
                         row.anchor);
    // With --profile's counters: the same call where it really stands, at the intensity
    // it achieved (FLOP per DRAM byte it moved) and its FLOPs over T_k.
    if (row.status == Status::Passed && row.t_k_ms && *row.t_k_ms > 0)
      if (const auto m = measured_point(row.profile, *row.t_k_ms))
        p.points.push_back({PointKind::Measured, row.series, m->first, m->second,
                            fmt::format("{} on {}, as measured (eval --profile): {} at {:.3g} "
                                        "FLOP/byte",
                                        what, w.label, rate(m->second), m->first),
                            row.anchor});
  }
  if (reference_ring) p.points.push_back(std::move(*reference_ring));
  p.workloads.push_back(std::move(w));
}

}  // namespace

void ScoreHistogram::add(const score::ScoredWorkload& w) {
  if (!w.passed) {
    ++failed;
  } else if (!w.score) {
    ++unscored;
  } else {
    const int bin = std::clamp(int(*w.score * 10), 0, 9);
    ++bins[size_t(bin)];
  }
}

void ScoreHistogram::merge(const ScoreHistogram& o) {
  for (size_t i = 0; i < bins.size(); ++i) bins[i] += o.bins[i];
  failed += o.failed;
  unscored += o.unscored;
}

int ScoreHistogram::total() const {
  int n = failed + unscored;
  for (int b : bins) n += b;
  return n;
}

size_t Report::placed() const {
  size_t n = 0;
  for (const auto& p : problems) n += p.points.size();
  return n;
}

size_t Report::not_placed() const {
  size_t n = 0;
  for (const auto& p : problems) n += p.not_placed.size();
  return n;
}

Report collect(store::Store& db, const ReportOptions& o) {
  Report r;
  r.title = o.title.empty() ? "solbench report" : o.title;
  r.db = db.file().string();
  r.generated = iso8601_now();
  r.selection = selection_text(o);
  Collector c(o, r);

  // The latest trace per problem (definition, GPU), workload and solution version.
  std::map<std::pair<std::string, std::string>, Group> groups;
  for (auto& t : db.history(o.filter)) {
    if (!selected(t.definition, o.problem_globs)) continue;
    Group& g = groups[{t.definition, t.gpu_model}];
    if (!g.latest.count(t.workload_uuid)) g.uuids.push_back(t.workload_uuid);
    json trace = parsed_trace(t);
    if (const std::string arch = string_at(trace, {"evaluation", "solbench_score", "arch", "model"});
        !arch.empty())
      ++g.archs[arch];
    g.parsed[t.workload_uuid] = std::move(trace);
    const std::string hash = t.solution_hash;
    g.latest[t.workload_uuid][hash] = std::move(t);
  }
  std::map<std::pair<std::string, std::string>, std::vector<store::LeaderboardEntry>> ranked;
  for (auto& e : db.leaderboard(o.filter))
    if (groups.count({e.definition, e.gpu_model}))
      ranked[{e.definition, e.gpu_model}].push_back(std::move(e));
  for (auto& [k, v] : ranked)
    std::stable_sort(v.begin(), v.end(), [](const auto& a, const auto& b) {
      return (a.rank == 0 ? INT32_MAX : a.rank) < (b.rank == 0 ? INT32_MAX : b.rank);
    });

  std::map<std::string, int> gpus_per_definition;
  for (const auto& [k, g] : groups) ++gpus_per_definition[k.first];
  for (const auto& [k, g] : groups) {
    const auto& [definition, gpu] = k;
    std::string anchor = "p-" + anchor_id(definition);
    if (gpus_per_definition[definition] > 1) anchor += "--" + anchor_id(gpu);
    c.problem(definition, gpu, g, ranked[k], std::move(anchor));
  }

  std::map<std::string, CategoryReport> cats;
  for (size_t i = 0; i < r.problems.size(); ++i) {
    const ProblemReport& p = r.problems[i];
    CategoryReport& cat = cats[p.category];
    cat.name = p.category;
    cat.anchor = "cat-" + anchor_id(p.category);
    cat.problems.push_back(i);
    cat.workloads += int(p.workloads.size());
    cat.histogram.merge(p.histogram);
  }
  for (auto& [name, cat] : cats) {
    std::vector<score::Aggregate> means;
    for (size_t i : cat.problems) means.push_back(r.problems[i].score);
    cat.score = score::category_score(means);
    r.categories.push_back(std::move(cat));
  }
  return r;
}

}  // namespace solbench::report
