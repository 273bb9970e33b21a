import torch


@torch.no_grad()
def run(x, weight):
    M, K = x.shape
    N, K_w = weight.shape
    # Check constants
    assert K == 4096
    assert N == 6144
    assert K_w == K

    # Step 1: upcast operands (bf16 values are exact in float32)
    x_f = x.to(torch.float32)
    w_f = weight.to(torch.float32)
    # Step 2: out = x @ weight^T with float32 accumulation
    out = torch.matmul(x_f, w_f.t())
    # Step 3: round once to bfloat16
    return out.to(torch.bfloat16)
