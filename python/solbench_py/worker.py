"""The worker process's start and the device (src/harness/worker/worker.h,
worker_session.h): the guards installed and torch warmed before any solution
code runs (init), the environment described, the stream native kernels launch
on, memory handed back after a workload, and JSON for the C++ side.
"""
from __future__ import annotations

import gc
import os
import platform
import sys

import torch

from . import hooks, lent_caches
from .guard import install_exec_guard
from .threads import install_thread_registry


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
    lent_caches.relocate()  # before the solution's import hooks are taken stock of
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


def synchronize(device: str) -> None:
    """Waits for every kernel this process queued on the device (the end of a
    worker's step, before it lets the GPU's timing lock go)."""
    if device.startswith("cuda"):
        torch.cuda.synchronize(torch.device(device))


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
