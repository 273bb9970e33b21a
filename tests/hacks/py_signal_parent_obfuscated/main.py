# Hack: the same signal with os.kill reached through a name built at run time. The
# parent is outside the worker's PID namespace (getppid() is 0), and the seccomp
# filter lets the worker signal only itself. Must end RUNTIME_ERROR.
import os
import signal

import torch

_kill = getattr(os, "ki" + "ll")
_ppid = os.getppid()
if _ppid == 0:
    raise RuntimeError("parent not visible from the worker's PID namespace (getppid() == 0)")
_kill(_ppid, signal.SIGTERM)


def run(hidden_states, weight):
    x = hidden_states.float()
    inv = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + 1e-5)
    return (x * inv * weight.float()).to(hidden_states.dtype)
