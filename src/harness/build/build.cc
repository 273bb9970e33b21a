#include "harness/build/build.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "harness/build/build_cache.h"
#include "harness/build/python_probe.h"
#include "harness/process.h"
#include "harness/sha256.h"
#include "harness/staging.h"

#define SB_NO_ABI_SYMBOL
#include "solbench/kernel.h"

namespace solbench::harness {
namespace fs = std::filesystem;

namespace {

// Bumped when the way artifacts are built changes (flags, layout), so old cache
// entries are not reused.
constexpr const char* kBuildRecipe = "solbench-build/2";

enum class SrcKind { Cxx, C, Cuda, Other };

SrcKind kind_of(const std::string& path) {
  const std::string ext = fs::path(path).extension().string();
  if (ext == ".cc" || ext == ".cpp" || ext == ".cxx" || ext == ".C" || ext == ".c++") return SrcKind::Cxx;
  if (ext == ".c") return SrcKind::C;
  if (ext == ".cu") return SrcKind::Cuda;
  return SrcKind::Other;  // headers (.h, .cuh, .hpp, .inl) and anything else: written, not compiled
}

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    size_t c = s.find(',', start);
    out.push_back(s.substr(start, c == std::string::npos ? std::string::npos : c - start));
    if (c == std::string::npos) break;
    start = c + 1;
  }
  return out;
}

std::string quote_arg(const std::string& a) {
  if (!a.empty() && a.find_first_of(" \t\n'\"\\$`*?;&|<>()") == std::string::npos) return a;
  std::string q = "'";
  for (char c : a) {
    if (c == '\'') q += "'\\''";
    else q += c;
  }
  return q + "'";
}

std::string command_line(const std::vector<std::string>& argv) {
  std::string s;
  for (const auto& a : argv) {
    if (!s.empty()) s += ' ';
    s += quote_arg(a);
  }
  return s;
}

bool has_prefix_flag(const std::vector<std::string>& flags, std::initializer_list<const char*> prefixes) {
  for (const auto& f : flags)
    for (const char* p : prefixes)
      if (starts_with(f, p)) return true;
  return false;
}

// "120", "1.5": seconds for messages.
std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", s);
  return buf;
}

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Linker pieces (from -Wl, or -Xlinker) that write files or load plugins.
std::optional<std::string> unsafe_linker_piece(const std::string& p) {
  if (p == "-o" || starts_with(p, "--output") || starts_with(p, "-Map") || starts_with(p, "--Map") ||
      starts_with(p, "-plugin") || starts_with(p, "--plugin") || starts_with(p, "--dependency-file") ||
      starts_with(p, "--write-") || starts_with(p, "-fplugin"))
    return "linker option " + p + " writes files or loads a plugin";
  return std::nullopt;
}

// ---------------------------------------------------------------- the build

struct Builder {
  const Solution& sol;
  const BuildOptions& opts;
  BuildResult result;
  Deadline deadline;
  std::optional<BuildCache> cache;
  std::string log;  // appended to, bounded at the end

  Builder(const Solution& s, const BuildOptions& o)
      : sol(s), opts(o), deadline(deadline_after(o.timeout)) {
    if (o.use_cache) cache.emplace(o.cache_dir.empty() ? default_build_cache_dir() : o.cache_dir);
  }

  BuildResult& fail(BuildStatus st, const std::string& msg) {
    result.status = st;
    log += msg;
    if (!msg.empty() && msg.back() != '\n') log += '\n';
    return result;
  }

  double left_seconds() const {
    return std::max(0.0, std::chrono::duration<double>(deadline - Clock::now()).count());
  }

  // Runs one tool under the build deadline; appends the command and its output
  // to the log. Returns false (with result.status set) on failure.
  bool run(const std::vector<std::string>& argv, const fs::path& cwd, const char* what) {
    log += "$ " + command_line(argv) + "\n";
    RunOptions ro;
    ro.cwd = cwd;
    ro.timeout = std::chrono::duration<double>(left_seconds());
    ro.log_limit_bytes = opts.log_limit_bytes;
    CommandResult r = run_command(argv, ro);
    log += r.output;
    if (!r.output.empty() && r.output.back() != '\n') log += '\n';
    if (!r.spawn_error.empty()) {
      fail(BuildStatus::CompileError, std::string(what) + ": " + r.spawn_error);
      return false;
    }
    if (r.status.timed_out) {
      fail(BuildStatus::Timeout,
           std::string(what) + " timed out: the build limit of " +
               seconds_text(opts.timeout.count()) + " s passed; the compiler's process group was killed");
      return false;
    }
    if (!r.status.success()) {
      fail(BuildStatus::CompileError, std::string(what) + " failed (" + r.status.describe() + ")");
      return false;
    }
    return true;
  }

  // `prog --version` (memoised in the cache by path, size and mtime).
  std::optional<std::string> version_of(const fs::path& prog) {
    const std::string id = file_identity(prog);
    if (cache) {
      if (auto v = cache->toolchain_version(id)) return v;
    }
    RunOptions ro;
    ro.timeout = std::chrono::duration<double>(left_seconds());
    CommandResult r = run_command({prog.string(), "--version"}, ro);
    if (r.status.timed_out) {
      fail(BuildStatus::Timeout, prog.string() + " --version timed out (build limit " +
                                     seconds_text(opts.timeout.count()) + " s)");
      return std::nullopt;
    }
    if (!r.ok()) {
      fail(BuildStatus::CompileError,
           "cannot run " + prog.string() + " --version: " +
               (r.spawn_error.empty() ? r.status.describe() + "\n" + r.output : r.spawn_error));
      return std::nullopt;
    }
    std::string v = r.output.substr(0, 2048);
    if (cache) cache->store_toolchain_version(id, v);
    return v;
  }

  std::optional<fs::path> resolve(const std::string& configured, const char* env, const char* fallback) {
    std::string name = configured;
    if (name.empty()) {
      if (const char* e = std::getenv(env); e && *e) name = e;
      else name = fallback;
    }
    auto p = find_program(name);
    if (!p) {
      fail(BuildStatus::CompileError, std::string("compiler not found: ") + name);
      return std::nullopt;
    }
    std::error_code ec;
    fs::path abs = fs::absolute(*p, ec);
    return ec ? *p : abs;
  }

  std::optional<fs::path> find_nvcc() {
    if (!opts.nvcc.empty()) return find_program(opts.nvcc);
    if (const char* e = std::getenv("NVCC"); e && *e) return find_program(e);
    for (const char* env : {"CUDA_HOME", "CUDA_PATH"}) {
      if (const char* h = std::getenv(env); h && *h) {
        if (auto p = find_program((fs::path(h) / "bin" / "nvcc").string())) return p;
      }
    }
#ifdef SOLBENCH_CUDA_ROOT
    if (auto p = find_program((fs::path(SOLBENCH_CUDA_ROOT) / "bin" / "nvcc").string())) return p;
#endif
    if (auto p = find_program("/usr/local/cuda/bin/nvcc")) return p;
    return find_program("nvcc");
  }

  std::optional<fs::path> kernel_include_dir() {
    std::vector<fs::path> candidates;
    if (!opts.include_dir.empty()) candidates.push_back(opts.include_dir);
    if (const char* e = std::getenv("SOLBENCH_INCLUDE_DIR"); e && *e) candidates.emplace_back(e);
#ifdef SOLBENCH_SOURCE_INCLUDE_DIR
    candidates.emplace_back(SOLBENCH_SOURCE_INCLUDE_DIR);
#endif
    candidates.push_back(self_exe().parent_path().parent_path() / "include");
    for (const auto& c : candidates) {
      std::error_code ec;
      if (fs::is_regular_file(c / "solbench" / "kernel.h", ec)) return fs::absolute(c, ec);
    }
    std::string tried;
    for (const auto& c : candidates) tried += " " + c.string();
    fail(BuildStatus::CompileError, "cannot find solbench/kernel.h (tried:" + tried +
                                        "); set SOLBENCH_INCLUDE_DIR");
    return std::nullopt;
  }

  bool check_inputs() {
    if (sol.sources.empty()) {
      fail(BuildStatus::Rejected, "solution " + sol.name + " has no sources");
      return false;
    }
    for (const auto& s : sol.sources) {
      if (auto why = unsafe_source_path_reason(s.path)) {
        fail(BuildStatus::Rejected, "sources: path '" + s.path + "' refused: " + *why);
        return false;
      }
    }
    const auto& co = sol.spec.compile_options;
    auto check = [&](const std::vector<std::string>& flags, const char* field, bool nvcc) {
      for (const auto& f : flags) {
        if (auto why = unsafe_flag_reason(f, nvcc)) {
          fail(BuildStatus::Rejected,
               std::string("spec.compile_options.") + field + ": flag '" + f + "' refused: " + *why);
          return false;
        }
      }
      return true;
    };
    return check(co.cflags, "cflags", false) && check(co.cuda_cflags, "cuda_cflags", true) &&
           check(co.ld_flags, "ld_flags", false);
  }

