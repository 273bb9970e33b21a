// The state of one build and the steps that the native and the torch-extension
// builds share (native_build.cc and torch_build.cc run them in their order):
//
//   outcome     fail, left_seconds, finalize (the bounded log, the time taken)
//   tools       run (one tool under the build's deadline), compiler,
//               kernel_include_dir, python, versions (the compilers' --version,
//               memoised: the result's compiler_version and the cache key)
//   inputs      check_inputs (source paths, compiler flags), dependencies,
//               link_alias_flags
//   the cache   compute_key, try_cache, publish, discard (a failed build's folder)
//   compiling   stage_sources, compile_sources (every source at once, up to
//               jobs(): step_runner.h), link
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "harness/build/build.h"
#include "harness/build/build_cache.h"
#include "harness/build/command_lines.h"
#include "harness/build/step_runner.h"
#include "harness/process.h"

namespace solbench::harness::build_internal {

// Bumped when the way artifacts are built changes (flags, layout), so old cache
// entries are not reused.
inline constexpr const char* kBuildRecipe = "solbench-build/2";

// The compilers a build uses: {path, `--version`}, in the order of the cache key.
using ToolVersions = std::vector<std::pair<std::string, std::string>>;

struct Builder {
  const Solution& sol;
  const BuildOptions& opts;
  BuildResult result;
  Deadline deadline;
  std::optional<BuildCache> cache;
  std::string log;  // appended to, bounded at the end

  Builder(const Solution& s, const BuildOptions& o);

  // ---- outcome
  // Sets the status and adds `msg` (as a line) to the log.
  BuildResult& fail(BuildStatus st, const std::string& msg);
  double left_seconds() const;
  int jobs() const { return opts.jobs > 0 ? opts.jobs : build_jobs(); }
  // The result, with the log bounded and the time taken.
  BuildResult finalize();

  // ---- tools (nullopt or false: result set)
  // Runs one tool; appends the command and its output to the log.
  bool run(const std::vector<std::string>& argv, const std::filesystem::path& cwd, const char* what);
  // `configured`, else $`env`, else `fallback` (toolchain.h compiler_name).
  std::optional<std::filesystem::path> compiler(const std::string& configured, const char* env,
                                                const char* fallback);
  std::optional<std::filesystem::path> kernel_include_dir();
  // kernel.h's folder and the C++ compiler, which every build needs; false when one
  // is missing.
  bool kernel_include_and_cxx(std::filesystem::path& inc, std::filesystem::path& cxx);
  // The interpreter the worker embeds, unless configured otherwise.
  std::string python() const;
  // Each program's --version; adds their first lines to result.compiler_version.
  std::optional<ToolVersions> versions(const std::vector<std::filesystem::path>& programs);

  // ---- inputs
  bool check_inputs();
  // Resolves the solution's dependencies into `deps`; false when one is missing.
  bool dependencies(const std::optional<std::filesystem::path>& nvcc, const std::string& python,
                    ResolvedDependencies* deps);
  // Makes the link aliases of `deps` in work/lnk; the -L flag for it (empty: none).
  std::vector<std::string> link_alias_flags(const ResolvedDependencies& deps,
                                            const std::filesystem::path& work);

  // ---- the cache
  // Everything that changes the artifact goes into the key.
  std::string compute_key(const ToolVersions& toolchain, const std::string& kernel_header,
                          const std::string& extra);
  // A cache hit: fills the result from the entry (or evicts a broken entry).
  bool try_cache(const std::string& key, const std::string& artifact);
  // Publishes the finished build; discards `work` when the cache refuses it.
  bool publish(const std::filesystem::path& work, const std::string& key, const std::string& artifact);
  // A failed build's folder: kept (keep_staging) or removed.
  void discard(const std::filesystem::path& work);

  // ---- compiling
  // A fresh work folder with the sources written under src/ and an empty obj/;
  // nullopt (and why) when a source cannot be written there.
  std::optional<std::filesystem::path> stage_sources(std::string* why);
  // run_steps (step_runner.h) under this build's limits; false (result set) when a
  // required step failed or the deadline passed.
  bool run_steps(std::vector<Step>& steps, const std::filesystem::path& cwd);
  // Compiles each compilable source with `argv_for(kind, path)` followed by
  // `-o OBJ SOURCE` (the path relative to src/, the working folder, so messages
  // name the solution's own paths), in parallel. `extra` steps (optional ones,
  // e.g. the PCH) run beside them. The object paths, or nullopt (the folder
  // discarded, result set) when a compile fails.
  using ArgvFor = std::function<std::vector<std::string>(SrcKind, const std::string&)>;
  std::optional<std::vector<std::string>> compile_sources(const std::filesystem::path& work,
                                                          const ArgvFor& argv_for,
                                                          std::vector<Step>* extra = nullptr);
  // Runs the link command; discards `work` when it fails.
  bool link(const std::vector<std::string>& argv, const std::filesystem::path& work);

 private:
  std::optional<std::string> version_of(const std::filesystem::path& prog);
  std::filesystem::path make_work_dir();
  void finish_ok(const std::filesystem::path& work, const std::string& key, const std::string& artifact);
};

}  // namespace solbench::harness::build_internal
