# Hack: asks for 128 TiB (more than the address space): a memory attack that must
# fail cleanly inside the worker. Must end RUNTIME_ERROR (cannot allocate).
import torch


def run(hidden_states, weight):
    hog = torch.empty(1 << 47, dtype=torch.uint8)
    hog.fill_(1)
    x = hidden_states.float()
    inv = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + 1e-5)
    return (x * inv * weight.float()).to(hidden_states.dtype)
