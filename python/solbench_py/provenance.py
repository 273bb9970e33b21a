"""Whose code an object, a file or a frame is: the solution's (a file under one of
its roots), a runtime's (torch's, Triton's), or neither.

SOLUTION_ROOTS is the one list of the solution's folders (loading.load_solution
adds to it); the guards (guard.py, identity.py, hooks.py, threads.py) and the
baseline (baseline.py) read it here.
"""
from __future__ import annotations

import os
import types

SOLUTION_ROOTS: list = []
RUNTIME_PACKAGES = ("torch", "triton")

# The worker's own modules (what runtime.py held before it was split by concern):
# their frames never decide who created a thread or loaded a library.
_WORKER_MODULES = ("runtime", "provenance", "guard", "identity", "threads", "worker", "zygote",
                   "loading", "baseline", "workload", "pool", "native")


def _worker_files() -> set:
    here = os.path.dirname(os.path.abspath(__file__))
    return {os.path.join(here, m + ".py") for m in _WORKER_MODULES}


_STDLIB = os.path.dirname(os.__file__) + os.sep


def stdlib_file(filename: str) -> bool:
    """Whether code of `filename` is Python's standard library: a frozen module, or a
    file in its folder but for a site-packages or dist-packages folder inside it
    (a pyenv or non-venv install keeps torch there)."""
    if filename.startswith("<frozen"):
        return True
    f = os.path.abspath(filename)
    return f.startswith(_STDLIB) and "site-packages" not in f and "dist-packages" not in f


def frame_origin(frame) -> str:
    """Who created a thread: the nearest frame, walking out from the creation, that
    is the solution's code or a runtime's (torch, Triton). Frames of the standard
    library and of other libraries (tqdm's monitor thread, started by Inductor's
    progress bars) do not decide: whoever called them does."""
    worker = _worker_files()
    innermost = None
    while frame is not None:
        name = frame.f_code.co_filename
        f = os.path.abspath(name)
        if f in worker or stdlib_file(name):
            frame = frame.f_back
            continue
        where = f"{f}:{frame.f_lineno}"
        innermost = innermost or where
        for r in SOLUTION_ROOTS:
            if f.startswith(r):
                return f"solution: {f[len(r):]}:{frame.f_lineno}"
        parts = f.split(os.sep)
        for i, part in enumerate(parts[:-1]):
            if part in ("site-packages", "dist-packages") and parts[i + 1] in RUNTIME_PACKAGES:
                return "runtime: " + where
        frame = frame.f_back
    if innermost is None:
        return "unknown: created from the standard library only"
    return "unknown: " + innermost


def runtime_object(v) -> bool:
    """Whether a replacement comes from torch or Triton themselves (Dynamo wraps some
    torch functions when it is imported): a function defined in their files, or a
    builtin of their modules."""
    seen = 0
    while v is not None and seen < 8:
        seen += 1
        code = getattr(v, "__code__", None)
        if code is not None:
            f = os.path.abspath(code.co_filename)
            return any(os.sep + p + os.sep in f for p in RUNTIME_PACKAGES) and \
                not any(f.startswith(r) for r in SOLUTION_ROOTS)
        nxt = getattr(v, "__wrapped__", None) or getattr(v, "__func__", None)
        if nxt is None:
            mod = getattr(v, "__module__", None) or ""
            return isinstance(v, (types.BuiltinFunctionType, types.MethodDescriptorType,
                                  types.WrapperDescriptorType, types.GetSetDescriptorType,
                                  types.MemberDescriptorType, types.ClassMethodDescriptorType)) \
                and (mod.split(".")[0] in RUNTIME_PACKAGES or mod == "")
        v = nxt
    return False


def runtime_type(klass) -> bool:
    """A class torch or Triton defines (a solution's subclass of one is not)."""
    return str(getattr(klass, "__module__", "") or "").split(".")[0] in RUNTIME_PACKAGES


_FILE_VERDICTS: dict = {}  # (co_filename, roots) -> whether the solution's; few files


def in_solution(code) -> bool:
    key = (code.co_filename, len(SOLUTION_ROOTS))
    v = _FILE_VERDICTS.get(key)
    if v is None:
        f = os.path.abspath(code.co_filename)
        v = _FILE_VERDICTS[key] = any(f.startswith(r) for r in SOLUTION_ROOTS)
    return v


_PLAIN_TYPES = (int, float, bool, str, bytes, complex, type(None))


def solution_code(v, depth: int = 0, classes: dict | None = None) -> bool:
    """Whether `v` is the solution's code: a function defined in its files (also as a
    method, a functools.partial, a staticmethod), a class of its own, an instance of
    one, or a container holding one. `classes`, where one look asks about many values
    (identity._config_replacements: 5300 entries, most of them of a few classes),
    keeps each class's verdict on its own members for that look."""
    import functools
    if depth > 4 or type(v) in _PLAIN_TYPES:
        return False
    if isinstance(v, types.FunctionType):
        return in_solution(v.__code__)
    if isinstance(v, (types.MethodType, staticmethod, classmethod)):
        return solution_code(v.__func__, depth + 1, classes)
    if isinstance(v, functools.partial):
        return solution_code(v.func, depth + 1, classes)
    # A container holding the solution's code; one of a class of the solution's (an
    # OrderedDict subclass with a hook method) is that class's instance as well.
    if isinstance(v, (list, tuple, set, frozenset)):
        if any(solution_code(x, depth + 1, classes) for x in list(v)[:64]):
            return True
        if type(v) in (list, tuple, set, frozenset):
            return False
    elif isinstance(v, dict):
        if any(solution_code(x, depth + 1, classes) for x in list(v.values())[:64]):
            return True
        if type(v) is dict:
            return False
    if isinstance(v, types.ModuleType):
        return False
    klass = v if isinstance(v, type) else type(v)
    for k in klass.__mro__:  # by the files of its functions, not a __module__ it can name
        if k is object:
            continue
        own = classes.get(id(k)) if classes is not None else None
        if own is None:
            own = any(isinstance(m, types.FunctionType) and in_solution(m.__code__)
                      for m in list(vars(k).values()))
            if classes is not None:
                classes[id(k)] = own
        if own:
            return True
    return False
