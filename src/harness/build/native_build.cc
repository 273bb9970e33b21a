#include "harness/build/native_build.h"

#include "harness/build/artifact_check.h"
#include "harness/toolchain.h"

namespace solbench::harness::build_internal {
namespace fs = std::filesystem;

namespace {

constexpr const char* kArtifact = "lib.so";

// What the sources need.
struct NativeSources {
  bool cpu_only = false;  // no CUDA language: host code only
  bool any_cu = false, any_c = false, any_compiled = false;
};

NativeSources scan_sources(const Solution& sol) {
  NativeSources s;
  s.cpu_only = !has_cuda_language(sol);
  for (const auto& f : sol.sources) {
    const SrcKind k = kind_of(f.path);
    s.any_cu |= k == SrcKind::Cuda;
    s.any_c |= k == SrcKind::C;
    s.any_compiled |= k != SrcKind::Other;
  }
  return s;
}

// Why the solution cannot be built natively as it is (a CompileError), or nullopt.
std::optional<std::string> native_refusal(const Solution& sol, const NativeSources& s,
                                          const BuildOptions& opts) {
  if (!s.any_compiled) return "no compilable source (.cc/.cpp/.cxx/.c/.cu) among the solution's sources";
  if (s.cpu_only && s.any_cu)
    return "language cpp builds host code only; .cu sources need a CUDA language (cuda_cpp, ...)";
  if (!sol.spec.entry_function.empty() && !sol.find_source(sol.spec.entry_file))
    return "spec.entry_point: file '" + sol.spec.entry_file + "' is not among the sources";
  if (!opts.cuda_arch.empty() && gencode_flags(opts.cuda_arch).empty())
    return "invalid CUDA arch '" + opts.cuda_arch + "' (expected a compute capability such as 90a, 100a, 80)";
  return std::nullopt;
}

// One native build: its tools, found before anything is compiled, and its steps.
struct NativeBuild {
  NativeBuild(Builder& builder, const NativeSources& sources) : b(builder), src(sources) {}

  Builder& b;
  NativeSources src;
  fs::path inc;  // holds solbench/kernel.h
  fs::path cxx;
  std::optional<fs::path> cc, nvcc;
  // The toolkit also serves host sources of CUDA languages (cuda_runtime.h) and the link.
  std::optional<fs::path> toolkit;
  ResolvedDependencies deps;
  std::vector<fs::path> host_system;  // -isystem for host sources
  std::string key;
  fs::path work;

  // The compilers, the toolkit, the dependencies; false (b.result set) when one is missing.
  bool find_tools() {
    if (!b.kernel_include_and_cxx(inc, cxx)) return false;
    if (src.any_c && !(cc = b.compiler(b.opts.cc, "CC", "gcc"))) return false;
    if (src.any_cu) {
      nvcc = find_nvcc(b.opts.nvcc);
      if (!nvcc) {
        b.fail(BuildStatus::Unsupported,
               "CUDA sources need nvcc: not found (set NVCC or CUDA_HOME, or install the CUDA toolkit)");
        return false;
      }
    }
    toolkit = nvcc ? nvcc : (src.cpu_only ? std::nullopt : find_nvcc(b.opts.nvcc));
    return b.dependencies(toolkit, b.python(), &deps);
  }

  // The cache key (the compilers' versions, kernel.h, the dependencies, the
  // toolkit's headers); false (b.result set) when a version or kernel.h is unreadable.
  bool compute_key() {
    std::vector<fs::path> programs = {cxx};
    if (cc) programs.push_back(*cc);
    if (nvcc) programs.push_back(*nvcc);
    const auto toolchain = b.versions(programs);
    if (!toolchain) return false;
    std::string header;
    try {
      header = read_text_file(inc / "solbench" / "kernel.h");
    } catch (const std::exception& e) {
      b.fail(BuildStatus::CompileError, e.what());
      return false;
    }
    if (toolkit) host_system.push_back(cuda_root_of(*toolkit) / "include");
    std::string extra_key = deps.key();
    for (const auto& d : host_system) extra_key += "host-isystem=" + d.string() + "\n";
    key = b.compute_key(*toolchain, header, extra_key);
    b.result.cache_key = key;
    b.result.entry_symbol = b.sol.spec.entry_function;
    return true;
  }

