#include "harness/toolchain.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <initializer_list>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <string_view>

#include <unistd.h>

#include "core/json.h"
#include "core/settings.h"
#include "harness/build/build_cache.h"
#include "harness/build/python_probe.h"
#include "harness/sha256.h"

namespace solbench::harness {
namespace fs = std::filesystem;

namespace {

std::chrono::duration<double> time_left(Deadline deadline) {
  return std::chrono::duration<double>(
      std::max(0.0, std::chrono::duration<double>(deadline - Clock::now()).count()));
}

}  // namespace

// ---------------------------------------------------------------- interpreter

std::string configured_python(const std::string& requested) {
  if (!requested.empty()) return requested;
  if (const std::string& env = settings().python; !env.empty()) return env;
#ifdef SOLBENCH_PYTHON_EXECUTABLE
  return SOLBENCH_PYTHON_EXECUTABLE;
#else
  return "python3";
#endif
}

// ---------------------------------------------------------------- compilers

namespace {
// $CC or $CXX (`var`) from the settings; "" for another name.
std::string compiler_setting(const Settings& s, std::string_view var) {
  return var == "CC" ? s.cc : var == "CXX" ? s.cxx : std::string();
}
}  // namespace

std::string compiler_name(const std::string& configured, const char* env, const char* fallback) {
  if (!configured.empty()) return configured;
  if (std::string e = compiler_setting(settings(), env); !e.empty()) return e;
  return fallback;
}

std::optional<fs::path> find_compiler(const std::string& name) {
  auto p = find_program(name);
  if (!p) return std::nullopt;
  std::error_code ec;
  fs::path abs = fs::absolute(*p, ec);
  return ec ? *p : abs;
}

std::optional<fs::path> find_nvcc(const std::string& configured) {
  if (!configured.empty()) return find_program(configured);
  const Settings& env = settings();
  if (!env.nvcc.empty()) return find_program(env.nvcc);
  for (const fs::path& home : {env.cuda_home, env.cuda_path}) {
    if (!home.empty()) {
      if (auto p = find_program((home / "bin" / "nvcc").string())) return p;
    }
  }
#ifdef SOLBENCH_CUDA_ROOT
  if (auto p = find_program((fs::path(SOLBENCH_CUDA_ROOT) / "bin" / "nvcc").string())) return p;
#endif
  if (auto p = find_program("/usr/local/cuda/bin/nvcc")) return p;
  return find_program("nvcc");
}

fs::path cuda_root_of(const fs::path& nvcc) { return nvcc.parent_path().parent_path(); }

fs::path cuda_lib_dir(const fs::path& root) {
  std::error_code ec;
  for (const char* sub : {"lib64", "lib", "targets/x86_64-linux/lib", "targets/sbsa-linux/lib"})
    if (fs::exists(root / sub / "libcudart.so", ec)) return root / sub;
  return root / "lib64";
}

ProgramVersion program_version(const fs::path& prog, const BuildCache* cache,
                               std::chrono::duration<double> timeout) {
  ProgramVersion out;
  const std::string id = file_identity(prog);
  if (cache) {
    if ((out.text = cache->toolchain_version(id))) return out;
  }
  RunOptions ro;
  ro.timeout = timeout;
  CommandResult r = run_command({prog.string(), "--version"}, ro);
  if (r.status.timed_out) {
    out.timed_out = true;
    return out;
  }
  if (!r.ok()) {
    out.error = r.spawn_error.empty() ? r.status.describe() + "\n" + r.output : r.spawn_error;
    return out;
  }
  out.text = r.output.substr(0, 2048);
  if (cache) cache->store_toolchain_version(id, *out.text);
  return out;
}

// ---------------------------------------------------------------- solbench's headers

std::vector<fs::path> kernel_include_candidates(const fs::path& configured) {
  std::vector<fs::path> candidates;
  if (!configured.empty()) candidates.push_back(configured);
  if (const fs::path& env = settings().include_dir; !env.empty()) candidates.push_back(env);
#ifdef SOLBENCH_SOURCE_INCLUDE_DIR
  candidates.emplace_back(SOLBENCH_SOURCE_INCLUDE_DIR);
#endif
  candidates.push_back(self_exe().parent_path().parent_path() / "include");
  return candidates;
}

// ---------------------------------------------------------------- torch

namespace {

// torch_settings' query (TorchSettings says what each field is).
constexpr const char* kTorchQuery = R"PY(
import json, os, sysconfig, torch
import torch.utils.cpp_extension as ce
inc = ce.include_paths()
pb = ""
if not any(os.path.isfile(os.path.join(p, "pybind11", "pybind11.h")) for p in inc):
    try:
        import pybind11
        pb = pybind11.get_include()
    except Exception:
        pb = ""
print(json.dumps({
  "include_paths": inc,
  "library_paths": ce.library_paths(),
  "python_include": sysconfig.get_paths()["include"],
  "pybind11_include": pb,
  "pybind11_abi": {n: getattr(torch._C, "_PYBIND11_" + n, None) or ""
                   for n in ("COMPILER_TYPE", "STDLIB", "BUILD_ABI")},
  "version": torch.__version__,
  "cuda": torch.version.cuda or "",
  "cxx11_abi": int(torch._C._GLIBCXX_USE_CXX11_ABI),
}))
)PY";

// Where `python -c` finds torch: "<torch/__init__.py> <mtime_ns of torch/version.py>"
// (the torch query's memo key); torch/version.py is watched (python_probe.h).
constexpr const char* kTorchWhere = R"PY(import importlib.util as u, os
s = u.find_spec('torch')
o = s.origin if s else ''
v = os.path.join(os.path.dirname(o), 'version.py') if o else ''
print(o, os.stat(v).st_mtime_ns if v and os.path.exists(v) else 0)
if v and os.path.exists(v):
    print('solbench-watch', os.stat(v).st_mtime_ns, v)
)PY";

