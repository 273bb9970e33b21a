"""The Python half of the evaluation worker (src/harness/worker/worker.cc).

The C++ worker holds the objects made here (pybind11) and drives the
evaluation: it generates inputs, runs the reference and the solution, checks
outputs and times calls. Nothing here trusts the solution: its outputs are
checked for type, shape, dtype and values; its module lives apart from the
reference's.
"""
from __future__ import annotations

import gc
import importlib
import os
import platform
import sys
import types
from typing import Any

import torch

from . import correctness, hooks, inputs as inputs_mod, record
from .static_check import is_config_namespace
from .record import harness_only


# ---------------------------------------------------------------- process setup

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
    origin = _frame_origin(sys._getframe(2))
    if origin.startswith("runtime: "):
        return
    _VIOLATIONS.append(f"loaded {base} through ctypes ({origin}); a solution has no use for "
                       "profiler or GPU-management libraries")


def violations() -> str:
    """What the solution's code did that the audit hooks recorded ('' when nothing)."""
    return "; ".join(dict.fromkeys(_VIOLATIONS + hooks.recorded()))


# ---------------------------------------------------------------- thread origins
#
# The worker counts its threads before the solution is loaded (worker_session.cc);
# a thread that appears later is the solution's unless it is shown to come from a
# runtime (torch's Inductor, Triton). Python threads are attributed when they start:
# every Python thread is created through _thread.start_new_thread, which is wrapped
# here (before any solution code runs) to record, under the new thread's native id,
# the innermost creating frame that is not thread machinery. A thread created
# around the wrapper has no record and counts as the solution's.

_THREAD_ORIGINS: dict = {}
_SOLUTION_ROOTS: list = []
_RUNTIME_PACKAGES = ("torch", "triton")


def _frame_origin(frame) -> str:
    """Who created a thread: the nearest frame, walking out from the creation, that
    is the solution's code or a runtime's (torch, Triton). Frames of the standard
    library and of other libraries (tqdm's monitor thread, started by Inductor's
    progress bars) do not decide: whoever called them does."""
    stdlib = os.path.dirname(os.__file__) + os.sep
    here = os.path.abspath(__file__)
    innermost = None
    while frame is not None:
        name = frame.f_code.co_filename
        f = os.path.abspath(name)
        in_stdlib = f.startswith(stdlib) and "site-packages" not in f and "dist-packages" not in f
        if name.startswith("<frozen") or f == here or in_stdlib:
            frame = frame.f_back
            continue
        where = f"{f}:{frame.f_lineno}"
        innermost = innermost or where
        for r in _SOLUTION_ROOTS:
            if f.startswith(r):
                return f"solution: {f[len(r):]}:{frame.f_lineno}"
        parts = f.split(os.sep)
        for i, part in enumerate(parts[:-1]):
            if part in ("site-packages", "dist-packages") and parts[i + 1] in _RUNTIME_PACKAGES:
                return "runtime: " + where
        frame = frame.f_back
    if innermost is None:
        return "unknown: created from the standard library only"
    return "unknown: " + innermost


def install_thread_registry() -> None:
    import _thread
    import threading

    original = _thread.start_new_thread
    if getattr(original, "_solbench", False):
        return

    def start_new_thread(function, args, kwargs=None):
        origin = _frame_origin(sys._getframe(1))

        def bootstrap(*a, **k):
            _THREAD_ORIGINS[threading.get_native_id()] = origin
            return function(*a, **k)

        return original(bootstrap, args, kwargs or {})

    start_new_thread._solbench = True
    _thread.start_new_thread = start_new_thread
    threading._start_new_thread = start_new_thread  # threading keeps its own reference


def thread_origins() -> dict:
    """{native thread id: "runtime: file:line" | "solution: ..." | "unknown: ..."}."""
    return dict(_THREAD_ORIGINS)


# ---------------------------------------------------------------- the zygote
# (src/harness/worker/zygote.h): a process that imported torch once and forks workers.

_PRELOAD_GROUPS = {
    # torch.compile (the baseline, Python solutions): Dynamo and Inductor take seconds
    # to import; Triton is what Inductor and Triton solutions generate code with.
    "compile": ("triton", "torch._dynamo", "torch._inductor.config", "torch._inductor.compile_fx"),
}


def zygote_preload(group: str) -> list:
    """Imports a group of modules in the zygote, so that the workers it forks find
    them imported. Best effort: a module this torch lacks is skipped (named in the
    result)."""
    missing = []
    for name in _PRELOAD_GROUPS.get(group, ()):
        try:
            importlib.import_module(name)
        except Exception as e:  # noqa: BLE001 - any import failure only costs the worker the import
            missing.append(f"{name}: {type(e).__name__}: {e}")
    return missing


def _shut_down_nvml() -> None:
    """torch.cuda.is_available() (NVML-based here, see zygote.cc) initialises NVML and
    leaves it so; a forked child inherits that state and its own nvmlInit then fails
    (torch's allocator asserts on it when it runs out of memory, seen on the H100).
    Shut it down, as many times as it was initialised, before forking."""
    try:
        with open("/proc/self/maps") as f:
            if "libnvidia-ml" not in f.read():
                return
        import ctypes
        lib = ctypes.CDLL("libnvidia-ml.so.1")
        for _ in range(64):
            if lib.nvmlShutdown() != 0:  # NVML_ERROR_UNINITIALIZED: nothing left
                break
    except OSError:
        pass


