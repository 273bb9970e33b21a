#include "harness/build/dependencies.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <map>
#include <optional>

#include "core/json.h"
#include "core/settings.h"
#include "harness/build/command_lines.h"
#include "harness/process.h"
#include "harness/toolchain.h"

namespace solbench::harness {
namespace fs = std::filesystem;

namespace {

using build_internal::append;
using build_internal::lower;
using build_internal::starts_with;

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

// The folders of `python`'s packages, probed once, when first asked for.
class PackageDirs {
 public:
  explicit PackageDirs(const std::string& python) : python_(python) {}
  const std::vector<std::string>& operator()(const std::string& name) {
    if (!probed_) {
      packages_ = probe_packages(python_);
      probed_ = true;
    }
    return packages_[name];
  }

 private:
  const std::string& python_;
  std::map<std::string, std::vector<std::string>> packages_;
  bool probed_ = false;
};

struct Wanted {
  bool cublas = false, cudnn = false, cutlass = false;
};

// What the languages and spec.dependencies ask for; a note for each name that adds nothing.
Wanted wanted_dependencies(const Solution& sol, std::string& notes) {
  Wanted w;
  w.cublas = sol.spec.has_language(Language::Cublas);
  w.cudnn = sol.spec.has_language(Language::Cudnn);
  w.cutlass = sol.spec.has_language(Language::Cutlass);
  for (const auto& name : sol.spec.dependencies) {
    switch (classify_dependency(name)) {
      case Dep::Cublas: w.cublas = true; break;
      case Dep::Cudnn: w.cudnn = true; break;
      case Dep::Cutlass: w.cutlass = true; break;
      case Dep::None:
        notes += "dependency '" + name + "': nothing to add to a C++ build\n";
        break;
    }
  }
  return w;
}

bool add_cublas(ResolvedDependencies& d, const fs::path& cuda_root) {
  if (cuda_root.empty()) {
    d.error = "dependency cublas: the CUDA toolkit was not found (nvcc; set CUDA_HOME or NVCC)";
    return false;
  }
  const fs::path lib = cuda_lib_dir(cuda_root);
  append(d.link_flags, {"-L" + lib.string(), "-Wl,-rpath," + lib.string(), "-lcublas", "-lcublasLt"});
  d.notes += "cublas: " + lib.string() + " (the CUDA toolkit)\n";
  d.resolved.push_back("cublas");
  return true;
}

// ---- cudnn

// Where cudnn may be, in order: (root, how it was found); the header is root/include/cudnn.h.
std::vector<std::pair<fs::path, std::string>> cudnn_roots(const fs::path& cuda_root,
                                                          const std::string& python,
                                                          PackageDirs& packages) {
  std::vector<std::pair<fs::path, std::string>> roots;
  const Settings& env = settings();
  for (const auto& [root, how] :
       {std::pair{env.cudnn_home, "$CUDNN_HOME"}, {env.cudnn_path, "$CUDNN_PATH"}})
    if (!root.empty()) roots.emplace_back(root, how);
  for (const auto& p : packages("nvidia.cudnn"))
    roots.emplace_back(p, "the nvidia-cudnn wheel of " + python);
  if (!cuda_root.empty()) roots.emplace_back(cuda_root, "the CUDA toolkit");
  roots.emplace_back("/usr", "the system");
  return roots;
}

// The folder under `root` holding cudnn.h; each folder looked in is added to `tried`.
std::optional<fs::path> cudnn_header_dir(const fs::path& root, std::string& tried) {
  std::vector<fs::path> inc_dirs = {root / "include"};
  if (root == "/usr")
    for (const char* t : {"include/x86_64-linux-gnu", "include/aarch64-linux-gnu"})
      inc_dirs.push_back(root / t);
  for (const auto& i : inc_dirs) {
    tried += " " + i.string();
    if (is_file(i / "cudnn.h")) return i;
  }
  return std::nullopt;
}

// The library beside cudnn.h at `root`: libcudnn.so, else a versioned libcudnn.so.N
// (the wheel's), aliased. Adds -L and rpath for it, -lcudnn; returns where it is.
std::string add_cudnn_library(ResolvedDependencies& d, const fs::path& root, const fs::path& cuda_root) {
  std::vector<fs::path> lib_dirs = {root / "lib", root / "lib64"};
  if (root == "/usr")
    lib_dirs = {"/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib"};
  else if (root == cuda_root)
    lib_dirs.insert(lib_dirs.begin(), cuda_lib_dir(cuda_root));
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
  return where;
}

bool add_cudnn(ResolvedDependencies& d, const fs::path& cuda_root, const std::string& python,
               PackageDirs& packages) {
  std::string tried;
  for (const auto& [root, how] : cudnn_roots(cuda_root, python, packages)) {
    const std::optional<fs::path> inc = cudnn_header_dir(root, tried);
    if (!inc) continue;
    if (!is_default_include_dir(*inc)) d.include_dirs.push_back(*inc);
    const std::string where = add_cudnn_library(d, root, cuda_root);
    d.notes += "cudnn: " + (*inc / "cudnn.h").string() + ", library " + where + " (" + how + ")\n";
    d.resolved.push_back("cudnn");
    return true;
  }
  d.error = "dependency cudnn: cudnn.h not found (looked in:" + tried +
            "). Install the cuDNN wheel for " + (python.empty() ? "python" : python) +
            " (pip install nvidia-cudnn-cu13, or -cu12 for a CUDA 12 toolkit) or set CUDNN_HOME "
            "to a folder with include/cudnn.h and lib/";
  return false;
}

// ---- cutlass

// The CUTLASS headers, looked for in one place after another until found.
struct CutlassSearch {
  explicit CutlassSearch(ResolvedDependencies& deps) : d(deps) {}

