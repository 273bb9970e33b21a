import torch


@torch.no_grad()
def run(logits):
    batch_size, vocab_size = logits.shape
    # Check constants
    assert vocab_size == 128256

    # Step 1: upcast to float32
    x = logits.to(torch.float32)
    # Step 2: subtract the row maximum for numerical stability
    row_max = x.amax(dim=-1, keepdim=True)
    e = torch.exp(x - row_max)
    # Step 3: normalise by the row sum
    denom = e.sum(dim=-1, keepdim=True)
    probs = e / denom
    return probs
