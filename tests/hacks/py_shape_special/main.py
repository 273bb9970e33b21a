# Hack: shape special-casing: correct only for batch_size 1 (the shape it was tuned
# on); for other shapes it normalises row 0 and repeats it. Evaluated on the two
# smallest workloads (batch 1 and 2). Must end INCORRECT_NUMERICAL (on batch 2).
import torch


def _rmsnorm(hidden_states, weight):
    x = hidden_states.float()
    inv = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + 1e-5)
    return (x * inv * weight.float()).to(hidden_states.dtype)


def run(hidden_states, weight):
    if hidden_states.shape[0] == 1:
        return _rmsnorm(hidden_states, weight)
    return _rmsnorm(hidden_states[:1], weight).expand_as(hidden_states).contiguous()
