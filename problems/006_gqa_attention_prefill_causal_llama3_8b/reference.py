import math

import torch


@torch.no_grad()
def run(q, k, v):
    batch_size, seq_len, num_qo_heads, head_dim = q.shape
    _, _, num_kv_heads, _ = k.shape
    # Check constants
    assert num_qo_heads == 32
    assert num_kv_heads == 8
    assert head_dim == 128
    assert k.shape == (batch_size, seq_len, num_kv_heads, head_dim)
    assert v.shape == (batch_size, seq_len, num_kv_heads, head_dim)

    group_size = num_qo_heads // num_kv_heads
    sm_scale = 1.0 / math.sqrt(head_dim)
    device = q.device

    output = torch.empty((batch_size, seq_len, num_qo_heads, head_dim), dtype=q.dtype, device=device)

    # Causal mask: query i may attend to keys j <= i
    positions = torch.arange(seq_len, device=device)
    causal = positions[None, :] <= positions[:, None]  # [seq_len(q), seq_len(k)]

    # Process one sequence and one KV head (with its group of query heads) at a time
    # to bound the size of the [group_size, seq_len, seq_len] score matrix.
    for b in range(batch_size):
        for h_kv in range(num_kv_heads):
            h0 = h_kv * group_size
            # Step 1: gather the query heads that share this KV head, upcast to float32
            q_g = q[b, :, h0:h0 + group_size, :].to(torch.float32).transpose(0, 1)  # [G, S, D]
            # Step 2: repeat the KV head for every query head of the group
            k_h = k[b, :, h_kv, :].to(torch.float32)  # [S, D]
            v_h = v[b, :, h_kv, :].to(torch.float32)  # [S, D]
            k_rep = k_h.unsqueeze(0).expand(group_size, seq_len, head_dim)
            v_rep = v_h.unsqueeze(0).expand(group_size, seq_len, head_dim)
            # Step 3: scores = Q @ K^T * scale
            scores = torch.matmul(q_g, k_rep.transpose(1, 2)) * sm_scale  # [G, S, S]
            # Step 4: causal mask with -inf
            scores = scores.masked_fill(~causal[None, :, :], float("-inf"))
            # Step 5: softmax in float32
            probs = torch.softmax(scores, dim=-1)
            # Step 6: P @ V
            out_g = torch.matmul(probs, v_rep)  # [G, S, D]
            output[b, :, h0:h0 + group_size, :] = out_g.transpose(0, 1).to(q.dtype)

    return output
