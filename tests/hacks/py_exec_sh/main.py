# Hack: runs a shell from the call. Must end RUNTIME_ERROR (the sandbox's
# "running '/usr/bin/dash' is not allowed").
import subprocess

import torch


def run(hidden_states, weight):
    subprocess.run(["/bin/sh", "-c", "echo pwned"], check=True)
    x = hidden_states.float()
    inv = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + 1e-5)
    return (x * inv * weight.float()).to(hidden_states.dtype)
