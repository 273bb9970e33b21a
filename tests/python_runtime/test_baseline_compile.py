"""The baseline's reference under torch.compile (baseline.compiled_reference,
docs/score.md): what Dynamo needs of the reference's module, and every way the
baseline can end up eager says so.

Runs with any torch: Debian's 1.13 (CI) has no torch.compile, so most tests put
in a stand-in that asks of the function what Dynamo asks (its module found by
name, through importlib, holding the very globals the function runs with) and
then calls it. Where torch >= 2 is installed, the real torch.compile runs the
bundled references (the same check on the GPU: scripts/check_baseline_compile.py).
"""
import fcntl
import functools
import importlib
import importlib.util
import inspect
import json
import math
import os
import sys
import time
from pathlib import Path

import pytest
import torch

REPO = Path(os.environ.get("SOLBENCH_REPO", Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(REPO / "python"))

from solbench_py import baseline, loading, provenance  # noqa: E402

HAS_COMPILE = hasattr(torch, "compile")
# The line of the stand-in compile's raise (below), which an eager reason names.
_RAISE_LINE = next(i for i, line in enumerate(Path(__file__).read_text().splitlines(), 1)
                   if line.strip() == "raise self.fails  # _RAISE_LINE")

# run() behind @torch.no_grad(), calling a helper and reading a module constant: the
# shape of most public references (Dynamo inlines run() from torch's decorator frame).
REFERENCE = '''
import torch

SCALE = 3.0


def helper(x):
    return x * SCALE


@torch.no_grad()
def run(x, y):
    return helper(x) + y
'''


def dynamo_lookup(fn):
    """What Dynamo does with a function it inlines from another module's frame:
    importlib.import_module(f_globals["__name__"]) and attribute reads on it."""
    inner = inspect.unwrap(fn)
    g = inner.__globals__
    module = importlib.import_module(g["__name__"])
    if module.__dict__ is not g:
        raise AssertionError(f"sys.modules[{g['__name__']!r}] is another module than the "
                             "function's globals")
    return module


class FakeCompile:
    """A torch.compile stand-in: looks the function's module up as Dynamo does on
    the first call, and counts a graph per compile (baseline._dynamo_graphs)."""

    def __init__(self, compiles_a_graph=True, fails=None):
        self.graphs = 0
        self.compiles_a_graph = compiles_a_graph
        self.fails = fails
        self.stops = None  # raised once the graph is compiled (a GPU step refused)
        self.compiled = []
        self.kwargs = []

    def __call__(self, fn, **kwargs):
        self.compiled.append(fn)
        self.kwargs.append(kwargs)

        def compiled(*args):
            if self.fails:
                raise self.fails  # _RAISE_LINE
            dynamo_lookup(fn)
            if self.compiles_a_graph:
                self.graphs += 1
            if self.stops:
                raise self.stops
            return fn(*args)

        return compiled


@pytest.fixture
def reference(tmp_path):
    """load_reference's run() from a source of its own (a unique module name)."""
    def make(source=REFERENCE, name="ref.py"):
        mod = loading.load_reference(source, str(tmp_path / name))
        return loading.reference_function(mod, "run")
    return make


@pytest.fixture
def fake(monkeypatch):
    def install(**kw):
        f = FakeCompile(**kw)
        monkeypatch.setattr(torch, "compile", f, raising=False)
        monkeypatch.setattr(baseline, "_dynamo_graphs", lambda: f.graphs, raising=False)
        return f
    return install


def registered_references():
    return sorted(k for k in sys.modules if k.startswith("solbench_reference"))


def args():
    return torch.arange(4.0), torch.ones(4)


def test_load_reference_leaves_the_reference_unreachable_by_name(reference):
    before = registered_references()
    fn = reference()
    assert registered_references() == before
    # The solution's worker: Dynamo's look-up fails there, by design.
    with pytest.raises(ModuleNotFoundError):
        dynamo_lookup(fn)


def test_the_baseline_compiles_the_reference_imported_by_name(reference, fake):
    f = fake()
    fn = reference(REFERENCE + "\n# variant 1\n")
    call, method, reason = baseline.compiled_reference(fn)
    assert (method, reason) == ("torch.compile", "")
    x, y = args()
    assert torch.equal(call(x, y), fn(x, y))
    # What it compiled is found by name and holds its globals (what Dynamo needs);
    # the old code compiled load_reference's run(), which failed right here.
    assert call.method == "torch.compile", call.reason
    assert call.reason == ""
    module = dynamo_lookup(f.compiled[0])
    assert module.__name__.startswith("solbench_reference_")
    assert module.SCALE == 3.0
    # Static shapes: a workload's graph does not depend on the workloads before it.
    assert f.kwargs[0].get("dynamic") is False
    # Inductor as backend="inductor" makes it, each graph behind the precompile
    # lock (where this torch has the class; Debian's 1.13 has no torch.compile).
    wrapper = getattr(torch, "_TorchCompileInductorWrapper", None)
    assert ("backend" in f.kwargs[0]) == (wrapper is not None)
    if wrapper is not None:
        assert isinstance(f.kwargs[0]["backend"], wrapper)
        assert f.kwargs[0]["backend"].config == wrapper(None, None, False).config


class _FlockLock:
    """A bare flock on a descriptor as the lock baseline.py is lent (a worker lends
    its own DeviceLock's take and give)."""

    def __init__(self, fd: int):
        self.fd = fd

    def take(self) -> None:
        fcntl.flock(self.fd, fcntl.LOCK_EX)

    def give(self) -> None:
        fcntl.flock(self.fd, fcntl.LOCK_UN)


def _lock_files(tmp_path):
    """The worker's descriptor of a lock file and, for looking, a second one (a
    second open file description: its flock conflicts with the first's)."""
    path = tmp_path / "gpu.lock"
    path.write_text("")
    mine, other = os.open(path, os.O_RDONLY), os.open(path, os.O_RDONLY)

    def held():
        try:
            fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(other, fcntl.LOCK_UN)
        return False
    return mine, held


def _first_call(held, seen):
    """A workload's first call as precompile sees it: Dynamo's tracing and Inductor's
    compile (the "compile" step), then the compiled graph behind the lock wrapper;
    each step notes whether the lock was held then. Returns (first_call, graph)."""
    def graph_body(*a):
        seen.append(("graph", held()))
        return sum(a)
    graph = baseline._runs_under_lock(graph_body)

    def first_call(*a):
        seen.append(("compile", held()))
        return graph(*a)
    return first_call, graph


def test_precompile_holds_the_lock_only_while_a_compiled_graph_runs(tmp_path):
    fd, held = _lock_files(tmp_path)
    seen = []
    first_call, graph = _first_call(held, seen)
    baseline.use_gpu_lock(_FlockLock(fd))
    try:
        r = baseline.precompile(first_call, [1, 2])
        assert seen == [("compile", False), ("graph", True)]
        assert not held()  # released when the graph is done
        assert r["ms"] >= r["locked_ms"] >= 0
        # Outside precompile the graph runs inside the worker's own step: it takes
        # nothing itself.
        seen.clear()
        assert graph(3, 4) == 7
        assert seen == [("graph", False)]
        # A benchmark Inductor runs takes it wherever it runs.
        assert baseline._gpu_step(held, "a benchmark", always=True) is True
        assert not held()
        assert baseline.precompile(lambda: 1 / 0, [])["ms"] >= 0
        assert not held()
    finally:
        baseline.use_gpu_lock(None)
    # Without a lock, none is taken; an error is left for the first round.
    seen.clear()
    baseline.precompile(first_call, [1])
    assert seen == [("compile", False), ("graph", False)]
    assert baseline._gpu_step(held, "a benchmark", always=True) is False


def test_a_benchmark_inside_a_graphs_execution_is_counted_once(tmp_path):
    """Triton's autotuning (an Inductor benchmark, a step of its own) runs inside a
    compiled graph's first execution (another): the steps nest, and the time the lock
    was held is the outer one's, never more than the whole call."""
    fd, held = _lock_files(tmp_path)

    def body(*a):
        time.sleep(0.05)
        baseline._gpu_step(lambda: time.sleep(0.05), baseline._BENCHMARK, always=True)
        return sum(a)
    graph = baseline._runs_under_lock(body)
    baseline.use_gpu_lock(_FlockLock(fd))
    try:
        r = baseline.precompile(lambda *a: graph(*a), [1, 2])
    finally:
        baseline.use_gpu_lock(None)
    assert r["locked_ms"] >= 90, r
    assert r["ms"] >= r["locked_ms"], r


def test_a_precompile_ahead_of_go_stops_at_the_first_gpu_step(tmp_path):
    fd, held = _lock_files(tmp_path)
    seen = []
    first_call, _ = _first_call(held, seen)
    baseline.use_gpu_lock(_FlockLock(fd))
    try:
        r = baseline.precompile(first_call, [1, 2], run_graphs=False)
        # Compiled, and the graph never ran (nor took the lock): its autotuning waits
        # for the workload's first round, under the lock.
        assert seen == [("compile", False)]
        assert r["stopped"] and r["locked_ms"] == 0
        assert r["stopped_at"] == "graph"  # its graph is compiled: it only has to run
        assert not held()
        assert baseline._precompile["gpu"]  # and only while that precompile lasts
        done = baseline.precompile(first_call, [1, 2])
        assert done["stopped"] is False and done["stopped_at"] == ""
        assert seen[-1] == ("graph", True)
        # An Inductor benchmark in the middle of a compile stops it too, and says so:
        # that compile is not done (it fails, and the next call starts it again).
        seen.clear()

        def benchmarked(*a):
            seen.append(("compile", held()))
            baseline._gpu_step(held, baseline._BENCHMARK, always=True)
            seen.append(("codegen", held()))
            return sum(a)
        r = baseline.precompile(benchmarked, [1, 2], run_graphs=False)
        assert r["stopped"] and r["stopped_at"] == "benchmark"
        assert seen == [("compile", False)] and not held()
        assert baseline.precompile(benchmarked, [1, 2])["stopped_at"] == ""
        assert seen[1:] == [("compile", False), ("codegen", False)]
        # A graph break met while tracing the call (Dynamo's counter grew): the graph
        # that stopped it is only the first, the rest is still to compile.
        breaks = [0]
        real = baseline._graph_breaks
        baseline._graph_breaks = lambda: breaks[0]
        try:
            graph = baseline._runs_under_lock(lambda *a: sum(a))

            def broken(*a):
                breaks[0] += 1  # what Dynamo counts as it traces past a break
                return graph(*a)
            assert baseline.precompile(broken, [1], run_graphs=False)["stopped_at"] == \
                "graph_break"
            assert baseline.precompile(first_call, [1], run_graphs=False)["stopped_at"] == "graph"
        finally:
            baseline._graph_breaks = real
    finally:
        baseline.use_gpu_lock(None)
    # A step that raises NotNow from inside what it calls (Dynamo wraps a backend's
    # error) is found through the chain.
    try:
        try:
            raise baseline.NotNow("x")
        except baseline.NotNow as e:
            raise RuntimeError("backend failed") from e
    except RuntimeError as e:
        assert baseline._not_now(e)
    assert not baseline._not_now(RuntimeError("other"))


def test_a_stopped_first_call_neither_makes_the_baseline_eager_nor_hides_its_graph(
        reference, fake):
    f = fake()
    fn = reference(REFERENCE + "\n# variant stopped\n")
    call, method, _ = baseline.compiled_reference(fn)
    assert method == "torch.compile"
    compiled = f.compiled[0]
    x, y = args()
    # Ahead of "go": the graph is compiled (counted) and its execution refused.
    f.stops = baseline.NotNow("a compiled graph's execution")
    with pytest.raises(baseline.NotNow):
        call(x, y)
    assert (call.method, call.reason) == ("torch.compile", "")
    # The first real call finds the graph compiled already: no new graph, and still
    # the compiled reference (the graph counted from the first attempt).
    f.stops = None
    f.compiles_a_graph = False
    assert torch.equal(call(x, y), fn(x, y))
    assert (call.method, call.reason) == ("torch.compile", "")
    assert f.compiled == [compiled]


def test_the_graph_wrapper_keeps_the_calling_convention():
    def boxed(args):
        return list(args)
    boxed._boxed_call = True
    boxed.note = "kept"
    wrapped = baseline._runs_under_lock(boxed)
    assert wrapped._boxed_call is True
    assert wrapped.note == "kept"
    assert wrapped([1, 2]) == [1, 2]


def test_the_registered_name_is_the_contents_own(reference, fake):
    fake()
    a = baseline.importable_reference(reference(REFERENCE + "\n# a\n", "a.py"))
    b = baseline.importable_reference(reference(REFERENCE + "\n# b\n", "b.py"))
    assert inspect.unwrap(a).__module__ != inspect.unwrap(b).__module__
    again = baseline.importable_reference(reference(REFERENCE + "\n# a\n", "a2.py"))
    assert inspect.unwrap(again).__module__ == inspect.unwrap(a).__module__


def test_a_compile_that_compiles_no_graph_is_eager_with_the_reason(reference, fake):
    fake(compiles_a_graph=False)
    call, method, _ = baseline.compiled_reference(reference(REFERENCE + "\n# no graph\n"))
    assert method == "torch.compile"
    x, y = args()
    assert torch.equal(call(x, y), x * 3 + y)
    assert call.method == "eager"
    assert "compiled no graph" in call.reason


def test_a_failing_compiled_call_is_eager_with_the_reason(reference, fake):
    fake(fails=RuntimeError("inductor exploded\nsecond line"))
    call, _, _ = baseline.compiled_reference(reference(REFERENCE + "\n# fails\n"))
    x, y = args()
    assert torch.equal(call(x, y), x * 3 + y)  # the eager reference's result
    assert call.method == "eager"
    # The first line of the error, and where it was raised (the innermost frame: the
    # stand-in's raise here, a file of torch's or Triton's in a real compile).
    assert call.reason.startswith("torch.compile failed on a call: RuntimeError: inductor "
                                  "exploded (raised at ")
    assert call.reason.endswith(f"test_baseline_compile.py:{_RAISE_LINE} in compiled)")
    assert torch.equal(call(x, y), x * 3 + y)  # eager for good
    assert call.method == "eager"


def test_where_an_error_was_raised_names_the_code_outside_the_standard_library(tmp_path):
    (tmp_path / "file").write_text("")

    def make_folder_under_a_file():
        os.makedirs(tmp_path / "file" / "sub")  # raises in os.makedirs

    with pytest.raises(OSError) as e:
        make_folder_under_a_file()
    line = make_folder_under_a_file.__code__.co_firstlineno + 1
    assert baseline._raised_at(e.value) == (
        f"{__file__}:{line} in make_folder_under_a_file via os.makedirs")
    assert baseline._raised_at(RuntimeError("no traceback")) == ""


def test_without_torch_compile_the_reason_names_the_torch(reference, monkeypatch):
    monkeypatch.delattr(torch, "compile", raising=False)
    fn = reference()
    call, method, reason = baseline.compiled_reference(fn)
    assert call is fn
    assert method == "eager"
    assert reason == f"torch.compile unavailable (torch {torch.__version__})"


def test_a_worker_that_loaded_solution_code_never_registers_the_reference(
        reference, fake, monkeypatch):
    fake()
    monkeypatch.setattr(provenance, "SOLUTION_ROOTS", ["/somewhere/solution/"])
    before = registered_references()
    fn = reference(REFERENCE + "\n# solution worker\n")
    call, method, reason = baseline.compiled_reference(fn)
    assert method == "eager"
    assert "may not register the reference" in reason
    assert registered_references() == before


def test_dynamo_is_configured_to_never_fall_back_silently():
    baseline._configure_dynamo()  # a torch without Dynamo (1.13): nothing to set, no error
    if not HAS_COMPILE:
        return
    import torch._dynamo as dynamo
    cfg = dynamo.config
    for k in ("recompile_limit", "cache_size_limit"):
        if hasattr(cfg, k):
            assert getattr(cfg, k) >= baseline._BASELINE_RECOMPILE_LIMIT, k
    for k in ("fail_on_recompile_limit_hit", "fail_on_cache_limit_hit"):
        if hasattr(cfg, k):
            assert getattr(cfg, k) is True, k
    assert cfg.suppress_errors is False


def load_check_script():
    spec = importlib.util.spec_from_file_location(
        "check_baseline_compile", REPO / "scripts" / "check_baseline_compile.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


BUNDLED = sorted(p.name for p in (REPO / "problems").iterdir() if (p / "definition.json").exists())


@pytest.mark.skipif(not HAS_COMPILE, reason="this torch has no torch.compile (< 2.0)")
@pytest.mark.parametrize("problem", BUNDLED)
def test_real_torch_compile_compiles_every_bundled_reference(problem, tmp_path):
    """The real torch.compile (CPU, Inductor) on each bundled reference, loaded and
    wrapped as the baseline worker does, on its smallest workload's inputs."""
    from solbench_py import inputs as inputs_mod
    check = load_check_script()
    folder = REPO / "problems" / problem
    definition = json.loads((folder / "definition.json").read_text())
    specs = [check.workload_spec(folder, definition, w) for w in check.load_workloads(folder)]
    size = lambda s: sum(math.prod(i["shape"] or [1]) for i in s["inputs"])  # noqa: E731
    spec = min(specs, key=size)
    mod = loading.load_reference(definition["reference"], str(tmp_path / "ref.py"))
    fn = loading.reference_function(mod, "run")
    call, method, reason = baseline.compiled_reference(fn)
    assert (method, reason) == ("torch.compile", "")
    torch.set_grad_enabled(False)
    try:
        entry = definition.get("custom_inputs_entrypoint")
        custom = loading.reference_function(mod, entry) if entry else None
        values = inputs_mod.generate_inputs(spec, 200, 0, "cpu", custom)
        call(*values)
    finally:
        torch.set_grad_enabled(True)
    assert call.method == "torch.compile", call.reason
    assert call.reason == ""


@pytest.mark.skipif(not HAS_COMPILE, reason="this torch has no torch.compile (< 2.0)")
def test_real_torch_compile_ahead_stops_at_its_graph_or_before_a_graph_break(reference,
                                                                           tmp_path):
    """The real torch.compile (CPU, Inductor), with a lock lent as on a GPU: a call
    ahead of "go" stops at its compiled graph's first execution; where Dynamo met a
    graph break first (.item()), it says so, since the rest is still to compile. Made
    again after "go", each call runs to its end."""
    fd, held = _lock_files(tmp_path)
    whole = reference(REFERENCE + "\n# variant ahead whole\n", "whole.py")
    broken = reference(REFERENCE.replace("return helper(x) + y",
                                         "return helper(x) + y.sum().item()") +
                       "\n# variant ahead broken\n", "broken.py")
    baseline.use_gpu_lock(_FlockLock(fd))
    try:
        for fn, where in ((whole, "graph"), (broken, "graph_break")):
            call, method, reason = baseline.compiled_reference(fn)
            assert (method, reason) == ("torch.compile", "")
            r = baseline.precompile(call, list(args()), run_graphs=False)
            assert r["stopped_at"] == where, r
            assert not held()
            after = baseline.precompile(call, list(args()))
            assert after["stopped_at"] == "" and after["locked_ms"] > 0, after
            assert torch.equal(call(*args()), fn(*args()))
            assert call.method == "torch.compile", call.reason
    finally:
        baseline.use_gpu_lock(None)


def test_the_check_script_resolves_expression_axes():
    check = load_check_script()
    definition = {"axes": {"h": {"type": "const", "value": 8},
                           "n": {"type": "var"},
                           "half": {"type": "expr", "expression": "h / 2"},
                           "m": {"type": "expr", "expression": "n * half + h // 3"}},
                  "inputs": {"x": {"shape": ["n", "m"], "dtype": "float32"},
                             "eps": {"shape": None, "dtype": "float32"}}}
    workload = {"axes": {"n": 3}, "inputs": {"eps": {"type": "scalar", "value": 0.5}}}
    spec = check.workload_spec(Path("/data/cat/prob"), definition, workload)
    assert spec["axes"] == {"h": 8, "n": 3, "half": 4, "m": 14, "eps": 0.5}
    assert [i["shape"] for i in spec["inputs"]] == [[3, 14], None]
    assert spec["inputs"][0]["source"] == {"type": "random"}
    assert spec["dataset_root"] == "/data"
    with pytest.raises(ValueError, match="not an integer"):
        check.resolve_axes({"axes": {"a": {"type": "expr", "expression": "3 / 2"}}}, {"axes": {}})