def zygote_check() -> str:
    """Why the zygote must not fork workers any more ("" when it may): a driver
    initialised here would be unusable in every forked child."""
    _shut_down_nvml()
    if torch.cuda.is_initialized():
        return "CUDA was initialised in the zygote"
    return ""


def after_fork(environ: dict) -> None:
    """In a worker forked from the zygote, before anything else runs: the process
    environment is the requester's (set in C++); Python's copies taken when the
    zygote started follow it."""
    os.environ.clear()
    os.environ.update(environ)
    import tempfile
    tempfile.tempdir = None  # TMPDIR is the worker's scratch folder
    sys.dont_write_bytecode = bool(os.environ.get("PYTHONDONTWRITEBYTECODE"))
    cfg = sys.modules.get("torch._inductor.config")
    threads = os.environ.get("TORCHINDUCTOR_COMPILE_THREADS")
    if cfg is not None and threads and threads.isdigit():
        cfg.compile_threads = int(threads)


def _warm_numpy_blas() -> None:
    """numpy's OpenBLAS starts its thread pool when it is loaded, and again lazily
    after a fork: a worker forked from the zygote would otherwise have it start
    during a call and the threads be taken for the solution's."""
    np = sys.modules.get("numpy")
    if np is None:
        return
    try:
        a = np.ones((256, 256))
        (a @ a).sum()
    except Exception:  # noqa: BLE001 - a courtesy; a numpy without BLAS changes nothing
        pass


def init(device: str, kernels: bool = True) -> dict:
    """Imports torch, warms its thread pools (so threads torch starts lazily are
    not blamed on the solution), and describes the environment. On a GPU the
    context and the cuBLAS handle are made first; `kernels` then runs the few
    kernels that start the rest (warm_kernels), which a spare worker runs apart,
    under the GPU's timing lock."""
    allowed = os.environ.get("SOLBENCH_EXEC_ALLOW")
    if allowed is not None:
        install_exec_guard([p for p in allowed.split(os.pathsep) if p])
    install_thread_registry()
    hooks.install()
    dev = torch.device(device)
    if dev.type == "cuda":
        torch.cuda.set_device(dev)
        torch.empty(1, device=dev)  # the context and the allocator, no kernel
        torch.cuda.current_blas_handle()
    torch.set_grad_enabled(False)
    _warm_numpy_blas()
    if kernels:
        warm_kernels(device)
    return {
        "torch": torch.__version__,
        "python": platform.python_version(),
        "hardware": hardware_name(dev),
        "num_threads": torch.get_num_threads(),
    }


def warm_kernels(device: str) -> None:
    """A random matrix, a product and two sums: the generator, cuBLAS's and the
    reductions' first launches."""
    dev = torch.device(device)
    a = torch.randn(64, 64, device=dev)
    (a @ a).sum().item()
    torch.ones(1 << 16, device=dev).sum().item()


# make_inputs' round for a spare's warm-up, with a seed of its own: values no
# evaluation draws (theirs come from seeds the parent hands out, values.h).
_WARM_ROUND = 1_000_003


def warm_spare(warm: dict, device: str) -> int:
    """A spare worker's warm-up (zygote.h, "Spares") on the first workload of the
    evaluation that asked for it, the likely next one's too: the kernels that make
    its inputs, and with warm["run_reference"] (a reference worker's spare) the
    reference's and the comparison's, are loaded before any evaluation wants them.
    The values are drawn for a round no evaluation uses, and the memory is handed
    back. Returns the steps run."""
    source = warm.get("reference_source") or ""
    custom = warm.get("custom_inputs_entrypoint") or ""
    ref = custom_fn = None
    if source and (custom or warm.get("run_reference")):
        mod = load_reference(source, os.path.join(os.getcwd(), "_warm_reference.py"))
        ref = reference_function(mod, "run")
        if custom:
            custom_fn = reference_function(mod, custom)
    elif custom:
        return 0
    w = Workload(warm["workload"], device, ref, custom_fn)
    steps = 0
    try:
        x = w.make_inputs(_WARM_ROUND, int.from_bytes(os.urandom(7), "little"))
        steps = 1
        if warm.get("run_reference") and ref is not None:
            refs = w.run_reference(x)
            w.check(refs, refs, True)
            steps = 3
    finally:
        release_memory(device)
    return steps


def json_text(obj) -> str:
    """JSON for the C++ side (worker_session.cc from_py). Python's json writes
    Infinity/NaN, which are not JSON: a huge but finite output can make an error
    ratio overflow to inf. Infinities become the largest finite double (the value
    still says "enormous"), NaN becomes null."""
    import json
    import math

    def finite(o):
        if isinstance(o, float) and not math.isfinite(o):
            return None if math.isnan(o) else math.copysign(sys.float_info.max, o)
        if isinstance(o, dict):
            return {k: finite(v) for k, v in o.items()}
        if isinstance(o, (list, tuple)):
            return [finite(v) for v in o]
        return o

    return json.dumps(finite(obj), allow_nan=False)


