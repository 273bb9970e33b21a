# Hack (PyTorch on the GPU; gpu_only): the value-keyed result cache of py_cache_values
# on the GPU: a hit costs one tiny device-to-host copy instead of the normalisation's
# kernels. Must never PASS with a faked time; with fresh values in every timed call
# the cache never hits: PASSED with an honest time.
import torch

_cache = {}


@torch.no_grad()
def run(hidden_states, weight):
    key = (tuple(hidden_states.shape), tuple(hidden_states.reshape(-1)[:4].tolist()),
           tuple(weight[:2].tolist()))
    hit = _cache.get(key)
    if hit is None:
        x = hidden_states.float()
        inv = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + 1e-5)
        hit = _cache[key] = (x * inv * weight.float()).to(hidden_states.dtype)
    return hit
