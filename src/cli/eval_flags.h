// The options that `eval` and `run` (and, for workloads, `baseline`) share,
// declared once so that each means the same thing, with the same default and
// the same check, in every command that takes it.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "eval/request.h"
#include "score/selection.h"

namespace solbench::cli {

// -w/--workload, --max-workloads, --smallest (score/selection.h: in which order they narrow).
void add_workload_options(CLI::App* cmd, score::WorkloadSelection& s);

// How each evaluation is judged and timed (eval::Settings; its defaults shown).
void add_settings_options(CLI::App* cmd, eval::Settings& s);

// --db FILE / --no-db.
void add_store_options(CLI::App* cmd, std::string& db, bool& no_db, const std::string& what);

}  // namespace solbench::cli
