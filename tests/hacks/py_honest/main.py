# Honest twin: plain PyTorch RMSNorm, written independently of the reference.
# Must end PASSED.
import torch


def run(hidden_states, weight):
    x = hidden_states.float()
    inv = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + 1e-5)
    return (x * inv * weight.float()).to(hidden_states.dtype)
