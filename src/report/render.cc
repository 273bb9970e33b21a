// render_html(): the page. Markup is written here from literal tags and
// escaped text; every string from the store or the disk passes escape() (or a
// Template {{text}} slot).
#include <fmt/format.h>

#include <cmath>

#include "report/histogram_svg.h"
#include "report/html.h"
#include "report/report.h"
#include "report/roofline_svg.h"

namespace solbench::report {

namespace {

constexpr size_t kLogChars = 4000;  // a log longer than this is cut (the store keeps it whole)

constexpr const char* kPage = R"(<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="solbench report">
<title>{{title}}</title>
<style>{{{css}}}</style>
</head>
<body>
<header id="top">
<h1>{{title}}</h1>
<p class="meta">Results store <code>{{db}}</code> &middot; generated {{generated}}{{{selection}}}</p>
{{{notes}}}
<nav><a href="#overview">Overview</a>{{{nav}}} &middot; <a href="#how">How to read this page</a></nav>
</header>
<main>
<section id="overview">
<h2>Overview</h2>
{{{categories}}}
<h3 id="problems">Problems</h3>
{{{problem_table}}}
</section>
{{{problems}}}
<section id="how">
<h2>How to read this page</h2>
<p><b>SOL Score</b> S = 1 / (1 + (T_k &minus; T_SOL) / (T_b &minus; T_SOL)) per workload: 1 at the
speed of light T_SOL, 0.5 at the scoring baseline T_b. A problem's score is the mean over the
workloads of its best solution (highest mean, as <code>solbench db leaderboard</code> ranks): a
workload that did not pass counts 0, a passed one without a score is left out. A category's score
is the mean of its problems' scores.</p>
<p><b>Roofline charts.</b> x: arithmetic intensity, the FLOP (tensor core and CUDA core) of the
reference divided by the minimum bytes it must move through DRAM while it runs (writes the L2
can hold at its end left out, docs/sol.md); y: achieved rate, those FLOP
divided by a time. Both come from the SOL analysis of the workload in its problem folder on the
chart's hardware model. The diagonal is the DRAM roof (bandwidth &times; intensity); horizontal
lines are the dense tensor-core and CUDA-core peaks of the model (solid: the classes the
problem's work uses). Each workload has one intensity, so its T_SOL (&#9671;), baseline
(&#9632;) and solutions (&#9679;) stand on one vertical line; the distance below T_SOL is the time
left on the table. With <code>eval --profile</code> a ring (&#9675;) in a solution's colour marks
where its call really stands: the FLOP its kernels executed per DRAM byte they moved, and those
FLOP over T_k; a dashed grey ring marks the reference's call the same way, over T_ref. A point
links to its table row; every time that could not be placed is listed under its chart with the
reason.</p>
</section>
</main>
</body>
</html>
)";

constexpr const char* kCss = R"(
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;margin:0;color:#1d1d1d;background:#f6f7f9;line-height:1.4}
header,main{max-width:1180px;margin:0 auto;padding:0 20px}
header{padding-top:16px}
h1{font-size:26px;margin:0 0 4px}
h2{font-size:21px;margin:0 0 8px}
h3{font-size:16px;margin:14px 0 6px}
section{background:#fff;border:1px solid #dde1e6;border-radius:6px;padding:14px 18px;margin:14px 0}
.meta{color:#555;font-size:13px;margin:2px 0 6px}
nav{font-size:14px;margin:6px 0}
nav a,.links a{margin-right:2px}
a{color:#1a5fb4}
code{font-size:12px;background:#f0f2f4;padding:1px 4px;border-radius:3px}
table{border-collapse:collapse;font-size:13px;margin:4px 0 8px}
th,td{border-bottom:1px solid #e3e6ea;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f3f5f7;font-weight:600}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.categories{display:flex;flex-wrap:wrap;gap:18px}
.category{display:flex;gap:12px;align-items:flex-start;border:1px solid #e3e6ea;border-radius:6px;padding:8px 12px}
.category h3{margin-top:0}
svg.histogram{width:440px;height:190px;font-size:11px}
svg.roofline{width:100%;max-width:900px;height:auto;font-size:12px;display:block}
svg .axis-title{font-size:12.5px;fill:#333}
svg .roof-label{fill:#777;font-size:11px}
svg .roof-label.used,svg .roof-label.memory{fill:#222;font-weight:600}
svg .roof-unit{fill:#555;font-size:11px}
svg .empty{fill:#8a5a00;font-size:14px}
svg a:hover circle,svg a:hover path,svg a:hover rect{stroke:#000;stroke-width:2}
figure{margin:6px 0}
figcaption{font-size:12px;color:#555}
.notes{background:#fff8e1;border:1px solid #f0d890;border-radius:4px;padding:6px 10px 6px 28px;font-size:13px;margin:6px 0}
.not-placed{font-size:13px}
.not-placed li{margin:1px 0}
.swatch{display:inline-block;width:10px;height:10px;border-radius:50%;margin-right:6px;vertical-align:baseline}
.uuid{color:#777;font-size:11px;font-family:ui-monospace,"DejaVu Sans Mono",monospace}
.status-PASSED{color:#1e7b34}
.status-fail{color:#b3261e;font-weight:600}
.off{color:#8a5a00}
.eager{color:#a33}
.why{color:#666;font-size:12px}
tr.profile td{border-top:none;font-size:12px;color:#333}
table.kernels td,table.kernels th{font-size:11px;padding:1px 6px}
details summary{cursor:pointer;color:#1a5fb4;font-size:12px}
pre{white-space:pre-wrap;max-width:520px;font-size:11.5px;background:#f6f7f9;padding:4px 6px;margin:2px 0}
tbody.workload{border-top:2px solid #d4d8de}
tr:target,tbody:target{background:#fff3b0}
.gpu{font-weight:400;color:#555;font-size:15px}
)";

std::string ms(const std::optional<double>& v) {
  return v ? fmt::format("{:.4g}", *v) : std::string("&ndash;");
}

std::string score_text(const std::optional<double>& v) {
  return v ? fmt::format("{:.3f}", *v) : std::string("&ndash;");
}

std::string aggregate_text(const score::Aggregate& a, const char* items) {
  std::string s = score_text(a.mean);
  std::vector<std::string> parts;
  if (a.failed) parts.push_back(fmt::format("{} failed", a.failed));
  if (a.unscored) parts.push_back(fmt::format("{} {} unscored", a.unscored, items));
  if (a.violations) parts.push_back(fmt::format("{} below T_SOL", a.violations));
  if (!parts.empty()) {
    s += " <span class=\"why\">(";
    for (size_t i = 0; i < parts.size(); ++i) s += (i ? ", " : "") + parts[i];
    s += ")</span>";
  }
  return s;
}

std::string notes_list(const std::vector<std::string>& notes) {
  if (notes.empty()) return "";
  std::string s = "<ul class=\"notes\">";
  for (const auto& n : notes) s += "<li>" + escape(n) + "</li>";
  return s + "</ul>\n";
}

std::string category_block(const Report& r, const CategoryReport& c) {
  std::string links;
  for (size_t i : c.problems)
    links += fmt::format("<li><a href=\"#{}\">{}</a></li>", r.problems[i].anchor,
                         escape(r.problems[i].definition));
  return fmt::format(
      "<div class=\"category\" id=\"{}\"><div><h3>Category {}</h3>"
      "<table><tr><th>problems</th><td class=\"num\">{}</td></tr>"
      "<tr><th>workloads</th><td class=\"num\">{}</td></tr>"
      "<tr><th>mean SOL Score</th><td class=\"num\">{}</td></tr></table>"
      "<ul>{}</ul></div>{}</div>\n",
      c.anchor, escape(c.name), c.problems.size(), c.workloads, aggregate_text(c.score, "problem(s)"),
      links,
      histogram_svg(c.histogram, c.anchor + "-histogram",
                    "Distribution of workload SOL Scores in category " + c.name));
}

std::string problem_table(const Report& r) {
  if (r.problems.empty()) return "<p>No traces match.</p>\n";
  std::string s =
      "<table class=\"problems\"><thead><tr><th>problem</th><th>category</th><th>GPU</th>"
      "<th>hardware model</th><th>best solution</th><th>mean S</th><th>workloads</th>"
      "<th>on the chart</th></tr></thead><tbody>\n";
  for (const auto& p : r.problems) {
    std::string cat_anchor = "cat-" + anchor_id(p.category);
    s += fmt::format(
        "<tr><td><a href=\"#{}\">{}</a></td><td><a href=\"#{}\">{}</a></td><td>{}</td><td>{}</td>"
        "<td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}{}</td></tr>\n",
        p.anchor, escape(p.definition), cat_anchor, escape(p.category), escape(p.gpu_model),
        p.roofs ? escape(p.roofs->hardware) : std::string("&ndash;"),
        p.solutions.empty() ? std::string("&ndash;") : escape(p.solutions.front().name),
        aggregate_text(p.score, "workload(s)"), p.workloads.size(), p.points.size(),
        p.not_placed.empty()
            ? std::string()
            : fmt::format(" <a class=\"off\" href=\"#{}-not-placed\">({} not)</a>", p.anchor,
                          p.not_placed.size()));
  }
  return s + "</tbody></table>\n";
}

std::string solutions_table(const ProblemReport& p) {
  std::string s =
      "<table class=\"solutions\"><thead><tr><th>rank</th><th>solution</th><th>mean S</th>"
      "<th>workloads</th><th>passed</th><th>unscored</th><th>mean T_k (ms)</th></tr></thead><tbody>\n";
  for (size_t i = 0; i < p.solutions.size(); ++i) {
    const auto& sol = p.solutions[i];
    s += fmt::format(
        "<tr><td class=\"num\">{}</td><td><span class=\"swatch\" style=\"background:{}\"></span>{}"
        " <span class=\"uuid\">{}</span></td><td class=\"num\">{}</td><td class=\"num\">{}</td>"
        "<td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>\n",
        sol.rank > 0 ? std::to_string(sol.rank) : std::string("&ndash;"), series_colour(int(i)),
        escape(sol.name), escape(sol.hash.substr(0, 8)), score_text(sol.mean_score),
        sol.workloads, sol.passed, sol.unscored, ms(sol.mean_latency_ms));
  }
  return s + "</tbody></table>\n";
}

std::string not_placed_list(const ProblemReport& p) {
  if (p.not_placed.empty()) return "";
  std::string s = fmt::format(
      "<div class=\"not-placed\" id=\"{}-not-placed\"><h3>Not on the chart ({})</h3><ul>\n",
      p.anchor, p.not_placed.size());
  for (const auto& n : p.not_placed)
    s += fmt::format("<li><a href=\"#{}\">{} &middot; {}</a>: {}</li>\n", n.target,
                     escape(n.what), escape(n.workload), escape(n.reason));
  return s + "</ul></div>\n";
}

std::string status_cell(const Row& row) {
  const std::string name(status_name(row.status));
  std::string s = fmt::format("<span class=\"{}\">{}</span>",
                              row.status == Status::Passed ? "status-PASSED" : "status-fail",
                              escape(name));
  if (!row.log.empty()) {
    const bool cut = row.log.size() > kLogChars;
    s += fmt::format("<details><summary>log</summary><pre>{}{}</pre></details>",
                     escape(std::string_view(row.log).substr(0, kLogChars)),
                     cut ? "\n[... cut; `solbench db history --json` has it all]" : "");
  }
  return s;
}

std::string score_cell(const Row& row) {
  std::string s = score_text(row.score);
  if (row.sol_violation) s += " <b title=\"T_k &lt; T_SOL: see the reason\">!</b>";
  if (!row.score_reason.empty())
    s += fmt::format("<details><summary>why</summary><pre>{}</pre></details>",
                     escape(row.score_reason));
  return s;
}

// T_b, and "eager (why)" beside it when it is not the reference under torch.compile.
std::string t_b_cell(const Row& row) {
  std::string s = ms(row.t_b_ms);
  if (!row.t_b_ms) return s;
  if (const std::string e = score::eager_note(row.t_b_method, row.t_b_reason); !e.empty())
    s += fmt::format(" <span class=\"eager\">{}</span>", escape(e));
  return s;
}

std::string t_sol_cell(const WorkloadReport& w, const Row& row) {
  std::string s = ms(row.t_sol_ms);
  // The chart's T_SOL is this analysis's; say so where it differs from the recorded one.
  if (w.work && row.t_sol_ms && w.work->t_sol_ms > 0 &&
      std::fabs(*row.t_sol_ms - w.work->t_sol_ms) > 0.01 * w.work->t_sol_ms)
    s += fmt::format(
        " <span class=\"off\" title=\"the chart's T_SOL (this analysis) differs from the one "
        "recorded with the score\">(chart {:.4g})</span>",
        w.work->t_sol_ms);
  if (row.t_attainable_ms)
    s += fmt::format(
        "<div class=\"attainable\" title=\"T_attainable: the roofline on this GPU's measured "
        "ceilings (solbench hw calibrate) plus one launch; S uses T_SOL\">attainable {}</div>",
        ms(row.t_attainable_ms));
  return s;
}

// A profile's kernels, folded: the summary line (`who`: "" or "reference: "), then
// per kernel its name, grid x block, duration, share of the call's time and the gap
// before it (the first 32). "" where the profile has no activities.
std::string kernel_details(const json& p, const std::string& who, const char* time) {
  auto it = p.find("activities");
  if (it == p.end() || !it->is_array() || it->empty()) return "";
  std::string s = fmt::format(
      "<details class=\"{}\"><summary>{}{} kernel(s), span {:.2f} us, gaps {:.2f} us, host {:.2f} "
      "us</summary><table class=\"kernels\"><thead><tr><th>kernel</th><th>grid x "
      "block</th><th>us</th><th>share of {}</th><th>gap before (us)</th></tr>"
      "</thead>",
      who.empty() ? "kernels" : "kernels reference", escape(who), p.value("kernel_count", 0), p.value("span_us", 0.0), p.value("gaps_us", 0.0),
      p.value("host_us", 0.0), time);
  size_t n = 0;
  for (const json& a : *it) {
    if (++n > 32) break;  // a call of hundreds of kernels: the first 32
    std::string launch = "-";
    if (a.contains("grid") && a["grid"].is_array() && a["grid"].size() == 3 &&
        a.contains("block") && a["block"].is_array() && a["block"].size() == 3)
      launch = fmt::format("{}x{}x{} x {}x{}x{}", a["grid"][0].dump(), a["grid"][1].dump(),
                           a["grid"][2].dump(), a["block"][0].dump(), a["block"][1].dump(),
                           a["block"][2].dump());
    const json share = a.value("share_of_t_k", json(nullptr));
    s += fmt::format("<tr><td>{}</td><td>{}</td><td class=\"num\">{:.2f}</td><td "
                     "class=\"num\">{}</td><td class=\"num\">{:.2f}</td></tr>",
                     escape(a.value("name", std::string("?"))), escape(launch),
                     a.value("duration_us", 0.0),
                     share.is_number() ? fmt::format("{:.0f}%", share.get<double>() * 100) : "-",
                     a.value("gap_before_us", 0.0));
  }
  return s + "</table></details>";
}

// `eval --profile`'s verdict under a solution's row, its kernels folded below it,
// then the reference's kernels (profiled where T_ref was timed).
std::string profile_row(const Row& row) {
  if (!row.profile.is_object()) return "";
  const json& p = row.profile;
  std::string s = fmt::format("<tr class=\"profile\"><td></td><td colspan=\"7\"><span "
                              "class=\"verdict\">profile: {}</span>",
                              escape(p.value("verdict", std::string("-"))));
  s += kernel_details(p, "", "T_k");
  if (auto r = p.find("reference"); r != p.end() && r->is_object())
    s += kernel_details(*r, "reference: ", "T_ref");
  return s + "</td></tr>\n";
}

std::string workload_table(const ProblemReport& p) {
  std::string s = fmt::format(
      "<h3 id=\"{}-table\">Workloads</h3>\n<table class=\"workloads\"><thead><tr><th>workload</th>"
      "<th>solution</th><th>status</th><th>T_k (ms)</th><th>T_b (ms)</th><th>T_SOL (ms)</th>"
      "<th>S</th><th>chart</th></tr></thead>\n",
      p.anchor);
  for (const auto& w : p.workloads) {
    s += fmt::format("<tbody class=\"workload\" id=\"{}\">\n", w.anchor);
    for (size_t i = 0; i < w.rows.size(); ++i) {
      const Row& row = w.rows[i];
      const auto& sol = p.solutions[size_t(row.series)];
      const std::string workload_cell =
          i == 0 ? fmt::format("{}<div class=\"uuid\">{}</div>", escape(w.label),
                               escape(w.uuid.substr(0, 8)))
                 : std::string();
      const std::string chart_cell =
          row.not_placed.empty()
              ? fmt::format("<a href=\"#{}-chart\">on the chart</a>", p.anchor)
              : fmt::format("<span class=\"off\">not placed:</span> <span class=\"why\">{}</span>",
                            escape(row.not_placed));
      s += fmt::format(
          "<tr id=\"{}\"><td>{}</td><td><span class=\"swatch\" style=\"background:{}\"></span>{}</td>"
          "<td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>"
          "<td class=\"num\">{}</td><td>{}</td></tr>\n",
          row.anchor, workload_cell, series_colour(row.series), escape(sol.name), status_cell(row),
          ms(row.t_k_ms), t_b_cell(row), t_sol_cell(w, row), score_cell(row), chart_cell);
      s += profile_row(row);
    }
    s += "</tbody>\n";
  }
  return s + "</table>\n";
}

std::string problem_section(const ProblemReport& p) {
  std::string chart;
  if (p.roofs) {
    RooflineChart c;
    c.id = p.anchor + "-roofline";
    c.title = "Roofline of " + p.definition + " on " + p.roofs->display_name;
    c.roofs = *p.roofs;
    c.points = p.points;
    for (const auto& s : p.solutions) c.series.push_back(s.name);
    chart = roofline_svg(c);
  } else {
    chart = "<p class=\"off\">No roofline chart: no hardware model (see the note above).</p>\n";
  }
  std::string meta = fmt::format("measured on {}", escape(p.gpu_model));
  if (p.roofs)
    meta += fmt::format(" &middot; roofs of {} ({}, DRAM {:g} GB/s)", escape(p.roofs->display_name),
                        escape(p.roofs->hardware), p.roofs->bandwidth / 1e9);
  meta += p.folder.empty() ? " &middot; no problem folder"
                           : " &middot; problem folder <code>" + escape(p.folder) + "</code>";
  return fmt::format(
      "<section class=\"problem\" id=\"{0}\">\n<h2>{1} <span class=\"gpu\">on {2}</span></h2>\n"
      "<p class=\"links\"><a href=\"#overview\">&uarr; overview</a> &middot; <a href=\"#{0}-table\">"
      "workloads</a> &middot; category <a href=\"#cat-{3}\">{4}</a> &middot; mean S {5}</p>\n"
      "<p class=\"meta\">{6}</p>\n{7}"
      "<figure id=\"{0}-chart\">\n{8}<figcaption>{9} point(s) on the chart{10}. Hover a point for its "
      "values; click it for its row.</figcaption></figure>\n"
      "<h3>Solutions</h3>\n{11}{12}{13}</section>\n",
      p.anchor, escape(p.definition), escape(p.gpu_model), anchor_id(p.category),
      escape(p.category), aggregate_text(p.score, "workload(s)"), meta, notes_list(p.notes), chart,
      p.points.size(),
      p.not_placed.empty()
          ? std::string()
          : fmt::format(", <a href=\"#{}-not-placed\">{} not placed</a>", p.anchor,
                        p.not_placed.size()),
      solutions_table(p), not_placed_list(p), workload_table(p));
}

}  // namespace

std::string render_html(const Report& r) {
  std::string categories = "<div class=\"categories\">\n";
  std::string nav;
  for (const auto& c : r.categories) {
    categories += category_block(r, c);
    nav += fmt::format(" &middot; <a href=\"#{}\">{}</a>", c.anchor, escape(c.name));
  }
  categories += "</div>\n";
  if (r.categories.empty()) categories = "<p>No traces match: the store has nothing to show.</p>\n";
  std::string problems;
  for (const auto& p : r.problems) problems += problem_section(p);
  return Template(kPage)
      .text("title", r.title)
      .text("db", r.db)
      .text("generated", r.generated)
      .markup("css", kCss)
      .markup("selection",
              r.selection.empty() ? std::string() : " &middot; selection: " + escape(r.selection))
      .markup("notes", notes_list(r.notes))
      .markup("nav", nav)
      .markup("categories", categories)
      .markup("problem_table", problem_table(r))
      .markup("problems", problems)
      .render();
}

}  // namespace solbench::report
