# The GPU twin of py_copy_input (PyTorch on the GPU; gpu_only).
# Cheat: returns a copy of the input instead of normalising it. Here the weight is
# random (not a norm weight of ones) and the rows are scaled by 1/rms, so the copy is
# far from the reference under atol = rtol = 0.01. `solbench validate
# --probe-tolerance` lists the workloads where a copy of an input would pass.
# Must end INCORRECT_NUMERICAL ("of elements within tolerance").
import torch


def run(hidden_states, weight):
    return hidden_states.clone()
