import torch


def get_inputs(axes_and_scalars: dict, device: torch.device) -> dict:
    """Build router inputs whose top-3 router logits are well separated.

    gate_weight is random; hidden_states are random vectors corrected (in the row space of
    gate_weight) so that every token's logits hit target values whose 1st/2nd/3rd largest
    entries are at least 0.5 apart. Top-k choices therefore have no near-ties and the integer
    expert ids are the same for any reasonable implementation.
    """
    num_tokens = axes_and_scalars["num_tokens"]
    hidden_size = axes_and_scalars["hidden_size"]
    num_experts = axes_and_scalars["num_experts"]

    # Router weight, nn.Linear layout [num_experts, hidden_size]
    gate_weight = (torch.randn(num_experts, hidden_size, device=device) / hidden_size ** 0.5).to(torch.bfloat16)
    w = gate_weight.to(torch.float32)

    # Target logits: sorted values with gaps >= 0.5 between ranks 1, 2 and 3
    top1 = torch.rand(num_tokens, 1, device=device) * 2.0 + 0.5
    top2 = top1 - 0.5 - torch.rand(num_tokens, 1, device=device) * 1.5
    top3 = top2 - 0.5 - torch.rand(num_tokens, 1, device=device)
    rest = top3 - torch.rand(num_tokens, num_experts - 3, device=device) * 2.0
    sorted_vals = torch.cat([top1, top2, top3, rest], dim=1)  # [T, E], descending
    # Scatter them to a random expert order per token
    perm = torch.rand(num_tokens, num_experts, device=device).argsort(dim=1)
    target = torch.empty_like(sorted_vals).scatter_(1, perm, sorted_vals)

    # hidden = noise + w^T (w w^T)^-1 (target - w noise): logits(hidden) == target exactly
    noise = torch.randn(num_tokens, hidden_size, device=device)
    resid = target - noise @ w.t()  # [T, E]
    gram = (w.to(torch.float64) @ w.to(torch.float64).t())  # [E, E]
    coef = torch.linalg.solve(gram, resid.to(torch.float64).t()).t().to(torch.float32)  # [T, E]
    hidden_states = (noise + coef @ w).to(torch.bfloat16)

    return {"hidden_states": hidden_states, "gate_weight": gate_weight}


@torch.no_grad()
def run(hidden_states, gate_weight):
    num_tokens, hidden_size = hidden_states.shape
    num_experts, _ = gate_weight.shape
    # Check constants
    assert hidden_size == 4096
    assert num_experts == 8
    TOP_K = 2

    # Step 1: router logits = hidden @ gate_weight^T (float32 accumulation)
    logits = torch.matmul(hidden_states.to(torch.float32), gate_weight.to(torch.float32).t())
    # Step 2: softmax over experts in float32
    probs = torch.softmax(logits, dim=-1)
    # Step 3: top-k experts, largest first
    topk_weights, topk_ids = torch.topk(probs, TOP_K, dim=-1, largest=True, sorted=True)
    # Step 4: renormalise the selected weights to sum to 1
    topk_weights = topk_weights / topk_weights.sum(dim=-1, keepdim=True)

    return topk_weights.to(torch.float32), topk_ids.to(torch.int64)
