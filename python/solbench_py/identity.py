"""The identities of torch's functions and of the harness's own, and what torch's
configuration holds: taken before the solution is loaded (torch_fingerprint) and
compared after its calls (torch_changes). The reference runs in the same worker:
a solution that replaces a torch function (under any name), a function of the
harness, or puts its own code in torch's configuration is named.
"""
from __future__ import annotations

import sys
import types

import torch

from . import provenance
from .provenance import runtime_object, runtime_type, solution_code
from .static_check import is_config_namespace


def _torch_namespaces() -> list:
    import torch.nn.functional as F
    spaces = [("torch", torch), ("torch.nn.functional", F)]
    for name in ("linalg", "special", "fft"):
        mod = torch.__dict__.get(name)
        if isinstance(mod, types.ModuleType):
            spaces.append((f"torch.{name}", mod))
    return spaces


def _torch_classes() -> list:
    """(name, class) whose methods the harness calls between the solution's calls:
    Tensor's, and the CUDA stream and event classes the records copy through
    (record.py)."""
    out = [("torch.Tensor", torch.Tensor)]
    cuda = torch.__dict__.get("cuda")
    for name in ("Stream", "Event", "StreamContext"):
        cls = getattr(cuda, name, None) if cuda is not None else None
        if isinstance(cls, type):
            out.append((f"torch.cuda.{name}", cls))
    return out


def _class_entries(prefix: str, cls) -> dict:
    """name -> object of a class's methods that count: Tensor's public ones and the
    dunders the reference uses through syntax; every callable of the others."""
    out = {}
    for k, v in _resolve_class(cls).items():
        if prefix == "torch.Tensor" and k.startswith("__") and k not in _TENSOR_DUNDERS:
            continue
        if prefix != "torch.Tensor" and not callable(v):
            continue
        out[f"{prefix}.{k}"] = v
    return out


def _resolve_class(cls) -> dict:
    """name -> object as attribute lookup on `cls` finds it (first class of the MRO)."""
    out: dict = {}
    for klass in reversed(cls.__mro__):
        if klass is object:
            continue
        out.update(vars(klass))
    return out


def torch_fingerprint() -> dict:
    """Identities of torch's public functions and Tensor methods, taken before the
    solution is loaded. The reference runs in the same worker: a solution that
    replaces one (under any name: setattr on a built string) changes or slows it."""
    fp = {}
    for prefix, mod in _torch_namespaces():
        for k, v in vars(mod).items():
            if not k.startswith("__") and callable(v) and not isinstance(v, type):
                fp[f"{prefix}.{k}"] = id(v)
    for prefix, cls in _torch_classes():
        for k, v in _class_entries(prefix, cls).items():
            fp[k] = id(v)
    fp.update(_harness_functions())
    return fp


def _harness_module(name: str) -> bool:
    return name == "solbench_py" or name.startswith("solbench_py.")


def _harness_functions() -> dict:
    """name -> identity of the harness's own functions (solbench_py: module
    functions, bound builtins, class methods, and their code objects): the worker
    calls them between the solution's calls to make inputs and copy and record
    outputs, so a solution that replaces one could change what is recorded."""
    out = {}
    for mod_name, mod in list(sys.modules.items()):
        if not _harness_module(mod_name) or mod is None:
            continue
        for k, v in list(vars(mod).items()):
            if k.startswith("__") or not callable(v):
                continue
            if isinstance(v, type):
                # The harness's classes under every name that holds one: runtime
                # holds those the C++ worker looks up there (runtime.Workload).
                if not _harness_module(getattr(v, "__module__", "") or ""):
                    continue
                for mk, mv in vars(v).items():
                    if callable(mv) and (not mk.startswith("__") or mk == "__init__"):
                        out[f"{mod_name}.{k}.{mk}"] = id(mv)
                        code = getattr(mv, "__code__", None)
                        if code is not None:
                            out[f"{mod_name}.{k}.{mk}.__code__"] = id(code)
                continue
            out[f"{mod_name}.{k}"] = id(v)
            code = getattr(v, "__code__", None)
            if code is not None:
                out[f"{mod_name}.{k}.__code__"] = id(code)
    return out


