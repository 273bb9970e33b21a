"""The identities of torch's functions and of the harness's own, and what torch's
configuration holds: taken before the solution is loaded (torch_fingerprint) and
compared after its calls (torch_changes). The reference runs in the same worker:
a solution that replaces a torch function (under any name), a function of the
harness, or puts its own code in torch's configuration is named.
"""
from __future__ import annotations

import functools
import itertools
import operator
import sys
import types

import torch

from . import provenance
from .provenance import _PLAIN_TYPES, runtime_object, runtime_type, solution_code
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


def _class_entries(prefix: str, cls, seen=None) -> dict:
    """name -> object of a class's methods that count: Tensor's public ones and the
    dunders the reference uses through syntax; every callable of the others. (`seen`,
    here and below: the _Seen that notes what a look reads; None: a throwaway one.)"""
    out = {}
    for k, v in _resolve_class(cls, seen if seen is not None else _Seen()).items():
        if prefix == "torch.Tensor" and k.startswith("__") and k not in _TENSOR_DUNDERS:
            continue
        if prefix != "torch.Tensor" and not callable(v):
            continue
        out[f"{prefix}.{k}"] = v
    return out


def _resolve_class(cls, seen) -> dict:
    """name -> object as attribute lookup on `cls` finds it (first class of the MRO)."""
    out: dict = {}
    for klass in reversed(cls.__mro__):
        if klass is object:
            continue
        out.update(seen.read(vars(klass)))
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


def _harness_functions(seen=None) -> dict:
    """name -> identity of the harness's own functions (solbench_py: module
    functions, bound builtins, class methods, and their code objects): the worker
    calls them between the solution's calls to make inputs and copy and record
    outputs, so a solution that replaces one could change what is recorded."""
    out = {}
    seen = seen if seen is not None else _Seen()
    for mod_name, mod in list(sys.modules.items()):
        if not _harness_module(mod_name):
            continue
        seen.modules.append((mod_name, mod))
        if mod is None:
            continue
        for k, v in list(seen.read(vars(mod)).items()):
            if k.startswith("__") or not callable(v):
                continue
            if isinstance(v, type):
                # The harness's classes under every name that holds one: runtime
                # holds those the C++ worker looks up there (runtime.Workload).
                if not _harness_module(getattr(v, "__module__", "") or ""):
                    continue
                for mk, mv in seen.read(vars(v)).items():
                    if callable(mv) and (not mk.startswith("__") or mk == "__init__"):
                        out[f"{mod_name}.{k}.{mk}"] = id(mv)
                        code = getattr(mv, "__code__", None)
                        if code is not None:
                            out[f"{mod_name}.{k}.{mk}.__code__"] = id(code)
                            seen.codes.append((mv, code))
                continue
            out[f"{mod_name}.{k}"] = id(v)
            code = getattr(v, "__code__", None)
            if code is not None:
                out[f"{mod_name}.{k}.__code__"] = id(code)
                seen.codes.append((v, code))
    return out


# Operators the reference uses through syntax (x * y, x @ w, x ** 2, x[i]).
_TENSOR_DUNDERS = {f"__{n}__" for n in (
    "add", "radd", "iadd", "sub", "rsub", "isub", "mul", "rmul", "imul", "truediv",
    "rtruediv", "itruediv", "floordiv", "matmul", "rmatmul", "pow", "rpow", "ipow", "neg",
    "abs", "getitem", "setitem", "lt", "le", "gt", "ge", "eq", "ne", "and", "or", "xor",
    "invert", "mod", "torch_function", "torch_dispatch")}


def torch_changes(before: dict) -> str:
    """Names (comma-separated, at most 5) of what torch_fingerprint finds replaced
    since `before`, by objects that are not torch's or Triton's own; "" if none.

    The full look (_full_look) reads a few thousand entries and judges some thousand
    configuration values: 20-36 ms a call on a GPU host with Dynamo, Inductor and
    Triton imported, after every call of the solution. What it read when it last found
    nothing is kept (_Seen); while every dict it read holds the same objects, the
    modules it looked at are the same and the values whose verdict can change in place
    (functions, containers, instances of Python classes) still are not the solution's,
    its answer is again "" and it is not run (docs/anti-hack.md)."""
    if unchanged_since(before):
        return ""
    seen = _Seen()
    _FULL_LOOKS[0] += 1
    found = _full_look(before, seen)
    _LAST_CLEAN[0] = (before, seen) if not found else None
    return found


