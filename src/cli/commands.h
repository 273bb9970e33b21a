// The subcommands of `solbench`. Each registers itself on the CLI11 app and
// returns the process exit code through the callback it installs.
//
// Exit codes (every subcommand): 0 success/valid, 1 invalid input or a failed
// evaluation step, 2 usage error.
#pragma once

#include <CLI/CLI.hpp>

namespace solbench::cli {

// Set by a subcommand's callback; main() returns it.
int& exit_code();

void add_validate_command(CLI::App& app);
void add_sol_command(CLI::App& app);
void add_hw_command(CLI::App& app);
// `solbench eval` and the hidden worker mode it re-executes (`solbench __worker`).
void add_eval_command(CLI::App& app);
void add_worker_command(CLI::App& app);
// `solbench db leaderboard|best|history|export`: the results store.
void add_db_command(CLI::App& app);
// `solbench run DATASET_DIR`: a data set, each evaluation in a child eval.
void add_run_command(CLI::App& app);
// `solbench baseline`: the scoring baseline T_b, measured or from the store (docs/score.md).
void add_baseline_command(CLI::App& app);
// `solbench report -o FILE`: the store as one self-contained HTML page (docs/report.md).
void add_report_command(CLI::App& app);
// `solbench pack`: a solution.json from source files, and back with --unpack (docs/formats.md).
void add_pack_command(CLI::App& app);

}  // namespace solbench::cli
