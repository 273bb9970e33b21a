# Hack: loads the CUDA driver through ctypes under a name built at run time, so the
# static look does not see it. There is no driver on a CPU machine, so here it ends
# RUNTIME_ERROR (cannot open libcuda.so.1); see the gpu_only twin for the GPU.
import ctypes

import torch

_cuda = ctypes.CDLL("".join(["lib", "cu", "da.so.1"]))


def run(hidden_states, weight):
    x = hidden_states.float()
    inv = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + 1e-5)
    return (x * inv * weight.float()).to(hidden_states.dtype)
