// Settings: every environment variable solbench reads, typed, in one place
// (docs/settings.md has the same list as a table).
//
//   Settings                 the user's settings: SOLBENCH_* and the outside variables
//                            solbench honours (CUDA_HOME, NVCC, CUDA_VISIBLE_DEVICES, ...)
//   Settings::Internal       the worker protocol: variables a parent sets for its child
//   settings()               this process's Settings
//   read_settings(lookup)    a Settings read from `lookup` (the environment by default)
//   ScopedSettings           tests: settings() answers a given Settings meanwhile
//
// When values are read: settings() reads the environment at its first call in a
// process and again whenever the environment changed since (setenv, unsetenv, and a
// zygote-forked worker's clearenv before it adopts its requester's environment), so
// a value is never older than the environment it came from. Nothing is carried from
// a parent to its child except through the environment: a forked or exec'd child
// reads its own at its first call, the Internal variables its parent set for it
// included; so are the variables a worker changes for itself once started (it sets
// TMPDIR and TRITON_LIBCUDA_PATH, unsets SOLBENCH_ZYGOTE). A returned reference
// stays valid but keeps its reading's values: call settings() again after a setenv.
// Not for use between fork and exec (a new reading allocates).
//
// A field is the value as solbench uses it: a default stands where the variable is
// unset; an empty variable counts as unset unless its comment says otherwise. Text
// whose check reports an error at its use (a GPU timer kind, a byte size) is kept
// as text, or as Parsed (text and value), and checked where it is used, as before.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace solbench {

// A variable's text (empty: unset) and its value (nullopt: unset, or not a T).
template <class T>
struct Parsed {
  std::string text;
  std::optional<T> value;
  bool set() const { return !text.empty(); }
};

struct Settings {
  using path = std::filesystem::path;

  // ---- folders ----
  // SOLBENCH_CACHE_DIR: the cache folder (builds/, sol/, solbench.db); default from
  // XDG_CACHE_HOME / HOME (cache_home()).
  path cache_dir;
  path xdg_cache_home;  // XDG_CACHE_HOME: $XDG_CACHE_HOME/solbench when SOLBENCH_CACHE_DIR is unset
  path home;            // HOME: $HOME/.cache/solbench after that; also keys the Python probes' cache
  // SOLBENCH_STAGING_DIR: where evaluations stage their scratch folders; default
  // $TMPDIR/solbench, else /tmp/solbench.
  path staging_dir;
  path tmpdir;  // TMPDIR
  // SOLBENCH_LOCK_DIR: the GPUs' timing locks (harness/timing/device_lock.h), shared by
  // every user of the machine.
  path lock_dir = "/tmp/solbench-locks";
  // SOLBENCH_HARDWARE_DIR: the hardware models (sol/hardware.h); default the source
  // tree's data/hardware, else share/solbench/hardware beside the executable.
  path hardware_dir;

  // ---- Python ----
  // SOLBENCH_PYTHON: the interpreter the embedded Python starts as, the workers' and
  // the builds' python; default the one found at configure time.
  std::string python;
  // SOLBENCH_PYTHON_DIR: the solbench_py package's folder; default the source tree's
  // python/, else share/solbench/python beside the executable.
  path python_dir;
  // SOLBENCH_EXECUTABLE: the solbench the Python module (src/pyapi) runs; read there only.
  path executable;
  // PYTHONPATH, PYTHONHOME, PYTHONUSERBASE, PYTHONNOUSERSITE, PYTHONSAFEPATH,
  // PYTHONSTARTUP, VIRTUAL_ENV (name, value; "" when unset): they move the
  // interpreter's import path, so they key the Python probes' cache (python_probe.cc).
  std::vector<std::pair<std::string, std::string>> python_import_env;

