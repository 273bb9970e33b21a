"""The zygote (src/harness/worker/zygote.h): a process that imported torch once
and forks workers. What it imports ahead (zygote_preload), whether it may still
fork (zygote_check), a forked worker's first step (after_fork), and a spare
worker's warm-up (warm_spare).
"""
from __future__ import annotations

import gc
import importlib
import os
import sys

import torch

from . import inputs as inputs_mod, record
from .loading import load_reference, reference_function
from .worker import release_memory
from .workload import Workload


_PRELOAD_GROUPS = {
    # torch.compile (the baseline, Python solutions): Dynamo and Inductor take seconds
    # to import; Triton is what Inductor and Triton solutions generate code with.
    # torch.utils.cpp_extension: every Python solution's worker patches it before the
    # solution loads (guard.block_extension_loading); its import (setuptools, hipify's
    # regular expressions) took 0.35-0.7 s of each warm call's solution load.
    "compile": ("triton", "torch._dynamo", "torch._inductor.config", "torch._inductor.compile_fx",
                "torch.utils.cpp_extension"),
}


def _triton_driver() -> None:
    """Triton's CUDA driver object, which a Triton kernel's first launch in a worker
    would otherwise make: its helper module (compiled into Triton's cache once, then
    loaded) and the search for libcuda (`ldconfig -p`). It starts no CUDA context
    (zygote_check still verifies that before every fork)."""
    from triton.runtime import driver
    driver.active.utils  # noqa: B018 - the attribute access makes the driver


def _source_keys() -> None:
    """The hashes of Triton's and torch's own files that a process's first compile
    computes to key its caches: Triton's triton_key() (its compiler, backends and
    library, 0.40 s on the GPU host, docs/speed.md) and Inductor's torch_key()
    (torch's sources, 0.11-0.18 s). Both read files only and keep the result in
    their module, so every worker forked after this finds them computed. (Inductor's
    other start-up work, its pattern tables, initialises CUDA and stays in the
    worker.)"""
    try:
        from triton.runtime.cache import triton_key
    except ImportError:  # older Triton
        from triton.compiler.compiler import triton_key
    triton_key()
    from torch._inductor.codecache import torch_key
    torch_key()


# Steps after a group's imports (same best effort).
_PRELOAD_STEPS = {"compile": (_triton_driver, _source_keys)}


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
    for step in _PRELOAD_STEPS.get(group, ()):
        try:
            step()
        except Exception as e:  # noqa: BLE001 - as above: the worker does it itself then
            missing.append(f"{step.__name__}: {type(e).__name__}: {e}")
    _freeze()
    return missing


def _freeze() -> None:
    """Moves every object the zygote made so far (torch's modules and the groups'
    imports: a million objects and more) to the garbage collector's permanent
    generation, which no collection walks. A forked worker's gc.collect()
    (release_memory, after each workload; 150-200 ms that walked all of torch, on
    the way to a warm call's result where a streamed Judge frees what it held) then
    walks only what the worker made itself, and leaves the zygote's pages shared
    (a collection writes to every object it visits). Nothing of it was garbage: it
    is what the imports keep. SOLBENCH_GC_FREEZE=0 leaves them (a diagnosis)."""
    if os.environ.get("SOLBENCH_GC_FREEZE") != "0":
        gc.freeze()


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
    _freeze()  # the objects made since the last freeze (before any fork)
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


# make_inputs' round for a spare's warm-up, with a seed of its own: values no
# evaluation draws (theirs come from seeds the parent hands out, values.h).
_WARM_ROUND = 1_000_003


