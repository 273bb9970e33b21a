// solbench: speed-of-light kernel evaluation. Subcommands live in cmd_*.cc.
#include <cstdio>
#include <exception>

#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "core/diagnostics.h"

namespace solbench::cli {
int& exit_code() {
  static int code = 0;
  return code;
}
}  // namespace solbench::cli

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
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    // CLI11 returns 0 for --help/--version; every other parse error is a usage error.
    return rc == 0 ? 0 : 2;
  } catch (const solbench::InputError& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return solbench::cli::exit_code();
}
