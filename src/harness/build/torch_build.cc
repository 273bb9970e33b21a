#include "harness/build/torch_build.h"

#include <algorithm>

#include "harness/build/torch_pch.h"
#include "harness/toolchain.h"

namespace solbench::harness::build_internal {
namespace fs = std::filesystem;

namespace {

// One torch-extension build: its tools and torch's settings, found before anything
// is compiled, and its steps.
struct TorchBuild {
  explicit TorchBuild(Builder& builder) : b(builder) {}

  Builder& b;
  bool any_cu = false;
  fs::path inc;  // holds solbench/kernel.h
  fs::path cxx;
  fs::path py;
  TorchSettings ts;
  std::optional<fs::path> nvcc;
  std::optional<fs::path> toolkit;  // for every source of a CUDA language, and the link
  ResolvedDependencies deps;
  ToolVersions toolchain;
  std::vector<fs::path> sys_includes;  // -isystem for every source
  std::string key, artifact;
  std::string module_define;
  std::vector<std::string> defines;
  fs::path work;

  // kernel.h, the compiler, the interpreter and torch's settings; false (b.result set)
  // when one is missing.
  bool find_torch() {
    if (!b.kernel_include_and_cxx(inc, cxx)) return false;
    const std::string python = b.python();
    auto p = find_program(python);
    if (!p) {
      b.fail(BuildStatus::CompileError, "torch binding: python not found: " + python);
      return false;
    }
    py = *p;
    ts = torch_settings(py, b.cache ? &*b.cache : nullptr, b.deadline);
    b.log += ts.note;
    if (ts.ok()) return true;
    b.fail(ts.timed_out ? BuildStatus::Timeout : BuildStatus::CompileError, ts.error);
    return false;
  }

  // nvcc for .cu sources, the toolkit, the dependencies, the compilers' versions.
  bool find_cuda_and_versions() {
    if (any_cu) {
      nvcc = find_nvcc(b.opts.nvcc);
      if (!nvcc) {
        b.fail(BuildStatus::Unsupported, "CUDA sources need nvcc: not found");
        return false;
      }
      if (ts.cuda_version.empty()) {
        b.fail(BuildStatus::Unsupported,
               "CUDA sources need a CUDA build of torch; this torch (" + ts.version + ") is CPU-only");
        return false;
      }
    }
    // The toolkit's headers serve every source of a CUDA language (a .cpp including
    // <ATen/cuda/CUDAContext.h> needs cuda_runtime_api.h), as in cpp_extension.
    const bool cuda_side = any_cu || has_cuda_language(b.sol) || !ts.cuda_version.empty();
    toolkit = nvcc ? nvcc : (cuda_side ? find_nvcc(b.opts.nvcc) : std::nullopt);
    if (!b.dependencies(toolkit, py.string(), &deps)) return false;
    std::vector<fs::path> programs = {cxx};
    if (nvcc) programs.push_back(*nvcc);
    auto v = b.versions(programs);
    if (!v) return false;
    toolchain = *v;
    b.result.compiler_version += "torch " + ts.version + "\n";
    return true;
  }

  // The cache key, the module's name and the artifact's.
  void compute_key() {
    sys_includes.assign(ts.include_paths.begin(), ts.include_paths.end());
    if (!ts.pybind11_include.empty()) sys_includes.emplace_back(ts.pybind11_include);
    sys_includes.emplace_back(ts.python_include);
    if (toolkit) sys_includes.push_back(cuda_root_of(*toolkit) / "include");
    for (const auto& d : deps.include_dirs) sys_includes.push_back(d);
    std::string extra_key = ts.text + "\n" + ts.origin + "\n" + deps.key();
    for (const auto& d : sys_includes) extra_key += "isystem=" + d.string() + "\n";
    key = b.compute_key(toolchain, "", extra_key);
    b.result.cache_key = key;
    b.result.module_name = "sb_ext_" + key.substr(0, 16);
    b.result.entry_symbol = b.sol.spec.entry_function;
    artifact = b.result.module_name + ".so";
  }

  void make_defines() {
    module_define = "-DTORCH_EXTENSION_NAME=" + b.result.module_name;
    defines = {module_define, "-DTORCH_API_INCLUDE_EXTENSION_H"};
    for (const auto& [n, v] : ts.pybind11_abi) defines.push_back("-DPYBIND11_" + n + "=\"" + v + "\"");
    defines.push_back("-D_GLIBCXX_USE_CXX11_ABI=" + std::to_string(ts.cxx11_abi));
  }