  // ---- builds (harness/build) ----
  std::string cc;   // CC: the C compiler (default gcc); a wrapper script is resolved for the sandbox
  std::string cxx;  // CXX: the C++ compiler (default g++); the same
  std::string nvcc;  // NVCC: the CUDA compiler; default $CUDA_HOME/bin/nvcc, $CUDA_PATH/bin/nvcc, ...
  path cuda_home;    // CUDA_HOME: the CUDA toolkit (nvcc, ptxas; the sandbox's programs)
  path cuda_path;    // CUDA_PATH: the same, after CUDA_HOME
  path include_dir;  // SOLBENCH_INCLUDE_DIR: solbench's kernel headers; default the source tree's include/
  // SOLBENCH_CUTLASS_DIR: a CUTLASS checkout; an error when it holds no CUTLASS.
  // Then CUTLASS_DIR, CUTLASS_PATH, CUTLASS_HOME (skipped when they hold none).
  path cutlass_dir;
  path cutlass_dir_env, cutlass_path, cutlass_home;
  path cudnn_home, cudnn_path;  // CUDNN_HOME, CUDNN_PATH: cuDNN roots, before the wheel's
  // SOLBENCH_BUILD_JOBS: parallel compile jobs, a positive integer (at most 1024);
  // nullopt (unset or not one): the CPUs this process may use.
  std::optional<int> build_jobs;
  // SOLBENCH_BASELINE_WORKERS: T_b's workers side by side (score/baseline.h), a
  // positive integer (at most 1024); nullopt: one per 4 CPUs on a GPU, one on the CPU.
  std::optional<int> baseline_workers;
  // SOLBENCH_BASELINE_CPUS / SOLBENCH_BASELINE_GPU_SHARE: the automatic count's share
  // of the host's CPUs, and how many evaluations share this GPU (its memory for
  // workers alone is divided by it); `run` sets both for evaluations side by side.
  // Positive integers (at most 1024); nullopt: every CPU, the GPU alone.
  std::optional<int> baseline_cpus;
  std::optional<int> baseline_gpu_share;
  // SOLBENCH_BASELINE_AHEAD: eval's T_b workers beside the solution's, compiling
  // until they are done (docs/score.md "Ahead"): "0" never (after them), "1" on
  // the CPU too (its timed loops then share cores with those workers' start: for
  // tests of the mechanism); nullopt: on a GPU.
  std::optional<bool> baseline_ahead;
  // SOLBENCH_BASELINE_HAND_BACK: T_b's workers ahead hand back at "go" what they
  // would reach only later, for late workers to measure side by side
  // (harness::WorkerPlan::hand_back): "0" never, "1" on the CPU too (for tests);
  // nullopt: where the GPU's memory is known (score/baseline.h).
  std::optional<bool> baseline_hand_back;
  // SOLBENCH_BASELINE_MEMORY_SHARES: "0": T_b's workers hold no shares of the GPU's
  // memory (harness/timing/memory_shares.h), and those alone or late are counted so
  // that all their peaks fit half of it at once, as before; default on where the GPU's
  // memory is known (`run` sets "0" for its T_b-ahead jobs).
  bool baseline_memory_shares = true;
  // SOLBENCH_PYCACHE: "0" leaves Python's bytecode where the interpreter keeps it
  // (bridge::keep_bytecode); default on.
  bool pycache = true;
  // SOLBENCH_PRECOMPILE: "0" leaves that bytecode to the imports; default on: the
  // first process to find none compiles torch's sources there on the spare cores.
  bool precompile = true;
  // SOLBENCH_TORCH_PCH: the precompiled <torch/extension.h>; false ("0") never, true
  // ("1") built before the first use; nullopt: built in the background, used once ready.
  std::optional<bool> torch_pch;
  // SOLBENCH_CCWRAP: solbench-ccwrap, which stands in for compiler wrapper scripts in
  // the sandbox; default the one beside the executable.
  path ccwrap;
  std::string path_env;  // PATH: where programs are looked up (harness::find_program)

  // ---- the worker and its sandbox (harness/worker; docs/sandbox.md) ----
  // SOLBENCH_WORKER_TMP_LIMIT, SOLBENCH_JIT_CACHE_LIMIT: the worker's tmpfs and its
  // compile caches' limits (default 1G each), a size such as 512M or 2G; checked by
  // harness::worker_limits().
  std::string worker_tmp_limit, jit_cache_limit;
  bool worker_pidns = true;  // SOLBENCH_WORKER_PIDNS: "0" no PID namespace (diagnosis)
  bool worker_proc = true;   // SOLBENCH_WORKER_PROC: "0" no private /proc (diagnosis)
  // SOLBENCH_WORKER_PRIVATE_TMP: "0" no private tmpfs, "userns" through a user
  // namespace; "" the default (diagnosis, tests).
  std::string worker_private_tmp;
  // SOLBENCH_SANDBOX_LANDLOCK: "0" no Landlock, "exec" / "writes" only that half;
  // "" both (diagnosis).
  std::string sandbox_landlock;
  // SOLBENCH_SANDBOX_WRITABLE_EXTRA: more writable folders, ':'-separated (diagnosis).
  std::vector<std::string> sandbox_writable_extra;
  // SOLBENCH_SANDBOX_ALLOW: more system calls for the seccomp filter, ','-separated.
  std::vector<std::string> sandbox_allow;
  path triton_ptxas_path;  // TRITON_PTXAS_PATH: another ptxas the sandbox lets run
  // TRITON_LIBCUDA_PATH: set (even empty): the worker leaves it to Triton; unset:
  // the worker sets it to libcuda's folder.
  std::optional<std::string> triton_libcuda_path;