  void hash_list(Sha256& h, const std::vector<std::string>& v) {
    h.field(std::to_string(v.size()));
    for (const auto& s : v) h.field(s);
  }

  // Everything that changes the artifact goes into the key.
  std::string compute_key(const std::vector<std::pair<std::string, std::string>>& toolchain,
                          const std::string& kernel_header, const std::string& extra) {
    Sha256 h;
    h.field(kBuildRecipe);
    h.field("abi=" + std::to_string(SB_ABI_VERSION));
    h.field(kernel_header);
    h.field(sol.spec.binding == Binding::Native ? "native" : "torch");
    std::vector<std::string> langs;
    for (auto l : sol.spec.languages) langs.emplace_back(language_name(l));
    hash_list(h, langs);
    hash_list(h, sol.spec.target_hardware);
    h.field(sol.spec.entry_point);
    hash_list(h, sol.spec.dependencies);
    hash_list(h, sol.spec.compile_options.cflags);
    hash_list(h, sol.spec.compile_options.cuda_cflags);
    hash_list(h, sol.spec.compile_options.ld_flags);
    h.field(opts.cuda_arch);
    hash_list(h, opts.extra_include_dirs);
    h.field(std::to_string(toolchain.size()));
    for (const auto& [path, version] : toolchain) h.field(path).field(version);
    h.field(extra);
    std::vector<const SourceFile*> srcs;
    for (const auto& s : sol.sources) srcs.push_back(&s);
    std::sort(srcs.begin(), srcs.end(), [](auto* a, auto* b) { return a->path < b->path; });
    h.field(std::to_string(srcs.size()));
    for (const auto* s : srcs) h.field(s->path).field(s->content);
    return h.hex_digest();
  }

  // Where the build happens: the cache's temp area, or a staging folder.
  fs::path make_work_dir() {
    if (cache) return cache->make_temp_dir();
    return StagingDir::create(opts.staging_base.empty() ? default_staging_base() : opts.staging_base,
                              "build-")
        .release();
  }

  // A fresh work folder with the sources written under src/ and an empty obj/;
  // nullopt (and why) when a source cannot be written there.
  std::optional<fs::path> stage_sources(const Solution& sol, std::string* why) {
    const fs::path work = make_work_dir();
    std::error_code ec;
    fs::create_directories(work / "src", ec);
    fs::create_directories(work / "obj", ec);
    if (auto err = write_sources(sol, work / "src")) {
      discard(work);
      *why = *err;
      return std::nullopt;
    }
    return work;
  }

  // A cache hit: fills the result from the entry, or evicts a broken entry.
  bool try_cache(const std::string& key, const std::string& artifact) {
    if (!cache) return false;
    auto dir = cache->lookup(key);
    if (!dir) return false;
    std::error_code ec;
    if (!fs::is_regular_file(*dir / artifact, ec)) {
      log += "build cache entry " + key + " has no " + artifact + ": evicted\n";
      cache->evict(key);
      return false;
    }
    result.cache_hit = true;
    result.status = BuildStatus::Ok;
    result.so_path = *dir / artifact;
    if (auto meta = cache->metadata(key); meta && meta->contains("seconds"))
      log += "build cache hit " + key + " (built in " + meta->at("seconds").dump() +
             " s; compiler skipped)\n";
    else
      log += "build cache hit " + key + " (compiler skipped)\n";
    return true;
  }

  // Publishes a successful build (cache) or leaves it for the caller.
  void finish_ok(const fs::path& work, const std::string& key, const std::string& artifact) {
    std::error_code ec;
    fs::remove_all(work / "obj", ec);
    fs::remove_all(work / "lnk", ec);  // the dependencies' link aliases
    result.status = BuildStatus::Ok;
    if (cache) {
      json meta = {{"key", key},
                   {"solution", sol.name},
                   {"artifact", artifact},
                   {"compiler_version", result.compiler_version},
                   {"seconds", std::chrono::duration<double>(opts.timeout).count() - left_seconds()},
                   {"log", log}};
      fs::path entry = cache->publish(key, work, meta);
      result.so_path = entry / artifact;
      if (opts.keep_staging) result.build_dir = entry;
    } else {
      result.so_path = work / artifact;
      result.build_dir = work;
    }
  }

  void discard(const fs::path& work) {
    if (opts.keep_staging) {
      result.build_dir = work;
      log += "build folder kept: " + work.string() + "\n";
    } else {
      remove_tree_quietly(work);
    }
  }

  void inspect_artifact() {
    try {
      ElfSymbols syms = read_elf_symbols(result.so_path);
      result.abi_symbol = std::binary_search(syms.exported.begin(), syms.exported.end(),
                                             std::string("sb_abi_version"));
      result.import_violations = check_imports(syms, ImportPolicy::defaults());
    } catch (const ElfError& e) {
      result.import_violations = {{"<elf>", "<elf>", e.what(), RuleAction::Deny}};
    }
  }

  // One compiler run of a build: a source (or the precompiled header).
  struct Step {
    std::string what;               // "compiling main.cpp"
    std::vector<std::string> argv;  // the whole command
    bool optional = false;          // its failure costs only itself (the PCH), never the build
    // Filled by run_steps():
    bool ok = false;
    std::string output;             // the command, then what it printed
    std::string failure;            // why it failed ("compiling x failed (exit 1)")
    BuildStatus status = BuildStatus::Ok;
  };
  // Runs the steps, up to `jobs` compilers at once, started in the given order; the
  // log gets each step's command and output in that order. After a required step
  // fails no other step is started (those running finish). False (result set, the
  // first failure's message last in the log) when a required step failed or the
  // build deadline passed (everything running is killed).
  bool run_steps(std::vector<Step>& steps, const fs::path& cwd);
  // Compiles each compilable source of the solution with `argv_for(kind, path)`
  // followed by `-o OBJ SOURCE` (the path relative to src/, the working folder, so
  // messages name the solution's own paths), in parallel. `extra` steps (optional
  // ones, e.g. the PCH) run beside them. The object paths, or nullopt (the folder
  // discarded, result set) when a compile fails.
  std::optional<std::vector<std::string>> compile_sources(
      const fs::path& work,
      const std::function<std::vector<std::string>(SrcKind, const std::string&)>& argv_for,
      std::vector<Step>* extra = nullptr);
  // Runs the link command; discards `work` when it fails.
  bool link(const std::vector<std::string>& argv, const fs::path& work);
  // Publishes the finished build; discards `work` when the cache refuses it.
  bool publish(const fs::path& work, const std::string& key, const std::string& artifact);
  // Resolves the solution's dependencies into `deps`; false (result set) when one is missing.
  bool dependencies(const std::optional<fs::path>& nvcc, const std::string& python,
                    ResolvedDependencies* deps);
  // Makes the link aliases of `deps` in work/lnk; the -L flag for it (empty: none).
  std::vector<std::string> link_alias_flags(const ResolvedDependencies& deps, const fs::path& work);
  int jobs() const { return opts.jobs > 0 ? opts.jobs : build_jobs(); }

  BuildResult native();
  BuildResult torch();
};

std::vector<std::string> include_args(const std::vector<fs::path>& dirs, const char* flag = "-I") {
  std::vector<std::string> a;
  for (const auto& d : dirs) {
    a.push_back(flag);
    a.push_back(d.string());
  }
  return a;
}

void append(std::vector<std::string>& a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
}

bool is_cuda_language(Language l) {
  return l == Language::CudaCpp || l == Language::Cutlass || l == Language::Cudnn ||
         l == Language::Cublas;
}

bool has_cuda_language(const Solution& sol) {
  return std::any_of(sol.spec.languages.begin(), sol.spec.languages.end(), is_cuda_language);
}

fs::path cuda_lib_dir_of_root(const fs::path& root) {
  std::error_code ec;
  for (const char* sub : {"lib64", "lib", "targets/x86_64-linux/lib", "targets/sbsa-linux/lib"})
    if (fs::exists(root / sub / "libcudart.so", ec)) return root / sub;
  return root / "lib64";
}

fs::path cuda_root_of(const fs::path& nvcc) { return nvcc.parent_path().parent_path(); }

// The CUDA runtime, the dependencies' libraries, then the solution's own link flags.
// The stub libcuda.so only satisfies the linker; the driver's is used at run time.
void append_cuda_link(std::vector<std::string>& link, const fs::path& nvcc,
                      const ResolvedDependencies& deps, const Solution& sol) {
  const fs::path lib = cuda_lib_dir_of_root(cuda_root_of(nvcc));
  append(link, {"-L" + lib.string(), "-L" + (lib / "stubs").string(), "-Wl,-rpath," + lib.string(),
                "-lcudart"});
  append(link, deps.link_flags);
  append(link, sol.spec.compile_options.ld_flags);
}