def current_stream(device: str) -> int:
    """The cudaStream_t (as an int) native kernels launch on: torch's current
    stream of that device; 0 (NULL) on the CPU."""
    dev = torch.device(device)
    if dev.type != "cuda":
        return 0
    return int(torch.cuda.current_stream(dev).cuda_stream)


def release_memory(device: str) -> None:
    """After a workload: hands the memory torch caches for it back to the driver, so
    that the next workload (or another process on the same GPU) can have it."""
    if device.startswith("cuda"):
        gc.collect()
        torch.cuda.empty_cache()


def hardware_name(dev: torch.device) -> str:
    if dev.type == "cuda":
        return torch.cuda.get_device_name(dev)
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


# ---------------------------------------------------------------- torch's identity

def _torch_namespaces() -> list:
    import torch.nn.functional as F
    spaces = [("torch", torch), ("torch.nn.functional", F)]
    for name in ("linalg", "special", "fft"):
        mod = torch.__dict__.get(name)
        if isinstance(mod, types.ModuleType):
            spaces.append((f"torch.{name}", mod))
    return spaces


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
    for k, v in _resolve_class(torch.Tensor).items():
        if not (k.startswith("__") and k not in _TENSOR_DUNDERS):
            fp[f"torch.Tensor.{k}"] = id(v)
    fp.update(_harness_functions())
    return fp


def _harness_functions() -> dict:
    """name -> identity of the harness's own functions (solbench_py: module
    functions, bound builtins, class methods, and their code objects): the worker
    calls them between the solution's calls to make inputs and copy and record
    outputs, so a solution that replaces one could change what is recorded."""
    out = {}
    for mod_name, mod in list(sys.modules.items()):
        if not (mod_name == "solbench_py" or mod_name.startswith("solbench_py.")) or mod is None:
            continue
        for k, v in list(vars(mod).items()):
            if k.startswith("__") or not callable(v):
                continue
            if isinstance(v, type):
                if getattr(v, "__module__", "") != mod_name:
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


def _runtime_object(v) -> bool:
    """Whether a replacement comes from torch or Triton themselves (Dynamo wraps some
    torch functions when it is imported): a function defined in their files, or a
    builtin of their modules."""
    seen = 0
    while v is not None and seen < 8:
        seen += 1
        code = getattr(v, "__code__", None)
        if code is not None:
            f = os.path.abspath(code.co_filename)
            return any(os.sep + p + os.sep in f for p in _RUNTIME_PACKAGES) and \
                not any(f.startswith(r) for r in _SOLUTION_ROOTS)
        nxt = getattr(v, "__wrapped__", None) or getattr(v, "__func__", None)
        if nxt is None:
            mod = getattr(v, "__module__", None) or ""
            return isinstance(v, (types.BuiltinFunctionType, types.MethodDescriptorType,
                                  types.WrapperDescriptorType, types.GetSetDescriptorType,
                                  types.MemberDescriptorType, types.ClassMethodDescriptorType)) \
                and (mod.split(".")[0] in _RUNTIME_PACKAGES or mod == "")
        v = nxt
    return False


def torch_changes(before: dict) -> str:
    """Names (comma-separated, at most 5) of what torch_fingerprint finds replaced
    since `before`, by objects that are not torch's or Triton's own; "" if none."""
    now = {}
    for prefix, mod in _torch_namespaces():
        d = vars(mod)
        for k in d:
            now[f"{prefix}.{k}"] = d[k]
    for k, v in _resolve_class(torch.Tensor).items():
        now[f"torch.Tensor.{k}"] = v
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
        elif id(v) != ident and not _runtime_object(v):
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

def _runtime_type(klass) -> bool:
    """A class torch or Triton defines (a solution's subclass of one is not)."""
    return str(getattr(klass, "__module__", "") or "").split(".")[0] in _RUNTIME_PACKAGES


_FILE_VERDICTS: dict = {}  # (co_filename, roots) -> whether the solution's; few files


def _in_solution(code) -> bool:
    key = (code.co_filename, len(_SOLUTION_ROOTS))
    v = _FILE_VERDICTS.get(key)
    if v is None:
        f = os.path.abspath(code.co_filename)
        v = _FILE_VERDICTS[key] = any(f.startswith(r) for r in _SOLUTION_ROOTS)
    return v


