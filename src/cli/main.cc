// solbench: speed-of-light kernel evaluation. Subcommands live in cmd_*.cc.
#include <cstdio>
#include <exception>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "core/diagnostics.h"
#include "core/text.h"
#include "harness/interrupt.h"

namespace solbench::cli {
int& exit_code() {
  static int code = 0;
  return code;
}
namespace {

// The subcommand the parse reached (the deepest one named on the command line).
CLI::App* reached(CLI::App& app) {
  CLI::App* cur = &app;
  for (auto subs = cur->get_subcommands(); !subs.empty(); subs = cur->get_subcommands())
    cur = subs.front();
  return cur;
}

// "did you mean --smallest?" for each unexpected argument that is close to an
// option (or, for a word, a subcommand) of the command the parse reached; a
// mistyped subcommand ("solbench evl") is the first word when none was reached.
void suggest(CLI::App& app, const CLI::ParseError& e, int argc, char** argv) {
  const std::string what = e.what();
  const size_t colon = what.find(": ");
  CLI::App* cmd = reached(app);
  std::string unexpected = colon == std::string::npos ? "" : what.substr(colon + 2);
  if (cmd == &app && argc > 1 && argv[1][0] != '-') unexpected = argv[1];
  std::vector<std::string> options, commands;
  for (const CLI::Option* o : cmd->get_options())
    for (const auto& n : o->get_lnames()) options.push_back("--" + n);
  for (const CLI::App* sub : cmd->get_subcommands([](CLI::App*) { return true; }))
    if (!sub->get_group().empty()) commands.push_back(sub->get_name());
  std::istringstream words(unexpected);
  for (std::string w; words >> w;) {
    const std::string name = w.substr(0, w.find('='));
    const auto hit = closest_match(name, name.rfind("--", 0) == 0 ? options : commands);
    if (hit) std::fprintf(stderr, "%s: did you mean %s?\n", name.c_str(), hit->c_str());
  }
}

}  // namespace
}  // namespace solbench::cli

namespace {
// The exit status after an interrupt is its own (harness/interrupt.h).
int finished(int rc) {
  solbench::harness::await_interrupt_exit();
  return rc;
}
}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"solbench: how far a GPU kernel is from the hardware's speed of light"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "solbench 0.1.0");
  solbench::cli::add_validate_command(app);
  solbench::cli::add_sol_command(app);
  solbench::cli::add_hw_command(app);
  solbench::cli::add_eval_command(app);
  solbench::cli::add_worker_command(app);
  solbench::cli::add_db_command(app);
  solbench::cli::add_run_command(app);
  solbench::cli::add_baseline_command(app);
  solbench::cli::add_report_command(app);
  solbench::cli::add_pack_command(app);
  // Ctrl-C, SIGTERM and SIGHUP in the commands that start workers, builds and tracers:
  // their children and scratch folders go with them (harness/interrupt.h). Never in
  // the internal __worker, __zygote and tracer processes, which keep default signals.
  for (const char* name : {"eval", "run", "baseline", "sol"})
    app.get_subcommand(name)->preparse_callback(
        [](std::size_t) { solbench::harness::install_interrupt_handling(); });
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    if (rc != 0) solbench::cli::suggest(app, e, argc, argv);
    // CLI11 returns 0 for --help/--version; every other parse error is a usage error.
    return finished(rc == 0 ? 0 : 2);
  } catch (const solbench::InputError& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return finished(1);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return finished(1);
  }
  return finished(solbench::cli::exit_code());
}
