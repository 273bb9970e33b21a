# The GPU twin of py_finalizer_between_calls (PyTorch on the GPU; gpu_only).
# Hack: each call hangs a finalizer on its input, which dies when the harness
# replaces the arguments for the next call. Where that happened after the next
# call's values were filled in (the views share one buffer, each call's 256 bytes
# further), the finalizer read them from the buffer and computed the next output
# outside the span. Must never PASS with a faked time: the previous call's objects
# are released before the next call's values exist (PASSED at its honest time).
import weakref

import torch

_stash = {}


def _rmsnorm(hidden_states, weight):
    x = hidden_states.float()
    inv = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + 1e-5)
    return (x * inv * weight.float()).to(hidden_states.dtype)


def _next_view(t):
    step = 256 // t.element_size()
    return (t._base, t.storage_offset() + step, tuple(t.shape), t.stride())


def _ahead(h, w):
    x = h[0].as_strided(h[2], h[3], h[1])
    y = w[0].as_strided(w[2], w[3], w[1])
    _stash[x.data_ptr()] = (x.clone(), y.clone(), _rmsnorm(x, y))


def run(hidden_states, weight):
    hit = _stash.pop(hidden_states.data_ptr(), None)
    out = None
    if hit is not None and torch.equal(hit[0], hidden_states) and torch.equal(hit[1], weight):
        out = hit[2]
    if hidden_states._base is not None and weight._base is not None:
        weakref.finalize(hidden_states, _ahead, _next_view(hidden_states), _next_view(weight))
    return out if out is not None else _rmsnorm(hidden_states, weight)
