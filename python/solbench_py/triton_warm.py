"""Triton's first launch in a spare worker, ahead of the solution (zygote.h, "Spares").

The first Triton kernel a process launches costs 0.34-0.38 s beyond that kernel's own
cache lookup (H200 host, Triton 3.6, its compiled kernel in the cache: Triton's
compiler modules, the hash of its own sources, ptxas's version, the target query);
the second kernel's first launch costs 3-4 ms (.devrun/triton_first.py). A spare
worker made for a Python solution pays it ahead, with a kernel of its own: compiled
outside the GPU's timing lock (compile_ahead), into a folder of the worker's private
tmp, never into the cache folder the solution's own is lent into (lend_caches renames
it over an empty folder only); launched once on one element under the lock (launch).
"""
from __future__ import annotations

import os
import tempfile

import torch

try:
    import triton
    import triton.language as tl
except Exception:  # noqa: BLE001 - no Triton here: nothing to warm
    triton = None

if triton is not None:
    @triton.jit
    def _touch(p):
        tl.store(p, tl.load(p) + 1)


def compile_ahead(device: str) -> bool:
    """Compiles the kernel for `device` (no GPU work); False where there is no Triton
    or no GPU, or it failed (the solution then pays the first launch itself)."""
    if triton is None or not device.startswith("cuda"):
        return False
    kept = os.environ.get("TRITON_CACHE_DIR")
    os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix="triton-warm-")
    try:
        _touch.warmup(torch.empty(1, device=device), grid=(1,))
        return True
    except Exception:  # noqa: BLE001 - a warm-up is a courtesy
        return False
    finally:
        if kept is None:
            os.environ.pop("TRITON_CACHE_DIR", None)
        else:
            os.environ["TRITON_CACHE_DIR"] = kept


def launch(device: str) -> bool:
    """Launches the compiled kernel once (a few microseconds of GPU work)."""
    if triton is None or not device.startswith("cuda"):
        return False
    try:
        _touch[(1,)](torch.empty(1, device=device))
        torch.cuda.synchronize(device)
        return True
    except Exception:  # noqa: BLE001 - as above
        return False
