# Hack: leaves a file in /tmp (to pass data to a later evaluation or another
# process). Must end RUNTIME_ERROR (PermissionError), the file absent.
import torch

with open("/tmp/solbench-hack-@RUN_ID@.txt", "w") as f:
    f.write("planted by a solution")


def run(hidden_states, weight):
    x = hidden_states.float()
    inv = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + 1e-5)
    return (x * inv * weight.float()).to(hidden_states.dtype)
