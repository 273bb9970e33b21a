# Hack (Triton; gpu_only): a non-DPS output that aliases an input: the kernel
# writes each normalised row over the same row of hidden_states (every program reads
# its whole row before it stores), and hidden_states itself is returned: no output
# allocation, and the caller's input is gone. Must end REWARD_HACK (input changed in
# place).
import torch
import triton
import triton.language as tl


@triton.jit
def _rmsnorm_rows(x_ptr, w_ptr, y_ptr, stride_x, stride_y, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    mean_sq = tl.sum(x * x, axis=0) / n_cols
    y = x * tl.rsqrt(mean_sq + eps) * w
    tl.store(y_ptr + row * stride_y + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


@torch.no_grad()
def run(hidden_states, weight):
    rows, cols = hidden_states.shape
    if rows:
        _rmsnorm_rows[(rows,)](hidden_states, weight, hidden_states, hidden_states.stride(0),
                               hidden_states.stride(0), cols, 1e-5,
                               BLOCK=triton.next_power_of_2(cols), num_warps=8)
    return hidden_states