# Operators the reference uses through syntax (x * y, x @ w, x ** 2, x[i]).
_TENSOR_DUNDERS = {f"__{n}__" for n in (
    "add", "radd", "iadd", "sub", "rsub", "isub", "mul", "rmul", "imul", "truediv",
    "rtruediv", "itruediv", "floordiv", "matmul", "rmatmul", "pow", "rpow", "ipow", "neg",
    "abs", "getitem", "setitem", "lt", "le", "gt", "ge", "eq", "ne", "and", "or", "xor",
    "invert", "mod", "torch_function", "torch_dispatch")}


def torch_changes(before: dict) -> str:
    """Names (comma-separated, at most 5) of what torch_fingerprint finds replaced
    since `before`, by objects that are not torch's or Triton's own; "" if none."""
    now = {}
    for prefix, mod in _torch_namespaces():
        d = vars(mod)
        for k in d:
            now[f"{prefix}.{k}"] = d[k]
    for prefix, cls in _torch_classes():
        now.update(_class_entries(prefix, cls))
    harness = _harness_functions()
    changed = []
    for name, ident in before.items():
        if name.startswith("solbench_py"):
            # The harness's own: any other identity is a replacement.
            if harness.get(name) != ident:
                changed.append(name + ("" if name in harness else " (removed)"))
            continue
        v = now.get(name, _MISSING)
        if v is _MISSING:
            changed.append(name + " (removed)")
        elif id(v) != ident and not runtime_object(v):
            changed.append(name)
    # A Tensor method added under a new name in torch.Tensor itself shadows nothing
    # the reference uses; only replacements and removals count.
    changed += _config_replacements()
    return ", ".join(changed[:5]) + (f" and {len(changed) - 5} more" if len(changed) > 5 else "")


# ---------------------------------------------------------------- configuration
#
# torch's and Triton's configuration (static_check.is_config_namespace: torch.backends.*,
# torch._dynamo.config, torch._inductor.config, triton.knobs, ...) takes plain values:
# setting them is tuning and is never reported. What is reported is the solution's own
# code put there (a hook, a function, an object of its class), under any spelling the
# static look misses. Values are read from the namespaces' dicts, torch's ConfigModule
# table (_config) and the settings objects they hold (torch.backends.cuda.matmul), not
# through getattr on the namespaces (properties, __getattr__).

def _config_entries(name: str, ns):
    """(path, value) of what namespace `ns` holds: its dict, and for torch's
    ConfigModule its table (values, or entries whose fields hold the values)."""
    try:
        d = vars(ns)
    except TypeError:
        return
    for k, v in list(d.items()):
        if not k.startswith("__"):
            yield f"{name}.{k}", v
    table = d.get("_config")
    if isinstance(table, dict):
        for k, entry in list(table.items()):
            yield f"{name}.{k}", entry
            if runtime_type(type(entry)) and \
                    isinstance(getattr(entry, "__dict__", None), dict):
                for fv in list(vars(entry).values()):  # _ConfigEntry: default, user_override, ...
                    yield f"{name}.{k}", fv


def _config_replacements() -> list:
    """Paths of the configuration entries that hold the solution's code, each with
    _CONFIG_NOTE."""
    if not provenance.SOLUTION_ROOTS:
        return []
    found = []
    classes: dict = {}  # solution_code's verdicts on classes, for this look only
    for name, mod in list(sys.modules.items()):
        config = _CONFIG_NAMES.get(name)
        if config is None:
            config = _CONFIG_NAMES[name] = is_config_namespace(name)
        if mod is None or not config:
            continue
        spaces = [(name, mod)]
        for k, v in list(vars(mod).items()):
            # Settings objects of torch's own held by a namespace (torch.backends.cuda.matmul).
            if not k.startswith("_") and not isinstance(v, (type, types.ModuleType)) and \
                    runtime_type(type(v)) and \
                    isinstance(getattr(v, "__dict__", None), dict):
                spaces.append((f"{name}.{k}", v))
        for space, obj in spaces:
            for path, v in _config_entries(space, obj):
                if solution_code(v, classes=classes) and path + _CONFIG_NOTE not in found:
                    found.append(path + _CONFIG_NOTE)
    return found


_CONFIG_NAMES: dict = {}  # module name -> is_config_namespace(name)
_CONFIG_NOTE = " (set to the solution's code: configuration takes plain values)"


_MISSING = object()
