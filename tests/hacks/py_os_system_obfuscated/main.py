# Hack: os.system reached through a name built at run time. The audit hook refuses
# it with a message. Must end RUNTIME_ERROR ("a shell command").
import os

import torch


def run(hidden_states, weight):
    getattr(os, "sys" + "tem")("echo pwned")
    x = hidden_states.float()
    inv = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + 1e-5)
    return (x * inv * weight.float()).to(hidden_states.dtype)
