"""What lets a solution's Python run between its calls, and its look at the harness.

A timed call's values exist in the worker from the moment the parent hands out the
call's seed until the call's span starts (the harness fills the inputs in
between; docs/harness.md, "Values"). No code of the solution's may run there, or
it could compute the call's outputs outside the span. The worker releases the
previous call's objects before it asks for the seed (their finalizers run
first), keeps Python's garbage collector off until the span (no collection, no
gc.callbacks, no __del__ of cyclic garbage in between) and checks that no thread
of the solution's is alive. What remains is what the solution installs in the
interpreter for later: signal handlers and interval timers, trace, profile and
monitoring hooks, gc callbacks, import hooks, replaced builtins, kernels of its
own for the operators the harness fills inputs with. `state()` is taken before
the solution is loaded and `changes()` names what is new after its calls.

The audit hook (`install`) records the solution's own code walking the
interpreter's objects or frames (gc.get_objects, sys._getframe, ...), the way to
the harness's objects; a kernel has no use for it. The static look denies the
same names plainly written (static_check.py); this sees them however reached.
"""
from __future__ import annotations

import builtins
import gc
import os
import signal
import sys

from . import provenance
from .provenance import in_solution, runtime_object, solution_code

# Audit events and what they mean when the solution's own code raises them.
_WATCHED = {
    "gc.get_objects": "walked every object of the worker (the harness's included)",
    "gc.get_referrers": "walked the objects that refer to an object (the harness's included)",
    "gc.get_referents": "walked the objects an object refers to (the harness's included)",
    "sys._getframe": "read the interpreter's stack frames",
    "sys._current_frames": "read every thread's stack frames",
    "sys.settrace": "hooked the interpreter (sys.settrace)",
    "sys.setprofile": "hooked the interpreter (sys.setprofile)",
    "sys.addaudithook": "added an audit hook",
}
_recorded: list = []
_busy = [False]
_STDLIB = os.path.dirname(os.__file__) + os.sep
_stdlib_files: dict = {}


def _in_stdlib(filename: str) -> bool:
    v = _stdlib_files.get(filename)
    if v is None:
        f = os.path.abspath(filename)
        v = _stdlib_files[filename] = filename.startswith("<") or (
            f.startswith(_STDLIB) and "-packages" not in f)
    return v


def _audit(event, _args):
    message = _WATCHED.get(event)
    if message is None or _busy[0]:
        return
    if not provenance.SOLUTION_ROOTS:
        return
    _busy[0] = True  # sys._getframe below raises an event of its own
    try:
        # Who asked: the nearest caller outside the standard library (inspect's
        # helpers and warnings call sys._getframe on someone else's behalf).
        frame = sys._getframe(1)
        while frame is not None and _in_stdlib(frame.f_code.co_filename):
            frame = frame.f_back
        if frame is None or not in_solution(frame.f_code):
            return
        where = os.path.abspath(frame.f_code.co_filename)
        for r in provenance.SOLUTION_ROOTS:
            if where.startswith(r):
                where = where[len(r):]
        _recorded.append(f"{message} ({where}:{frame.f_lineno})")
    finally:
        _busy[0] = False
    if event == "sys.addaudithook":
        raise RuntimeError("a solution may not add audit hooks")  # refuses it


_installed = [False]


def install() -> None:
    if not _installed[0]:
        _installed[0] = True
        sys.addaudithook(_audit)


def recorded() -> list:
    return list(dict.fromkeys(_recorded))


# ---------------------------------------------------------------- installed hooks

# Operators the harness fills a call's inputs and poisons its outputs with
# (inputs.FreshValues, poison_, ArgPool): a kernel of the solution's registered for
# one of them would run between the seed and the span.
_WINDOW_OPS = ("aten::normal_", "aten::random_", "aten::uniform_", "aten::bernoulli_",
               "aten::copy_", "aten::fill_", "aten::zero_", "aten::as_strided", "aten::view",
               "aten::expand", "aten::clone", "aten::empty", "aten::empty_strided",
               "aten::_to_copy", "aten::logical_not", "aten::randn", "aten::randint",
               "aten::rand", "aten::clamp_", "aten::mul_", "aten::add_")
_TIMERS = tuple(getattr(signal, n) for n in ("ITIMER_REAL", "ITIMER_VIRTUAL", "ITIMER_PROF")
                if hasattr(signal, n))


def _dispatch(op: str):
    import torch
    try:
        return torch._C._dispatch_dump(op)
    except Exception:  # noqa: BLE001 - an operator this torch does not have
        return None


