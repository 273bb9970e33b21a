"""The scoring baseline's reference (docs/score.md, src/score/baseline.h): the
reference under torch.compile where this torch has it, imported by name as
Dynamo needs, and every way it ends up eager said so.
"""
from __future__ import annotations

import functools
import os
import sys
import time

import torch

from . import provenance
from .loading import exec_module


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
    if provenance.SOLUTION_ROOTS:
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
        mod = exec_module(source, path, name, register=True)
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


def _graph_breaks() -> int:
    """Graph breaks Dynamo has met in this process (its own counter); -1 where this
    torch has none."""
    try:
        from torch._dynamo.utils import counters
        return int(sum(counters["graph_break"].values()))
    except Exception:  # noqa: BLE001 - a Dynamo without the counter: none seen
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


# The GPU's timing lock as the worker lends it (use_gpu_lock): an object whose take()
# holds it exclusively (inside the worker's shared hold of a step it upgrades) and
# whose give() lets that hold go; None: no lock (a CPU, a test).
_lock = {"lock": None}
# Precompiling (precompile() below): "on" while a workload's first call runs outside
# the worker's own steps; "gpu" False while nothing may run on the GPU (a baseline
# worker ahead of "go").
# "depth": _gpu_step()s in progress: one nests in another where a compiled graph's
# first execution runs Triton's autotuning (a benchmark); only the outermost counts.
_precompile = {"on": False, "locked_ms": 0.0, "gpu": True, "depth": 0}


def use_gpu_lock(lock) -> None:
    """Lends the worker's GPU timing lock (take()/give(), see _lock) to what follows."""
    _lock["lock"] = lock


class NotNow(Exception):
    """Raised where a precompile ahead of "go" (precompile(..., run_graphs=False))
    reaches GPU work: a compiled graph's first execution (Triton's autotuning), or a
    benchmark Inductor runs while compiling. Ends that call; nothing is marked failed."""


def _not_now_of(e: BaseException):
    """The NotNow that `e` is, or was raised from (Dynamo wraps a backend's errors);
    None where there is none."""
    seen = set()
    while e is not None and id(e) not in seen:
        if isinstance(e, NotNow):
            return e
        seen.add(id(e))
        e = e.__cause__ or e.__context__
    return None


def _not_now(e: BaseException) -> bool:
    return _not_now_of(e) is not None


def _gpu_step(run, what: str, always: bool = False):
    """`run()` as a step on the GPU that must run alone: under the timing lock,
    exclusively, while precompiling (its time counted) or `always` (Inductor's
    benchmarks, wherever they run: they time kernels too); refused ahead of "go". A
    compiled graph's execution outside precompile runs as it is, inside the worker's
    own step."""
    lock = _lock["lock"]
    precompiling = _precompile["on"]
    if lock is None or not (precompiling or always):
        return run()
    if precompiling and not _precompile["gpu"]:
        raise NotNow(what)
    t0 = time.perf_counter()
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        # Taking it inside a worker's shared step lets the shared hold go first: the
        # step's kernels must not run on into another's timed loop meanwhile.
        torch.cuda.synchronize()
    lock.take()
    _precompile["depth"] += 1
    try:
        return run()
    finally:
        if torch.cuda.is_available() and torch.cuda.is_initialized():
            torch.cuda.synchronize()
        lock.give()
        _precompile["depth"] -= 1
        if precompiling and _precompile["depth"] == 0:
            _precompile["locked_ms"] += (time.perf_counter() - t0) * 1e3


_BENCHMARK = "an Inductor benchmark"  # NotNow's word for one (precompile's stopped_at)


def _guard_benchmarks() -> None:
    """Inductor's GPU benchmarks (padding a matmul or not, choosing between kernels,
    Triton's autotuning at a graph's first execution) as exclusive _gpu_step()s: they
    never run beside a timed loop or another worker's step, nor ahead of "go". Every caller uses the one `benchmarker` object (torch >= 2.5); an older
    torch is left as it is."""
    try:
        from torch._inductor.runtime import benchmarking
    except Exception:  # noqa: BLE001
        return
    b = getattr(benchmarking, "benchmarker", None)
    inner = getattr(b, "benchmark_gpu", None)
    if inner is None or getattr(inner, "_solbench_guarded", False):
        return

    def benchmark_gpu(*args, **kwargs):
        return _gpu_step(lambda: inner(*args, **kwargs), _BENCHMARK, always=True)
    benchmark_gpu._solbench_guarded = True
    b.benchmark_gpu = benchmark_gpu


def _runs_under_lock(inner):
    """`inner` (a graph Inductor compiled) behind a wrapper that, while precompile()
    runs, holds the GPU's timing lock for each execution: Triton's autotuning and the
    graph's kernels then never run beside a timed loop, while Dynamo's tracing and
    Inductor's code generation (seconds of CPU) happen outside it, beside the other
    workers. Outside precompile() it calls `inner` as it is (inside the worker's own
    step, or its timed loop)."""
    def run(*args):
        return _gpu_step(lambda: inner(*args), "a compiled graph's execution")
    try:
        functools.update_wrapper(run, inner, updated=("__dict__",))
    except (AttributeError, TypeError):
        pass
    if getattr(inner, "_boxed_call", False):
        run._boxed_call = True
    return run


