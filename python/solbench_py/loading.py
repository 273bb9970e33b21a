"""Loading the code a worker runs: the definition's reference (also for the
tracer and the tolerance probe), a Python-family solution, a built torch
extension; and whether a solution's languages can run here at all.
"""
from __future__ import annotations

import importlib
import os
import sys
import types

import torch

from . import provenance
from .guard import block_extension_loading


def exec_module(source: str, path: str | None, name: str, register: bool) -> types.ModuleType:
    """Runs `source` (the text of file `path`; None: no file, "<reference>") as module
    `name`; `register` puts it in sys.modules first, as an import does (dataclasses
    look it up while it runs)."""
    mod = types.ModuleType(name)
    if path is not None:
        mod.__file__ = path
    code = compile(source, path if path is not None else "<reference>", "exec")
    if register:
        sys.modules[name] = mod
    try:
        exec(code, mod.__dict__)
    except BaseException:
        if register:
            del sys.modules[name]
        raise
    return mod


def load_reference(source: str, path: str | None, register: bool = False) -> types.ModuleType:
    """Executes the definition's reference in a module of its own.

    The text is written to `path` first so that tools reading a function's
    source (inspect, @triton.jit) find it. The module is not registered in
    sys.modules: the solution cannot import it by name. (The baseline's worker,
    which runs no solution code, imports it by name: compiled_reference.)
    The tracer, which runs no solution code either, writes no file (`path` None)
    and registers the module (`register`), which dataclasses and enums look up.
    """
    if path is not None:
        with open(path, "w") as f:
            f.write(source)
    mod = exec_module(source, path, "solbench_reference", register=register)
    if not callable(mod.__dict__.get("run")):
        raise RuntimeError("the reference does not define a top-level run() function")
    return mod


def reference_function(mod: types.ModuleType, name: str):
    fn = mod.__dict__.get(name)
    if not callable(fn):
        raise RuntimeError(f"the reference has no function {name}()")
    return fn


# Languages of the public format that need more than torch: the module each one's
# runtime provides, its package, and the oldest GPU it supports (major, minor).
LANGUAGE_RUNTIMES = {
    "cute_dsl": ("cutlass", "nvidia-cutlass-dsl", None),
    "cutile": ("cuda.tile", "cuda-tile", (10, 0)),
    "cudnn_frontend": ("cudnn", "nvidia-cudnn-frontend", None),
}


def cannot_run_here(languages: list, device: str):
    """Why a solution in these languages cannot run on this device (a string), or
    None. cuTile targets Blackwell: on an older GPU it is skipped, not failed."""
    for lang in languages:
        entry = LANGUAGE_RUNTIMES.get(lang)
        if not entry or entry[2] is None:
            continue
        if not device.startswith("cuda"):
            return f"{lang} solutions need a GPU (compute capability {entry[2][0]}.{entry[2][1]}+)"
        cc = torch.cuda.get_device_capability(torch.device(device))
        if tuple(cc) < entry[2]:
            return (f"{lang} solutions need compute capability {entry[2][0]}.{entry[2][1]} or "
                    f"newer (Blackwell); this GPU ({torch.cuda.get_device_name(torch.device(device))}) "
                    f"is {cc[0]}.{cc[1]}")
    return None


def missing_runtime(languages: list, error) -> str | None:
    """When loading failed because a declared language's runtime package is not
    installed: the reason to skip (a string); else None."""
    if not isinstance(error, ModuleNotFoundError) or not error.name:
        return None
    for lang in languages:
        entry = LANGUAGE_RUNTIMES.get(lang)
        if not entry:
            continue
        module, package = entry[0], entry[1]
        if error.name == module or module.startswith(error.name + ".") or \
                error.name.startswith(module + "."):
            return (f"{lang} solutions need the {package} package ({module}), which is not "
                    f"installed here: {error}")
    return None


def load_solution(root: str, sources: list, entry_file: str, entry_function: str):
    """Writes a Python-family solution's sources under `root` and imports its entry.

    `sources` is [{path, content}] (paths already validated by the parent).
    Returns the entry function.
    """
    for s in sources:
        dest = os.path.join(root, s["path"])
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        with open(dest, "w") as f:
            f.write(s["content"])
    block_extension_loading()
    provenance.SOLUTION_ROOTS.append(os.path.abspath(root) + os.sep)
    if root not in sys.path:
        sys.path.insert(0, root)
    if not entry_file.endswith(".py"):
        raise RuntimeError(f"entry file {entry_file!r} is not a .py file")
    module_name = entry_file[:-3].replace("/", ".")
    importlib.invalidate_caches()
    mod = importlib.import_module(module_name)
    fn = getattr(mod, entry_function, None)
    if not callable(fn):
        raise RuntimeError(f"{entry_file} does not define a function {entry_function}()")
    return fn


def load_extension(path: str, module_name: str, entry_function: str):
    """Imports a built torch extension (torch binding) and returns its entry."""
    import importlib.util
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise RuntimeError(f"cannot import the extension {path}")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    fn = getattr(mod, entry_function, None)
    if not callable(fn):
        raise RuntimeError(f"the extension does not export {entry_function}()")
    return fn
