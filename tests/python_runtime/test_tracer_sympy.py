"""A tracer process does not import sympy (docs/sol.md, "Where a cold trace's time
goes"): torch._check, in every meta kernel, imports torch.fx.experimental.symbolic_shapes
(and with it sympy, 0.25-0.4 s) to test a plain bool, and elementwise type promotion
imports sympy for an isinstance test. Each test runs in a fresh interpreter, as a
tracer process is one."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(os.environ.get("SOLBENCH_REPO", Path(__file__).resolve().parents[2]))

_HEAD = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
import torch
from solbench_py import tracer
tracer.ready("{}")
"""

# Matrix products, a softmax, type promotion (an int64 index into float math), a
# division through torch._refs and a reduction: meta kernels that call torch._check,
# guard_or_false and sym_eq. (A bfloat16 sum's conversion to float asks
# torch.utils._sympy, which is sympy's: 5 of the 94 public problems load it.)
_TRACE = _HEAD + r"""
req = {"reference": "import torch\ndef run(x, w, i):\n"
                    "    y = torch.softmax((x @ w) / 3.0, -1)\n"
                    "    return (y[i] * 2 + i.unsqueeze(-1)).sum(0) / x.sum()\n",
       "inputs": [{"name": "x", "dtype": "float32", "source": "random", "shape": [64, 128]},
                  {"name": "w", "dtype": "float32", "source": "random", "shape": [128, 32]},
                  {"name": "i", "dtype": "int64", "source": "random", "shape": [16]}],
       "outputs": [{"name": "y", "dtype": "float32", "shape": [32]}],
       "axes_and_scalars": {}, "seed": 1, "mode": sys.argv[2]}
g = json.loads(tracer.trace(json.dumps(req)))
print(json.dumps({"status": g["status"], "mode": g["mode"], "ops": g["ops"],
                  "sympy": type(sys.modules.get("sympy")).__name__,
                  "shapes": type(sys.modules.get("torch.fx.experimental.symbolic_shapes")).__name__}))
"""

# Every plain answer of the stand-in, then the same calls on the real module. `own`
# are answered by the stand-in itself, `passed_on` (an int where a bool is expected)
# by the real function, whose error they get.
_SAME = _HEAD + r"""
own = [(n, (v,)) for n in ("expect_true", "guard_bool", "guard_or_false", "guard_or_true",
                          "guard_size_oblivious", "statically_known_true")
       for v in (True, False)]
own += [("guard_int", (3,)), ("size_hint", (7,)), ("guard_scalar", (2.5,)),
        ("guard_scalar", (False,)), ("sym_eq", (3, 3)), ("sym_eq", ([1, 2], (1, 2))),
        ("sym_eq", ([1, 2], [1])), ("sym_eq", ([1, [2, 3]], [1, [2, 4]])),
        ("sym_and", (True, False)), ("sym_and", (True,)), ("sym_or", (False, True)),
        ("sym_or", (False, False, False)), ("is_nested_int", (4,)), ("has_hint", (4,)),
        ("_advise_is_size", (4,)), ("_advise_is_bounded", (4, 8))]
passed_on = [("expect_true", (1,)), ("guard_or_false", (1,)), ("guard_int", (True,))]

def answers(calls):
    import torch.fx.experimental.symbolic_shapes as s
    out = []
    for name, args in calls:
        try:
            out.append(repr(getattr(s, name)(*args)))
        except Exception as e:
            out.append(type(e).__name__)
    return out

plain = answers(own)
kept = type(sys.modules["sympy"]).__name__
plain += answers(passed_on)
real = answers(own + passed_on)
print(json.dumps({"plain": plain, "real": real, "kept": kept,
                  "after": type(sys.modules["sympy"]).__name__,
                  "shapes": type(sys.modules["torch.fx.experimental.symbolic_shapes"]).__name__}))
"""

# Anything more than the plain answers is the real module's.
_USE = _HEAD + r"""
import sympy
x = sympy.Symbol("x")
from torch.fx.experimental.symbolic_shapes import ShapeEnv
import torch.fx.experimental.symbolic_shapes as s
print(json.dumps({"basic": isinstance(x, sympy.Basic), "shape_env": ShapeEnv.__name__,
                  "sympy": type(sys.modules["sympy"]).__name__,
                  "shapes": type(s).__name__,
                  "sym": str(s.sym_eq.__module__)}))
"""


def _run(script: str, *args, env_extra=None) -> dict:
    env = dict(os.environ, **(env_extra or {}))
    r = subprocess.run([sys.executable, "-c", script, str(REPO / "python"), *args],
                       capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


torch = pytest.importorskip("torch")
needs_check_with = pytest.mark.skipif(
    getattr(torch, "_check_with", None) is None or getattr(torch, "_disable_dynamo", None) is None,
    reason="this torch's meta kernels do not import symbolic_shapes (< 2.0)")


@needs_check_with
@pytest.mark.parametrize("mode", ["meta", "hybrid"])
def test_a_trace_through_meta_kernels_loads_neither_sympy_nor_symbolic_shapes(mode):
    got = _run(_TRACE, mode)
    assert got["status"] == "ok" and got["mode"] == mode and got["ops"]
    assert got["sympy"] == "_DeferredSympy" and got["shapes"] == "_DeferredShapes"
    # With the real modules loaded from the start, the same graph.
    real = _run(_TRACE, mode, env_extra={"SOLBENCH_TRACER_SYMPY": "1"})
    assert real["sympy"] == "module" and real["shapes"] == "module"
    assert real["ops"] == got["ops"]


@needs_check_with
def test_plain_answers_are_the_real_functions_answers():
    got = _run(_SAME)
    assert got["kept"] == "_DeferredSympy"
    assert got["after"] == "module" and got["shapes"] == "module"
    assert got["plain"] == got["real"]
    assert "AssertionError" in got["real"]  # expect_true(1) and the like: the real errors


@needs_check_with
def test_anything_more_loads_the_real_modules():
    got = _run(_USE)
    assert got["basic"] is True and got["shape_env"] == "ShapeEnv"
    assert got["sympy"] == "module" and got["shapes"] == "module"
    assert got["sym"] == "torch.fx.experimental.symbolic_shapes"


def test_an_old_torch_is_left_as_it_is():
    if getattr(torch, "_disable_dynamo", None) is not None:
        pytest.skip("torch >= 2: covered above")
    got = _run(_HEAD + "print(json.dumps({'sympy': type(sys.modules.get('sympy')).__name__}))")
    assert got["sympy"] != "_DeferredSympy"
