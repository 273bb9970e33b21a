#include "harness/build.h"

#include <fcntl.h>
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

#include "harness/build_cache.h"
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
constexpr const char* kBuildRecipe = "solbench-build/1";

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
    struct stat st {};
    std::string id = prog.string();
    if (::stat(prog.c_str(), &st) == 0)
      id += "|" + std::to_string(st.st_size) + "|" + std::to_string(st.st_mtim.tv_sec) + "." +
            std::to_string(st.st_mtim.tv_nsec);
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

  // Compiles each compilable source of the solution with `argv_for(kind)` followed
  // by `-o OBJ SOURCE`, in the staged folder `work`. The object paths, or nullopt
  // (the folder discarded, result set) when a compile fails.
  std::optional<std::vector<std::string>> compile_sources(
      const fs::path& work, const std::function<std::vector<std::string>(SrcKind)>& argv_for);
  // Runs the link command; discards `work` when it fails.
  bool link(const std::vector<std::string>& argv, const fs::path& work);
  // Publishes the finished build; discards `work` when the cache refuses it.
  bool publish(const fs::path& work, const std::string& key, const std::string& artifact);

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

bool wants(const Solution& sol, Language lang, const char* dep) {
  if (sol.spec.has_language(lang)) return true;
  for (const auto& d : sol.spec.dependencies)
    if (starts_with(lower(d), dep)) return true;
  return false;
}

fs::path cuda_lib_dir(const fs::path& nvcc) {
  const fs::path root = nvcc.parent_path().parent_path();
  std::error_code ec;
  for (const char* sub : {"lib64", "lib", "targets/x86_64-linux/lib", "targets/sbsa-linux/lib"})
    if (fs::exists(root / sub / "libcudart.so", ec)) return root / sub;
  return root / "lib64";
}

// The CUDA runtime and the libraries the solution asks for, then its own link flags.
// The stub libcuda.so only satisfies the linker; the driver's is used at run time.
void append_cuda_link(std::vector<std::string>& link, const fs::path& nvcc, const Solution& sol) {
  const fs::path lib = cuda_lib_dir(nvcc);
  append(link, {"-L" + lib.string(), "-L" + (lib / "stubs").string(), "-Wl,-rpath," + lib.string(),
                "-lcudart"});
  if (wants(sol, Language::Cublas, "cublas")) append(link, {"-lcublas", "-lcublasLt"});
  if (wants(sol, Language::Cudnn, "cudnn")) link.push_back("-lcudnn");
  append(link, sol.spec.compile_options.ld_flags);
}

// A CPU-only link: the solution's flags, less the public default -lcuda.
void append_host_link_flags(std::vector<std::string>& link, const Solution& sol) {
  for (const auto& f : sol.spec.compile_options.ld_flags)
    if (f != "-lcuda") link.push_back(f);
}

