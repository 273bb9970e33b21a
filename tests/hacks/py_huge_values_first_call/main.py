# Hack (or simply a broken kernel): returns finite but huge values (1e38) from the
# first call. Must end INCORRECT_NUMERICAL, as any wrong output of a correctness
# round does.
import torch


def run(hidden_states, weight):
    return torch.full_like(hidden_states, 1e38)