def _solution_code(v, depth: int = 0) -> bool:
    """Whether `v` is the solution's code: a function defined in its files (also as a
    method, a functools.partial, a staticmethod), a class of its own, an instance of
    one, or a container holding one."""
    import functools
    if depth > 4 or type(v) in _PLAIN_TYPES:
        return False
    if isinstance(v, types.FunctionType):
        return _in_solution(v.__code__)
    if isinstance(v, (types.MethodType, staticmethod, classmethod)):
        return _solution_code(v.__func__, depth + 1)
    if isinstance(v, functools.partial):
        return _solution_code(v.func, depth + 1)
    if isinstance(v, (list, tuple, set, frozenset)):
        return any(_solution_code(x, depth + 1) for x in list(v)[:64])
    if isinstance(v, dict):
        return any(_solution_code(x, depth + 1) for x in list(v.values())[:64])
    if isinstance(v, types.ModuleType):
        return False
    klass = v if isinstance(v, type) else type(v)
    for k in klass.__mro__:  # by the files of its functions, not a __module__ it can name
        if k is object:
            continue
        for member in list(vars(k).values()):
            if isinstance(member, types.FunctionType) and _in_solution(member.__code__):
                return True
    return False


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
            if _runtime_type(type(entry)) and isinstance(getattr(entry, "__dict__", None), dict):
                for fv in list(vars(entry).values()):  # _ConfigEntry: default, user_override, ...
                    yield f"{name}.{k}", fv


def _config_replacements() -> list:
    """Paths of the configuration entries that hold the solution's code, each with
    _CONFIG_NOTE."""
    if not _SOLUTION_ROOTS:
        return []
    found = []
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
                    _runtime_type(type(v)) and isinstance(getattr(v, "__dict__", None), dict):
                spaces.append((f"{name}.{k}", v))
        for space, obj in spaces:
            for path, v in _config_entries(space, obj):
                if _solution_code(v) and path + _CONFIG_NOTE not in found:
                    found.append(path + _CONFIG_NOTE)
    return found


_CONFIG_NAMES: dict = {}  # module name -> is_config_namespace(name)
_PLAIN_TYPES = (int, float, bool, str, bytes, complex, type(None))
_CONFIG_NOTE = " (set to the solution's code: configuration takes plain values)"


_MISSING = object()


# ---------------------------------------------------------------- loading code

def _exec_module(source: str, path: str, name: str, register: bool) -> types.ModuleType:
    """Runs `source` (the text of file `path`) as module `name`; `register` puts it
    in sys.modules first, as an import does (dataclasses look it up while it runs)."""
    mod = types.ModuleType(name)
    mod.__file__ = path
    code = compile(source, path, "exec")
    if register:
        sys.modules[name] = mod
    try:
        exec(code, mod.__dict__)
    except BaseException:
        if register:
            del sys.modules[name]
        raise
    return mod


def load_reference(source: str, path: str) -> types.ModuleType:
    """Executes the definition's reference in a module of its own.

    The text is written to `path` first so that tools reading a function's
    source (inspect, @triton.jit) find it. The module is not registered in
    sys.modules: the solution cannot import it by name. (The baseline's worker,
    which runs no solution code, imports it by name: compiled_reference.)
    """
    with open(path, "w") as f:
        f.write(source)
    mod = _exec_module(source, path, "solbench_reference", register=False)
    if not callable(mod.__dict__.get("run")):
        raise RuntimeError("the reference does not define a top-level run() function")
    return mod


def reference_function(mod: types.ModuleType, name: str):
    fn = mod.__dict__.get(name)
    if not callable(fn):
        raise RuntimeError(f"the reference has no function {name}()")
    return fn


def importable_reference(fn):
    """The reference function `fn` (made by load_reference, maybe behind a
    decorator such as @torch.no_grad()) again, from a module registered in
    sys.modules under a name of its own ("solbench_reference_" + its content's
    hash), as an ordinary import would make it.

    Dynamo looks a module up by name (importlib) when it inlines a function
    whose globals are not those of the frame it compiles: run() behind
    @torch.no_grad() is such a function, and with the module unregistered every
    such reference failed to compile ("No module named 'solbench_reference'").
    Pickling (Inductor's caches) and dataclasses look modules up by name too.
    Only for a worker that has loaded no solution code: elsewhere the reference
    stays unreachable by name (load_reference)."""
    import hashlib
    import inspect
    if _SOLUTION_ROOTS:
        raise RuntimeError("a worker that loaded solution code may not register the reference "
                           "in sys.modules")
    g = getattr(inspect.unwrap(fn), "__globals__", None)
    if g is None:
        raise RuntimeError(f"the reference's {getattr(fn, '__name__', fn)!r} is not a Python "
                           "function (no globals)")
    name = g.get("__name__", "")
    if sys.modules.get(name) is not None and getattr(sys.modules[name], "__dict__", None) is g:
        return fn  # importable already
    attr = next((k for k, v in g.items() if v is fn), None)
    path = g.get("__file__")
    if attr is None or not path:
        raise RuntimeError("the reference function is not a top-level name of a module "
                           "load_reference made")
    with open(path) as f:
        source = f.read()
    name = "solbench_reference_" + hashlib.sha256(source.encode()).hexdigest()[:16]
    mod = sys.modules.get(name)
    if mod is None:
        mod = _exec_module(source, path, name, register=True)
    again = mod.__dict__.get(attr)
    if not callable(again):
        raise RuntimeError(f"the reference imported again has no {attr}()")
    return again


# Dynamo's recompile limits for the baseline: every workload is a new shape.
_BASELINE_RECOMPILE_LIMIT = 1024


