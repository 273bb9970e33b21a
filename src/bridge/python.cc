#include "bridge/python.h"

#include <cstdlib>
#include <mutex>
#include <stdexcept>

#include <unistd.h>

#include "core/settings.h"

#ifdef SOLBENCH_HAVE_PYTHON
#include <pybind11/embed.h>
namespace py = pybind11;
#endif

namespace solbench::bridge {

namespace fs = std::filesystem;

static fs::path executable_dir() {
  char buf[4096];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return {};
  buf[n] = '\0';
  return fs::path(buf).parent_path();
}

fs::path python_package_dir() {
  if (const fs::path& dir = settings().python_dir; !dir.empty()) return dir;
#ifdef SOLBENCH_SOURCE_DIR
  if (fs::path src = fs::path(SOLBENCH_SOURCE_DIR) / "python"; fs::exists(src / "solbench_py"))
    return src;
#endif
  return executable_dir() / ".." / "share" / "solbench" / "python";
}

#ifdef SOLBENCH_HAVE_PYTHON

bool python_available() { return true; }

namespace {
// The interpreter lives until process exit: finalising Python with torch loaded
// is known to crash at shutdown, and workers exit right after their work anyway.
py::scoped_interpreter* g_interpreter = nullptr;
std::once_flag g_once;
}  // namespace

void ensure_interpreter() {
  std::call_once(g_once, [] {
    // Start Python as if it were the interpreter found at configure time (or
    // $SOLBENCH_PYTHON): its prefix, and a virtual environment's site-packages
    // (pyvenv.cfg next to it), are then found the way that interpreter finds them.
    PyConfig config;
    PyConfig_InitPythonConfig(&config);
    config.install_signal_handlers = 0;  // the worker owns SIGINT/SIGTERM
    std::string exe = settings().python;
#ifdef SOLBENCH_PYTHON_EXECUTABLE
    if (exe.empty()) exe = SOLBENCH_PYTHON_EXECUTABLE;
#endif
    if (!exe.empty()) PyConfig_SetBytesString(&config, &config.program_name, exe.c_str());
    g_interpreter = new py::scoped_interpreter(&config);
    py::module_::import("sys").attr("path").attr("insert")(0, python_package_dir().string());
  });
}

std::string call_json(std::string_view module, std::string_view function, const std::string& arg) {
  ensure_interpreter();
  py::gil_scoped_acquire gil;
  try {
    py::module_ mod = py::module_::import(("solbench_py." + std::string(module)).c_str());
    py::object result = mod.attr(std::string(function).c_str())(arg);
    return result.cast<std::string>();
  } catch (const py::error_already_set& e) {
    throw std::runtime_error("Python error in solbench_py." + std::string(module) + "." +
                             std::string(function) + ": " + e.what());
  }
}

std::string torch_version() {
  ensure_interpreter();
  py::gil_scoped_acquire gil;
  try {
    return py::module_::import("torch").attr("__version__").cast<std::string>();
  } catch (const py::error_already_set&) {
    return "";
  }
}

std::string keep_bytecode() {
  const fs::path home = settings().cache_home();
  if (!settings().pycache || home.empty()) return "off";
  try {
    ensure_interpreter();
    py::gil_scoped_acquire gil;
    return py::module_::import("solbench_py.bytecode")
        .attr("keep_bytecode")((home / "pycache").string(), "torch", settings().precompile)
        .cast<std::string>();
  } catch (const std::exception& e) {
    return std::string("unchanged: ") + e.what();
  }
}

#else  // built without embedded Python

bool python_available() { return false; }
void ensure_interpreter() {
  throw std::runtime_error("solbench was built without embedded Python (pybind11/python3-dev)");
}
std::string call_json(std::string_view, std::string_view, const std::string&) {
  ensure_interpreter();
  return {};
}
std::string torch_version() { return ""; }
std::string keep_bytecode() { return "off"; }

#endif

}  // namespace solbench::bridge
