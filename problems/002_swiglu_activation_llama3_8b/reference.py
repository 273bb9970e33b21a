import torch
import torch.nn.functional as F


@torch.no_grad()
def run(gate_up):
    num_tokens, gate_up_size = gate_up.shape
    # Check constants
    intermediate_size = 14336
    assert gate_up_size == 2 * intermediate_size

    # Step 1: split the fused gate_proj/up_proj output (gate first, then up)
    gate = gate_up[:, :intermediate_size].to(torch.float32)
    up = gate_up[:, intermediate_size:].to(torch.float32)
    # Step 2: SiLU on the gate, silu(g) = g * sigmoid(g)
    act = F.silu(gate)
    # Step 3: gate the up projection and round once to the input dtype
    out = act * up
    return out.to(gate_up.dtype)
