# Hack: changes the reference's results inside the solution's own process so that
# they agree with a wrong solution. A TorchFunctionMode entered at import (no torch
# function replaced, so the fingerprint is silent; nothing the static look refuses)
# makes every torch.rsqrt called outside the solution's own calls return 2s. The
# solution skips the normalisation and doubles (2 * x * weight: cheap, and wrong:
# the inputs' root mean square is about 1, so the honest result is about x * weight).
# A reference run in this process computes the same wrong values.
# Before the judge (reference outputs for correctness computed in the solution's
# worker: the binary of commit 6a1f1dd, or SOLBENCH_REFERENCE_WORKER=0 now): PASSED
# (latency 20 us, reference 15 us). Now every verdict comes from a reference worker
# that never loaded this module: must end INCORRECT_NUMERICAL ("round 1 of 2:
# output: 3.906% of elements within tolerance").
import torch
from torch.overrides import TorchFunctionMode

_inside = False


class _Agree(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if not _inside and getattr(func, "__name__", "") == "rsqrt":
            return torch.full_like(out, 2.0)
        return out


_Agree().__enter__()


def run(hidden_states, weight):
    global _inside
    _inside = True
    try:
        return (2 * hidden_states.float() * weight.float()).to(hidden_states.dtype)
    finally:
        _inside = False
