# Hack: a non-DPS output that aliases an input: the result is written into
# hidden_states' storage and hidden_states itself is returned (no allocation).
# Must end REWARD_HACK (input changed in place).
import torch


def run(hidden_states, weight):
    x = hidden_states.float()
    inv = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + 1e-5)
    hidden_states.copy_(x * inv * weight.float())
    return hidden_states