def _configure_dynamo() -> None:
    """Dynamo's settings that would otherwise run the baseline eagerly without a
    word: the recompile limit (8 by default; past it the function runs eagerly),
    an error rather than silence should it still be hit, and errors raised
    rather than suppressed. Knobs this torch lacks are skipped (names changed
    across versions: cache_size_limit became recompile_limit)."""
    try:
        import torch._dynamo as dynamo
    except Exception:  # noqa: BLE001 - no Dynamo: torch.compile fails, visibly, when called
        return
    cfg = dynamo.config
    limits = ("recompile_limit", "cache_size_limit", "accumulated_recompile_limit",
              "accumulated_cache_size_limit")
    for k in limits:
        if hasattr(cfg, k):
            setattr(cfg, k, max(int(getattr(cfg, k)), _BASELINE_RECOMPILE_LIMIT))
    for k, v in (("fail_on_recompile_limit_hit", True), ("fail_on_cache_limit_hit", True),
                 ("suppress_errors", False)):
        if hasattr(cfg, k):
            setattr(cfg, k, v)
    # Inductor's C++ (CPU) kernels: precompiled headers are hashed with `openssl`,
    # a program the sandbox does not run; they only make compiling faster.
    try:
        import torch._inductor.config as inductor
        if hasattr(inductor, "cpp_cache_precompile_headers"):
            inductor.cpp_cache_precompile_headers = False
    except Exception:  # noqa: BLE001 - a torch without Inductor fails (visibly) when compiling
        pass


def _dynamo_graphs() -> int:
    """Graphs Dynamo has compiled in this process (a counter since torch 2.0)."""
    try:
        from torch._dynamo.utils import counters
        return int(counters["stats"]["unique_graphs"])
    except Exception:  # noqa: BLE001 - a Dynamo without the counter: no check
        return -1


def _dynamo_skips() -> str:
    """Dynamo's own words for what it did not compile (graph breaks, skipped
    frames), for the reason of a baseline that compiled nothing."""
    try:
        from torch._dynamo.utils import counters
        seen = []
        for group in ("graph_break", "unimplemented"):
            for k in counters.get(group, {}):
                line = (str(k).splitlines() or [""])[0][:150]
                if line and line not in seen:
                    seen.append(line)
        return "; ".join(seen[:3])
    except Exception:  # noqa: BLE001
        return ""


def _first_line(e: BaseException) -> str:
    return f"{type(e).__name__}: {(str(e).splitlines() or [''])[0][:300]}"


def compiled_reference(fn):
    """The scoring baseline's callable (docs/score.md): the reference `fn` under
    torch.compile where this torch has it. Returns (callable, method, reason) with
    method "torch.compile" or "eager" and reason why eager ("" when compiled).

    Only for a worker that runs no solution code (the baseline's): the function
    compiled is `fn` imported by name (importable_reference). Shapes are static:
    each workload gets the graph compiled for its shapes, as a process compiling
    that workload alone would (automatic dynamic shapes, and the profile Dynamo
    keeps of them across processes, would make one workload's T_b depend on the
    workloads measured before it).

    torch.compile compiles on the first call of each shape, so a failure shows up
    there: the callable then runs `fn` eagerly for good, and its `method` and
    `reason` attributes say so (the worker reads them after every workload). So
    does a first call after which Dynamo has compiled no graph (it skipped the
    function and ran it eagerly). An error that the eager reference raises too is
    the reference's, and propagates."""
    compile_fn = getattr(torch, "compile", None)
    if compile_fn is None:
        return fn, "eager", f"torch.compile unavailable (torch {torch.__version__})"
    try:
        target = importable_reference(fn)
    except Exception as e:  # noqa: BLE001 - any failure means eager, with the reason
        return fn, "eager", f"the reference could not be imported by name for torch.compile: " \
                            f"{_first_line(e)}"
    try:
        _configure_dynamo()
        compiled = compile_fn(target, dynamic=False)
    except Exception as e:  # noqa: BLE001
        return fn, "eager", f"torch.compile failed: {_first_line(e)}"

    state = {"first": True}

    def eager(reason: str) -> None:
        baseline.method = "eager"
        baseline.reason = reason

    def baseline(*args):
        if baseline.method == "torch.compile":
            try:
                if not state["first"]:
                    return compiled(*args)
                state["first"] = False
                before = _dynamo_graphs()
                out = compiled(*args)
                if before >= 0 and _dynamo_graphs() == before:
                    skips = _dynamo_skips()
                    eager("torch.compile compiled no graph: Dynamo ran the reference eagerly" +
                          (f" ({skips})" if skips else ""))
                return out
            except Exception as e:  # noqa: BLE001
                eager(f"torch.compile failed on a call: {_first_line(e)}")
        return fn(*args)

    baseline.method = "torch.compile"
    baseline.reason = ""
    return baseline, "torch.compile", ""


def _block_extension_loading() -> None:
    # Native code must come through the C++ build (import-checked, sandboxed);
    # building extensions at run time would bypass that.
    try:
        import torch.utils.cpp_extension as ext
    except Exception:  # pragma: no cover - depends on the torch build
        return

    def refused(*_a, **_k):
        raise RuntimeError("torch.utils.cpp_extension.load()/load_inline() are not permitted in "
                           "solbench workers; use a C++ solution (languages cpp or cuda_cpp)")

    ext.load = refused
    ext.load_inline = refused


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
    _block_extension_loading()
    _SOLUTION_ROOTS.append(os.path.abspath(root) + os.sep)
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