  // ---- evaluation (harness/runner, cli eval) ----
  // SOLBENCH_REFERENCE_WORKER: "0" runs the reference and the checks in the
  // solution's worker (measuring the judge's cost only).
  bool reference_worker = true;
  // SOLBENCH_SPARE_WORKERS: "1" the zygote keeps spare workers (the Python module sets it).
  bool spare_workers = false;
  // SOLBENCH_EARLY_REFERENCE_WORKER: true ("1") always / false ("0") never start the
  // reference worker beside the solution's; nullopt: on GPUs only.
  std::optional<bool> early_reference_worker;
  // SOLBENCH_STREAM_JUDGE: "0" an early reference worker gets a batch's work only
  // once the solution's worker is done; default ("1") each workload as its record
  // exists, judged beside the solution's worker (harness/runner_judged.cc).
  std::optional<bool> stream_judge;
  // SOLBENCH_ROUNDS_AHEAD: "0" a streamed reference worker gets a workload's record
  // whole, once the solution's worker reported it; default ("1") its correctness
  // rounds first, judged while the solution's timed calls run.
  std::optional<bool> rounds_ahead;
  // SOLBENCH_REFERENCE_CACHE: "0" times T_ref in every evaluation instead of taking
  // it from the results store where the same environment measured it (docs/store.md).
  bool reference_cache = true;
  // SOLBENCH_RECORD_BUDGET_BYTES: bytes of recorded reference values per batch;
  // set (even empty, which is 0): that many; nullopt: 16 GiB or half the free disk.
  std::optional<uint64_t> record_budget_bytes;

  // ---- GPU timing (harness/timing/gpu; docs/gpu-timing.md) ----
  // SOLBENCH_GPU_TIMER: the GPU timer kind over --timer ("events" also keeps CUPTI
  // off); checked when a GPU timer is made. "": --timer's.
  std::string gpu_timer;
  // SOLBENCH_GPU_BLOCK_LAUNCH: any text but "0" holds launches behind a blocking
  // kernel, "0" not; nullopt: the timer's option.
  std::optional<bool> gpu_block_launch;
  // SOLBENCH_GPU_IDLE_TIMEOUT_S: seconds to wait for the GPU to go idle, in (0, 3600];
  // another text is an error when a GPU timer is made. Unset: the timer's option.
  Parsed<double> gpu_idle_timeout_s;
  // SOLBENCH_CUPTI_DIAG: a CUPTI diagnosis mode ("no-callbacks", "work-callbacks",
  // "kernels-only", "no-activities", "serial-kernels"); "" none.
  std::string cupti_diag;
  // CUDA_VISIBLE_DEVICES, CUDA_DEVICE_ORDER: as CUDA reads them (set but empty hides
  // every GPU), for --gpus all and for naming a CUDA ordinal's GPU in NVML.
  std::optional<std::string> cuda_visible_devices, cuda_device_order;

  // The protocol between a parent and the child it starts: set by the parent (or
  // the zygote, after the fork) in the child's environment, never by users.
  struct Internal {
    // SOLBENCH_CHANNEL_FD: the descriptor of the child's channel to its parent
    // (workers, `solbench __sol-trace`, `__probe-tolerance`); nullopt when unset.
    std::optional<int> channel_fd;
    // SOLBENCH_ZYGOTE: the zygote's address that workers are forked from, set for
    // the children of a process that started one (and by the Python module); "0" or
    // "off": none, workers are exec'd. "": start one when needed.
    std::string zygote;
    // SOLBENCH_RUN_STDOUT: the file a `solbench run` child's stdout goes to; read by
    // the child's /bin/sh line (runset/child_eval.cc), listed for completeness.
    path run_stdout;
    // SOLBENCH_EXEC_ALLOW: the programs the sandbox lets a worker run, ':'-separated;
    // set by the worker for its Python side (runtime.install_exec_guard's message).
    std::vector<std::string> exec_allow;
  } internal;

  // The cache folder: $SOLBENCH_CACHE_DIR, else $XDG_CACHE_HOME/solbench, else
  // $HOME/.cache/solbench; empty when none of them is set.
  path cache_home() const;
};

// getenv's shape: the value of a variable, or null when unset.
using EnvLookup = std::function<const char*(const char* name)>;

// The settings `lookup` gives (the process's environment by default). Never throws:
// a text that does not parse is left for its use to report (see Parsed).
Settings read_settings(const EnvLookup& lookup = nullptr);

// This process's settings (see the top of this file for when they are read).
const Settings& settings();

// Tests: settings() answers `s` while this lives (process-wide; nests).
class ScopedSettings {
 public:
  explicit ScopedSettings(Settings s);
  ~ScopedSettings();
  ScopedSettings(const ScopedSettings&) = delete;
  ScopedSettings& operator=(const ScopedSettings&) = delete;

 private:
  Settings settings_;
  const Settings* previous_;
};

}  // namespace solbench