  ResolvedDependencies& d;
  std::string tried;
  bool found = false;

  bool take(const fs::path& root, const std::string& how) {
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
  }

  // The Python packages cutlass_library and cutlass of `python`.
  void take_package(const std::string& python, PackageDirs& packages) {
    for (const char* pkg : {"cutlass_library", "cutlass"}) {
      if (found) break;
      for (const auto& p : packages(pkg)) {
        const fs::path dir(p);
        const std::string how = std::string("the Python package ") + pkg + " of " + python;
        if (take(dir / "source", how) || take(dir, how) ||
            take(dir.parent_path() / "cutlass_library" / "source", how))
          break;
      }
    }
  }
};

bool add_cutlass(ResolvedDependencies& d, const std::string& python, PackageDirs& packages) {
  CutlassSearch s(d);
  const Settings& env = settings();
  if (!env.cutlass_dir.empty()) {
    if (!s.take(env.cutlass_dir, "$SOLBENCH_CUTLASS_DIR")) {
      d.error = "dependency cutlass: SOLBENCH_CUTLASS_DIR=" + env.cutlass_dir.string() +
                " holds neither include/cutlass/cutlass.h nor cutlass/cutlass.h (set it to a "
                "CUTLASS checkout, the folder holding include/cutlass/cutlass.h)";
      return false;
    }
  }
  for (const auto& [root, how] : {std::pair{env.cutlass_dir_env, "$CUTLASS_DIR"},
                                  {env.cutlass_path, "$CUTLASS_PATH"}, {env.cutlass_home, "$CUTLASS_HOME"}}) {
    if (s.found) break;
    if (!root.empty()) s.take(root, how);
  }
  s.take_package(python, packages);
  if (!s.found) s.take("/usr/local/cutlass", "/usr/local/cutlass");
  if (!s.found) {
    d.error = "dependency cutlass: the CUTLASS headers (cutlass/cutlass.h) were not found (looked in:" +
              s.tried +
              "). Set SOLBENCH_CUTLASS_DIR to a CUTLASS checkout (the folder holding "
              "include/cutlass/cutlass.h), or install the nvidia-cutlass Python package for " +
              (python.empty() ? std::string("python") : python);
    return false;
  }
  d.resolved.push_back("cutlass");
  return true;
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
  const Wanted w = wanted_dependencies(sol, d.notes);
  PackageDirs packages(python);
  if (w.cublas && !add_cublas(d, cuda_root)) return d;
  if (w.cudnn && !add_cudnn(d, cuda_root, python, packages)) return d;
  if (w.cutlass && !add_cutlass(d, python, packages)) return d;
  std::sort(d.resolved.begin(), d.resolved.end());
  return d;
}

}  // namespace solbench::harness
