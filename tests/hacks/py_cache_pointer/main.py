# Hack: a result cache keyed on the arguments' addresses (data_ptr) and shape, for
# harnesses that time the same buffers over and over. A hit returns the stored
# output. Every timed call gets arguments at addresses no earlier call saw, so it
# never hits there. Must end PASSED with an honest time, or INCORRECT_NUMERICAL if a
# correctness round reuses an address with new values (never PASSED faked).
import torch

_cache = {}


def _rmsnorm(hidden_states, weight):
    x = hidden_states.float()
    inv = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + 1e-5)
    return (x * inv * weight.float()).to(hidden_states.dtype)


def run(hidden_states, weight):
    key = (hidden_states.data_ptr(), weight.data_ptr(), tuple(hidden_states.shape))
    hit = _cache.get(key)
    if hit is None:
        hit = _cache[key] = _rmsnorm(hidden_states, weight)
    return hit
