import torch


@torch.no_grad()
def run(x):
    # Step 1: scale by two (exact in float32)
    return x * 2.0