def unchanged_since(before: dict) -> bool:
    """Whether the quick look finds everything as the last full look at `before`
    found it, when that found nothing replaced; False where only a full look could
    say (torch_changes' first step)."""
    last = _LAST_CLEAN[0]
    return last is not None and last[0] is before and last[1].unchanged()


def _full_look(before: dict, seen) -> str:
    now = {}
    spaces = _torch_namespaces()
    classes = _torch_classes()
    seen.spaces = [m for _, m in spaces]
    seen.classes = [(c, c.__mro__) for _, c in classes]
    for prefix, mod in spaces:
        d = seen.read(vars(mod))
        for k in d:
            now[f"{prefix}.{k}"] = d[k]
    for prefix, cls in classes:
        now.update(_class_entries(prefix, cls, seen))
    harness = _harness_functions(seen)
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
        elif id(v) != ident:
            if not runtime_object(v):
                changed.append(name)
            else:
                seen.accepted.append(v)
    # A Tensor method added under a new name in torch.Tensor itself shadows nothing
    # the reference uses; only replacements and removals count.
    changed += _config_replacements(seen)
    return ", ".join(changed[:5]) + (f" and {len(changed) - 5} more" if len(changed) > 5 else "")


_HEAPTYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE: a class made by a class statement (or type())
_IN_PLACE = (list, tuple, set, frozenset, dict, types.FunctionType, types.MethodType,
             staticmethod, classmethod, functools.partial)
_is_not = operator.is_not
_SETTLED_TYPES = frozenset(id(t) for t in (*_PLAIN_TYPES, types.ModuleType))  # by identity:
# `t in (int, ...)` would ask a metaclass's __eq__


def _settled(v) -> bool:
    """Whether solution_code(v) gives the same answer for as long as `v` itself is held
    there: a plain value, a module, a class or an instance of a class defined in C
    (whose dict Python cannot change). Not a function (its __code__ can be set), a
    container, a method, a partial, nor anything of a Python class (its methods can
    be set, its instances' __class__ too). Decided on type(v) alone: nothing of the
    object's own (a __class__ property) is asked."""
    t = type(v)
    if id(t) in _SETTLED_TYPES:
        return True
    if t.__flags__ & _HEAPTYPE:
        return False
    if issubclass(t, type):
        return not v.__flags__ & _HEAPTYPE
    return not issubclass(t, _IN_PLACE)


class _Seen:
    """What a full look read when it found nothing: each dict (its keys and the
    identities of its values), the modules it looked at by name, the functions whose
    code it took, torch's namespaces and classes, the values judged as torch's own
    replacements (runtime_object) and the configuration values that are not _settled
    (watch()). unchanged(): all of it still is so, and those values are still not the
    solution's code, so a full look would find nothing again."""

    def __init__(self):
        self.dicts = []     # (dict or mappingproxy, its keys, their values)
        self.owners = []    # (object, the __dict__ read of it)
        self.modules = []   # (name, sys.modules' entry)
        self.codes = []     # (function, its __code__)
        self.accepted = []  # torch entries replaced by torch's own
        self.recheck = []   # configuration values judged again each time
        self.typed = []     # configuration values whose verdict is their class's ...
        self.types = []     # ... and those classes (type() of each)
        self.mros = []      # (class, its __mro__) of the classes those verdicts read
        self._class_ids = set()
        self.spaces = []
        self.classes = []   # (class, its __mro__)
        self.module_names = list(sys.modules)  # every name, in order: one swapped shows
        self.roots = len(provenance.SOLUTION_ROOTS)

    def read(self, d):
        self.dicts.append((d, list(d), list(d.values())))
        return d

    def read_vars(self, obj):
        """vars(obj), read; an object's __dict__ can be replaced whole, so which dict
        it is is kept too (a module's and a class's cannot)."""
        d = vars(obj)
        self.owners.append((obj, d))
        return self.read(d)

    def watch(self, v) -> None:
        """Notes a configuration value that is not _settled and not the solution's
        code, so that unchanged() can tell whether solution_code(v) still says so
        without asking it (1800 such values, 7.6 ms a look on the GPU host: 800 of
        them torch's _ConfigEntry). A function's verdict is its __code__'s file; that
        of a class, or of an object of a class that holds no container, is the
        functions in the dicts of the class's MRO: the class is kept (an object's
        __class__ can be set) and those dicts and code objects are read as the rest
        of the look. Containers, methods and partials are judged again each time."""
        if type(v) is types.FunctionType:
            self.codes.append((v, v.__code__))
            return
        if isinstance(v, _IN_PLACE):
            self.recheck.append(v)
            return
        klass = v if isinstance(v, type) else type(v)
        self.typed.append(v)
        self.types.append(type(v))
        for k in klass.__mro__:  # klass itself first
            self._class(k)

    def _class(self, k) -> None:
        if k is object or id(k) in self._class_ids:
            return
        self._class_ids.add(id(k))
        self.mros.append((k, k.__mro__))
        for m in self.read(vars(k)).values():
            if type(m) is types.FunctionType:
                self.codes.append((m, m.__code__))

    def unchanged(self) -> bool:
        mods = sys.modules
        names = list(mods)
        if len(names) != len(self.module_names) or any(map(_is_not, names, self.module_names)) \
                or len(provenance.SOLUTION_ROOTS) != self.roots:
            return False
        for name, mod in self.modules:
            if mods.get(name) is not mod:
                return False
        spaces = _torch_namespaces()
        if len(spaces) != len(self.spaces) or any(m is not k for (_, m), k in zip(spaces, self.spaces)):
            return False
        if any(c is not k or c.__mro__ is not mro
               for (_, c), (k, mro) in zip(_torch_classes(), self.classes)):
            return False
        for o, d in self.owners:
            if vars(o) is not d:
                return False
        for d, keys, values in self.dicts:
            # A key gone reads as _MISSING, never as a None it held: with its size the
            # same, every key it had still there means no key was swapped for another.
            if len(d) != len(keys) or \
                    any(map(_is_not, map(d.get, keys, itertools.repeat(_MISSING)), values)):
                return False
        for f, code in self.codes:
            if getattr(f, "__code__", None) is not code:
                return False
        if any(map(_is_not, map(type, self.typed), self.types)):
            return False
        for k, mro in self.mros:
            if k.__mro__ is not mro:
                return False
        if not all(runtime_object(v) for v in self.accepted):
            return False
        classes: dict = {}
        return not any(solution_code(v, classes=classes) for v in self.recheck)


