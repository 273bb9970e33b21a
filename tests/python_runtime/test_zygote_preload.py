"""zygote.zygote_preload("compile"): what the zygote does before forking workers
that may compile. Where Triton and Inductor are installed, its steps leave Triton's
and torch's source hashes computed and no CUDA context (a forked worker could not
use one); where they are not, each step it cannot take is named, none raises. In a
fresh interpreter, as the zygote is one."""
import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(os.environ.get("SOLBENCH_REPO", Path(__file__).resolve().parents[2]))

_PROBE = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
import torch
from solbench_py.zygote import zygote_preload
missing = zygote_preload("compile")
out = {"missing": missing, "cuda_initialised": torch.cuda.is_initialized()}
try:
    from triton.runtime.cache import triton_key
except ImportError:
    try:
        from triton.compiler.compiler import triton_key
    except ImportError:
        triton_key = None
out["triton_key_cached"] = bool(triton_key and triton_key.cache_info().currsize)
print(json.dumps(out))
"""


def _has(module: str) -> bool:
    code = f"import importlib.util as u, sys; sys.exit(0 if u.find_spec({module!r}) else 1)"
    try:
        return subprocess.run([sys.executable, "-c", code], capture_output=True).returncode == 0
    except OSError:
        return False


def _run(script: str) -> dict:
    """`script` in a fresh interpreter, as the zygote is one; its last line's JSON."""
    r = subprocess.run([sys.executable, "-c", script, str(REPO / "python")], capture_output=True,
                       text=True, timeout=600,
                       env=dict(os.environ, PYTORCH_NVML_BASED_CUDA_CHECK="1"))
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_the_compile_group_leaves_the_source_hashes_computed_and_no_cuda_context():
    out = _run(_PROBE)
    assert out["cuda_initialised"] is False
    steps = [m.split(":")[0] for m in out["missing"]]
    if _has("triton") and _has("torch._inductor"):
        # Triton's driver needs a GPU (without one: "0 active drivers"); the hashes do not.
        assert [s for s in steps if s != "_triton_driver"] == [], out["missing"]
        assert out["triton_key_cached"] is True
    else:  # each step it could not take named, nothing raised
        assert "_source_keys" in steps
        assert "_triton_driver" in steps


_FREEZE = r"""
import gc, json, sys, time
sys.path.insert(0, sys.argv[1])
import torch
from solbench_py.zygote import zygote_check, zygote_preload
before = len(gc.get_objects())
zygote_preload("compile")
why = zygote_check()
after = len(gc.get_objects())
kept = [[] for _ in range(1000)]  # made after the freeze: collected as usual
print(json.dumps({"why": why, "before": before, "after": after, "young": len(gc.get_objects()),
                  "frozen": gc.get_freeze_count()}))
"""


def test_what_the_zygote_imported_is_frozen_before_it_forks():
    # A worker's gc.collect() walks what the collector tracks; after the zygote's
    # check (run before every fork) that is nearly nothing of torch's.
    out = _run(_FREEZE)
    assert out["why"] == ""
    assert out["before"] > 50_000  # torch's objects, tracked before
    assert out["frozen"] >= out["before"]
    assert out["after"] < 1_000 and out["young"] >= 1_000


def test_a_spare_warms_one_matrix_product_per_floating_dtype_of_the_inputs(monkeypatch):
    # zygote._warm_products: from the workload's input specs (no values are made, so
    # inputs of any size get it), each float dtype once, integers and unknown names
    # left out, one synchronisation; nothing on the CPU.
    sys.path.insert(0, str(REPO / "python"))
    import torch
    from solbench_py import zygote
    made = []
    real_ones = torch.ones
    monkeypatch.setattr(zygote.torch, "ones",
                        lambda *a, dtype=None, device=None: made.append((dtype, device))
                        or real_ones(*a))
    monkeypatch.setattr(zygote.torch.cuda, "synchronize", lambda d: made.append(("sync", d)))
    spec = {"inputs": [{"name": "x", "dtype": "bfloat16"}, {"name": "n", "dtype": "int64"},
                       {"name": "w", "dtype": "bfloat16"}, {"name": "s", "dtype": "float32"},
                       {"name": "q", "dtype": "no_such_dtype"}, {"name": "e"}]}
    zygote._warm_products(spec, "cuda:1")
    assert made == [(torch.bfloat16, "cuda:1"), (torch.float32, "cuda:1"), ("sync", "cuda:1")]
    made.clear()
    zygote._warm_products(spec, "cpu")
    zygote._warm_products({"inputs": [{"name": "n", "dtype": "int32"}]}, "cuda:0")
    assert made == []


def test_a_spare_of_large_inputs_warms_a_small_record_of_each_output_dtype(monkeypatch, tmp_path):
    # zygote._warm_harness_light: no values of the workload, a record of a few KiB
    # per output dtype (each dtype once, unknown names left out) written, read back
    # with its digest checked, and removed; the digests of a small tensor with it.
    sys.path.insert(0, str(REPO / "python"))
    import torch
    from solbench_py import record, zygote
    monkeypatch.chdir(tmp_path)
    seen = {}
    real_write, real_read = record.write_call, record.read_call

    def write(path, outputs, inputs_after, inputs_before=None):
        seen["written"] = [(t.dtype, t.numel()) for t in outputs]
        seen["before"] = inputs_before
        return real_write(path, outputs, inputs_after, inputs_before)

    def read(path, sha, device):
        got = real_read(path, sha, device)  # raises if the digest is not the written one
        seen["read"] = [t.dtype for t in got["outputs"]]
        return got
    monkeypatch.setattr(record, "write_call", write)
    monkeypatch.setattr(record, "read_call", read)
    monkeypatch.setattr(zygote, "release_memory", lambda d: seen.setdefault("released", d))
    spec = {"outputs": [{"name": "y", "dtype": "bfloat16"}, {"name": "z", "dtype": "float32"},
                        {"name": "w", "dtype": "bfloat16"}, {"name": "q", "dtype": "no_such"}]}
    zygote._warm_harness_light(spec, "cpu")
    assert seen["written"] == [(torch.bfloat16, 4096), (torch.float32, 4096)]
    assert seen["read"] == [torch.bfloat16, torch.float32]
    assert len(seen["before"]) == 1 and len(seen["before"][0]) == 64
    assert seen["released"] == "cpu"
    assert list(tmp_path.iterdir()) == []
