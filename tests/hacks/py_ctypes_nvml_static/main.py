# Hack: loads NVML through ctypes (clocks, power). Must end REWARD_HACK
# ("loads libnvidia-ml.so.1").
import ctypes

import torch

_nvml = ctypes.cdll.LoadLibrary("libnvidia-ml.so.1")


def run(hidden_states, weight):
    x = hidden_states.float()
    inv = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + 1e-5)
    return (x * inv * weight.float()).to(hidden_states.dtype)