std::optional<std::vector<std::string>> Builder::compile_sources(
    const fs::path& work, const std::function<std::vector<std::string>(SrcKind)>& argv_for) {
  const fs::path src = work / "src", obj = work / "obj";
  std::vector<std::string> objects;
  int n = 0;
  for (const auto& s : sol.sources) {
    const SrcKind k = kind_of(s.path);
    if (k == SrcKind::Other) continue;
    const std::string o = (obj / (std::to_string(n++) + ".o")).string();
    std::vector<std::string> argv = argv_for(k);
    append(argv, {"-o", o, (src / s.path).string()});
    if (!run(argv, src, ("compiling " + s.path).c_str())) {
      discard(work);
      return std::nullopt;
    }
    objects.push_back(o);
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

bool is_cuda_language(Language l) {
  return l == Language::CudaCpp || l == Language::Cutlass || l == Language::Cudnn ||
         l == Language::Cublas;
}

BuildResult Builder::native() {
  if (!check_inputs()) return result;
  const bool cpu_only =
      std::none_of(sol.spec.languages.begin(), sol.spec.languages.end(), is_cuda_language);
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
  const std::string key = compute_key(toolchain, header, "");
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
  if (wants(sol, Language::Cutlass, "cutlass")) {
    for (const char* env : {"CUTLASS_DIR", "CUTLASS_PATH", "CUTLASS_HOME"}) {
      if (const char* c = std::getenv(env); c && *c) {
        includes.push_back(fs::path(c) / "include");
        includes.push_back(fs::path(c) / "tools" / "util" / "include");
        break;
      }
    }
  }
  const bool rdc = has_prefix_flag(co.cuda_cflags, {"-rdc=true", "--relocatable-device-code=true", "-dc"});

  const auto objects = compile_sources(work, [&](SrcKind k) {
    std::vector<std::string> argv;
    if (k == SrcKind::Cuda) {
      argv = {nvcc->string(), "-c", "-Xcompiler", "-fPIC"};
      if (!has_prefix_flag(co.cuda_cflags, {"-std", "--std"})) argv.push_back("-std=c++17");
      append(argv, gencode_flags(opts.cuda_arch));
      append(argv, include_args(includes));
      append(argv, co.cuda_cflags);
    } else if (k == SrcKind::C) {
      argv = {cc->string(), "-c", "-fPIC", "-O3"};
      append(argv, include_args(includes));
      for (const auto& f : co.cflags)  // C++-only dialect flags would make gcc fail on C
        if (!starts_with(f, "-std=c++") && !starts_with(f, "-std=gnu++")) argv.push_back(f);
    } else {
      argv = {cxx->string(), "-c", "-fPIC", "-O3"};
      if (!has_prefix_flag(co.cflags, {"-std"})) argv.push_back("-std=c++17");
      append(argv, include_args(includes));
      append(argv, co.cflags);
    }
    return argv;
  });
  if (!objects) return result;

  std::vector<std::string> link = {cxx->string(), "-shared", "-o", (work / artifact).string()};
  append(link, *objects);
  if (any_cu || !cpu_only) {
    if (!nvcc) nvcc = find_nvcc();
    if (!nvcc)
      return fail(BuildStatus::Unsupported, "a CUDA language needs the CUDA toolkit (nvcc): not found");
    const fs::path lib = cuda_lib_dir(*nvcc);
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
    append_cuda_link(link, *nvcc, sol);
  } else {
    append_host_link_flags(link, sol);
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
  std::string python_include, version, cuda_version;
  int cxx11_abi = 1;
};

constexpr const char* kTorchQuery = R"PY(
import json, sysconfig, torch
import torch.utils.cpp_extension as ce
print(json.dumps({
  "include_paths": ce.include_paths(),
  "library_paths": ce.library_paths(),
  "python_include": sysconfig.get_paths()["include"],
  "version": torch.__version__,
  "cuda": torch.version.cuda or "",
  "cxx11_abi": int(torch._C._GLIBCXX_USE_CXX11_ABI),
}))
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

  // The interpreter the worker embeds, unless configured otherwise.
  std::string python = opts.python;
  if (python == "python3") {
    if (const char* e = std::getenv("SOLBENCH_PYTHON"); e && *e) python = e;
#ifdef SOLBENCH_PYTHON_EXECUTABLE
    else python = SOLBENCH_PYTHON_EXECUTABLE;
#endif
  }
  auto py = find_program(python);
  if (!py) return fail(BuildStatus::CompileError, "torch binding: python not found: " + python);

  // Cheap probe (no torch import) to key the memo of the expensive query.
  RunOptions ro;
  ro.timeout = std::chrono::duration<double>(left_seconds());
  CommandResult where = run_command(
      {py->string(), "-c",
       "import importlib.util as u, os\ns = u.find_spec('torch')\n"
       "o = s.origin if s else ''\nv = os.path.join(os.path.dirname(o), 'version.py') if o else ''\n"
       "print(o, os.stat(v).st_mtime_ns if v and os.path.exists(v) else 0)"},
      ro);
  if (where.status.timed_out) return fail(BuildStatus::Timeout, "torch binding: python probe timed out");
  std::string origin = where.output.substr(0, where.output.find('\n'));
  if (!where.ok() || origin.empty() || origin[0] == ' ')
    return fail(BuildStatus::CompileError,
                "torch binding needs torch's headers, but " + py->string() +
                    " has no torch module (use binding \"native\" for a build without torch)\n" +
                    where.output);
  const std::string memo_id = "torch|" + py->string() + "|" + origin;
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
  std::vector<std::pair<std::string, std::string>> toolchain;
  for (const auto* p : {&*cxx, nvcc ? &*nvcc : nullptr}) {
    if (!p) continue;
    auto v = version_of(*p);
    if (!v) return result;
    toolchain.emplace_back(p->string(), *v);
    result.compiler_version += v->substr(0, v->find('\n')) + "\n";
  }
  result.compiler_version += "torch " + ti.version + "\n";
  const std::string key = compute_key(toolchain, "", *info_text);
  result.cache_key = key;
  result.module_name = "sb_ext_" + key.substr(0, 16);
  result.entry_symbol = sol.spec.entry_function;
  const std::string artifact = result.module_name + ".so";
  if (try_cache(key, artifact)) return result;

  std::string rejected;
  const std::optional<fs::path> staged = stage_sources(sol, &rejected);
  if (!staged) return fail(BuildStatus::Rejected, rejected);
  const fs::path work = *staged, src = work / "src";
  const auto& co = sol.spec.compile_options;
  const std::vector<std::string> defines = {
      "-DTORCH_EXTENSION_NAME=" + result.module_name, "-DTORCH_API_INCLUDE_EXTENSION_H",
      "-D_GLIBCXX_USE_CXX11_ABI=" + std::to_string(ti.cxx11_abi)};
  std::vector<fs::path> sys_includes(ti.include_paths.begin(), ti.include_paths.end());
  sys_includes.emplace_back(ti.python_include);
  std::vector<fs::path> includes = {src, *inc};
  for (const auto& d : opts.extra_include_dirs) includes.emplace_back(d);

  const auto objects = compile_sources(work, [&](SrcKind k) {
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
      argv = {cxx->string(), "-c", "-fPIC", "-O3"};
      if (!has_prefix_flag(co.cflags, {"-std"})) argv.push_back("-std=c++17");
      append(argv, defines);
      append(argv, include_args(includes));
      append(argv, include_args(sys_includes, "-isystem"));
      append(argv, co.cflags);
    }
    return argv;
  });
  if (!objects) return result;
  std::vector<std::string> link = {cxx->string(), "-shared", "-o", (work / artifact).string()};
  append(link, *objects);
  for (const auto& l : ti.library_paths) append(link, {"-L" + l, "-Wl,-rpath," + l});
  append(link, {"-lc10", "-ltorch", "-ltorch_cpu", "-ltorch_python"});
  if (!ti.cuda_version.empty()) {
    append(link, {"-lc10_cuda", "-ltorch_cuda"});
    if (auto nv = nvcc ? nvcc : find_nvcc()) append_cuda_link(link, *nv, sol);
  } else {
    append_host_link_flags(link, sol);
  }
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
