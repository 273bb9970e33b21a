// What one evaluation is asked to do: the problem, the solution, the workloads,
// the device and every setting, with the one set of defaults that `eval`,
// `run`'s children, `baseline` and the Python module share.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/device.h"
#include "score/selection.h"

namespace solbench::eval {

// How an evaluation is judged and timed; `run` passes the same to each child.
struct Settings {
  double timeout_s = 300;          // per workload, before the worker is killed (TIMEOUT); 0: none
  double compile_timeout_s = 120;  // the build; 0: no limit
  int rounds = 5;                  // correctness rounds, fresh inputs each
  uint64_t seed = 0;               // 0: a secret drawn per evaluation (WorkerPlan::seed)
  double target_rse = 0.01;        // stop timing below this relative standard error
  double time_budget_ms = 500;     // per timed candidate and workload
  std::string timer = "auto";      // GPU timer: auto, cupti, events, profiler ("" = auto)
  bool no_timing = false;          // correctness only
  std::string arch;                // hardware model for T_SOL; empty: the device's own
  bool no_baseline = false;        // no T_b measured or looked up (S stays null)
  bool profile = false;            // per workload a kernel breakdown and counters (docs/profile.md)

  // The limits as durations: 0 ("no limit", as for `sol --timeout 0`) is a month.
  std::chrono::duration<double> workload_timeout() const;
  std::chrono::duration<double> compile_timeout() const;
  // eval's flags for the settings that differ from the defaults, in eval's order.
  std::vector<std::string> flags() const;
  // The same for `solbench baseline`: only the settings T_b is measured with
  // (its timeout, seed, stopping rule and timer; eval's T_b makes one round
  // whatever --rounds says).
  std::vector<std::string> baseline_flags() const;
  // A safety net for a whole evaluation of `workloads` workloads (the build,
  // then per workload a worker start and the per-workload timeout).
  std::chrono::duration<double> deadline(size_t workloads) const;
};

// A time limit in seconds as a duration: 0 means "no limit" in every command
// (as for `sol --timeout 0`), which is a month.
std::chrono::duration<double> time_limit(double seconds);

// --device cuda:any: the machine's GPU with the fewest evaluations in flight,
// claimed for the evaluation (harness/timing/device_lock.h GpuClaim).
inline constexpr const char* kAnyGpu = "cuda:any";

struct Request {
  std::string problem_dir;
  std::string solution;   // solution.json; empty with `reference`
  bool reference = false; // the definition's own reference as the solution
  score::WorkloadSelection workloads;  // -w, --max-workloads, --smallest
  std::string device = "cpu";  // cpu, cuda:N, or kAnyGpu
  // nvcc target for CUDA sources: "auto" is the evaluated GPU's compute capability
  // (90a on an H100), "default" leaves nvcc's own default, else e.g. "90a", "100a".
  std::string cuda_arch = "auto";
  Settings settings;
  bool build_only = false;  // build and report the build; no worker, trace or record
  bool keep_staging = false;
  bool no_sandbox = false;  // debugging only
  std::string traces_file;  // append one trace per workload here; empty: none
  std::string db;           // results store; empty: store::default_db_path()
  bool no_db = false;
  // `run`'s T_b ahead: the `baseline --json` document of this problem; its T_b's
  // the store does not keep count as looked up (read_ahead_baselines). Empty: none.
  std::string baselines_ahead;
};

// A request that cannot run. `usage`: the caller asked for something that does
// not exist (an unknown --arch, a device that is not cpu or cuda:N; exit 2);
// else an input that does not load (exit 1). Each message is one line.
struct RequestError : std::runtime_error {
  RequestError(bool usage_error, std::vector<std::string> lines);
  bool usage;
  std::vector<std::string> messages;
};

// `device` parsed once, with the timer that must fit it ("" or "auto" fits any);
// throws a usage RequestError naming the flag. `eval` and `baseline` both check so.
Device parse_device(const std::string& device, const std::string& timer);

}  // namespace solbench::eval
