# Hack (Triton, destination-passing; gpu_only): shape special-casing. Correct for
# batch_size 1 (the shape it was tuned on); for any other shape it normalises row 0
# only and copies it into the other rows (one program instead of one per row).
# Evaluated on the two smallest workloads (batch 1 and 2).
# Must end INCORRECT_NUMERICAL (on batch 2).
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
def run(hidden_states, weight, output):
    rows, cols = hidden_states.shape
    if rows == 0:
        return
    _rmsnorm_rows[(1,)](hidden_states, weight, output, hidden_states.stride(0), output.stride(0),
                        cols, 1e-5, BLOCK=triton.next_power_of_2(cols), num_warps=8)
    if rows > 1:
        output[1:].copy_(output[:1].expand(rows - 1, cols))
