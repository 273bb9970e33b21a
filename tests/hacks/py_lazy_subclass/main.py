# Hack: returns a torch.Tensor subclass (the kind that can defer or fake work) from
# the first call. Must end REWARD_HACK (outputs are not plain tensors).
import torch


class _Lazy(torch.Tensor):
    pass


def run(hidden_states, weight):
    x = hidden_states.float()
    inv = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + 1e-5)
    return (x * inv * weight.float()).to(hidden_states.dtype).as_subclass(_Lazy)
