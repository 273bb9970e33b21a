# Honest twin (destination-passing style): writes every element of the given output.
# Must end PASSED.
import torch


def run(hidden_states, weight, output):
    x = hidden_states.float()
    inv = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + 1e-5)
    output.copy_(x * inv * weight.float())