_LAST_CLEAN: list = [None]  # (the fingerprint, the _Seen of its last full look that found nothing)
_FULL_LOOKS: list = [0]  # full looks so far in this process (the phases' checks_torch_full_looks)


# ---------------------------------------------------------------- configuration
#
# torch's and Triton's configuration (static_check.is_config_namespace: torch.backends.*,
# torch._dynamo.config, torch._inductor.config, triton.knobs, ...) takes plain values:
# setting them is tuning and is never reported. What is reported is the solution's own
# code put there (a hook, a function, an object of its class), under any spelling the
# static look misses. Values are read from the namespaces' dicts, torch's ConfigModule
# table (_config) and the settings objects they hold (torch.backends.cuda.matmul), not
# through getattr on the namespaces (properties, __getattr__).

def _config_entries(ns, seen):
    """(key, value) of what namespace `ns` holds: its dict, and for torch's
    ConfigModule its table (values, or entries whose fields hold the values)."""
    try:
        d = seen.read_vars(ns)
    except TypeError:
        return
    for k, v in list(d.items()):
        if not k.startswith("__"):
            yield k, v
    table = d.get("_config")
    if isinstance(table, dict):
        for k, entry in list(seen.read(table).items()):
            yield k, entry
            if runtime_type(type(entry)) and \
                    isinstance(getattr(entry, "__dict__", None), dict):
                for fv in list(seen.read_vars(entry).values()):  # _ConfigEntry: default, user_override, ...
                    yield k, fv


def _config_replacements(seen) -> list:
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
        if not config:
            continue
        seen.modules.append((name, mod))
        if mod is None:
            continue
        spaces = [(name, mod)]
        for k, v in list(vars(mod).items()):
            # Settings objects of torch's own held by a namespace (torch.backends.cuda.matmul).
            if not k.startswith("_") and not isinstance(v, (type, types.ModuleType)) and \
                    runtime_type(type(v)) and \
                    isinstance(getattr(v, "__dict__", None), dict):
                spaces.append((f"{name}.{k}", v))
        for space, obj in spaces:
            for k, v in _config_entries(obj, seen):
                if solution_code(v, classes=classes):
                    path = f"{space}.{k}{_CONFIG_NOTE}"
                    if path not in found:
                        found.append(path)
                elif not _settled(v):
                    seen.watch(v)
    return found


_CONFIG_NAMES: dict = {}  # module name -> is_config_namespace(name)
_CONFIG_NOTE = " (set to the solution's code: configuration takes plain values)"


_MISSING = object()
