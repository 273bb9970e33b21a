// solbench: speed-of-light kernel evaluation. Subcommands live in cmd_*.cc.
#include <cstdio>
#include <exception>

#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "core/diagnostics.h"
#include "harness/interrupt.h"

namespace solbench::cli {
int& exit_code() {
  static int code = 0;
  return code;
}
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
