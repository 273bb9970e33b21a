import math

import torch


def make_indices(axes, device):
    """Index inputs from the axes: the batch splits total_q query tokens and
    num_kv_indices pages evenly (sequence b holds the tokens and pages
    [b * total // batch, (b + 1) * total // batch)), and page j of the
    concatenated page lists is page (5 * j + 3) % num_pages of the pool (all
    distinct while num_kv_indices <= num_pages and 5 does not divide
    num_pages)."""
    batch = axes["len_indptr"] - 1
    steps = torch.arange(batch + 1, dtype=torch.int64)
    qo_indptr = (steps * axes["total_q"]) // batch
    kv_indptr = (steps * axes["num_kv_indices"]) // batch
    kv_indices = (torch.arange(axes["num_kv_indices"], dtype=torch.int64) * 5 + 3) % axes["num_pages"]
    return {"qo_indptr": qo_indptr.to(torch.int32).to(device),
            "kv_indptr": kv_indptr.to(torch.int32).to(device),
            "kv_indices": kv_indices.to(torch.int32).to(device)}


@torch.no_grad()
def run(q, k_cache, v_cache, qo_indptr, kv_indptr, kv_indices, sm_scale):
    total_q, num_heads, head_dim = q.shape
    num_pages, page_size, num_kv_heads, _ = k_cache.shape
    assert page_size == 1
    group = num_heads // num_kv_heads
    device = q.device

    output = torch.zeros((total_q, num_heads, head_dim), dtype=torch.bfloat16, device=device)
    lse = torch.full((total_q, num_heads), -float("inf"), dtype=torch.float32, device=device)

    # The whole pool is converted; each sequence then picks its pages.
    q_f32 = q.to(torch.float32)
    k_rows = k_cache.to(torch.float32).reshape(num_pages, num_kv_heads, head_dim)
    v_rows = v_cache.to(torch.float32).reshape(num_pages, num_kv_heads, head_dim)

    for b in range(qo_indptr.shape[0] - 1):
        q_begin, q_end = int(qo_indptr[b].item()), int(qo_indptr[b + 1].item())
        kv_begin, kv_end = int(kv_indptr[b].item()), int(kv_indptr[b + 1].item())
        if q_begin >= q_end or kv_begin >= kv_end:
            continue
        pages = kv_indices[kv_begin:kv_end].to(torch.int64)
        keys = k_rows[pages]      # [n_kv, num_kv_heads, head_dim]
        values = v_rows[pages]
        n_q, n_kv = q_end - q_begin, kv_end - kv_begin
        for i in range(n_q):
            # Causal: the last query token sees every key of its sequence.
            visible = min(i + 1 + (n_kv - n_q), n_kv)
            if visible <= 0:
                continue
            token = q_begin + i
            for h in range(num_heads):
                g = h // group
                scores = (q_f32[token, h] @ keys[:visible, g].T) * sm_scale
                lse[token, h] = torch.logsumexp(scores, dim=-1) / math.log(2.0)
                weights = torch.softmax(scores, dim=-1)
                output[token, h] = (weights @ values[:visible, g]).to(torch.bfloat16)
    return output, lse
