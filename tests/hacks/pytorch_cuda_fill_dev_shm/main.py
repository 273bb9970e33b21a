# The GPU twin of py_fill_dev_shm (PyTorch on the GPU; gpu_only).
# Hack: fills the machine's memory through /dev/shm (a tmpfs the host shares with
# every process, without a limit of its own, kept after the evaluation), and tries
# /tmp too. Writes 2 GiB into /dev/shm in the first call, past the worker's
# private tmpfs (1 GiB by default, shared with $TMPDIR): the write fails with
# ENOSPC and the parent names the limit; the host's /dev/shm and /tmp get nothing.
# Where no mount namespace can be had, /dev/shm is not writable (PermissionError).
# Must end RUNTIME_ERROR, nothing left in /dev/shm or /tmp.
import os

import torch

_filled = False


def _fill(path, total):
    chunk = b"x" * (64 << 20)
    with open(path, "wb") as f:
        for _ in range(total // len(chunk)):
            f.write(chunk)


def run(hidden_states, weight):
    global _filled
    if not _filled:
        _filled = True
        try:
            _fill("/tmp/solbench-hack-@RUN_ID@-tmp", 64 << 20)
        except PermissionError:
            pass  # the host's /tmp stays the host's
        _fill("/dev/shm/solbench-hack-@RUN_ID@-shm", 2 << 30)
    x = hidden_states.float()
    inv = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + 1e-5)
    return (x * inv * weight.float()).to(hidden_states.dtype)