def _overloads(op: str) -> list:
    """`op`'s overloads by full name ("aten::fill_" -> "aten::fill_.Scalar",
    "aten::fill_.Tensor"). The dispatch dump of a bare name is empty where the
    operator has no default overload (fill_, add_, mul_, empty, bernoulli_), so
    that a kernel registered for one of those would go unseen."""
    import torch
    try:
        names = [s.overload_name for s in torch._C._jit_get_schemas_for_operator(op)]
    except Exception:  # noqa: BLE001 - an operator this torch does not have
        return [op]
    # Out variants (out=...) are never what the harness calls.
    return [f"{op}.{n}" if n else op for n in names if not n.endswith("out")] or [op]


def state(dispatch_names=None) -> dict:
    """The interpreter's hooks as they are now (before the solution is loaded).
    `dispatch_names`: the operators whose dispatch tables to read (changes() reads
    those of the state it compares with); by default every overload of _WINDOW_OPS."""
    if dispatch_names is None:
        dispatch_names = [name for op in _WINDOW_OPS for name in _overloads(op)]
    st = {
        "sys.settrace": sys.gettrace(),
        "sys.setprofile": sys.getprofile(),
        "gc.callbacks": list(gc.callbacks),
        "sys.meta_path": list(sys.meta_path),
        "sys.path_hooks": list(sys.path_hooks),
        "signals": {},
        "timers": [signal.getitimer(t)[0] > 0 for t in _TIMERS],
        "builtins": {k: v for k, v in vars(builtins).items() if callable(v)},
        "dispatch": {name: _dispatch(name) for name in dispatch_names},
    }
    for s in signal.valid_signals():
        try:
            st["signals"][s] = signal.getsignal(s)
        except (ValueError, OSError):
            pass
    mon = getattr(sys, "monitoring", None)
    if mon is not None:
        st["sys.monitoring"] = [mon.get_tool(i) for i in range(6)]
    return st


def _signal_name(s) -> str:
    try:
        return signal.Signals(s).name
    except ValueError:
        return str(s)


# Dispatch keys a kernel registered for one of the harness's operators would run
# under when the harness fills a call's inputs (Meta and tracing keys would not).
_RUN_KEYS = ("CPU", "CUDA", "CompositeImplicitAutograd", "CompositeExplicitAutograd",
             "CompositeExplicitAutogradNonFunctional", "AutogradCPU", "AutogradCUDA",
             "AutogradOther", "Autograd", "ADInplaceOrView", "BackendSelect", "Python",
             "PythonDispatcher", "Undefined")


def _run_lines(dump) -> set:
    if dump is None:
        return set()
    return {line for line in dump.splitlines()
            if line.split(":", 1)[0].split(" (")[0].strip() in _RUN_KEYS}


def changes(before: dict) -> str:
    """What the solution installed since `before` ('' when nothing), at most 5."""
    now = state(list(before["dispatch"]))
    found = []
    for k in ("sys.settrace", "sys.setprofile"):
        if now[k] is not before[k] and not runtime_object(now[k]):
            found.append(f"a {k} hook")
    for k in ("gc.callbacks", "sys.meta_path", "sys.path_hooks"):
        old = before[k]
        for x in now[k]:
            if any(x is y for y in old):
                continue
            # Libraries add importers of their own when imported: only the
            # solution's count there; a gc callback must be a runtime's.
            if (solution_code(x) if k != "gc.callbacks" else not runtime_object(x)):
                found.append(f"an entry in {k}")
                break
    harmless = (signal.SIG_DFL, signal.SIG_IGN, signal.default_int_handler, None)
    for s, h in now["signals"].items():
        if s in before["signals"] and h is not before["signals"][s] and \
                not any(h is x for x in harmless) and not runtime_object(h):
            found.append(f"a handler for {_signal_name(s)}")
    for t, (was, armed) in enumerate(zip(before["timers"], now["timers"])):
        if armed and not was:
            found.append(f"an interval timer ({('real', 'virtual', 'profiling')[t]})")
    for k, v in now["builtins"].items():
        if before["builtins"].get(k, v) is not v and not runtime_object(v):
            found.append(f"a replacement of builtins.{k}")
    for op, dump in now["dispatch"].items():
        was = before["dispatch"].get(op)
        if dump != was and _run_lines(dump) - _run_lines(was):
            found.append(f"a kernel of its own for {op}")
    mon_before = before.get("sys.monitoring")
    if mon_before is not None:
        for i, (was, tool) in enumerate(zip(mon_before, now["sys.monitoring"])):
            if tool is not None and tool != was:
                found.append(f"a sys.monitoring tool ({tool!r}, id {i})")
    return ", ".join(found[:5]) + (f" and {len(found) - 5} more" if len(found) > 5 else "")