// A CPU-only link: the dependencies' libraries and the solution's flags, less the
// public default -lcuda.
void append_host_link_flags(std::vector<std::string>& link, const ResolvedDependencies& deps,
                            const Solution& sol) {
  append(link, deps.link_flags);
  for (const auto& f : sol.spec.compile_options.ld_flags)
    if (f != "-lcuda") link.push_back(f);
}

// ---------------------------------------------------------------- dependencies

std::string dep_name(std::string d) {
  d = lower(d);
  while (!d.empty() && std::isspace(static_cast<unsigned char>(d.back()))) d.pop_back();
  while (!d.empty() && std::isspace(static_cast<unsigned char>(d.front()))) d.erase(0, 1);
  for (auto& c : d)
    if (c == '-') c = '_';
  return d;
}

enum class Dep { Cublas, Cudnn, Cutlass, None };

Dep classify_dependency(const std::string& raw) {
  const std::string d = dep_name(raw);
  if (d == "cublas" || d == "cublaslt" || starts_with(d, "nvidia_cublas")) return Dep::Cublas;
  if (d == "cudnn" || starts_with(d, "cudnn_frontend") || starts_with(d, "nvidia_cudnn")) return Dep::Cudnn;
  if (d == "cutlass" || d == "cute" || d == "cutlass_library" || starts_with(d, "nvidia_cutlass"))
    return Dep::Cutlass;
  return Dep::None;
}

bool is_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}
bool is_dir(const fs::path& p) {
  std::error_code ec;
  return fs::is_directory(p, ec);
}

// Folders the compiler and linker search anyway: never added with -isystem (that
// would reorder the system headers and break #include_next) nor as -L.
bool is_default_include_dir(const fs::path& d) {
  const std::string s = d.lexically_normal().string();
  return s == "/usr/include" || s == "/usr/include/" || starts_with(s, "/usr/include/x86_64-linux-gnu") ||
         starts_with(s, "/usr/include/aarch64-linux-gnu") || s == "/usr/local/include";
}
bool is_default_lib_dir(const fs::path& d) {
  const std::string s = d.lexically_normal().string();
  return s == "/usr/lib" || s == "/lib" || starts_with(s, "/usr/lib/x86_64-linux-gnu") ||
         starts_with(s, "/usr/lib/aarch64-linux-gnu") || starts_with(s, "/lib/x86_64-linux-gnu");
}

// The include folder of a CUTLASS tree at `root`: root/include (a checkout, or the
// nvidia-cutlass wheel's cutlass_library/source) or root itself (an include folder).
std::optional<fs::path> cutlass_include_in(const fs::path& root) {
  if (is_file(root / "include" / "cutlass" / "cutlass.h")) return root / "include";
  if (is_file(root / "cutlass" / "cutlass.h")) return root;
  return std::nullopt;
}

// Python packages that may ship headers: {"nvidia.cudnn": [folders], ...}. No
// package is imported (importlib.util.find_spec only).
constexpr const char* kPackageProbe = R"PY(
import importlib.util as u, json, os
def loc(n):
    try:
        s = u.find_spec(n)
    except Exception:
        return []
    if s is None:
        return []
    if s.submodule_search_locations:
        return [str(p) for p in s.submodule_search_locations]
    return [os.path.dirname(s.origin)] if s.origin else []
print(json.dumps({n: loc(n) for n in ("nvidia.cudnn", "cutlass_library", "cutlass")}))
)PY";

std::map<std::string, std::vector<std::string>> probe_packages(const std::string& python) {
  std::map<std::string, std::vector<std::string>> found;
  if (python.empty()) return found;
  RunOptions ro;
  ro.timeout = std::chrono::seconds(60);
  CommandResult r = run_command({python, "-c", kPackageProbe}, ro);
  if (!r.ok()) return found;
  std::string out = r.output;
  while (!out.empty() && out.back() == '\n') out.pop_back();
  const size_t nl = out.rfind('\n');
  try {
    json j = json::parse(out.substr(nl == std::string::npos ? 0 : nl + 1));
    for (auto it = j.begin(); it != j.end(); ++it)
      found[it.key()] = it.value().get<std::vector<std::string>>();
  } catch (const std::exception&) {
  }
  return found;
}

}  // namespace

std::string ResolvedDependencies::key() const {
  std::string k;
  for (const auto& r : resolved) k += "dep=" + r + "\n";
  for (const auto& d : include_dirs) k += "inc=" + d.string() + "\n";
  for (const auto& f : link_flags) k += "ld=" + f + "\n";
  for (const auto& [n, t] : link_aliases) k += "alias=" + n + ">" + t.string() + "\n";
  return k;
}

ResolvedDependencies resolve_dependencies(const Solution& sol, const fs::path& cuda_root,
                                          const std::string& python) {
  ResolvedDependencies d;
  bool cublas = sol.spec.has_language(Language::Cublas);
  bool cudnn = sol.spec.has_language(Language::Cudnn);
  bool cutlass = sol.spec.has_language(Language::Cutlass);
  for (const auto& name : sol.spec.dependencies) {
    switch (classify_dependency(name)) {
      case Dep::Cublas: cublas = true; break;
      case Dep::Cudnn: cudnn = true; break;
      case Dep::Cutlass: cutlass = true; break;
      case Dep::None:
        d.notes += "dependency '" + name + "': nothing to add to a C++ build\n";
        break;
    }
  }
  std::map<std::string, std::vector<std::string>> packages;
  bool probed = false;
  auto package_dirs = [&](const std::string& name) -> const std::vector<std::string>& {
    if (!probed) {
      packages = probe_packages(python);
      probed = true;
    }
    return packages[name];
  };

  if (cublas) {
    if (cuda_root.empty()) {
      d.error = "dependency cublas: the CUDA toolkit was not found (nvcc; set CUDA_HOME or NVCC)";
      return d;
    }
    const fs::path lib = cuda_lib_dir_of_root(cuda_root);
    append(d.link_flags, {"-L" + lib.string(), "-Wl,-rpath," + lib.string(), "-lcublas", "-lcublasLt"});
    d.notes += "cublas: " + lib.string() + " (the CUDA toolkit)\n";
    d.resolved.push_back("cublas");
  }

  if (cudnn) {
    // (root, how it was found); the header is root/include/cudnn.h.
    std::vector<std::pair<fs::path, std::string>> roots;
    for (const char* env : {"CUDNN_HOME", "CUDNN_PATH"})
      if (const char* e = std::getenv(env); e && *e) roots.emplace_back(e, std::string("$") + env);
    for (const auto& p : package_dirs("nvidia.cudnn"))
      roots.emplace_back(p, "the nvidia-cudnn wheel of " + python);
    if (!cuda_root.empty()) roots.emplace_back(cuda_root, "the CUDA toolkit");
    roots.emplace_back("/usr", "the system");
    std::string tried;
    bool found = false;
    for (const auto& [root, how] : roots) {
      std::vector<fs::path> inc_dirs = {root / "include"};
      if (root == "/usr")
        for (const char* t : {"include/x86_64-linux-gnu", "include/aarch64-linux-gnu"})
          inc_dirs.push_back(root / t);
      std::optional<fs::path> inc;
      for (const auto& i : inc_dirs) {
        tried += " " + i.string();
        if (is_file(i / "cudnn.h")) {
          inc = i;
          break;
        }
      }
      if (!inc) continue;
      found = true;
      if (!is_default_include_dir(*inc)) d.include_dirs.push_back(*inc);
      // The library: libcudnn.so, else a versioned libcudnn.so.N (the wheel's), aliased.
      std::vector<fs::path> lib_dirs = {root / "lib", root / "lib64"};
      if (root == "/usr")
        lib_dirs = {"/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib"};
      else if (root == cuda_root)
        lib_dirs.insert(lib_dirs.begin(), cuda_lib_dir_of_root(cuda_root));
      std::string where = "no libcudnn beside it: the linker's default paths";
      for (const auto& ld : lib_dirs) {
        if (!is_dir(ld)) continue;
        fs::path versioned;
        if (!is_file(ld / "libcudnn.so")) {
          std::error_code ec;
          for (const auto& e : fs::directory_iterator(ld, ec)) {
            const std::string n = e.path().filename().string();
            if (starts_with(n, "libcudnn.so.") && (versioned.empty() || n < versioned.filename().string()))
              versioned = e.path();
          }
          if (versioned.empty()) continue;
          d.link_aliases.emplace_back("libcudnn.so", versioned);
        }
        if (!is_default_lib_dir(ld)) append(d.link_flags, {"-L" + ld.string(), "-Wl,-rpath," + ld.string()});
        where = versioned.empty() ? ld.string() : versioned.string();
        break;
      }
      d.link_flags.push_back("-lcudnn");
      d.notes += "cudnn: " + (*inc / "cudnn.h").string() + ", library " + where + " (" + how + ")\n";
      break;
    }
    if (!found) {
      d.error = "dependency cudnn: cudnn.h not found (looked in:" + tried +
                "). Install the cuDNN wheel for " + (python.empty() ? "python" : python) +
                " (pip install nvidia-cudnn-cu13, or -cu12 for a CUDA 12 toolkit) or set CUDNN_HOME "
                "to a folder with include/cudnn.h and lib/";
      return d;
    }
    d.resolved.push_back("cudnn");
  }

  if (cutlass) {
    std::string tried;
    bool found = false;
    auto take = [&](const fs::path& root, const std::string& how) {
      auto inc = cutlass_include_in(root);
      tried += " " + root.string();
      if (!inc) return false;
      d.include_dirs.push_back(*inc);
      // A checkout's (and the wheel's) utilities: cutlass/util/*.h.
      const fs::path util = inc->parent_path() / "tools" / "util" / "include";
      if (*inc == root / "include" && is_dir(util)) d.include_dirs.push_back(util);
      d.notes += "cutlass: " + inc->string() + " (" + how + ")\n";
      found = true;
      return true;
    };
    if (const char* e = std::getenv("SOLBENCH_CUTLASS_DIR"); e && *e) {
      if (!take(e, "$SOLBENCH_CUTLASS_DIR")) {
        d.error = std::string("dependency cutlass: SOLBENCH_CUTLASS_DIR=") + e +
                  " holds neither include/cutlass/cutlass.h nor cutlass/cutlass.h (set it to a "
                  "CUTLASS checkout, the folder holding include/cutlass/cutlass.h)";
        return d;
      }
    }
    for (const char* env : {"CUTLASS_DIR", "CUTLASS_PATH", "CUTLASS_HOME"}) {
      if (found) break;
      if (const char* e = std::getenv(env); e && *e) take(e, std::string("$") + env);
    }
    for (const char* pkg : {"cutlass_library", "cutlass"}) {
      if (found) break;
      for (const auto& p : package_dirs(pkg)) {
        const fs::path dir(p);
        const std::string how = std::string("the Python package ") + pkg + " of " + python;
        if (take(dir / "source", how) || take(dir, how) ||
            take(dir.parent_path() / "cutlass_library" / "source", how))
          break;
      }
    }
    if (!found) take("/usr/local/cutlass", "/usr/local/cutlass");
    if (!found) {
      d.error = "dependency cutlass: the CUTLASS headers (cutlass/cutlass.h) were not found (looked in:" +
                tried +
                "). Set SOLBENCH_CUTLASS_DIR to a CUTLASS checkout (the folder holding "
                "include/cutlass/cutlass.h), or install the nvidia-cutlass Python package for " +
                (python.empty() ? std::string("python") : python);
      return d;
    }
    d.resolved.push_back("cutlass");
  }
  std::sort(d.resolved.begin(), d.resolved.end());
  return d;
}

