# Hack: destination-passing; writes only the first half of every row of the output
# (half the work). Outputs are poisoned (NaN) before each call.
# Must end INCORRECT_NUMERICAL.
import torch


def run(hidden_states, weight, output):
    half = hidden_states.shape[-1] // 2
    x = hidden_states[..., :half].float()
    full = hidden_states.float()
    inv = torch.rsqrt(full.pow(2).mean(dim=-1, keepdim=True) + 1e-5)
    output[..., :half].copy_(x * inv * weight[:half].float())
