# Honest twin (PyTorch on the GPU; gpu_only): the plain RMSNorm in PyTorch ops, the
# time the pytorch_cuda hacks are compared with. Must end PASSED.
import torch


@torch.no_grad()
def run(hidden_states, weight):
    x = hidden_states.float()
    inv = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + 1e-5)
    return (x * inv * weight.float()).to(hidden_states.dtype)
