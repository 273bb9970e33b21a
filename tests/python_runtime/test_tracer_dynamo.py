"""A tracer process does not import torch._dynamo (docs/sol.md, "Where a cold trace's
time goes"): torch 2.x's meta kernels and reference operators are wrapped in
torch._disable_dynamo, whose first call would import it. Each test runs in a fresh
interpreter, as a tracer process is one."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(os.environ.get("SOLBENCH_REPO", Path(__file__).resolve().parents[2]))

# A reference whose division goes through torch._refs (a wrapped operator) under
# the tracer's meta mode, as L1/046's does.
_PROBE = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
import torch
from solbench_py import tracer
req = {"reference": "import torch\ndef run(x):\n    return torch.softmax(x / 3.0, -1) / x.sum()\n",
       "inputs": [{"name": "x", "dtype": "float16", "source": "random", "shape": [64, 128]}],
       "outputs": [{"name": "y", "dtype": "float16", "shape": [64, 128]}],
       "axes_and_scalars": {}, "seed": 1, "mode": "meta"}
tracer.ready("{}")
g = json.loads(tracer.trace(json.dumps(req)))
out = {"status": g["status"], "ops": len(g["ops"]),
       "loaded": type(sys.modules.get("torch._dynamo")).__name__}
if sys.argv[2] == "use":
    # Anything more than disable() is the real module's.
    import torch._dynamo.config
    out["after"] = type(sys.modules["torch._dynamo"]).__name__
    out["is_compiling"] = torch._dynamo.is_compiling()
print(json.dumps(out))
"""


def _probe(use: str, env_extra=None) -> dict:
    env = dict(os.environ, **(env_extra or {}))
    r = subprocess.run([sys.executable, "-c", _PROBE, str(REPO / "python"), use],
                       capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


torch = pytest.importorskip("torch")
needs_dynamo = pytest.mark.skipif(getattr(torch, "_disable_dynamo", None) is None,
                                  reason="this torch has no torch._disable_dynamo (< 2.0)")


@needs_dynamo
def test_a_trace_through_wrapped_operators_does_not_load_dynamo():
    got = _probe("trace")
    assert got["status"] == "ok" and got["ops"] > 0
    assert got["loaded"] == "_DeferredDynamo"
    # The same trace with Dynamo loaded as before gives the same graph size.
    real = _probe("trace", {"SOLBENCH_TRACER_DYNAMO": "1"})
    assert real["loaded"] == "module" and real["ops"] == got["ops"]


@needs_dynamo
def test_anything_more_than_disable_loads_the_real_module():
    got = _probe("use")
    assert got["after"] == "module"
    assert got["is_compiling"] is False


def test_an_old_torch_is_left_as_it_is():
    if getattr(torch, "_disable_dynamo", None) is not None:
        pytest.skip("torch >= 2: covered above")
    got = _probe("trace")
    assert got["status"] == "ok"
    assert got["loaded"] == "NoneType"  # no stand-in where torch has no Dynamo
