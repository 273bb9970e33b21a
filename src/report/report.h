// `solbench report`: one self-contained HTML page (no script, no network) of
// what the results store holds: per category the problems, their mean SOL
// Score and the distribution of workload scores; per problem a roofline chart
// (inline SVG) with T_SOL, the baseline and every solution per workload, and a
// table of the workloads. docs/report.md describes the page.
//
//   collect()      store + problem folders + SOL analysis -> Report (model.h)
//   render_html()  Report -> the page (render.cc, with the SVG charts of
//                  roofline_svg.h and histogram_svg.h)
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "core/problem.h"
#include "report/model.h"
#include "sol/hardware.h"
#include "store/store.h"

namespace solbench::report {

// One workload's SOL analysis: sol::analyse_workload by default; tests pass a fake.
using AnalyseFn =
    std::function<json(const Problem& p, size_t workload_index, const sol::HardwareModel& hw)>;

struct ReportOptions {
  store::Filter filter;                             // exact definition / solution / GPU
  std::vector<std::string> problem_globs;           // fnmatch on the definition name; empty: all
  std::vector<std::filesystem::path> problem_dirs;  // problem folders or data sets (--problems)
  std::string arch;   // the charts' hardware model; empty: the one the traces were scored on,
                      // else the GPU's own
  std::string title;  // empty: "solbench report"
  AnalyseFn analyse;  // empty: sol::analyse_workload with its cache
};

// Reads the store and the problem folders, runs the SOL analysis of every
// workload in the store that a folder holds, and places the points. Throws
// store::StoreError for a store that cannot be read, InputError for a
// --problems folder that holds no problem and an --arch that names no model.
Report collect(store::Store& db, const ReportOptions& options);

// The page: one HTML document with its CSS and SVG inline.
std::string render_html(const Report& report);

}  // namespace solbench::report
