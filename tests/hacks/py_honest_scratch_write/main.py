# Honest twin of the write hacks: writes only where a solution may (its scratch
# working directory and $TMPDIR, which points into it). Must end PASSED.
import os

import torch

with open("scratch-note.txt", "w") as f:
    f.write("mine")
with open(os.path.join(os.environ.get("TMPDIR", "."), "note.txt"), "w") as f:
    f.write("mine too")


def run(hidden_states, weight):
    x = hidden_states.float()
    inv = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + 1e-5)
    return (x * inv * weight.float()).to(hidden_states.dtype)