# ---------------------------------------------------------------- outputs

def normalize_outputs(result: Any, names: list, dtypes: list, device) -> list:
    """A return-style call's result as a list of tensors in output order.

    Accepts one tensor, a tuple/list in output order, a dict by name, or a
    Python scalar for a single output (as SOL-ExecBench does).
    """
    device = torch.device(device)

    def as_tensor(i, v):
        if isinstance(v, torch.Tensor):
            return v
        if isinstance(v, (bool, int, float)):
            return torch.tensor(v, dtype=inputs_mod.torch_dtype(dtypes[i]), device=device)
        raise TypeError(f"output {names[i]}: got {type(v).__name__}, expected a tensor")

    if isinstance(result, dict):
        missing = [n for n in names if n not in result]
        if missing:
            raise TypeError(f"returned dict lacks outputs {missing}")
        return [as_tensor(i, result[n]) for i, n in enumerate(names)]
    if isinstance(result, (torch.Tensor, bool, int, float)):
        if len(names) != 1:
            raise TypeError(f"returned one value but {len(names)} outputs are defined")
        return [as_tensor(0, result)]
    if isinstance(result, (tuple, list)):
        if len(result) != len(names):
            raise TypeError(f"returned {len(result)} values but {len(names)} outputs are defined")
        return [as_tensor(i, v) for i, v in enumerate(result)]
    raise TypeError(f"returned {type(result).__name__}; expected a tensor, a tuple of "
                    "tensors or a dict of output name -> tensor")


def lazy_outputs(outs: list) -> str:
    """Names the outputs that are not plain tensors (subclasses can defer or fake work)."""
    bad = [f"{type(t).__module__}.{type(t).__name__}" for t in outs if type(t) is not torch.Tensor]
    return ", ".join(bad)


# ---------------------------------------------------------------- one workload

class Workload:
    """Inputs, reference and checks of one resolved workload.

    `spec`: {uuid, axes: {name: value}, inputs: [{name, dtype, shape, description,
    source}], outputs: [{name, dtype, shape}], tolerance: {...}, op_type,
    dataset_root}.
    """

    def __init__(self, spec: dict, device: str, reference_run, custom_fn=None):
        self.spec = spec
        self.device = torch.device(device)
        self.reference_run = reference_run
        self.custom_fn = custom_fn
        self.out_names = [o["name"] for o in spec["outputs"]]
        self.out_dtypes = [o["dtype"] for o in spec["outputs"]]
        self.tolerance = {**correctness.default_tolerance(), **(spec.get("tolerance") or {})}

    def make_inputs(self, round_index: int, seed: int) -> list:
        """Round `round_index`'s inputs (correctness rounds, then the timing input
        sets), drawn from `seed`, the round's seed (the parent's, handed out now)."""
        origins: list = []
        with harness_only():
            values = inputs_mod.generate_inputs(self.spec, int(seed), round_index, self.device,
                                                self.custom_fn, origins)
        self.input_origins = origins
        return values

    def fresh_slots(self) -> list:
        """Indices of the inputs that get fresh values in every timed call
        (inputs.refreshable); known once make_inputs has run."""
        origins = getattr(self, "input_origins", None) or []
        return [j for j, (inp, o) in enumerate(zip(self.spec["inputs"], origins))
                if inputs_mod.refreshable(inp, o)]

    def input_names(self, slots: list) -> list:
        return [self.spec["inputs"][j]["name"] for j in slots]

    def run_reference(self, args: list) -> list:
        # On copies: a reference that writes into its inputs must not change what
        # the solution sees. Which inputs it writes is remembered: the solution may
        # write those (a cache updated in place), and no others.
        copies = clone_all(args)
        out = self.reference_run(*copies)
        self.reference_writes = {i for i, (a, c) in enumerate(zip(args, copies))
                                 if isinstance(a, torch.Tensor) and not same_bits(a, c)}
        outs = normalize_outputs(out, self.out_names, self.out_dtypes, self.device)
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        return [t.detach().clone() if not t.is_contiguous() else t.detach() for t in outs]

    def snapshot(self, args: list) -> list:
        """Copies of the tensor inputs, to compare with after the solution's call."""
        return clone_all(args)

    def changed_inputs(self, args: list, before: list) -> list:
        """Names of the inputs whose bits differ from `before`, among those the
        reference leaves alone."""
        names = [i["name"] for i in self.spec["inputs"]]
        writes = getattr(self, "reference_writes", set())
        return [names[i] if i < len(names) else f"#{i}"
                for i, (a, b) in enumerate(zip(args, before))
                if i not in writes and isinstance(a, torch.Tensor) and not same_bits(a, b)]

    def judge_inputs(self, args: list, after: list, before=None) -> tuple:
        """The judge's look at one recorded call's inputs: `args` are the inputs
        generated again here, `after` and `before` the solution's worker's digests
        (record.digest) of the same inputs as the call left them and, for
        correctness rounds, as it was given them. Returns (names whose values the
        solution's worker did not start from: its inputs were not these, names the
        call changed, among those the reference leaves alone)."""
        names = [i["name"] for i in self.spec["inputs"]]
        mine = record.digests(args)
        for what, got in (("inputs_after", after), ("inputs_before", before)):
            if got is not None and (not isinstance(got, list) or len(got) != len(mine)):
                raise record.RecordError(f"{what}: {len(got) if isinstance(got, list) else got!r} "
                                         f"digests for {len(mine)} inputs")
        writes = getattr(self, "reference_writes", set())

        def name(i):
            return names[i] if i < len(names) else f"#{i}"
        unreproduced = [name(i) for i, m in enumerate(mine)
                        if before is not None and m is not None and before[i] != m]
        changed = [name(i) for i, m in enumerate(mine)
                   if m is not None and i not in writes and after[i] != m]
        return unreproduced, changed

    def call_values(self, input_sets: list) -> "CallValues":
        """The values pool call i was given (CallValues.pristine, with the call's
        seed), as an ArgPool with the same sets fills them; needs no pool."""
        return CallValues(self.spec, input_sets, True, self.fresh_slots(), self.device)

    def alloc_outputs(self, refs=None) -> list:
        with harness_only():
            outs = inputs_mod.allocate_outputs(self.spec["outputs"], self.device)
            for i, t in enumerate(outs):
                inputs_mod.poison_(t, refs[i] if refs is not None else None)
        return outs

    def repoison(self, outs: list, refs=None) -> None:
        for i, t in enumerate(outs):
            inputs_mod.poison_(t, refs[i] if refs is not None else None)

    def collect(self, result, dps_outputs: list, dps: bool) -> list:
        if dps:
            return dps_outputs
        return normalize_outputs(result, self.out_names, self.out_dtypes, self.device)

    def check(self, outs: list, refs: list, check_meta: bool = True) -> dict:
        return correctness.check_outputs(outs, refs, self.out_names, self.tolerance, check_meta)

    def arg_pool(self, input_sets: list, reference_sets: list, capacity: int, dps: bool,
                 fresh: bool = True):
        """Timed-call arguments. With `fresh`, the refreshable inputs (fresh_slots)
        get values of their own in every call, drawn from the seed each call is
        given (ArgPool.next); the others rotate through `input_sets`."""
        return ArgPool(input_sets, reference_sets, self.spec["outputs"], capacity, dps,
                       self.device, (self.spec, self.fresh_slots()) if fresh else None)


