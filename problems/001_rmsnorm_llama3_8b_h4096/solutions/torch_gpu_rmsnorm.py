import torch


@torch.no_grad()
def run(hidden_states, weight, output):
    x = hidden_states.float()
    y = x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + 1e-5) * weight.float()
    output.copy_(y.to(hidden_states.dtype))
