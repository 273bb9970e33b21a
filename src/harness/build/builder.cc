#include "harness/build/builder.h"

#include <algorithm>

#include "harness/build/artifact_check.h"
#include "harness/sha256.h"
#include "harness/staging.h"
#include "harness/toolchain.h"

#define SB_NO_ABI_SYMBOL
#include "solbench/kernel.h"

namespace solbench::harness::build_internal {
namespace fs = std::filesystem;

Builder::Builder(const Solution& s, const BuildOptions& o)
    : sol(s), opts(o), deadline(deadline_after(o.timeout)) {
  if (o.use_cache) cache.emplace(o.cache_dir.empty() ? default_build_cache_dir() : o.cache_dir);
}

// ---------------------------------------------------------------- outcome

BuildResult& Builder::fail(BuildStatus st, const std::string& msg) {
  result.status = st;
  log += msg;
  if (!msg.empty() && msg.back() != '\n') log += '\n';
  return result;
}

double Builder::left_seconds() const {
  return std::max(0.0, std::chrono::duration<double>(deadline - Clock::now()).count());
}

BuildResult Builder::finalize() {
  BuildResult r = std::move(result);
  // Bounded: the head (commands) and the tail (the compiler's last words) matter most.
  BoundedLog bl(opts.log_limit_bytes);
  bl.append(log.data(), log.size());
  r.log = bl.text();
  r.seconds = std::chrono::duration<double>(opts.timeout).count() - left_seconds();
  return r;
}

// ---------------------------------------------------------------- tools

bool Builder::run(const std::vector<std::string>& argv, const fs::path& cwd, const char* what) {
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
    fail(BuildStatus::Timeout, timeout_message(what, opts.timeout.count()));
    return false;
  }
  if (!r.status.success()) {
    fail(BuildStatus::CompileError, std::string(what) + " failed (" + r.status.describe() + ")");
    return false;
  }
  return true;
}

std::optional<fs::path> Builder::compiler(const std::string& configured, const char* env,
                                          const char* fallback) {
  const std::string name = compiler_name(configured, env, fallback);
  auto p = find_compiler(name);
  if (!p) fail(BuildStatus::CompileError, std::string("compiler not found: ") + name);
  return p;
}

bool Builder::kernel_include_and_cxx(fs::path& inc, fs::path& cxx) {
  auto i = kernel_include_dir();
  if (!i) return false;
  inc = *i;
  auto x = compiler(opts.cxx, "CXX", "g++");
  if (!x) return false;
  cxx = *x;
  return true;
}

std::optional<fs::path> Builder::kernel_include_dir() {
  const std::vector<fs::path> candidates = kernel_include_candidates(opts.include_dir);
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

std::string Builder::python() const {
  // The default "python3" stands for the configured interpreter.
  return opts.python == "python3" ? configured_python() : opts.python;
}

std::optional<std::string> Builder::version_of(const fs::path& prog) {
  const ProgramVersion v =
      program_version(prog, cache ? &*cache : nullptr, std::chrono::duration<double>(left_seconds()));
  if (v.timed_out) {
    fail(BuildStatus::Timeout, prog.string() + " --version timed out (build limit " +
                                   seconds_text(opts.timeout.count()) + " s)");
    return std::nullopt;
  }
  if (!v.text) {
    fail(BuildStatus::CompileError, "cannot run " + prog.string() + " --version: " + v.error);
    return std::nullopt;
  }
  return v.text;
}

std::optional<ToolVersions> Builder::versions(const std::vector<fs::path>& programs) {
  ToolVersions toolchain;
  for (const auto& p : programs) {
    auto v = version_of(p);
    if (!v) return std::nullopt;
    toolchain.emplace_back(p.string(), *v);
    result.compiler_version += v->substr(0, v->find('\n')) + "\n";
  }
  return toolchain;
}

// ---------------------------------------------------------------- inputs

bool Builder::check_inputs() {
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

// ---------------------------------------------------------------- the cache

namespace {

void hash_list(Sha256& h, const std::vector<std::string>& v) {
  h.field(std::to_string(v.size()));
  for (const auto& s : v) h.field(s);
}

}  // namespace

std::string Builder::compute_key(const ToolVersions& toolchain, const std::string& kernel_header,
                                 const std::string& extra) {
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

bool Builder::try_cache(const std::string& key, const std::string& artifact) {
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
void Builder::finish_ok(const fs::path& work, const std::string& key, const std::string& artifact) {
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
    unregister_scratch(work);
    result.so_path = entry / artifact;
    if (opts.keep_staging) result.build_dir = entry;
  } else {
    // The library lives in the work folder for this process: an interrupt removes it
    // still, unless it is kept.
    result.so_path = work / artifact;
    result.build_dir = work;
  }
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

void Builder::discard(const fs::path& work) {
  unregister_scratch(work);
  if (opts.keep_staging) {
    result.build_dir = work;
    log += "build folder kept: " + work.string() + "\n";
  } else {
    remove_tree_quietly(work);
  }
}

// ---------------------------------------------------------------- compiling

// Where the build happens: the cache's temp area, or a staging folder.
// Registered for an interrupt (staging.h) until it is published or discarded,
// unless made to be kept (--keep-staging).
fs::path Builder::make_work_dir() {
  const bool keep = opts.keep_staging;
  fs::path work = cache ? cache->make_temp_dir(keep)
                        : StagingDir::create(opts.staging_base.empty() ? default_staging_base()
                                                                       : opts.staging_base,
                                             "build-", keep)
                              .release();
  if (!keep) register_scratch(work);
  return work;
}

std::optional<fs::path> Builder::stage_sources(std::string* why) {
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

bool Builder::run_steps(std::vector<Step>& steps, const fs::path& cwd) {
  const StepsOutcome o =
      build_internal::run_steps(steps, cwd, {jobs(), deadline, opts.log_limit_bytes, opts.timeout.count()});
  log += o.log;
  if (o.ok()) return true;
  fail(o.status, o.message);
  return false;
}

std::optional<std::vector<std::string>> Builder::compile_sources(const fs::path& work,
                                                                 const ArgvFor& argv_for,
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

}  // namespace solbench::harness::build_internal