# ---------------------------------------------------------------- timing arguments

def pool_layout(v):
    """How ArgPool holds an input: None for a non-tensor or a self-overlapping layout
    (the input set's own tensor is passed), else (tensor, broadcast dims, compacted
    tensor). A broadcast view (stride 0, as `expand` makes; custom input generators
    return them) stays one: its distinct elements get the pool, and each call's
    argument is their view expanded again, the layout the reference was given."""
    if not isinstance(v, torch.Tensor):
        return None
    t = v if all(s >= 0 for s in v.stride()) else v.contiguous()
    bcast = tuple(d for d, (n, st) in enumerate(zip(t.shape, t.stride())) if st == 0 and n > 1)
    c = ArgPool._compact(t, bcast)
    if torch._debug_has_internal_overlap(c) == 1:
        return None
    return t, bcast, c


class CallValues:
    """The inputs pool call i is given: input set (i mod K) of `input_sets`, with
    each refreshable input (slots; tensors only) replaced by values drawn for call
    i alone (inputs.FreshValues, from the call's seed; none unless `fresh`).
    Broadcast and self-overlapping inputs keep their input set's values (fresh values
    are drawn for a tensor's full shape; pool_layout). ArgPool fills its views from
    the same rule, so the judge, which has no pool, can generate a sampled call's
    inputs again."""

    def __init__(self, spec, input_sets: list, fresh: bool, slots, device):
        self.sets = input_sets
        self.fresh = set()
        if fresh:
            for j in slots:
                layout = pool_layout(input_sets[0][j])
                if layout is not None and not layout[1]:
                    self.fresh.add(j)
        self.gen = inputs_mod.FreshValues(spec, device) if self.fresh else None

    def pristine(self, i: int, seed: int) -> list:
        """Call i's inputs as they were before the call (new tensors); `seed` is
        the one call i was given."""
        out = []
        with harness_only():
            for j, v in enumerate(self.sets[i % len(self.sets)]):
                if j in self.fresh:
                    out.append(self.gen.value(j, seed))
                else:
                    out.append(v.clone() if isinstance(v, torch.Tensor) else v)
        return out

    def fresh_inputs(self) -> list:
        return sorted(self.fresh)


