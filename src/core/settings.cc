#include "core/settings.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>

extern char** environ;

namespace solbench {

namespace {

// Reads one variable at a time from a lookup; empty texts count as unset.
class Reader {
 public:
  explicit Reader(const EnvLookup& lookup) : lookup_(lookup) {}
  const char* raw(const char* name) const { return lookup_ ? lookup_(name) : std::getenv(name); }
  std::string text(const char* name) const {
    const char* v = raw(name);
    return v ? v : "";
  }
  std::optional<std::string> optional_text(const char* name) const {
    const char* v = raw(name);
    return v ? std::optional<std::string>(v) : std::nullopt;
  }
  // Left at its default where unset or empty.
  void path(const char* name, std::filesystem::path& field) const {
    if (const std::string v = text(name); !v.empty()) field = v;
  }
  // True unless the variable is exactly "0".
  bool unless_zero(const char* name) const { return text(name) != "0"; }
  // "1": true, "0": false, anything else: nullopt.
  std::optional<bool> one_or_zero(const char* name) const {
    const std::string v = text(name);
    if (v == "1") return true;
    if (v == "0") return false;
    return std::nullopt;
  }
  // The non-empty items of a `sep`-separated list.
  std::vector<std::string> list(const char* name, char sep) const {
    std::vector<std::string> out;
    const std::string v = text(name);
    for (size_t pos = 0; pos < v.size();) {
      size_t end = v.find(sep, pos);
      if (end == std::string::npos) end = v.size();
      if (end > pos) out.push_back(v.substr(pos, end - pos));
      pos = end + 1;
    }
    return out;
  }

