// The embedded Python interpreter (pybind11). References, the operator tracer
// and Python-family solutions run in it; the C++ side talks to our Python
// helpers (python/solbench_py/) through JSON strings, so no Python types leak
// into other modules' headers.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace solbench::bridge {

// False when solbench was built without embedded Python.
bool python_available();

// Folder holding the `solbench_py` package: $SOLBENCH_PYTHON_DIR, else the
// source tree's python/ folder recorded at build time, else <exe>/../share/solbench/python.
std::filesystem::path python_package_dir();

// Starts the interpreter once per process (idempotent) with python_package_dir()
// on sys.path. Throws std::runtime_error when unavailable.
void ensure_interpreter();

// Calls solbench_py.<module>.<function>(arg) where arg and the result are JSON
// text. A Python exception becomes std::runtime_error carrying its traceback.
std::string call_json(std::string_view module, std::string_view function, const std::string& arg);

// torch.__version__, or "" when torch cannot be imported.
std::string torch_version();

// For a process that runs solbench's own code and references only, never a
// solution's (the zygote before it forks, the SOL tracer), called before it
// imports torch: where torch has no bytecode beside its sources (a container
// image stripped of __pycache__), Python writes the bytecode of what the process
// imports under <cache home>/pycache and reads it from there (sys.pycache_prefix),
// so that the next such process does not compile torch's sources again (on the
// GPU host: torch 4.1-5.6 s, torch._dynamo 5.0-5.7 s, Inductor 3.6-3.9 s each time;
// docs/speed.md). Workers forked from the zygote read it and write nothing
// (PYTHONDONTWRITEBYTECODE in their environment). The first such process also
// compiles torch's and its requirements' sources there in a background group on
// the spare cores while it imports (SOLBENCH_PRECOMPILE=0: not). SOLBENCH_PYCACHE=0,
// a PYTHONPYCACHEPREFIX of the user's or no cache folder leave Python as it is.
// Returns what it did, in words (solbench_py/bytecode.py); never throws.
std::string keep_bytecode();

}  // namespace solbench::bridge