// The query's answer (ts.text) into its fields; false (ts.error set) when malformed.
bool parse_torch_settings(TorchSettings& ts) {
  try {
    json j = json::parse(ts.text);
    ts.include_paths = j.at("include_paths").get<std::vector<std::string>>();
    ts.library_paths = j.at("library_paths").get<std::vector<std::string>>();
    ts.python_include = j.at("python_include").get<std::string>();
    ts.pybind11_include = j.value("pybind11_include", "");
    for (const char* n : {"COMPILER_TYPE", "STDLIB", "BUILD_ABI"}) {
      const std::string v = j.at("pybind11_abi").value(n, "");
      if (!v.empty()) ts.pybind11_abi.emplace_back(n, v);
    }
    ts.version = j.at("version").get<std::string>();
    ts.cuda_version = j.at("cuda").get<std::string>();
    ts.cxx11_abi = j.at("cxx11_abi").get<int>();
    return true;
  } catch (const std::exception& e) {
    ts.error = std::string("torch binding: unexpected torch query output: ") + e.what() + "\n" + ts.text;
    return false;
  }
}

// Runs the query (the expensive part: it imports torch) into ts.text.
bool query_torch(const fs::path& py, Deadline deadline, TorchSettings& ts) {
  ts.note = "querying torch's build settings through " + py.string() + "\n";
  RunOptions ro;
  ro.timeout = time_left(deadline);
  CommandResult q = run_command({py.string(), "-c", kTorchQuery}, ro);
  if (q.status.timed_out) {
    ts.timed_out = true;
    ts.error = "torch binding: torch query timed out";
    return false;
  }
  if (!q.ok()) {
    ts.error = "torch binding: cannot query torch.utils.cpp_extension:\n" + q.spawn_error + q.output;
    return false;
  }
  // The JSON is the last line (torch may print warnings first).
  std::string out = q.output;
  while (!out.empty() && out.back() == '\n') out.pop_back();
  ts.text = out.substr(out.rfind('\n') == std::string::npos ? 0 : out.rfind('\n') + 1);
  return true;
}

}  // namespace

TorchSettings torch_settings(const fs::path& py, const BuildCache* cache, Deadline deadline) {
  TorchSettings ts;
  // Cheap probe (no torch import) to key the memo of the expensive query; itself
  // memoised while nothing it depends on changed (python_probe.h).
  const PythonProbe where = remembered_python_probe(cache, py, "torch-where", kTorchWhere, time_left(deadline));
  if (where.timed_out) {
    ts.timed_out = true;
    ts.error = "torch binding: python probe timed out";
    return ts;
  }
  ts.origin = where.output.substr(0, where.output.find('\n'));
  if (!where.ok || ts.origin.empty() || ts.origin[0] == ' ') {
    ts.error = "torch binding needs torch's headers, but " + py.string() +
               " has no torch module (use binding \"native\" for a build without torch)\n" + where.output;
    return ts;
  }
  const std::string memo_id = "torch-query/2|" + py.string() + "|" + ts.origin;
  std::optional<std::string> remembered;
  if (cache) remembered = cache->toolchain_version(memo_id);
  if (remembered) {
    ts.text = *remembered;
  } else {
    if (!query_torch(py, deadline, ts)) return ts;
    if (cache) cache->store_toolchain_version(memo_id, ts.text);
  }
  parse_torch_settings(ts);
  return ts;
}

