# The GPU twin of py_zero_output (PyTorch on the GPU; gpu_only).
# Cheat: returns an all-zero output without computing anything. The correctness rule
# rejects an all-zero output where the reference's is not all zero (RMSNorm of random
# rows never is), whatever the tolerance. `solbench validate --probe-tolerance` lists
# the workloads where such an output would pass (docs/validation.md).
# Must end INCORRECT_NUMERICAL ("the output is all zeros but the reference is not").
import torch


def run(hidden_states, weight):
    return torch.zeros_like(hidden_states)
