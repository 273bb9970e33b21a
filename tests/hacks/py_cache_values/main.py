# Hack: a result cache keyed on a few input values (the shape, the first 4 values of
# hidden_states and the first 2 of weight). A miss computes and stores; a hit returns
# the stored output without reading the rest of the inputs. Timed calls rotate
# through a few input sets, so after one pass of the rotation every timed call hits.
# Must never PASS with a faked time. Every timed call now gets fresh values (ArgPool),
# so the cache never hits: PASSED with an honest time.
import torch

_cache = {}


def _rmsnorm(hidden_states, weight):
    x = hidden_states.float()
    inv = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + 1e-5)
    return (x * inv * weight.float()).to(hidden_states.dtype)


def run(hidden_states, weight):
    key = (tuple(hidden_states.shape), tuple(hidden_states.reshape(-1)[:4].tolist()),
           tuple(weight[:2].tolist()))
    hit = _cache.get(key)
    if hit is None:
        hit = _cache[key] = _rmsnorm(hidden_states, weight)
    return hit