def warm_spare(warm: dict, device: str, values: bool = True) -> int:
    """A spare worker's warm-up (zygote.h, "Spares") on the first workload of the
    evaluation that asked for it, the likely next one's too: the kernels that make
    its inputs and those of the harness's own steps on them (_warm_harness), and
    with warm["run_reference"] (a reference worker's spare) the reference's and the
    comparison's, are loaded before any evaluation wants them.
    The values are drawn for a round no evaluation uses, and the memory is handed
    back; `values` False (inputs too large to make twice) warms the matrix products
    only. Returns the steps run."""
    _warm_products(warm["workload"], device)
    if not values:
        if device.startswith("cuda"):
            _warm_harness_light(warm["workload"], device)
        return 0
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
        seed = int.from_bytes(os.urandom(7), "little")
        x = w.make_inputs(_WARM_ROUND, seed)
        steps = 1
        _warm_harness(w, x, device, seed)
        if warm.get("run_reference") and ref is not None:
            refs = w.run_reference(x)
            w.check(refs, refs, True)
            steps = 3
    finally:
        release_memory(device)
    return steps


def _warm_harness(w: Workload, x: list, device: str, seed: int) -> None:
    """What the harness does around a call, once, on these inputs: outputs made
    and poisoned, the inputs' digests, a record written and read back, and a
    timed call's arguments drawn. In a fresh process each pays its kernels' first
    loads, its pinned buffers and its threads' start once. (Triton RMSNorm on an
    H200, five rounds: the Recorder's digests 70-80 ms before, 7 ms after; its
    records 46-55 ms, 13 ms; the Judge's checks 70-84 ms, 17 ms.)"""
    outs = w.alloc_outputs()
    # A few KiB of each output: the first loads do not depend on the size, and a
    # large record would hold the GPU's lock (shared) and the scratch folder's space.
    _record_round_trip([t.reshape(-1)[:4096] for t in outs], x, device)
    w.arg_pool([x], None, 2, True).next(seed)


def _record_round_trip(outs: list, x: list, device: str) -> None:
    """The digests of `x`, then a record of `outs` written and read back (its digest
    checked) in the scratch folder, and removed."""
    before = record.digests(x)
    path = os.path.join(os.getcwd(), "_warm.rec")
    try:
        record.read_call(path, record.write_call(path, outs, x, before), device)
    finally:
        if os.path.exists(path):
            os.remove(path)


def _dtypes_of(entries) -> list:
    """The torch dtypes of a workload spec's inputs or outputs, each once, in order;
    names this torch does not know are left out."""
    out = []
    for e in entries or ():
        try:
            dt = inputs_mod.torch_dtype(e.get("dtype"))
        except (ValueError, inputs_mod.UnsupportedDtype):
            continue
        if dt not in out:
            out.append(dt)
    return out


def _warm_harness_light(spec: dict, device: str) -> None:
    """_warm_harness without the workload's values, for inputs too large to make
    twice: a record of a few KiB of each output dtype written and read back, and
    the digests of a small tensor, so that the pinned buffers, the copy streams and
    the fingerprint kernel are there before the first round. (gemma3 SwiGLU on an
    H200, 302 MB of inputs, no warm-up of them: the Judge's five record reads took
    50 ms and its sampled calls' 33 ms, against 2.3 ms for RMSNorm's warmed ones.)"""
    dtypes = _dtypes_of(spec.get("outputs"))
    outs = [torch.zeros(4096, dtype=dt, device=device) for dt in dtypes or [torch.uint8]]
    _record_round_trip(outs, [torch.zeros(4096, dtype=torch.uint8, device=device)], device)
    release_memory(device)


_PRODUCT_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


def _warm_products(spec: dict, device: str) -> None:
    """A small matrix product in each floating dtype of the workload's inputs. In a
    fresh process the first cuBLAS product of a dtype costs 65-90 ms (H200: bfloat16
    86 ms, then float32 64 ms more; the worker's start warms float32 only), which a
    solution's first call paid (gemma3 SwiGLU's first F.linear: 86 ms, the next 0.2
    ms); after a 16x16 product the first large one took 3.8 ms. No values of the
    evaluation are involved, and inputs of any size get it."""
    if not device.startswith("cuda"):
        return
    done = [dt for dt in _dtypes_of(spec.get("inputs")) if dt in _PRODUCT_DTYPES]
    for dt in done:
        a = torch.ones(16, 16, dtype=dt, device=device)
        a @ a
    if done:
        torch.cuda.synchronize(device)
