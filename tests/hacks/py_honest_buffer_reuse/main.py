# Honest twin of the aliasing hacks: returns the same module-level buffer on every
# call (overwritten each time). Legitimate: the harness copies what a call returned
# before the next call. Must end PASSED.
import torch

_buffers = {}


def run(hidden_states, weight):
    key = (tuple(hidden_states.shape), hidden_states.dtype)
    out = _buffers.get(key)
    if out is None:
        out = _buffers[key] = torch.empty_like(hidden_states)
    x = hidden_states.float()
    out.copy_(x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + 1e-5) * weight.float())
    return out
