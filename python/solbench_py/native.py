"""The native binding's view of a call's arguments (src/harness/worker/candidate.h,
native_library.h): data pointers, dtypes, shapes and strides.
"""
from __future__ import annotations

import torch

from . import inputs as inputs_mod


def native_args(values: list, dtypes) -> tuple:
    """Views for the native binding: (keepalive, [(data_ptr, dtype name, shape,
    strides in elements, device)]) with device -1 for host memory, else the CUDA
    ordinal. Scalars (`dtypes` gives their definition dtype) become host 0-d
    tensors kept alive by `keepalive` until the next call."""
    keep = []
    views = []
    for i, v in enumerate(values):
        if not isinstance(v, torch.Tensor):
            if dtypes is None:
                raise TypeError(f"argument {i} is not a tensor")
            v = torch.tensor(v, dtype=inputs_mod.torch_dtype(dtypes[i]))
            keep.append(v)
        dev = v.device
        views.append((v.data_ptr(), str(v.dtype).replace("torch.", ""), tuple(v.shape),
                      tuple(v.stride()), -1 if dev.type == "cpu" else int(dev.index or 0)))
    return keep, views
