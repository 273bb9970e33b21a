#!/usr/bin/env python3
"""The worker's Python guards (python/solbench_py/runtime.py):
  - thread attribution (_frame_origin): the nearest frame that is the solution's or a
    runtime's decides; a library in between (tqdm's monitor thread under Inductor)
    does not;
  - profiler libraries loaded through ctypes by the solution's code are recorded
    (violations()), a runtime's are not.
Exit status 0 when every case holds."""
import importlib.util
import os
import sys
import tempfile
import threading
import time

from solbench_py import runtime


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    return path


def main() -> int:
    root = tempfile.mkdtemp()
    site = os.path.join(root, "site-packages")
    lib = load(write(os.path.join(site, "monitorlib", "mon.py"),
                     "import threading\n"
                     "def start():\n"
                     "    t = threading.Thread(target=lambda: None)\n"
                     "    t.start()\n"
                     "    t.join()\n"), "monitorlib_mon")
    rt = load(write(os.path.join(site, "triton", "fake_runtime.py"),
                    "def compile(lib):\n    lib.start()\n"), "fake_triton_runtime")
    sol_dir = os.path.join(root, "solution")
    sol = load(write(os.path.join(sol_dir, "main.py"),
                     "def run(lib):\n    lib.start()\n"), "fake_solution")
    runtime._SOLUTION_ROOTS[:] = [sol_dir + os.sep]
    runtime.install_thread_registry()

    def origin_of(fn):
        before = set(runtime.thread_origins())
        fn()
        time.sleep(0.05)
        new = [v for k, v in runtime.thread_origins().items() if k not in before]
        return new[-1] if new else "none"

    failures = []
    o = origin_of(lambda: sol.run(lib))
    if not o.startswith("solution: main.py"):
        failures.append(f"solution through a library: {o}")
    o = origin_of(lambda: rt.compile(lib))
    if not (o.startswith("runtime: ") and "fake_runtime.py" in o):
        failures.append(f"runtime through a library: {o}")
    o = origin_of(lib.start)
    if not (o.startswith("unknown: ") and "mon.py" in o):
        failures.append(f"library alone: {o}")
    # ctypes to CUPTI under a name built at run time, from the solution's code.
    runtime.install_exec_guard([])
    cu = load(write(os.path.join(sol_dir, "prof.py"),
                    "import ctypes\n"
                    "def go():\n"
                    "    try:\n"
                    "        ctypes.CDLL('lib' + 'cu' + 'pti.so.999')\n"
                    "    except OSError:\n"
                    "        pass\n"), "fake_solution_prof")
    rt2 = load(write(os.path.join(site, "triton", "prof_rt.py"),
                     "import ctypes\n"
                     "def go():\n"
                     "    try:\n"
                     "        ctypes.CDLL('libnvidia-ml.so.999')\n"
                     "    except OSError:\n"
                     "        pass\n"), "fake_triton_prof")
    if runtime.violations():
        failures.append(f"violations before anything loaded: {runtime.violations()}")
    rt2.go()
    if runtime.violations():
        failures.append(f"a runtime's load was blamed on the solution: {runtime.violations()}")
    cu.go()
    v = runtime.violations()
    if "libcupti.so.999" not in v or "solution: prof.py" not in v:
        failures.append(f"the solution's ctypes load of CUPTI was not recorded: {v!r}")
    for f in failures:
        print("FAIL", f)
    print("ok" if not failures else f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
