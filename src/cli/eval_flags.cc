#include "cli/eval_flags.h"

#include <vector>

#include "harness/timing/gpu/gpu_timer_factory.h"
#include "store/store.h"

namespace solbench::cli {

void add_workload_options(CLI::App* cmd, score::WorkloadSelection& s) {
  cmd->add_option("-w,--workload", s.wanted,
                  "only this workload: a uuid or a unique uuid prefix (repeatable)");
  cmd->add_option("--max-workloads", s.first,
                  "per problem, only the first N workloads (workload.jsonl order)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--smallest", s.smallest,
                  "per problem, only the N workloads with the fewest input and output bytes "
                  "(after --max-workloads)")
      ->check(CLI::PositiveNumber);
}

void add_settings_options(CLI::App* cmd, eval::Settings& s) {
  cmd->add_option("--timeout", s.timeout_s,
                  "seconds per workload before its worker is killed (TIMEOUT); 0: no limit")
      ->check(CLI::NonNegativeNumber)->capture_default_str();
  cmd->add_option("--compile-timeout", s.compile_timeout_s, "seconds for the build; 0: no limit")
      ->check(CLI::NonNegativeNumber)->capture_default_str();
  cmd->add_option("--rounds", s.rounds, "correctness rounds, each with fresh inputs")
      ->check(CLI::Range(1, 1000))->capture_default_str();
  cmd->add_option("--seed", s.seed,
                  "derive every input value from this seed (reproducible, and predictable to "
                  "whoever knows it: for debugging); default: a secret drawn per evaluation");
  cmd->add_option("--target-rse", s.target_rse,
                  "stop timing once the relative standard error of the median is below this")
      ->check(CLI::Range(1e-6, 1.0))->capture_default_str();
  cmd->add_option("--time-budget-ms", s.time_budget_ms,
                  "wall-time budget per timed candidate and workload (solution, reference), ms")
      ->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_option("--timer", s.timer,
                  "GPU timer: auto (CUPTI activity, else events), cupti, events, or profiler "
                  "(each kernel's gpu__time_duration, as ncu reports it; serialises kernels)")
      ->check(CLI::IsMember(
          std::vector<std::string>(gpu::kGpuTimerKinds.begin(), gpu::kGpuTimerKinds.end())))
      ->capture_default_str();
  cmd->add_flag("--no-timing", s.no_timing, "check correctness only");
  cmd->add_option("--arch", s.arch,
                  "hardware model for T_SOL (solbench hw list); default: the device's own (a "
                  "CPU has none: give one to see T_SOL and S there); b200 also shows "
                  "SOL-ExecBench's published numbers (metadata.json)");
  cmd->add_flag("--no-baseline", s.no_baseline,
                "do not measure or look up the scoring baseline T_b (S stays null)");
  cmd->add_flag("--profile", s.profile,
                "after each workload's timed loop, one call traced kernel by kernel (name, grid, "
                "block, duration, gaps, host time) and one with hardware counters where they are "
                "allowed; a roofline verdict per workload (docs/profile.md)");
}

void add_store_options(CLI::App* cmd, std::string& db, bool& no_db, const std::string& what) {
  auto* d = cmd->add_option("--db", db,
                            what + " (default: " + store::default_db_path().string() + ")");
  cmd->add_flag("--no-db", no_db, "neither read nor record in the results store")->excludes(d);
}

}  // namespace solbench::cli