// ---------------------------------------------------------------- worker sandbox

namespace {

// Where pip-installed runtimes keep the programs they start (folders, or single
// files), printed as a JSON list without importing them (find_spec only reads the
// import system's metadata).
constexpr const char* kProbe = R"(import importlib.util as u, json, os
out = []
for pkg, sub in (("triton", ("backends", "nvidia", "bin")), ("nvidia.cuda_nvcc", ("bin",))):
    try:
        s = u.find_spec(pkg)
    except Exception:
        s = None
    for d in (s.submodule_search_locations or []) if s else []:
        out.append(os.path.join(d, *sub))
# torch ships its own PTX tools (Inductor points TRITON_PTXAS_PATH at them); only
# those, not the rest of torch/bin (torch_shm_manager, protoc).
s = u.find_spec("torch")
for d in (s.submodule_search_locations or []) if s else []:
    for tool in ("ptxas", "cuobjdump", "nvdisasm"):
        out.append(os.path.join(d, "bin", tool))
print(json.dumps(out))
)";

void add_existing(std::set<std::string>& out, const fs::path& p) {
  std::error_code ec;
  fs::path real = fs::canonical(p, ec);
  if (!ec) out.insert(real.string());
}

bool is_elf(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  char magic[4] = {};
  return in.read(magic, 4) && magic[0] == 0x7f && magic[1] == 'E' && magic[2] == 'L' &&
         magic[3] == 'F';
}

// Remembered in `cache` (may be null) while the interpreter's import path is
// unchanged (python_probe.h): 25-100 ms of every evaluation otherwise.
std::vector<std::string> runtime_program_dirs(const std::string& python, const BuildCache* cache) {
  std::vector<std::string> dirs;
  const auto found = find_program(python);
  if (!found) return dirs;
  const PythonProbe r = remembered_python_probe(cache, *found, "runtime-programs", kProbe,
                                                std::chrono::seconds(30));
  if (!r.ok) return dirs;
  const std::string& text = r.output;
  const size_t line = text.rfind('[');
  if (line == std::string::npos) return dirs;
  json j = json::parse(text.substr(line), nullptr, false);
  if (j.is_array())
    for (const auto& d : j)
      if (d.is_string()) dirs.push_back(d.get<std::string>());
  return dirs;
}

}  // namespace

std::vector<std::string> wrapper_command(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::string text(4096, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  if (text.rfind("#!", 0) != 0) return {};
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    // Shell words of `exec PROGRAM ARG... "$@"`: plain, '...' or "..." (no escapes).
    // Anything the shell would expand ($VAR, `...`) cannot be known here: not a
    // wrapper this reading can see through.
    std::vector<std::string> words;
    bool ok = true;
    size_t i = 0;
    while (ok && i < line.size()) {
      while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
      if (i >= line.size() || line[i] == '#') break;
      std::string w;
      while (i < line.size() && line[i] != ' ' && line[i] != '\t') {
        const char c = line[i];
        if (c == '\'' || c == '"') {
          const size_t close = line.find(c, i + 1);
          if (close == std::string::npos) { ok = false; break; }
          w += line.substr(i + 1, close - i - 1);
          i = close + 1;
        } else {
          w += c;
          ++i;
        }
      }
      if (w == "$@" || w == "$*") break;
      if (w.find('$') != std::string::npos || w.find('`') != std::string::npos) ok = false;
      words.push_back(w);
    }
    if (!ok || words.size() < 2 || words[0] != "exec") continue;
    words.erase(words.begin());
    if (words[0].front() == '/' && is_elf(words[0])) return words;
  }
  return {};
}

std::string wrapper_target(const fs::path& path) {
  const auto cmd = wrapper_command(path);
  return cmd.empty() ? "" : cmd.front();
}