 private:
  const EnvLookup& lookup_;
};

// A positive integer (the whole text), at most 1024.
std::optional<int> job_count(const std::string& v) {
  if (v.empty()) return std::nullopt;
  char* end = nullptr;
  const long n = std::strtol(v.c_str(), &end, 10);
  if (!end || *end != '\0' || n <= 0) return std::nullopt;
  return static_cast<int>(std::min<long>(n, 1024));
}

// A number of seconds (the whole text), for Parsed<double>.
Parsed<double> seconds(const std::string& v) {
  Parsed<double> p{v, std::nullopt};
  char* end = nullptr;
  const double s = v.empty() ? 0 : std::strtod(v.c_str(), &end);
  if (!v.empty() && end != v.c_str() && *end == '\0') p.value = s;
  return p;
}

void read_paths(const Reader& r, Settings& s) {
  r.path("SOLBENCH_CACHE_DIR", s.cache_dir);
  r.path("XDG_CACHE_HOME", s.xdg_cache_home);
  r.path("HOME", s.home);
  r.path("SOLBENCH_STAGING_DIR", s.staging_dir);
  r.path("TMPDIR", s.tmpdir);
  r.path("SOLBENCH_LOCK_DIR", s.lock_dir);
  r.path("SOLBENCH_HARDWARE_DIR", s.hardware_dir);
  s.python = r.text("SOLBENCH_PYTHON");
  r.path("SOLBENCH_PYTHON_DIR", s.python_dir);
  r.path("SOLBENCH_EXECUTABLE", s.executable);
  for (const char* v : {"PYTHONPATH", "PYTHONHOME", "PYTHONUSERBASE", "PYTHONNOUSERSITE",
                        "PYTHONSAFEPATH", "PYTHONSTARTUP", "VIRTUAL_ENV"})
    s.python_import_env.emplace_back(v, r.text(v));
}

void read_build(const Reader& r, Settings& s) {
  s.cc = r.text("CC");
  s.cxx = r.text("CXX");
  s.nvcc = r.text("NVCC");
  r.path("CUDA_HOME", s.cuda_home);
  r.path("CUDA_PATH", s.cuda_path);
  r.path("SOLBENCH_INCLUDE_DIR", s.include_dir);
  r.path("SOLBENCH_CUTLASS_DIR", s.cutlass_dir);
  r.path("CUTLASS_DIR", s.cutlass_dir_env);
  r.path("CUTLASS_PATH", s.cutlass_path);
  r.path("CUTLASS_HOME", s.cutlass_home);
  r.path("CUDNN_HOME", s.cudnn_home);
  r.path("CUDNN_PATH", s.cudnn_path);
  s.build_jobs = job_count(r.text("SOLBENCH_BUILD_JOBS"));
  s.baseline_workers = job_count(r.text("SOLBENCH_BASELINE_WORKERS"));
  s.baseline_cpus = job_count(r.text("SOLBENCH_BASELINE_CPUS"));
  s.baseline_gpu_share = job_count(r.text("SOLBENCH_BASELINE_GPU_SHARE"));
  s.baseline_ahead = r.one_or_zero("SOLBENCH_BASELINE_AHEAD");
  s.baseline_hand_back = r.one_or_zero("SOLBENCH_BASELINE_HAND_BACK");
  s.baseline_memory_shares = r.one_or_zero("SOLBENCH_BASELINE_MEMORY_SHARES").value_or(true);
  s.torch_pch = r.one_or_zero("SOLBENCH_TORCH_PCH");
  s.pycache = r.one_or_zero("SOLBENCH_PYCACHE").value_or(true);
  s.precompile = r.one_or_zero("SOLBENCH_PRECOMPILE").value_or(true);
  r.path("SOLBENCH_CCWRAP", s.ccwrap);
  s.path_env = r.text("PATH");
}

void read_worker(const Reader& r, Settings& s) {
  s.worker_tmp_limit = r.text("SOLBENCH_WORKER_TMP_LIMIT");
  s.jit_cache_limit = r.text("SOLBENCH_JIT_CACHE_LIMIT");
  s.worker_pidns = r.unless_zero("SOLBENCH_WORKER_PIDNS");
  s.worker_proc = r.unless_zero("SOLBENCH_WORKER_PROC");
  s.worker_private_tmp = r.text("SOLBENCH_WORKER_PRIVATE_TMP");
  s.sandbox_landlock = r.text("SOLBENCH_SANDBOX_LANDLOCK");
  s.sandbox_writable_extra = r.list("SOLBENCH_SANDBOX_WRITABLE_EXTRA", ':');
  s.sandbox_allow = r.list("SOLBENCH_SANDBOX_ALLOW", ',');
  r.path("TRITON_PTXAS_PATH", s.triton_ptxas_path);
  s.triton_libcuda_path = r.optional_text("TRITON_LIBCUDA_PATH");
}

void read_evaluation(const Reader& r, Settings& s) {
  s.reference_worker = r.unless_zero("SOLBENCH_REFERENCE_WORKER");
  s.spare_workers = r.one_or_zero("SOLBENCH_SPARE_WORKERS") == true;
  s.early_reference_worker = r.one_or_zero("SOLBENCH_EARLY_REFERENCE_WORKER");
  s.stream_judge = r.one_or_zero("SOLBENCH_STREAM_JUDGE");
  s.rounds_ahead = r.one_or_zero("SOLBENCH_ROUNDS_AHEAD");
  s.reference_cache = r.unless_zero("SOLBENCH_REFERENCE_CACHE");
  if (const char* v = r.raw("SOLBENCH_RECORD_BUDGET_BYTES"))
    s.record_budget_bytes = std::strtoull(v, nullptr, 10);
  s.gpu_timer = r.text("SOLBENCH_GPU_TIMER");
  if (const std::string v = r.text("SOLBENCH_GPU_BLOCK_LAUNCH"); !v.empty())
    s.gpu_block_launch = v != "0";
  s.gpu_idle_timeout_s = seconds(r.text("SOLBENCH_GPU_IDLE_TIMEOUT_S"));
  s.cupti_diag = r.text("SOLBENCH_CUPTI_DIAG");
  s.cuda_visible_devices = r.optional_text("CUDA_VISIBLE_DEVICES");
  s.cuda_device_order = r.optional_text("CUDA_DEVICE_ORDER");
}

void read_internal(const Reader& r, Settings::Internal& in) {
  if (const char* v = r.raw("SOLBENCH_CHANNEL_FD")) in.channel_fd = std::atoi(v);
  in.zygote = r.text("SOLBENCH_ZYGOTE");
  r.path("SOLBENCH_RUN_STDOUT", in.run_stdout);
  in.exec_allow = r.list("SOLBENCH_EXEC_ALLOW", ':');
}

// One reading of the environment, with the entries it was read from. Never freed:
// a reference settings() returned may outlive the next reading.
struct Snapshot {
  std::vector<const char*> environment;
  Settings settings;
  const Snapshot* previous = nullptr;  // keeps the older readings reachable
};

std::atomic<const Snapshot*> g_current{nullptr};
std::atomic<const Settings*> g_override{nullptr};

// glibc never rewrites an entry in place: setenv and unsetenv change `environ`'s
// pointers, clearenv empties it, so equal pointers mean an unchanged environment.
bool unchanged(const std::vector<const char*>& seen) {
  size_t i = 0;
  for (char** e = environ; e && e[i]; ++i)
    if (i >= seen.size() || e[i] != seen[i]) return false;
  return i == seen.size();
}

}  // namespace

std::filesystem::path Settings::cache_home() const {
  if (!cache_dir.empty()) return cache_dir;
  if (!xdg_cache_home.empty()) return xdg_cache_home / "solbench";
  if (!home.empty()) return home / ".cache" / "solbench";
  return {};
}

Settings read_settings(const EnvLookup& lookup) {
  const Reader r(lookup);
  Settings s;
  read_paths(r, s);
  read_build(r, s);
  read_worker(r, s);
  read_evaluation(r, s);
  read_internal(r, s.internal);
  return s;
}

const Settings& settings() {
  if (const Settings* o = g_override.load(std::memory_order_acquire)) return *o;
  const Snapshot* last = g_current.load(std::memory_order_acquire);
  if (last && unchanged(last->environment)) return last->settings;
  auto* fresh = new Snapshot;
  for (char** e = environ; e && *e; ++e) fresh->environment.push_back(*e);
  fresh->settings = read_settings();
  fresh->previous = last;
  while (!g_current.compare_exchange_weak(fresh->previous, fresh, std::memory_order_acq_rel)) {
  }
  return fresh->settings;
}

ScopedSettings::ScopedSettings(Settings s)
    : settings_(std::move(s)), previous_(g_override.exchange(&settings_)) {}

ScopedSettings::~ScopedSettings() { g_override.store(previous_); }

}  // namespace solbench
