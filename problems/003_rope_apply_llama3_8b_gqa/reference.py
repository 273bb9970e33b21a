import torch


def rotate_half(x):
    # [x1, x2] -> [-x2, x1] over the last dimension (HF Llama convention)
    half = x.shape[-1] // 2
    x1 = x[..., :half]
    x2 = x[..., half:]
    return torch.cat((-x2, x1), dim=-1)


@torch.no_grad()
def run(q, k, cos, sin):
    num_tokens, num_qo_heads, head_dim = q.shape
    _, num_kv_heads, _ = k.shape
    # Check constants
    assert num_qo_heads == 32
    assert num_kv_heads == 8
    assert head_dim == 128
    assert cos.shape == (num_tokens, head_dim)
    assert sin.shape == (num_tokens, head_dim)

    # Step 1: upcast and broadcast cos/sin over the head dimension
    cos_f = cos.to(torch.float32)[:, None, :]  # [num_tokens, 1, head_dim]
    sin_f = sin.to(torch.float32)[:, None, :]
    q_f = q.to(torch.float32)
    k_f = k.to(torch.float32)

    # Step 2: x * cos + rotate_half(x) * sin
    q_out = q_f * cos_f + rotate_half(q_f) * sin_f
    k_out = k_f * cos_f + rotate_half(k_f) * sin_f

    # Step 3: round once to the input dtype
    return q_out.to(q.dtype), k_out.to(k.dtype)