namespace {

// solbench-ccwrap (ccwrap_main.cc): $SOLBENCH_CCWRAP, else beside this executable.
fs::path ccwrap_program() {
  if (const fs::path& env = settings().ccwrap; !env.empty()) return env;
  std::error_code ec;
  const fs::path p = fs::read_symlink("/proc/self/exe", ec).parent_path() / "solbench-ccwrap";
  return !ec && fs::exists(p, ec) ? p : fs::path();
}

// A program that runs `cmd` (a wrapper's program and fixed arguments) with the
// arguments it is given: the program itself when there are no fixed arguments,
// else a link to solbench-ccwrap with its `.args` beside it, under
// <cache>/wrappers/<content key>/ (written here, read-only to workers). Empty when
// solbench-ccwrap is missing.
fs::path program_for(const std::string& name, const std::vector<std::string>& cmd) {
  if (cmd.size() == 1) return cmd.front();
  const fs::path shim = ccwrap_program();
  if (shim.empty()) return {};
  std::string text;
  for (const auto& w : cmd) text += w + "\n";
  const fs::path dir = default_build_cache_dir().parent_path() / "wrappers" / sha256_hex(text).substr(0, 16);
  const fs::path link = dir / fs::path(name).filename();
  std::error_code ec;
  fs::create_directories(dir, ec);
  const fs::path args = fs::path(link.string() + ".args");
  const fs::path tmp = fs::path(args.string() + ".tmp" + std::to_string(::getpid()));
  { std::ofstream(tmp) << text; }
  fs::rename(tmp, args, ec);
  if (ec) return {};
  const fs::path target = fs::canonical(shim, ec);
  if (fs::read_symlink(link, ec) != target) {
    fs::remove(link, ec);
    fs::create_symlink(target, link, ec);
  }
  return fs::exists(link, ec) && fs::exists(args, ec) ? link : fs::path();
}

// A program, or the one it hands over to when it is a wrapper script.
void add_program(std::set<std::string>& out, const fs::path& p) {
  const std::string real = wrapper_target(p);
  add_existing(out, real.empty() ? p : fs::path(real));
}

// The C compiler chain: the drivers, the assembler and the linker (Triton builds
// its launcher with cc; Inductor's C++ with g++), added to `out`. CC and CXX from
// the environment come first: when one names a wrapper script, the runtimes must
// be pointed at what it runs (the script itself needs a shell, which the sandbox
// refuses), through result.env; when it names a program, it is left alone.
// Returns each driver as the command that runs it (a wrapper's fixed arguments
// included).
std::set<std::vector<std::string>> add_compiler_drivers(std::set<std::string>& out, Toolchains& result) {
  // Each name with the variable a driver of that name sets (none: not a driver).
  std::vector<std::pair<std::string, const char*>> names;
  std::set<std::string> fixed;  // CC/CXX already decided
  for (const char* var : {"CC", "CXX"})
    if (const std::string v = compiler_setting(settings(), var); !v.empty()) {
      names.emplace_back(v, var);
      if (auto p = find_program(v); p && wrapper_target(*p).empty()) fixed.insert(var);
    }
  for (const auto& [n, var] : std::initializer_list<std::pair<const char*, const char*>>{
           {"cc", "CC"}, {"gcc", "CC"}, {"c++", "CXX"}, {"g++", "CXX"},
           {"as", nullptr}, {"ld", nullptr}, {"ld.bfd", nullptr}, {"ld.gold", nullptr}})
    names.emplace_back(n, var);
  std::set<std::vector<std::string>> drivers;
  for (const auto& [n, var] : names)
    if (auto p = find_program(n)) {
      const bool driver = var != nullptr;
      const std::vector<std::string> cmd = wrapper_command(*p);
      if (cmd.empty()) {
        add_existing(out, *p);
        if (driver) drivers.insert({fs::weakly_canonical(*p).string()});
        continue;
      }
      // A wrapper script: list what it runs, and point the runtimes at a program
      // that runs it with the script's fixed arguments (program_for).
      add_existing(out, cmd.front());
      if (!driver) continue;
      drivers.insert(cmd);
      if (fixed.count(var) || std::any_of(result.env.begin(), result.env.end(),
                                          [&](const auto& kv) { return kv.first == var; }))
        continue;
      const fs::path prog = program_for(var == std::string("CXX") ? "c++" : "cc", cmd);
      if (prog.empty()) continue;
      add_existing(out, prog);  // the link resolves to solbench-ccwrap
      result.env.emplace_back(var, prog.string());
    }
  return drivers;
}

// What `DRIVER -print-prog-name=PROG` answers ("" when it fails), remembered in the
// build cache under the driver's files (path, size, mtime: file_identity) and the
// variables gcc looks in for its programs: otherwise six compiler runs, 30-100 ms,
// on the way to every evaluation's first worker (its sandbox plan lists them).
std::string driver_program(const BuildCache* cache, const std::vector<std::string>& drv,
                           const char* prog) {
  std::string id = std::string("driver-program/1|") + prog;
  for (const auto& part : drv) id += "|" + file_identity(part);
  for (const char* var : {"GCC_EXEC_PREFIX", "COMPILER_PATH", "PATH"}) {
    const char* v = std::getenv(var);
    id += std::string("|") + var + "=" + (v ? v : "");
  }
  if (cache)
    if (const std::optional<std::string> hit = cache->toolchain_version(id)) return *hit;
  RunOptions ro;
  ro.timeout = std::chrono::seconds(10);
  std::vector<std::string> probe = drv;
  probe.push_back(std::string("-print-prog-name=") + prog);
  CommandResult r = run_command(probe, ro);
  std::string path = r.ok() ? r.output.substr(0, r.output.find('\n')) : "";
  if (cache && r.ok()) cache->store_toolchain_version(id, path);
  return path;
}

// The drivers' internal programs. A compiler installed elsewhere (e.g. /opt/gcc)
// keeps them beside itself: ask each driver where cc1, the assembler and the
// linker are.
void add_driver_programs(const std::set<std::vector<std::string>>& drivers, const BuildCache* cache,
                         std::set<std::string>& out) {
  for (const char* d : {"/usr/lib/gcc", "/usr/libexec/gcc"}) add_existing(out, d);
  for (const auto& drv : drivers)
    for (const char* prog : {"cc1", "as", "ld"}) {
      const std::string path = driver_program(cache, drv, prog);
      if (path.find('/') == std::string::npos) {
        if (auto p = find_program(prog)) add_program(out, *p);
        continue;
      }
      // cc1's folder also holds cc1plus, collect2, lto-wrapper and lto1.
      if (prog == std::string("cc1")) add_existing(out, fs::path(path).parent_path());
      else add_program(out, path);
    }
}

// ldconfig, the ELF interpreter, the CUDA toolkit's PTX tools.
void add_system_programs(std::set<std::string>& out) {
  // Library lookups (ctypes.util.find_library, Triton without TRITON_LIBCUDA_PATH).
  for (const char* p : {"/sbin/ldconfig", "/usr/sbin/ldconfig"}) add_existing(out, p);
  // The ELF interpreter is executed too (the kernel opens it like the program).
  for (const char* p : {"/lib64/ld-linux-x86-64.so.2", "/lib/ld-linux-aarch64.so.1"})
    add_existing(out, p);
  // PTX assembler and friends: the CUDA toolkit's and the runtimes' own copies.
  // (The toolkits the runtimes look in, $CUDA_HOME and /usr/local/cuda: not
  // find_nvcc's search, which serves the build.)
  std::vector<fs::path> cuda_bins;
  const Settings& env = settings();
  if (!env.cuda_home.empty()) cuda_bins.push_back(env.cuda_home / "bin");
  cuda_bins.emplace_back("/usr/local/cuda/bin");
  for (const auto& bin : cuda_bins) {
    // nvcc too (Inductor runs it), with what it runs in turn; not the whole bin
    // folder, which also holds profilers and debuggers.
    for (const char* tool : {"ptxas", "cuobjdump", "nvdisasm", "nvlink", "fatbinary", "nvcc",
                             "cudafe++", "bin2c", "nvprune"})
      add_existing(out, bin / tool);
    add_existing(out, bin.parent_path() / "nvvm" / "bin");  // cicc
  }
  if (!env.triton_ptxas_path.empty()) add_existing(out, env.triton_ptxas_path);
}

}  // namespace

Toolchains find_toolchains(const std::string& python) {
  static std::mutex mu;
  static std::map<std::string, Toolchains> memo;
  const std::string py = configured_python(python);
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = memo.find(py); it != memo.end()) return it->second;

  // The probes' answers are remembered in the build cache (none where it cannot open).
  std::optional<BuildCache> cache;
  try {
    cache.emplace();
  } catch (const std::exception&) {
  }
  const BuildCache* remembered = cache ? &*cache : nullptr;
  Toolchains result;
  std::set<std::string> out;
  const auto drivers = add_compiler_drivers(out, result);
  add_driver_programs(drivers, remembered, out);
  add_system_programs(out);
  for (const auto& d : runtime_program_dirs(py, remembered)) add_existing(out, d);

  result.executables.assign(out.begin(), out.end());
  memo[py] = result;
  return result;
}

}  // namespace solbench::harness
