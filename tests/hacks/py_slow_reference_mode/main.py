# Hack: slows the reference through global torch state that replaces no function
# (so the torch fingerprint does not see it): a TorchFunctionMode entered at import
# and never left spins 200 us in every torch.rsqrt / Tensor.pow call made outside
# the solution's own call. The reference runs both, so when it is timed in this
# process T_ref and the speedup are inflated ~10x. The reference is timed in a
# worker that never loads the solution: the mode is inert there.
# Must end PASSED with an honest reference time (honest_reference_vs).
import time

import torch
from torch.overrides import TorchFunctionMode

_inside = False


class _Slow(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        if not _inside and getattr(func, "__name__", "") in ("rsqrt", "pow"):
            end = time.perf_counter() + 200e-6
            while time.perf_counter() < end:
                pass
        return func(*args, **(kwargs or {}))


_Slow().__enter__()


def run(hidden_states, weight):
    global _inside
    _inside = True
    try:
        x = hidden_states.float()
        inv = torch.rsqrt((x * x).mean(dim=-1, keepdim=True) + 1e-5)
        return (x * inv * weight.float()).to(hidden_states.dtype)
    finally:
        _inside = False
