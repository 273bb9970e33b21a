# Hack (PyTorch on the GPU; gpu_only): slows the reference through global torch
# state that replaces no function (the torch fingerprint does not see it): a
# TorchFunctionMode entered at import and never left queues a ~200 us spin kernel
# (torch.cuda._sleep) before every torch.rsqrt / Tensor.pow made outside the
# solution's own call. The reference calls both, so where it is timed in this
# process T_ref and the speedup are inflated. solbench times the reference in a
# worker that never loads the solution, so the mode is inert there.
# Must end PASSED with an honest reference time (honest_reference_vs).
import torch
from torch.overrides import TorchFunctionMode

_inside = False


class _Slow(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        if not _inside and getattr(func, "__name__", "") in ("rsqrt", "pow"):
            if any(isinstance(a, torch.Tensor) and a.is_cuda for a in args):
                torch.cuda._sleep(400_000)  # GPU clock cycles: ~200 us on an H100
        return func(*args, **(kwargs or {}))


_Slow().__enter__()


@torch.no_grad()
def run(hidden_states, weight):
    global _inside
    _inside = True
    try:
        x = hidden_states.float()
        inv = torch.rsqrt((x * x).mean(dim=-1, keepdim=True) + 1e-5)
        return (x * inv * weight.float()).to(hidden_states.dtype)
    finally:
        _inside = False