int build_jobs() {
  if (const char* e = std::getenv("SOLBENCH_BUILD_JOBS"); e && *e) {
    char* end = nullptr;
    const long v = std::strtol(e, &end, 10);
    if (end && *end == '\0' && v > 0) return static_cast<int>(std::min<long>(v, 1024));
  }
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) == 0) {
    const int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  const unsigned n = std::thread::hardware_concurrency();
  return n > 0 ? static_cast<int>(n) : 1;
}

std::string first_error_line(const std::string& log) {
  std::string last;
  size_t pos = 0;
  while (pos < log.size()) {
    size_t e = log.find('\n', pos);
    if (e == std::string::npos) e = log.size();
    std::string line = log.substr(pos, e - pos);
    pos = e + 1;
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos || starts_with(line, "$ ")) continue;
    last = line;
    const std::string l = lower(line);
    if (l.find("error:") != std::string::npos || l.find("error :") != std::string::npos ||
        l.find("undefined reference") != std::string::npos ||
        l.find("undefined symbol") != std::string::npos)
      return line;
  }
  return last;
}

namespace {

// Whether a source's first directive (after comments and blank lines) is
// #include <torch/extension.h>: then a precompiled header of it changes nothing.
bool starts_with_torch_include(const std::string& s) {
  size_t i = 0;
  const size_t n = s.size();
  for (;;) {
    while (i < n && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    if (s.compare(i, 2, "//") == 0) {
      i = s.find('\n', i);
      if (i == std::string::npos) return false;
      continue;
    }
    if (s.compare(i, 2, "/*") == 0) {
      i = s.find("*/", i + 2);
      if (i == std::string::npos) return false;
      i += 2;
      continue;
    }
    break;
  }
  if (i >= n || s[i] != '#') return false;
  ++i;
  while (i < n && (s[i] == ' ' || s[i] == '\t')) ++i;
  if (s.compare(i, 7, "include") != 0) return false;
  i += 7;
  while (i < n && (s[i] == ' ' || s[i] == '\t')) ++i;
  return s.compare(i, 19, "<torch/extension.h>") == 0 || s.compare(i, 19, "\"torch/extension.h\"") == 0;
}

// Flags that change where headers come from or what is included first: a PCH made
// without the solution's sources could then differ from including the header.
bool affects_header_lookup(const std::vector<std::string>& flags) {
  return has_prefix_flag(flags, {"-I", "-iquote", "-isystem", "-idirafter", "-include", "-imacros",
                                 "--include", "-nostdinc", "-iprefix", "-iwithprefix"});
}

bool is_gcc(const std::string& version) {
  const std::string v = lower(version);
  return v.find("clang") == std::string::npos &&
         (v.find("g++") != std::string::npos || v.find("gcc") != std::string::npos ||
          v.find("free software foundation") != std::string::npos);
}

constexpr const char* kPchHeader = "torch_extension.h";
constexpr int kPchKeep = 4;  // precompiled headers kept (the least recently used go first)

// Keeps the `keep` most recently used entries of the PCH cache; entries used in the
// last hour stay regardless (a build may be reading them).
void prune_pch_cache(const fs::path& root, int keep) {
  std::error_code ec;
  std::vector<std::pair<fs::file_time_type, fs::path>> entries;
  for (const auto& e : fs::directory_iterator(root, ec)) {
    const std::string n = e.path().filename().string();
    if (n.empty() || n[0] == '.' || !e.is_directory(ec)) continue;
    entries.emplace_back(fs::last_write_time(e.path(), ec), e.path());
  }
  if (static_cast<int>(entries.size()) <= keep) return;
  std::sort(entries.begin(), entries.end(), [](auto& a, auto& b) { return a.first > b.first; });
  const auto hour_ago = fs::file_time_type::clock::now() - std::chrono::hours(1);
  for (size_t i = static_cast<size_t>(keep); i < entries.size(); ++i)
    if (entries[i].first < hour_ago) remove_tree_quietly(entries[i].second);
}

}  // namespace

namespace {

bool Builder::run_steps(std::vector<Step>& steps, const fs::path& cwd) {
  const size_t limit = static_cast<size_t>(std::max(1, jobs()));
  struct Running {
    size_t index;
    Child child;
  };
  std::vector<Running> running;
  std::vector<bool> started(steps.size(), false);
  size_t next = 0;
  bool stop = false;  // a required step failed: start nothing more
  bool timed_out = false;
  auto fail_step = [&](Step& s, const std::string& why, BuildStatus st) {
    s.ok = false;
    s.failure = why;
    s.status = st;
    if (!s.optional) stop = true;
  };
  auto nap = std::chrono::milliseconds(1);
  for (;;) {
    while (!stop && next < steps.size() && running.size() < limit) {
      Step& s = steps[next];
      started[next] = true;
      s.output = "$ " + command_line(s.argv) + "\n";
      SpawnOptions so;
      so.argv = s.argv;
      so.cwd = cwd;
      so.output = OutputMode::Capture;
      so.log_limit_bytes = opts.log_limit_bytes;
      try {
        running.push_back({next, Child::spawn(so)});
      } catch (const SpawnError& e) {
        fail_step(s, s.what + ": " + e.what(), BuildStatus::CompileError);
      }
      ++next;
    }
    if (running.empty()) break;
    bool progressed = false;
    for (size_t k = 0; k < running.size();) {
      std::optional<ExitStatus> st = running[k].child.poll();
      if (!st) {
        ++k;
        continue;
      }
      Step& s = steps[running[k].index];
      std::string out = running[k].child.log();
      if (!out.empty() && out.back() != '\n') out += '\n';
      s.output += out;
      if (st->success()) s.ok = true;
      else if (s.failure.empty())
        fail_step(s, s.what + " failed (" + st->describe() + ")", BuildStatus::CompileError);
      running.erase(running.begin() + static_cast<std::ptrdiff_t>(k));
      progressed = true;
    }
    if (stop) {
      // What is optional is not worth waiting for once the build has failed.
      for (auto& r : running) {
        Step& s = steps[r.index];
        if (s.optional && s.failure.empty()) {
          s.failure = s.what + ": stopped (a source failed to compile)";
          r.child.kill_group();
        }
      }
    }
    if (Clock::now() >= deadline && !running.empty()) {
      timed_out = true;
      for (auto& r : running) {
        r.child.kill_group();
        r.child.wait();
        Step& s = steps[r.index];
        s.output += r.child.log();
        if (!s.output.empty() && s.output.back() != '\n') s.output += '\n';
        fail_step(s,
                  s.what + " timed out: the build limit of " + seconds_text(opts.timeout.count()) +
                      " s passed; the compiler's process group was killed",
                  BuildStatus::Timeout);
      }
      running.clear();
      break;
    }
    if (progressed) {
      nap = std::chrono::milliseconds(1);
    } else {
      std::this_thread::sleep_for(nap);
      nap = std::min(nap * 2, std::chrono::milliseconds(10));
    }
  }
  // The log in step order (a deterministic log whatever finished first); the
  // failures last, the first required one first.
  std::vector<std::string> failures;
  BuildStatus status = BuildStatus::Ok;
  for (size_t i = 0; i < steps.size(); ++i) {
    if (!started[i]) continue;
    Step& s = steps[i];
    log += s.output;
    if (s.optional && !s.ok && !s.failure.empty()) log += s.failure + "\n";
  }
  for (const Step& s : steps) {
    if (s.optional || s.ok || s.failure.empty()) continue;
    if (s.status == BuildStatus::Timeout && status != BuildStatus::Timeout) {
      status = BuildStatus::Timeout;
      failures.insert(failures.begin(), s.failure);
    } else {
      if (status == BuildStatus::Ok) status = s.status;
      failures.push_back(s.failure);
    }
  }
  if (timed_out && status != BuildStatus::Timeout) status = BuildStatus::Timeout;
  if (failures.empty() && status == BuildStatus::Ok) return true;
  std::string msg;
  for (const auto& f : failures) msg += (msg.empty() ? "" : "\n") + f;
  fail(status, msg);
  return false;
}

std::optional<std::vector<std::string>> Builder::compile_sources(
    const fs::path& work,
    const std::function<std::vector<std::string>(SrcKind, const std::string&)>& argv_for,
    std::vector<Step>* extra) {
  const fs::path src = work / "src", obj = work / "obj";
  std::vector<std::string> objects;
  std::vector<Step> steps;
  for (const auto& s : sol.sources) {
    const SrcKind k = kind_of(s.path);
    if (k == SrcKind::Other) continue;
    const std::string o = (obj / (std::to_string(objects.size()) + ".o")).string();
    Step step;
    step.what = "compiling " + s.path;
    step.argv = argv_for(k, s.path);
    append(step.argv, {"-o", o, s.path});  // relative to src/: messages name the solution's paths
    steps.push_back(std::move(step));
    objects.push_back(o);
  }
  const size_t n_sources = steps.size();
  if (extra)
    for (auto& e : *extra) steps.push_back(std::move(e));
  const bool ok = run_steps(steps, src);
  if (extra) {
    extra->clear();
    for (size_t i = n_sources; i < steps.size(); ++i) extra->push_back(std::move(steps[i]));
  }
  if (!ok) {
    discard(work);
    return std::nullopt;
  }
  return objects;
}

bool Builder::link(const std::vector<std::string>& argv, const fs::path& work) {
  if (run(argv, work / "src", "linking")) return true;
  discard(work);
  return false;
}

bool Builder::publish(const fs::path& work, const std::string& key, const std::string& artifact) {
  try {
    finish_ok(work, key, artifact);
    return true;
  } catch (const std::exception& e) {
    discard(work);
    fail(BuildStatus::CompileError, std::string("build cache: ") + e.what());
    return false;
  }
}

bool Builder::dependencies(const std::optional<fs::path>& nvcc, const std::string& python,
                           ResolvedDependencies* deps) {
  *deps = resolve_dependencies(sol, nvcc ? cuda_root_of(*nvcc) : fs::path(), python);
  log += deps->notes;
  if (deps->ok()) return true;
  fail(BuildStatus::CompileError, deps->error);
  return false;
}

std::vector<std::string> Builder::link_alias_flags(const ResolvedDependencies& deps,
                                                   const fs::path& work) {
  if (deps.link_aliases.empty()) return {};
  const fs::path dir = work / "lnk";
  std::error_code ec;
  fs::create_directories(dir, ec);
  for (const auto& [name, target] : deps.link_aliases) fs::create_symlink(target, dir / name, ec);
  return {"-L" + dir.string()};
}

// The interpreter the worker embeds, unless configured otherwise.
std::string python_program(const BuildOptions& opts) {
  std::string python = opts.python;
  if (python == "python3") {
    if (const char* e = std::getenv("SOLBENCH_PYTHON"); e && *e) python = e;
#ifdef SOLBENCH_PYTHON_EXECUTABLE
    else python = SOLBENCH_PYTHON_EXECUTABLE;
#endif
  }
  return python;
}

BuildResult Builder::native() {
  if (!check_inputs()) return result;
  const bool cpu_only = !has_cuda_language(sol);
  bool any_cu = false, any_c = false, any_compiled = false;
  for (const auto& s : sol.sources) {
    const SrcKind k = kind_of(s.path);
    any_cu |= k == SrcKind::Cuda;
    any_c |= k == SrcKind::C;
    any_compiled |= k != SrcKind::Other;
  }
  if (!any_compiled)
    return fail(BuildStatus::CompileError,
                "no compilable source (.cc/.cpp/.cxx/.c/.cu) among the solution's sources");
  if (cpu_only && any_cu)
    return fail(BuildStatus::CompileError,
                "language cpp builds host code only; .cu sources need a CUDA language (cuda_cpp, ...)");
  if (!sol.spec.entry_function.empty() && !sol.find_source(sol.spec.entry_file))
    return fail(BuildStatus::CompileError,
                "spec.entry_point: file '" + sol.spec.entry_file + "' is not among the sources");
  if (!opts.cuda_arch.empty() && gencode_flags(opts.cuda_arch).empty())
    return fail(BuildStatus::CompileError, "invalid CUDA arch '" + opts.cuda_arch +
                                               "' (expected a compute capability such as 90a, 100a, 80)");

  auto inc = kernel_include_dir();
  if (!inc) return result;
  auto cxx = resolve(opts.cxx, "CXX", "g++");
  if (!cxx) return result;
  std::optional<fs::path> cc, nvcc;
  if (any_c && !(cc = resolve(opts.cc, "CC", "gcc"))) return result;
  if (any_cu) {
    nvcc = find_nvcc();
    if (!nvcc)
      return fail(BuildStatus::Unsupported,
                  "CUDA sources need nvcc: not found (set NVCC or CUDA_HOME, or install the CUDA toolkit)");
  }
  // The toolkit also serves host sources of CUDA languages (cuda_runtime.h) and the link.
  const std::optional<fs::path> toolkit = nvcc ? nvcc : (cpu_only ? std::nullopt : find_nvcc());
  ResolvedDependencies deps;
  if (!dependencies(toolkit, python_program(opts), &deps)) return result;

  std::vector<std::pair<std::string, std::string>> toolchain;
  for (const auto* p : {&*cxx, cc ? &*cc : nullptr, nvcc ? &*nvcc : nullptr}) {
    if (!p) continue;
    auto v = version_of(*p);
    if (!v) return result;
    toolchain.emplace_back(p->string(), *v);
    result.compiler_version += v->substr(0, v->find('\n')) + "\n";
  }
  std::string header;
  try {
    header = read_text_file(*inc / "solbench" / "kernel.h");
  } catch (const std::exception& e) {
    return fail(BuildStatus::CompileError, e.what());
  }
  std::vector<fs::path> host_system;  // -isystem for host sources
  if (toolkit) host_system.push_back(cuda_root_of(*toolkit) / "include");
  std::string extra_key = deps.key();
  for (const auto& d : host_system) extra_key += "host-isystem=" + d.string() + "\n";
  const std::string key = compute_key(toolchain, header, extra_key);
  result.cache_key = key;
  result.entry_symbol = sol.spec.entry_function;
  const std::string artifact = "lib.so";
  if (try_cache(key, artifact)) {
    inspect_artifact();
    return result;
  }

  std::string rejected;
  const std::optional<fs::path> staged = stage_sources(sol, &rejected);
  if (!staged) return fail(BuildStatus::Rejected, rejected);
  const fs::path work = *staged, src = work / "src", obj = work / "obj";
  const auto& co = sol.spec.compile_options;
  std::vector<fs::path> includes = {src, *inc};
  for (const auto& d : opts.extra_include_dirs) includes.emplace_back(d);
  const bool rdc = has_prefix_flag(co.cuda_cflags, {"-rdc=true", "--relocatable-device-code=true", "-dc"});

  const auto objects = compile_sources(work, [&](SrcKind k, const std::string&) {
    std::vector<std::string> argv;
    if (k == SrcKind::Cuda) {
      argv = {nvcc->string(), "-c", "-Xcompiler", "-fPIC"};
      if (!has_prefix_flag(co.cuda_cflags, {"-std", "--std"})) argv.push_back("-std=c++17");
      append(argv, gencode_flags(opts.cuda_arch));
      append(argv, include_args(includes));
      append(argv, include_args(deps.include_dirs, "-isystem"));
      append(argv, co.cuda_cflags);
    } else if (k == SrcKind::C) {
      argv = {cc->string(), "-c", "-fPIC", "-O3"};
      append(argv, include_args(includes));
      append(argv, include_args(host_system, "-isystem"));
      append(argv, include_args(deps.include_dirs, "-isystem"));
      for (const auto& f : co.cflags)  // C++-only dialect flags would make gcc fail on C
        if (!starts_with(f, "-std=c++") && !starts_with(f, "-std=gnu++")) argv.push_back(f);
    } else {
      argv = {cxx->string(), "-c", "-fPIC", "-O3"};
      if (!has_prefix_flag(co.cflags, {"-std"})) argv.push_back("-std=c++17");
      append(argv, include_args(includes));
      append(argv, include_args(host_system, "-isystem"));
      append(argv, include_args(deps.include_dirs, "-isystem"));
      append(argv, co.cflags);
    }
    return argv;
  });
  if (!objects) return result;

  std::vector<std::string> link = {cxx->string(), "-shared", "-o", (work / artifact).string()};
  append(link, *objects);
  append(link, link_alias_flags(deps, work));
  if (any_cu || !cpu_only) {
    if (!nvcc) nvcc = toolkit;
    if (!nvcc) {
      discard(work);
      return fail(BuildStatus::Unsupported, "a CUDA language needs the CUDA toolkit (nvcc): not found");
    }
    if (rdc) {
      std::vector<std::string> dl = {nvcc->string(), "-dlink", "-Xcompiler", "-fPIC"};
      append(dl, gencode_flags(opts.cuda_arch));
      append(dl, *objects);
      dl.push_back("-o");
      dl.push_back((obj / "dlink.o").string());
      if (!run(dl, src, "device link")) {
        discard(work);
        return result;
      }
      link.push_back((obj / "dlink.o").string());
      link.push_back("-lcudadevrt");
    }
    append_cuda_link(link, *nvcc, deps, sol);
  } else {
    append_host_link_flags(link, deps, sol);
  }
  if (!this->link(link, work)) return result;

  // The entry must be callable by name: C linkage, default visibility.
  try {
    ElfSymbols syms = read_elf_symbols(work / artifact);
    if (!std::binary_search(syms.exported.begin(), syms.exported.end(), sol.spec.entry_function)) {
      discard(work);
      return fail(BuildStatus::CompileError,
                  "spec.entry_point: the built library does not export '" + sol.spec.entry_function +
                      "' (declare it with SB_EXPORT from solbench/kernel.h, i.e. extern \"C\" and "
                      "default visibility)");
    }
  } catch (const ElfError& e) {
    discard(work);
    return fail(BuildStatus::CompileError, std::string("cannot read the built library: ") + e.what());
  }
  if (publish(work, key, artifact)) inspect_artifact();
  return result;
}

// Torch's build settings, queried from the Python install (memoised per torch).
struct TorchInfo {
  std::vector<std::string> include_paths, library_paths;
  std::string python_include, pybind11_include, version, cuda_version;
  std::vector<std::pair<std::string, std::string>> pybind11_abi;  // {"COMPILER_TYPE", "_gcc"}, ...
  int cxx11_abi = 1;
};

// What torch.utils.cpp_extension.load() compiles with (include_paths(),
// library_paths(), the pybind11 ABI macros, the C++11 ABI flag), plus pybind11's
// headers when torch does not ship them.
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

BuildResult Builder::torch() {
  if (!check_inputs()) return result;
  bool any_cu = false, any_compiled = false;
  for (const auto& s : sol.sources) {
    any_cu |= kind_of(s.path) == SrcKind::Cuda;
    any_compiled |= kind_of(s.path) != SrcKind::Other;
  }
  if (!any_compiled)
    return fail(BuildStatus::CompileError, "no compilable source (.cc/.cpp/.cu) among the solution's sources");
  auto inc = kernel_include_dir();
  if (!inc) return result;
  auto cxx = resolve(opts.cxx, "CXX", "g++");
  if (!cxx) return result;

  const std::string python = python_program(opts);
  auto py = find_program(python);
  if (!py) return fail(BuildStatus::CompileError, "torch binding: python not found: " + python);

  // Cheap probe (no torch import) to key the memo of the expensive query; itself
  // memoised while nothing it depends on changed (torch_location).
  const PythonProbe where = remembered_python_probe(cache ? &*cache : nullptr, *py, "torch-where",
                                                   kTorchWhere, std::chrono::duration<double>(left_seconds()));
  if (where.timed_out) return fail(BuildStatus::Timeout, "torch binding: python probe timed out");
  const std::string origin = where.output.substr(0, where.output.find('\n'));
  if (!where.ok || origin.empty() || origin[0] == ' ')
    return fail(BuildStatus::CompileError,
                "torch binding needs torch's headers, but " + py->string() +
                    " has no torch module (use binding \"native\" for a build without torch)\n" +
                    where.output);
  RunOptions ro;
  const std::string memo_id = "torch-query/2|" + py->string() + "|" + origin;
  std::optional<std::string> info_text;
  if (cache) info_text = cache->toolchain_version(memo_id);
  if (!info_text) {
    log += "querying torch's build settings through " + py->string() + "\n";
    ro.timeout = std::chrono::duration<double>(left_seconds());
    CommandResult q = run_command({py->string(), "-c", kTorchQuery}, ro);
    if (q.status.timed_out) return fail(BuildStatus::Timeout, "torch binding: torch query timed out");
    if (!q.ok())
      return fail(BuildStatus::CompileError, "torch binding: cannot query torch.utils.cpp_extension:\n" +
                                                 q.spawn_error + q.output);
    // The JSON is the last line (torch may print warnings first).
    std::string out = q.output;
    while (!out.empty() && out.back() == '\n') out.pop_back();
    info_text = out.substr(out.rfind('\n') == std::string::npos ? 0 : out.rfind('\n') + 1);
    if (cache) cache->store_toolchain_version(memo_id, *info_text);
  }
  TorchInfo ti;
  try {
    json j = json::parse(*info_text);
    ti.include_paths = j.at("include_paths").get<std::vector<std::string>>();
    ti.library_paths = j.at("library_paths").get<std::vector<std::string>>();
    ti.python_include = j.at("python_include").get<std::string>();
    ti.pybind11_include = j.value("pybind11_include", "");
    for (const char* n : {"COMPILER_TYPE", "STDLIB", "BUILD_ABI"}) {
      const std::string v = j.at("pybind11_abi").value(n, "");
      if (!v.empty()) ti.pybind11_abi.emplace_back(n, v);
    }
    ti.version = j.at("version").get<std::string>();
    ti.cuda_version = j.at("cuda").get<std::string>();
    ti.cxx11_abi = j.at("cxx11_abi").get<int>();
  } catch (const std::exception& e) {
    return fail(BuildStatus::CompileError,
                std::string("torch binding: unexpected torch query output: ") + e.what() + "\n" + *info_text);
  }
  std::optional<fs::path> nvcc;
  if (any_cu) {
    nvcc = find_nvcc();
    if (!nvcc) return fail(BuildStatus::Unsupported, "CUDA sources need nvcc: not found");
    if (ti.cuda_version.empty())
      return fail(BuildStatus::Unsupported, "CUDA sources need a CUDA build of torch; this torch (" +
                                                ti.version + ") is CPU-only");
  }
  // The toolkit's headers serve every source of a CUDA language (a .cpp including
  // <ATen/cuda/CUDAContext.h> needs cuda_runtime_api.h), as in cpp_extension.
  const bool cuda_side = any_cu || has_cuda_language(sol) || !ti.cuda_version.empty();
  const std::optional<fs::path> toolkit = nvcc ? nvcc : (cuda_side ? find_nvcc() : std::nullopt);
  ResolvedDependencies deps;
  if (!dependencies(toolkit, py->string(), &deps)) return result;

  std::vector<std::pair<std::string, std::string>> toolchain;
  for (const auto* p : {&*cxx, nvcc ? &*nvcc : nullptr}) {
    if (!p) continue;
    auto v = version_of(*p);
    if (!v) return result;
    toolchain.emplace_back(p->string(), *v);
    result.compiler_version += v->substr(0, v->find('\n')) + "\n";
  }
  result.compiler_version += "torch " + ti.version + "\n";

  std::vector<fs::path> sys_includes(ti.include_paths.begin(), ti.include_paths.end());
  if (!ti.pybind11_include.empty()) sys_includes.emplace_back(ti.pybind11_include);
  sys_includes.emplace_back(ti.python_include);
  if (toolkit) sys_includes.push_back(cuda_root_of(*toolkit) / "include");
  for (const auto& d : deps.include_dirs) sys_includes.push_back(d);

  std::string extra_key = *info_text + "\n" + origin + "\n" + deps.key();
  for (const auto& d : sys_includes) extra_key += "isystem=" + d.string() + "\n";
  const std::string key = compute_key(toolchain, "", extra_key);
  result.cache_key = key;
  result.module_name = "sb_ext_" + key.substr(0, 16);
  result.entry_symbol = sol.spec.entry_function;
  const std::string artifact = result.module_name + ".so";
  if (try_cache(key, artifact)) return result;

  const auto& co = sol.spec.compile_options;
  const std::string module_define = "-DTORCH_EXTENSION_NAME=" + result.module_name;
  std::vector<std::string> defines = {module_define, "-DTORCH_API_INCLUDE_EXTENSION_H"};
  for (const auto& [n, v] : ti.pybind11_abi) defines.push_back("-DPYBIND11_" + n + "=\"" + v + "\"");
  defines.push_back("-D_GLIBCXX_USE_CXX11_ABI=" + std::to_string(ti.cxx11_abi));

  // Host flags as cpp_extension.load() has them: no -O level of its own (cflags
  // may add one), -fPIC, C++17 unless cflags pick a standard. `for_pch` leaves out
  // what differs between solutions (the module name, the staging folder).
  auto host_flags = [&](bool for_pch) {
    std::vector<std::string> a = {cxx->string()};
    if (!for_pch) a.push_back("-c");
    a.push_back("-fPIC");
    if (!has_prefix_flag(co.cflags, {"-std"})) a.push_back("-std=c++17");
    for (const auto& d : defines)
      if (!for_pch || d != module_define) a.push_back(d);
    return a;
  };
  std::vector<fs::path> includes;  // filled once the sources are staged

  // The precompiled <torch/extension.h> (GCC only; docs/native-binding.md).
  std::set<std::string> pch_sources;
  for (const auto& s : sol.sources)
    if (kind_of(s.path) == SrcKind::Cxx && starts_with_torch_include(s.content)) pch_sources.insert(s.path);
  const char* pch_env = std::getenv("SOLBENCH_TORCH_PCH");
  const std::string pch_mode = pch_env ? pch_env : "";
  fs::path pch_header;  // set when a published PCH is used
  std::vector<Step> pch_build;
  fs::path pch_tmp;
  std::string pch_key;
  std::optional<BuildCache> pch_cache;
  if (!pch_sources.empty() && opts.torch_pch && pch_mode != "0" && cache && is_gcc(toolchain[0].second) &&
      !affects_header_lookup(co.cflags)) {
    pch_cache.emplace(cache->root() / ".pch");
    std::vector<std::string> pch_flags = host_flags(true);
    append(pch_flags, include_args(sys_includes, "-isystem"));
    append(pch_flags, co.cflags);
    Sha256 h;
    h.field("solbench-torch-pch/1").field(toolchain[0].first).field(toolchain[0].second);
    h.field(*info_text).field(origin + "\n");
    for (const auto& f : pch_flags) h.field(f);
    pch_key = h.hex_digest();
    std::error_code ec;
    if (auto entry = pch_cache->lookup(pch_key); entry && is_file(*entry / (std::string(kPchHeader) + ".gch"))) {
      pch_header = *entry / kPchHeader;
      fs::last_write_time(*entry, fs::file_time_type::clock::now(), ec);  // recently used
      log += "using the precompiled <torch/extension.h> " + pch_header.string() + ".gch\n";
    } else {
      const fs::path marker = pch_cache->root() / (pch_key + ".wanted");
      size_t compiled = 0;
      for (const auto& s : sol.sources) compiled += kind_of(s.path) != SrcKind::Other;
      const bool eager = pch_mode == "1";
      const bool wanted_before = is_file(marker);
      if (!eager && !wanted_before) {
        fs::create_directories(pch_cache->root(), ec);
        try {
          write_text_file(marker, sol.name + "\n");
        } catch (const std::exception&) {
          // Only a hint for the next build.
        }
        log += "no precompiled <torch/extension.h> for these flags yet; the next cold build with "
               "them makes one\n";
      } else if (static_cast<size_t>(jobs()) <= compiled) {
        log += "no CPU to spare for precompiling <torch/extension.h> in this build\n";
      } else {
        try {
          pch_tmp = pch_cache->make_temp_dir();
          write_text_file(pch_tmp / kPchHeader, "#include <torch/extension.h>\n");
          Step st;
          st.what = "precompiling <torch/extension.h>";
          st.optional = true;
          st.argv = pch_flags;
          append(st.argv, {"-x", "c++-header", (pch_tmp / kPchHeader).string(), "-o",
                           (pch_tmp / (std::string(kPchHeader) + ".gch")).string()});
          pch_build.push_back(std::move(st));
          log += "building a precompiled <torch/extension.h> beside the sources, for later builds "
                 "with these flags\n";
        } catch (const std::exception& e) {  // a PCH is never worth failing the build
          if (!pch_tmp.empty()) remove_tree_quietly(pch_tmp);
          pch_tmp.clear();
          log += std::string("not precompiling <torch/extension.h>: ") + e.what() + "\n";
        }
      }
    }
  }

  std::string rejected;
  const std::optional<fs::path> staged = stage_sources(sol, &rejected);
  if (!staged) {
    if (!pch_tmp.empty()) remove_tree_quietly(pch_tmp);
    return fail(BuildStatus::Rejected, rejected);
  }
  const fs::path work = *staged, src = work / "src";
  includes = {src, *inc};
  for (const auto& d : opts.extra_include_dirs) includes.emplace_back(d);

  const auto objects = compile_sources(
      work,
      [&](SrcKind k, const std::string& path) {
        std::vector<std::string> argv;
        if (k == SrcKind::Cuda) {
          argv = {nvcc->string(), "-c", "-Xcompiler", "-fPIC", "--expt-relaxed-constexpr",
                  "-D__CUDA_NO_HALF_OPERATORS__", "-D__CUDA_NO_HALF_CONVERSIONS__",
                  "-D__CUDA_NO_BFLOAT16_CONVERSIONS__", "-D__CUDA_NO_HALF2_OPERATORS__"};
          if (!has_prefix_flag(co.cuda_cflags, {"-std", "--std"})) argv.push_back("-std=c++17");
          append(argv, gencode_flags(opts.cuda_arch));
          append(argv, defines);
          append(argv, include_args(includes));
          append(argv, include_args(sys_includes, "-isystem"));
          append(argv, co.cuda_cflags);
        } else {
          argv = host_flags(false);
          append(argv, include_args(includes));
          append(argv, include_args(sys_includes, "-isystem"));
          append(argv, co.cflags);
          if (!pch_header.empty() && pch_sources.count(path)) append(argv, {"-include", pch_header.string()});
        }
        return argv;
      },
      &pch_build);
  if (!pch_tmp.empty()) {
    // A finished PCH is kept even when a source failed: it is as good for the next build.
    if (!pch_build.empty() && pch_build[0].ok) {
      try {
        const fs::path gch = pch_tmp / (std::string(kPchHeader) + ".gch");
        std::error_code ec;
        const auto bytes = fs::file_size(gch, ec);
        const fs::path entry =
            pch_cache->publish(pch_key, pch_tmp, json{{"torch", ti.version}, {"bytes", ec ? 0 : bytes}});
        fs::remove(pch_cache->root() / (pch_key + ".wanted"), ec);
        log += "stored the precompiled <torch/extension.h> in " + entry.string() + " (" +
               std::to_string((ec ? 0 : bytes) >> 20) + " MiB)\n";
        prune_pch_cache(pch_cache->root(), kPchKeep);
      } catch (const std::exception& e) {
        remove_tree_quietly(pch_tmp);
        log += std::string("could not store the precompiled header: ") + e.what() + "\n";
      }
    } else {
      // Failed or stopped: the next cold builds start over (marker, then a try).
      remove_tree_quietly(pch_tmp);
      std::error_code ec;
      fs::remove(pch_cache->root() / (pch_key + ".wanted"), ec);
    }
  }
  if (!objects) return result;
  std::vector<std::string> link = {cxx->string(), "-shared", "-o", (work / artifact).string()};
  append(link, *objects);
  append(link, link_alias_flags(deps, work));
  for (const auto& l : ti.library_paths) append(link, {"-L" + l, "-Wl,-rpath," + l});
  append(link, {"-lc10", "-ltorch", "-ltorch_cpu", "-ltorch_python"});
  if (!ti.cuda_version.empty()) append(link, {"-lc10_cuda", "-ltorch_cuda"});
  if (toolkit) append_cuda_link(link, *toolkit, deps, sol);
  else append_host_link_flags(link, deps, sol);
  if (this->link(link, work)) publish(work, key, artifact);
  return result;
}

BuildResult finalize(Builder& b) {
  BuildResult r = std::move(b.result);
  // Bounded: the head (commands) and the tail (the compiler's last words) matter most.
  BoundedLog bl(b.opts.log_limit_bytes);
  bl.append(b.log.data(), b.log.size());
  r.log = bl.text();
  r.seconds = std::chrono::duration<double>(b.opts.timeout).count() - b.left_seconds();
  return r;
}

}  // namespace

std::string_view build_status_name(BuildStatus s) {
  switch (s) {
    case BuildStatus::Ok: return "ok";
    case BuildStatus::CompileError: return "compile_error";
    case BuildStatus::Timeout: return "timeout";
    case BuildStatus::Unsupported: return "unsupported";
    case BuildStatus::Rejected: return "rejected";
  }
  return "?";
}

json BuildResult::to_json() const {
  json j = {{"status", build_status_name(status)},
            {"so_path", so_path.string()},
            {"entry_symbol", entry_symbol},
            {"cache_hit", cache_hit},
            {"cache_key", cache_key},
            {"seconds", seconds},
            {"compiler_version", compiler_version},
            {"abi_symbol", abi_symbol},
            {"import_violations", harness::to_json(import_violations)},
            {"log", log}};
  if (!module_name.empty()) j["module_name"] = module_name;
  if (!build_dir.empty()) j["build_dir"] = build_dir.string();
  return j;
}

std::vector<std::string> gencode_flags(const std::string& arch) {
  // "90", "90a", "100a", "120f": digits, then at most one letter suffix.
  size_t digits = 0;
  while (digits < arch.size() && std::isdigit(static_cast<unsigned char>(arch[digits]))) ++digits;
  if (digits < 2 || digits > 3 || arch.size() > digits + 1 ||
      (arch.size() == digits + 1 && arch.back() != 'a' && arch.back() != 'f'))
    return {};
  return {"-gencode", "arch=compute_" + arch + ",code=sm_" + arch};
}

std::optional<std::string> unsafe_flag_reason(const std::string& flag, bool nvcc) {
  if (flag.empty()) return std::nullopt;
  if (flag[0] == '@') return "reads options from a file";
  if (flag.find('\0') != std::string::npos || flag.find('\n') != std::string::npos)
    return "contains control characters";
  const std::string name = flag.substr(0, flag.find('='));
  // Running other programs or plugins.
  for (const char* p : {"-fplugin", "-B", "-wrapper", "-specs", "--specs", "-no-integrated-cpp",
                        "--sysroot", "-isysroot", "--gcc-toolchain", "-fcompare-debug"})
    if (starts_with(flag, p)) return "could run programs or plugins outside the toolchain";
  if (starts_with(flag, "-fuse-ld=") && flag.find('/') != std::string::npos)
    return "selects a linker program by path";
  // Writing files outside the build folder.
  if (flag == "-o" || (starts_with(flag, "-o") && !starts_with(flag, "-opt") && !nvcc) ||
      starts_with(flag, "-MF") ||
      starts_with(flag, "-dumpdir") || starts_with(flag, "-dumpbase") ||
      starts_with(flag, "-save-temps=") || starts_with(flag, "-fdump-") ||
      starts_with(flag, "-fprofile-generate=") || starts_with(flag, "-fprofile-dir") ||
      starts_with(flag, "-fstack-usage") || starts_with(flag, "-aux-info") ||
      starts_with(flag, "-fcallgraph-info"))
    return "sets an output file (the harness chooses where artifacts go)";
  if (starts_with(flag, "-Wl,")) {
    for (const auto& p : split_commas(flag.substr(4)))
      if (auto why = unsafe_linker_piece(p)) return why;
  }
  // The next argument would be checked out of context: ask for the -Wl, form.
  if (!nvcc && (flag == "-Xlinker" || flag == "-Xassembler" || flag == "-Xpreprocessor"))
    return "passes the next argument through unchecked (use -Wl,... instead)";
  if (starts_with(flag, "-Wa,")) {
    for (const auto& p : split_commas(flag.substr(4)))
      if (starts_with(p, "-o") || starts_with(p, "-a") || starts_with(p, "--MD") || starts_with(p, "@"))
        return "assembler option " + p + " writes files";
  }
  if (starts_with(flag, "-Wp,")) {
    for (const auto& p : split_commas(flag.substr(4)))
      if (starts_with(p, "-M") || starts_with(p, "-o")) return "preprocessor option " + p + " writes files";
  }
  if (nvcc) {
    static const std::set<std::string> refused = {
        "-o", "--output-file", "-odir", "--output-directory", "-ccbin", "--compiler-bindir",
        "-optf", "--options-file", "--keep-dir", "-keep-dir", "--dependency-output", "-MF",
        "-MD", "-MMD", "--generate-dependencies-with-compile", "--generate-nonsystem-dependencies-with-compile",
        "-Xlinker", "--linker-options", "-Xarchive", "--archive-options", "-Xnvlink", "--nvlink-options",
        "-Xfatbin", "--fatbin-options", "--run", "-run", "--run-args", "-run-args", "-lib", "--lib",
        "-link", "--link", "-dlink", "--device-link", "--compiler-options-file"};
    if (refused.count(name)) return "nvcc option " + name + " is reserved for the harness";
    for (const char* pass : {"-Xcompiler", "--compiler-options"}) {
      if (starts_with(flag, std::string(pass) + "=")) {
        for (const auto& p : split_commas(flag.substr(std::strlen(pass) + 1)))
          if (auto why = unsafe_flag_reason(p, false)) return why;
      }
    }
    for (const char* pass : {"-Xptxas", "--ptxas-options"}) {
      if (starts_with(flag, std::string(pass) + "=")) {
        for (const auto& p : split_commas(flag.substr(std::strlen(pass) + 1)))
          if (starts_with(p, "-o") || starts_with(p, "--output")) return "ptxas option " + p + " writes files";
      }
    }
  }
  return std::nullopt;
}

std::optional<std::string> write_sources(const Solution& solution, const fs::path& dir) {
  std::set<std::string> seen;
  for (const auto& s : solution.sources) {
    if (auto why = unsafe_source_path_reason(s.path))
      return "sources: path '" + s.path + "' refused: " + *why;
    if (!seen.insert(s.path).second) return "sources: path '" + s.path + "' appears twice";
    // Create the parents one component at a time, never through a symlink.
    const fs::path rel(s.path);
    fs::path cur = dir;
    for (auto it = rel.begin(); it != rel.end(); ++it) {
      if (std::next(it) == rel.end()) break;
      cur /= *it;
      struct stat st {};
      if (::lstat(cur.c_str(), &st) == 0) {
        if (S_ISLNK(st.st_mode)) return "sources: path '" + s.path + "' goes through a symlink";
        if (!S_ISDIR(st.st_mode))
          return "sources: path '" + s.path + "' needs folder " + cur.filename().string() +
                 ", which is also a file";
      } else if (::mkdir(cur.c_str(), 0700) != 0) {
        return "sources: cannot create folder for '" + s.path + "': " + std::strerror(errno);
      }
    }
    const fs::path file = dir / rel;
    const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
      if (errno == EEXIST || errno == ELOOP)
        return "sources: path '" + s.path + "' already exists in the staging folder (symlink or duplicate)";
      return "sources: cannot write '" + s.path + "': " + std::strerror(errno);
    }
    size_t off = 0;
    while (off < s.content.size()) {
      ssize_t w = ::write(fd, s.content.data() + off, s.content.size() - off);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) {
        const int e = errno;
        ::close(fd);
        return "sources: cannot write '" + s.path + "': " + std::strerror(e);
      }
      off += static_cast<size_t>(w);
    }
    ::close(fd);
  }
  return std::nullopt;
}

BuildResult build_solution(const Solution& solution, const BuildOptions& opts) {
  Builder b(solution, opts);
  if (solution.spec.languages.empty()) {
    b.fail(BuildStatus::Rejected, "spec.languages is empty");
    return finalize(b);
  }
  if (solution.spec.family() == LanguageFamily::Python) {
    b.fail(BuildStatus::Unsupported, "Python-family solutions are not built (they run in the worker's interpreter)");
    return finalize(b);
  }
  try {
    if (solution.spec.binding == Binding::Torch) b.torch();
    else b.native();
  } catch (const std::exception& e) {
    // Unexpected (I/O on the cache or staging folder): still a result, never a throw.
    b.fail(BuildStatus::CompileError, std::string("build failed: ") + e.what());
  }
  return finalize(b);
}

BuildResult build_torch_extension(const Solution& solution, const BuildOptions& opts) {
  Builder b(solution, opts);
  try {
    b.torch();
  } catch (const std::exception& e) {
    b.fail(BuildStatus::CompileError, std::string("build failed: ") + e.what());
  }
  return finalize(b);
}

}  // namespace solbench::harness