  // Host flags as cpp_extension.load() has them: no -O level of its own (cflags
  // may add one), -fPIC, C++17 unless cflags pick a standard. `for_pch` leaves out
  // what differs between solutions (the module name, the staging folder).
  std::vector<std::string> host_flags(bool for_pch) const {
    std::vector<std::string> a = {cxx.string()};
    if (!for_pch) a.push_back("-c");
    a.push_back("-fPIC");
    if (!has_prefix_flag(b.sol.spec.compile_options.cflags, {"-std"})) a.push_back("-std=c++17");
    for (const auto& d : defines)
      if (!for_pch || d != module_define) a.push_back(d);
    return a;
  }

  // The command for the precompiled header: host_flags(true), the system headers, cflags.
  std::vector<std::string> pch_flags() const {
    std::vector<std::string> flags = host_flags(true);
    append(flags, include_args(sys_includes, "-isystem"));
    append(flags, b.sol.spec.compile_options.cflags);
    return flags;
  }

  std::vector<std::string> compile_argv(SrcKind k, const std::string& path,
                                        const std::vector<fs::path>& includes, const TorchPch& pch) const {
    const auto& co = b.sol.spec.compile_options;
    std::vector<std::string> argv;
    if (k == SrcKind::Cuda) {
      argv = {nvcc->string(), "-c", "-Xcompiler", "-fPIC", "--expt-relaxed-constexpr",
              "-D__CUDA_NO_HALF_OPERATORS__", "-D__CUDA_NO_HALF_CONVERSIONS__",
              "-D__CUDA_NO_BFLOAT16_CONVERSIONS__", "-D__CUDA_NO_HALF2_OPERATORS__"};
      if (!has_prefix_flag(co.cuda_cflags, {"-std", "--std"})) argv.push_back("-std=c++17");
      append(argv, gencode_flags(b.opts.cuda_arch));
      append(argv, defines);
      append(argv, include_args(includes));
      append(argv, include_args(sys_includes, "-isystem"));
      append(argv, co.cuda_cflags);
    } else {
      argv = host_flags(false);
      append(argv, include_args(includes));
      append(argv, include_args(sys_includes, "-isystem"));
      append(argv, co.cflags);
      append(argv, pch.include_flags(path));
    }
    return argv;
  }

  // Every source into work/obj, the PCH step beside them; nullopt (b.result set)
  // when a source fails.
  std::optional<std::vector<std::string>> compile(TorchPch& pch) {
    std::vector<fs::path> includes = {work / "src", inc};
    for (const auto& d : b.opts.extra_include_dirs) includes.emplace_back(d);
    auto objects = b.compile_sources(
        work, [&](SrcKind k, const std::string& path) { return compile_argv(k, path, includes, pch); },
        pch.steps());
    pch.finish();
    return objects;
  }

  bool link(const std::vector<std::string>& objects) {
    std::vector<std::string> link = {cxx.string(), "-shared", "-o", (work / artifact).string()};
    append(link, objects);
    append(link, b.link_alias_flags(deps, work));
    for (const auto& l : ts.library_paths) append(link, {"-L" + l, "-Wl,-rpath," + l});
    append(link, {"-lc10", "-ltorch", "-ltorch_cpu", "-ltorch_python"});
    if (!ts.cuda_version.empty()) append(link, {"-lc10_cuda", "-ltorch_cuda"});
    if (toolkit) append_cuda_link(link, *toolkit, deps, b.sol);
    else append_host_link_flags(link, deps, b.sol);
    return b.link(link, work);
  }
};

}  // namespace

void build_torch(Builder& b) {
  if (!b.check_inputs()) return;
  TorchBuild tb(b);
  bool any_compiled = false;
  for (const auto& s : b.sol.sources) {
    tb.any_cu |= kind_of(s.path) == SrcKind::Cuda;
    any_compiled |= kind_of(s.path) != SrcKind::Other;
  }
  if (!any_compiled) {
    b.fail(BuildStatus::CompileError, "no compilable source (.cc/.cpp/.cu) among the solution's sources");
    return;
  }
  if (!tb.find_torch() || !tb.find_cuda_and_versions()) return;
  tb.compute_key();
  if (b.try_cache(tb.key, tb.artifact)) return;
  tb.make_defines();
  TorchPch pch(b);
  pch.plan(tb.ts, tb.toolchain[0], tb.pch_flags());
  std::string rejected;
  const std::optional<fs::path> staged = b.stage_sources(&rejected);
  if (!staged) {
    pch.abandon();
    b.fail(BuildStatus::Rejected, rejected);
    return;
  }
  tb.work = *staged;
  const auto objects = tb.compile(pch);
  if (objects && tb.link(*objects)) b.publish(tb.work, tb.key, tb.artifact);
}

}  // namespace solbench::harness::build_internal
