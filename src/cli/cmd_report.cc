// `solbench report -o FILE`: the results store as one self-contained HTML page
// (src/report/report.h, docs/report.md).
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli/commands.h"
#include "core/json.h"
#include "report/report.h"
#include "sol/hardware.h"
#include "store/store.h"

namespace solbench::cli {

namespace {

namespace fs = std::filesystem;

struct ReportCliOptions {
  std::string db;  // empty: store::default_db_path()
  std::string output;
  std::vector<std::string> problem_dirs;
  report::ReportOptions report;
};

int run_report(ReportCliOptions& o) {
  if (!o.report.arch.empty()) {
    try {
      (void)sol::select_hardware(o.report.arch);  // the message every command gives
    } catch (const sol::HardwareChoiceError& e) {
      std::fprintf(stderr, "error: %s\n", e.what());
      return 2;
    }
  }
  store::Store::Options so;
  so.mode = store::Store::Mode::Existing;  // a report never creates a store
  store::Store db = store::Store::open(o.db.empty() ? store::default_db_path() : fs::path(o.db), so);
  for (const auto& d : o.problem_dirs) o.report.problem_dirs.push_back(d);
  const report::Report r = report::collect(db, o.report);
  write_text_file(o.output, report::render_html(r));  // temporary file + rename
  fmt::print("wrote {}: {} problem(s), {} point(s) on the charts, {} not placed{}\n", o.output,
             r.problems.size(), r.placed(), r.not_placed(),
             r.not_placed() > 0 ? " (the page lists each with the reason)" : "");
  for (const auto& n : r.notes) fmt::print(stderr, "note: {}\n", n);
  return 0;
}

}  // namespace

void add_report_command(CLI::App& app) {
  auto o = std::make_shared<ReportCliOptions>();
  auto* c = app.add_subcommand(
      "report",
      "Write the results store as one self-contained HTML page: per category the mean SOL Score "
      "and its distribution, per problem a roofline chart and the workload table");
  c->add_option("-o,--output", o->output, "the HTML file to write")->required();
  c->add_option("--db", o->db,
                "results store (default: $SOLBENCH_CACHE_DIR/solbench.db, else "
                "$XDG_CACHE_HOME/solbench/solbench.db, else ~/.cache/solbench/solbench.db)");
  c->add_option("--problem", o->report.problem_globs,
                "only definitions whose name matches this glob (repeatable)");
  c->add_option("--definition", o->report.filter.definition, "only this definition (name)");
  c->add_option("--solution", o->report.filter.solution, "only this solution (name)");
  c->add_option("--gpu", o->report.filter.gpu_model, "only this GPU model (as recorded)");
  c->add_option("--problems", o->problem_dirs,
                "problem folders or data sets holding the definitions: the SOL analysis of their "
                "workloads gives each point's work and bytes (repeatable)")
      ->check(CLI::ExistingDirectory);
  c->add_option("--arch", o->report.arch,
                "hardware model of the roofs (see `solbench hw list`); default: the model the "
                "traces were scored on, else the recorded GPU's own");
  c->add_option("--title", o->report.title, "the page's title (default: solbench report)");
  c->callback([o] { exit_code() = run_report(*o); });
}

}  // namespace solbench::cli
