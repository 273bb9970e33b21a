# Hack: a result cache keyed on the shape only: the first output of a shape is
# returned for every later call of that shape. Correctness round 2 has fresh inputs.
# Must end INCORRECT_NUMERICAL.
import torch

_cache = {}


def run(hidden_states, weight):
    key = tuple(hidden_states.shape)
    if key not in _cache:
        x = hidden_states.float()
        inv = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + 1e-5)
        _cache[key] = (x * inv * weight.float()).to(hidden_states.dtype)
    return _cache[key]