class ArgPool:
    """Arguments for timed calls: every call gets tensors at addresses no earlier
    call saw, and values no earlier call saw.

    Each tensor argument has one flat buffer; call i's view of it starts 256 bytes
    after call (i-1)'s. Before the call (outside the measured span) the view is
    filled: refreshable inputs (Workload.fresh_slots) with values generated for
    call i alone (inputs.FreshValues: the input's own rule, from a generator seeded
    from the seed handed to next() for this call, and the input), the others with
    input set (i mod K). The seed of call i comes from the parent when call i is
    about to start (values.h), so nothing in the worker can draw call i's values
    before then. So a result
    cache keyed on any part of the generated values never hits, and the values of
    call i can be generated again afterwards (pristine) to check its outputs and
    whether it changed its inputs. DPS outputs get shifted views too and are
    poisoned before every call. Memory: one tensor's storage + capacity * 256 bytes.
    """

    SHIFT_BYTES = 256

    def __init__(self, input_sets, reference_sets, out_specs, capacity, dps, device,
                 fresh=None):
        self.sets = input_sets
        self.refs = reference_sets
        self.capacity = int(capacity)
        self.dps = dps
        self.device = torch.device(device)
        self.calls = 0
        spec, slots = fresh if fresh is not None else (None, [])
        self.in_entries = [self._entry(v) for v in input_sets[0]]
        # Broadcast inputs keep their input set's values (fresh values are drawn for a
        # tensor's full shape, which such a view does not have): CallValues decides,
        # from the same layouts (pool_layout), so that the judge, which has no pool,
        # draws the same values.
        self.values = CallValues(spec, input_sets, fresh is not None, slots, self.device)
        self.fresh = self.values.fresh
        self.gen = self.values.gen
        self.out_entries = []
        if dps:
            outs = inputs_mod.allocate_outputs(out_specs, device)
            self.out_entries = [self._entry(t) for t in outs]

    @staticmethod
    def _compact(t, bcast):
        """`t` with its broadcast dimensions (stride 0) cut to size 1."""
        if not bcast:
            return t
        return t[tuple(slice(0, 1) if d in bcast else slice(None) for d in range(t.dim()))]

    def _entry(self, v):
        layout = pool_layout(v)
        if layout is None:
            return None
        t, bcast, c = layout
        span = 1
        for size, stride in zip(c.shape, c.stride()):
            if size == 0:
                span = 0
                break
            span += (size - 1) * stride
        step = max(1, self.SHIFT_BYTES // c.element_size())
        pool = torch.empty(span + (self.capacity - 1) * step, dtype=c.dtype, device=c.device)
        return {"pool": pool, "shape": tuple(c.shape), "stride": tuple(c.stride()),
                "span": span, "step": step, "bcast": bcast,
                "full": tuple(t.shape) if bcast else None}

    def _view(self, e, i):
        return e["pool"].as_strided(e["shape"], e["stride"], i * e["step"])

    @staticmethod
    def _arg(e, view):
        return view.expand(e["full"]) if e["full"] else view

    def next(self, seed: int):
        """(set index, inputs, outputs, call index) for the next call, whose fresh
        values are drawn from `seed`."""
        if self.calls >= self.capacity:
            raise RuntimeError(f"argument pool exhausted after {self.capacity} calls")
        i = self.calls
        k = i % len(self.sets)
        self.calls += 1
        args = []
        with harness_only():
            for j, (e, v) in enumerate(zip(self.in_entries, self.sets[k])):
                if e is None:
                    args.append(v)
                    continue
                view = self._view(e, i)
                if j in self.fresh:
                    self.gen.fill_(view, j, seed)
                else:
                    view.copy_(self._compact(v, e["bcast"]))
                args.append(self._arg(e, view))
            outs = []
            refs = self.refs[k] if self.refs is not None else None
            for j, e in enumerate(self.out_entries):
                view = self._view(e, i)
                inputs_mod.poison_(view, refs[j] if refs is not None else None)
                outs.append(view)
        return k, args, outs, i

    def pristine(self, i: int, seed: int) -> list:
        """Call i's inputs as they were before the call (new tensors)."""
        return self.values.pristine(i, seed)

    def fresh_inputs(self) -> list:
        return sorted(self.fresh)


# ---------------------------------------------------------------- native binding

def native_args(values: list, dtypes) -> tuple:
    """Views for the native binding: (keepalive, [(data_ptr, dtype name, shape,
    strides in elements, device)]) with device -1 for host memory, else the CUDA
    ordinal. Scalars (`dtypes` gives their definition dtype) become host 0-d
    tensors kept alive by `keepalive` until the next call."""
    keep = []
    views = []
    for i, v in enumerate(values):
        if not isinstance(v, torch.Tensor):
            if dtypes is None:
                raise TypeError(f"argument {i} is not a tensor")
            v = torch.tensor(v, dtype=inputs_mod.torch_dtype(dtypes[i]))
            keep.append(v)
        dev = v.device
        views.append((v.data_ptr(), str(v.dtype).replace("torch.", ""), tuple(v.shape),
                      tuple(v.stride()), -1 if dev.type == "cpu" else int(dev.index or 0)))
    return keep, views


def same_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Bit-for-bit equality (NaNs with the same payload are equal, unlike ==)."""
    if a.shape != b.shape or a.dtype != b.dtype or a.device != b.device:
        return False
    if a.numel() == 0:
        return True
    return torch.equal(a.contiguous().reshape(-1).view(torch.uint8),
                       b.contiguous().reshape(-1).view(torch.uint8))


def clone_all(values: list) -> list:
    with harness_only():
        return [v.clone() if isinstance(v, torch.Tensor) else v for v in values]
