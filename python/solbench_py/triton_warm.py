"""Triton's first launch in a spare worker, ahead of the solution (zygote.h, "Spares").

The first Triton kernel a process launches costs 0.34-0.38 s beyond that kernel's own
cache lookup (H200 host, Triton 3.6, its compiled kernel in the cache: Triton's
compiler modules, the hash of its own sources, ptxas's version, the target query);
the second kernel's first launch costs 3-4 ms (.devrun/triton_first.py). A spare
worker made for a Python solution pays it ahead, with a kernel of its own: compiled
outside the GPU's timing lock (compile_ahead) and launched once on one element under
the lock (launch), both with Triton's cache in a folder of the worker's private tmp,
never in the cache folder the solution's own is lent into (_PrivateCache).
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


class _PrivateCache:
    """TRITON_CACHE_DIR pointed at a folder of the worker's private tmp for the
    warm-up's compile and its launch alike: the launch builds Triton's launcher for
    the kernel's signature, and a file written into the worker's own cache folder
    would keep the solution's lent cache out of it (lend_caches renames over an
    empty folder only)."""
    folder = None

    def __enter__(self):
        if _PrivateCache.folder is None:
            _PrivateCache.folder = tempfile.mkdtemp(prefix="triton-warm-")
        self.kept = os.environ.get("TRITON_CACHE_DIR")
        os.environ["TRITON_CACHE_DIR"] = _PrivateCache.folder

    def __exit__(self, *_exc):
        if self.kept is None:
            os.environ.pop("TRITON_CACHE_DIR", None)
        else:
            os.environ["TRITON_CACHE_DIR"] = self.kept


def compile_ahead(device: str) -> bool:
    """Compiles the kernel for `device` (no GPU work); False where there is no Triton
    or no GPU, or it failed (the solution then pays the first launch itself)."""
    if triton is None or not device.startswith("cuda"):
        return False
    try:
        with _PrivateCache():
            _touch.warmup(torch.empty(1, device=device), grid=(1,))
        return True
    except Exception:  # noqa: BLE001 - a warm-up is a courtesy
        return False


def launch(device: str) -> bool:
    """Launches the compiled kernel once (a few microseconds of GPU work)."""
    if triton is None or not device.startswith("cuda"):
        return False
    try:
        with _PrivateCache():
            _touch[(1,)](torch.empty(1, device=device))
            torch.cuda.synchronize(device)
        return True
    except Exception:  # noqa: BLE001 - as above
        return False
