# Hack: runs a shell behind Python's back: a hidden fork, then libc's execv through
# ctypes in the child, where no audit hook sees it. Landlock refuses the exec with
# EACCES. Must end RUNTIME_ERROR ("kernel refused exec").
import ctypes
import errno
import os

import torch

_libc = ctypes.CDLL(None, use_errno=True)
_pid = getattr(os, "fo" + "rk")()
if _pid == 0:
    _argv = (ctypes.c_char_p * 4)(b"/bin/sh", b"-c", b"echo pwned", None)
    _libc.execv(b"/bin/sh", _argv)
    os._exit(100 + ctypes.get_errno())
_code = os.waitstatus_to_exitcode(os.waitpid(_pid, 0)[1])
if _code == 100 + errno.EACCES:
    raise RuntimeError("kernel refused exec: EACCES")
raise RuntimeError(f"exec was not refused with EACCES (child exit code {_code})")


def run(hidden_states, weight):
    x = hidden_states.float()
    inv = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + 1e-5)
    return (x * inv * weight.float()).to(hidden_states.dtype)