def _inductor_backend():
    """torch.compile's own Inductor backend object (what backend="inductor" makes,
    default mode), each compiled graph behind _runs_under_lock; None where this torch
    has no such class (torch.compile's default backend is then used as it is)."""
    base = getattr(torch, "_TorchCompileInductorWrapper", None)
    if base is None:
        return None

    class LockedInductor(base):
        def __call__(self, model_, inputs_):
            return _runs_under_lock(super().__call__(model_, inputs_))

    try:
        return LockedInductor(None, None, False)
    except Exception:  # noqa: BLE001 - a signature this code does not know: the default
        return None


def precompile(fn, args, run_graphs: bool = True) -> dict:
    """The baseline's first call of a workload's shapes, `fn(*args)`, made outside the
    worker's steps (session_roles.cc): compiling (CPU) overlaps the other workers' GPU
    work, and each execution of a compiled graph in it, and each benchmark Inductor
    runs while compiling, holds the lock exclusively (use_gpu_lock; none lent: no
    lock). `run_graphs` False (a worker ahead of "go", beside the solution's
    evaluation): the call ends at the first GPU step (NotNow), so that only Dynamo's
    tracing and Inductor's code generation happen here, and Triton's autotuning
    happens at the first execution, in the workload's first round, still exclusive.
    Returns {"ms", "locked_ms", "stopped", "stopped_at"}: `stopped_at` is what it
    stopped at, "graph" (a compiled graph's first execution: that graph is compiled
    and cached), "graph_break" (the same, but Dynamo met a graph break while tracing
    this call: what follows the break is still to trace and compile) or "benchmark"
    (one Inductor runs in the middle of a compile, which then failed and is done again
    from the start at the next call), "" where it did not stop; any error is left for
    the workload's first round, which meets it again and says so."""
    t0 = time.perf_counter()
    _precompile["on"] = True
    _precompile["gpu"] = run_graphs  # without a lock every step runs as it is
    _precompile["locked_ms"] = 0.0
    stopped_at = ""
    breaks = _graph_breaks()
    try:
        fn(*args)
    except Exception as e:  # noqa: BLE001 - see above
        n = _not_now_of(e)
        if n is not None:
            stopped_at = ("benchmark" if n.args and n.args[0] == _BENCHMARK else
                          "graph_break" if 0 <= breaks < _graph_breaks() else "graph")
    finally:
        _precompile["on"] = False
        _precompile["gpu"] = True
    return {"ms": (time.perf_counter() - t0) * 1e3, "locked_ms": _precompile["locked_ms"],
            "stopped": bool(stopped_at), "stopped_at": stopped_at}


def _first_line(e: BaseException) -> str:
    return f"{type(e).__name__}: {(str(e).splitlines() or [''])[0][:300]}"


def _raised_at(e: BaseException) -> str:
    """Where `e` was raised: the innermost frame outside Python's standard library
    as "package/module.py:line in function" (the path from the last site-packages
    or dist-packages folder on), followed by "via module.function" when the error
    came from the standard library below it; "" without a traceback. An eager
    T_b's reason names it, so that a failure deep in torch's or Triton's code says
    where it happened."""
    frames = []
    tb = e.__traceback__
    while tb is not None:
        frames.append((tb.tb_frame.f_code, tb.tb_lineno))
        tb = tb.tb_next
    if not frames:
        return ""

    def at(code, line) -> str:
        path = code.co_filename
        for marker in ("site-packages/", "dist-packages/"):
            cut = path.rfind(marker)
            if cut >= 0:
                path = path[cut + len(marker):]
                break
        return f"{path}:{line} in {code.co_name}"

    own = next((f for f in reversed(frames) if not provenance.stdlib_file(f[0].co_filename)),
               frames[-1])
    text = at(*own)
    last = frames[-1][0]
    if own[0] is not last:
        name = os.path.splitext(os.path.basename(last.co_filename.strip("<>").replace("frozen ", "")))[0]
        text += f" via {name}.{last.co_name}"
    return text


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
        _guard_benchmarks()
        backend = _inductor_backend()
        compiled = (compile_fn(target, dynamic=False) if backend is None else
                    compile_fn(target, dynamic=False, backend=backend))
    except Exception as e:  # noqa: BLE001
        return fn, "eager", f"torch.compile failed: {_first_line(e)}"

    state = {"first": True, "graphs_before": None}

    def eager(reason: str) -> None:
        baseline.method = "eager"
        baseline.reason = reason

    def baseline(*args):
        if baseline.method == "torch.compile":
            try:
                if not state["first"]:
                    return compiled(*args)
                # Counted from the first attempt: one stopped ahead of "go" (NotNow)
                # may have compiled the graph that this call then only runs.
                if state["graphs_before"] is None:
                    state["graphs_before"] = _dynamo_graphs()
                out = compiled(*args)
                state["first"] = False
                before = state["graphs_before"]
                if before >= 0 and _dynamo_graphs() == before:
                    skips = _dynamo_skips()
                    eager("torch.compile compiled no graph: Dynamo ran the reference eagerly" +
                          (f" ({skips})" if skips else ""))
                return out
            except Exception as e:  # noqa: BLE001
                if _not_now(e):  # a precompile ahead of "go" stopped: no verdict yet
                    raise
                state["first"] = False
                where = _raised_at(e)
                eager(f"torch.compile failed on a call: {_first_line(e)}" +
                      (f" (raised at {where})" if where else ""))
        return fn(*args)

    baseline.method = "torch.compile"
    baseline.reason = ""
    return baseline, "torch.compile", ""
