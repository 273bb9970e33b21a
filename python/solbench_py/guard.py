"""What the solution may run and load, and what it did that is recorded.

The exec guard (an audit hook) explains refusals of programs the sandbox does not
run (the kernel enforces the list: src/harness/worker/landlock.h); loading a profiler or
GPU-management library through ctypes is recorded (violations()); building torch
extensions at run time is refused (block_extension_loading, at load_solution).
"""
from __future__ import annotations

import os
import sys

from . import hooks
from .provenance import frame_origin


class ExecRefused(PermissionError):
    """A program outside the sandbox's list was about to be run."""


def install_exec_guard(allowed: list[str]) -> None:
    """Refuses, with a message that says why, to start any program but the listed
    toolchains (files, or folders of them). The kernel enforces the same list
    (Landlock, src/harness/worker/landlock.h) for code that bypasses Python; this hook
    only turns a bare EACCES into an explanation. Audit hooks cannot be removed."""
    import shutil

    files, dirs = set(), []
    for p in allowed:
        real = os.path.realpath(p)
        if os.path.isdir(real):
            dirs.append(real.rstrip(os.sep) + os.sep)
        else:
            files.add(real)

    def permitted(program, env) -> tuple[bool, str]:
        if isinstance(program, (bytes, bytearray)):
            program = os.fsdecode(program)
        program = os.fspath(program)
        path = None
        if env is not None:
            path = (env.get("PATH") if isinstance(env, dict) else None)
        found = program if os.sep in program else shutil.which(program, path=path)
        if not found:
            return True, program  # nothing to run: the call fails on its own
        real = os.path.realpath(found)
        return real in files or any(real.startswith(d) for d in dirs), real

    def refuse(what: str) -> None:
        raise ExecRefused(
            f"solbench sandbox: running {what} is not allowed; a solution may start only the "
            "toolchains GPU runtimes use (the C compiler, ptxas, ldconfig), no shell or other "
            "program (docs/sandbox.md)")

    def first(argv):
        if isinstance(argv, (str, bytes, bytearray)) or hasattr(argv, "__fspath__"):
            return argv
        return argv[0] if argv else ""

    def hook(event, args):
        if event == "subprocess.Popen":
            executable, argv, _cwd, env = args
            program = executable if executable is not None else first(argv)
        elif event == "os.exec":
            program, _argv, env = args
        elif event == "os.posix_spawn":
            program, _argv, env = args
        elif event == "os.spawn":
            _mode, program, _argv, env = args
        elif event == "os.system":
            refuse(f"a shell command ({args[0]!r})")
            return
        elif event == "ctypes.dlopen":
            _note_library(args[0])
            return
        else:
            return
        ok, real = permitted(program, env)
        if not ok:
            refuse(repr(real))

    sys.addaudithook(hook)


# Libraries a kernel never needs, whose functions can tamper with what the harness
# measures (CUPTI's activity records are the GPU timer's source; NVML, the
# profilers' perf counters). Loading one through ctypes from the solution's code is
# recorded, not refused, and the worker ends the workload as REWARD_HACK after the
# call (worker_session.cc check_torch): whatever the library did is never reported.
_PROFILER_LIBRARIES = ("libcupti", "libnvidia-ml", "libnvperf", "libnvToolsExt")
_VIOLATIONS: list = []


def _note_library(name) -> None:
    if name is None:
        return
    base = os.path.basename(os.fsdecode(name) if isinstance(name, (bytes, bytearray)) else str(name))
    if not base.startswith(_PROFILER_LIBRARIES):
        return
    origin = frame_origin(sys._getframe(2))
    if origin.startswith("runtime: "):
        return
    _VIOLATIONS.append(f"loaded {base} through ctypes ({origin}); a solution has no use for "
                       "profiler or GPU-management libraries")


def violations() -> str:
    """What the solution's code did that the audit hooks recorded ('' when nothing)."""
    return "; ".join(dict.fromkeys(_VIOLATIONS + hooks.recorded()))


def block_extension_loading() -> None:
    """Refuses torch.utils.cpp_extension.load()/load_inline(): native code must come
    through the C++ build (import-checked, sandboxed); building extensions at run
    time would bypass that."""
    try:
        import torch.utils.cpp_extension as ext
    except Exception:  # pragma: no cover - depends on the torch build
        return

    def refused(*_a, **_k):
        raise RuntimeError("torch.utils.cpp_extension.load()/load_inline() are not permitted in "
                           "solbench workers; use a C++ solution (languages cpp or cuda_cpp)")

    ext.load = refused
    ext.load_inline = refused