  std::vector<std::string> compile_argv(SrcKind k, const std::vector<fs::path>& includes) const {
    const auto& co = b.sol.spec.compile_options;
    std::vector<std::string> argv;
    if (k == SrcKind::Cuda) {
      argv = {nvcc->string(), "-c", "-Xcompiler", "-fPIC"};
      if (!has_prefix_flag(co.cuda_cflags, {"-std", "--std"})) argv.push_back("-std=c++17");
      append(argv, gencode_flags(b.opts.cuda_arch));
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
      argv = {cxx.string(), "-c", "-fPIC", "-O3"};
      if (!has_prefix_flag(co.cflags, {"-std"})) argv.push_back("-std=c++17");
      append(argv, include_args(includes));
      append(argv, include_args(host_system, "-isystem"));
      append(argv, include_args(deps.include_dirs, "-isystem"));
      append(argv, co.cflags);
    }
    return argv;
  }

  // Every source into work/obj; the objects, or nullopt (b.result set).
  std::optional<std::vector<std::string>> compile() {
    std::vector<fs::path> includes = {work / "src", inc};
    for (const auto& d : b.opts.extra_include_dirs) includes.emplace_back(d);
    return b.compile_sources(work, [&](SrcKind k, const std::string&) { return compile_argv(k, includes); });
  }

  // The objects into work/lib.so; false (work discarded, b.result set) on failure.
  bool link(const std::vector<std::string>& objects) {
    std::vector<std::string> link = {cxx.string(), "-shared", "-o", (work / kArtifact).string()};
    append(link, objects);
    append(link, b.link_alias_flags(deps, work));
    if (src.any_cu || !src.cpu_only) {
      if (!nvcc) nvcc = toolkit;
      if (!nvcc) {
        b.discard(work);
        b.fail(BuildStatus::Unsupported, "a CUDA language needs the CUDA toolkit (nvcc): not found");
        return false;
      }
      if (!device_link(objects, link)) return false;
      append_cuda_link(link, *nvcc, deps, b.sol);
    } else {
      append_host_link_flags(link, deps, b.sol);
    }
    return b.link(link, work);
  }

  // Relocatable device code (-rdc=true, -dc) is linked by nvcc first; adds its
  // object and the device runtime to `link`.
  bool device_link(const std::vector<std::string>& objects, std::vector<std::string>& link) {
    const auto& co = b.sol.spec.compile_options;
    if (!has_prefix_flag(co.cuda_cflags, {"-rdc=true", "--relocatable-device-code=true", "-dc"}))
      return true;
    const fs::path dlink = work / "obj" / "dlink.o";
    std::vector<std::string> dl = {nvcc->string(), "-dlink", "-Xcompiler", "-fPIC"};
    append(dl, gencode_flags(b.opts.cuda_arch));
    append(dl, objects);
    dl.push_back("-o");
    dl.push_back(dlink.string());
    if (!b.run(dl, work / "src", "device link")) {
      b.discard(work);
      return false;
    }
    link.push_back(dlink.string());
    link.push_back("-lcudadevrt");
    return true;
  }

  // The entry must be callable by name: C linkage, default visibility.
  bool check_entry() {
    auto why = entry_export_error(work / kArtifact, b.sol.spec.entry_function);
    if (!why) return true;
    b.discard(work);
    b.fail(BuildStatus::CompileError, *why);
    return false;
  }
};

}  // namespace

void build_native(Builder& b) {
  if (!b.check_inputs()) return;
  NativeBuild nb(b, scan_sources(b.sol));
  if (auto why = native_refusal(b.sol, nb.src, b.opts)) {
    b.fail(BuildStatus::CompileError, *why);
    return;
  }
  if (!nb.find_tools() || !nb.compute_key()) return;
  if (b.try_cache(nb.key, kArtifact)) {
    inspect_artifact(b.result);
    return;
  }
  std::string rejected;
  const std::optional<fs::path> staged = b.stage_sources(&rejected);
  if (!staged) {
    b.fail(BuildStatus::Rejected, rejected);
    return;
  }
  nb.work = *staged;
  const auto objects = nb.compile();
  if (!objects || !nb.link(*objects) || !nb.check_entry()) return;
  if (b.publish(nb.work, nb.key, kArtifact)) inspect_artifact(b.result);
}

}  // namespace solbench::harness::build_internal
