"""The Python half of the evaluation worker (src/harness/worker/worker.cc): the
module the C++ worker and the zygote import and look names up in.

The C++ worker holds the objects made here (pybind11) and drives the
evaluation: it generates inputs, runs the reference and the solution, checks
outputs and times calls. Nothing here trusts the solution: its outputs are
checked for type, shape, dtype and values; its module lives apart from the
reference's. The code lives in modules by concern; this one holds their names:

  worker.py      the process's start (init), the device, JSON for the C++ side
  zygote.py      the zygote's preloads and checks, a forked worker's first step, spares
  guard.py       what the solution may run and load; what it did that is recorded
  threads.py     who started each Python thread
  identity.py    torch's and the harness's functions, torch's configuration
  provenance.py  whose code an object or a frame is (the solution's folders)
  loading.py     the reference, solutions, extensions, the languages' runtimes
  baseline.py    the scoring baseline's reference under torch.compile
  workload.py    one workload: inputs, reference, checks, outputs
  pool.py        the arguments of timed calls (ArgPool, CallValues)
  native.py      the native binding's view of the arguments
"""
from __future__ import annotations

from .baseline import compiled_reference, importable_reference, precompile
from .guard import ExecRefused, install_exec_guard, violations
from .identity import torch_changes, torch_fingerprint, unchanged_since
from .loading import (cannot_run_here, load_extension, load_reference, load_solution,
                      missing_runtime, reference_function)
from .native import native_args
from .pool import ArgPool, CallValues, pool_layout
from .provenance import SOLUTION_ROOTS as _SOLUTION_ROOTS  # noqa: F401 - the one list, not a copy
from .threads import install_thread_registry, thread_origins
from .worker import (current_stream, hardware_name, init, json_text, release_memory, synchronize,
                     warm_kernels)
from .workload import Workload, clone_all, lazy_outputs, normalize_outputs, same_bits
from .zygote import after_fork, warm_spare, zygote_check, zygote_preload

__all__ = [
    "ArgPool", "CallValues", "ExecRefused", "Workload", "after_fork", "cannot_run_here",
    "clone_all", "compiled_reference", "current_stream", "hardware_name", "importable_reference",
    "init", "install_exec_guard", "install_thread_registry", "json_text", "lazy_outputs",
    "load_extension", "load_reference", "load_solution", "missing_runtime", "native_args",
    "normalize_outputs", "pool_layout", "precompile", "reference_function", "release_memory",
    "same_bits", "synchronize", "thread_origins", "torch_changes", "torch_fingerprint",
    "unchanged_since", "violations", "warm_kernels", "warm_spare", "zygote_check", "zygote_preload",
]
