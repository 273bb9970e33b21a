import torch
import triton
import triton.language as tl


# Language "pytorch", as agent-written solutions usually declare, with an autotuned
# Triton kernel inside: the worker's sandbox must let Triton run ptxas and build its
# launcher, and the autotuner benchmark its configs.
@triton.autotune(
    configs=[triton.Config({}, num_warps=w) for w in (4, 8, 16)],
    key=["n_cols"],
)
@triton.jit
def _rmsnorm(x_ptr, w_ptr, y_ptr, stride_x, stride_y, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    y = x * tl.rsqrt(tl.sum(x * x, axis=0) / n_cols + eps) * w
    tl.store(y_ptr + row * stride_y + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


@torch.no_grad()
def run(hidden_states, weight, output):
    rows, cols = hidden_states.shape
    if rows == 0:
        return
    _rmsnorm[(rows,)](hidden_states, weight, output, hidden_states.stride(0), output.stride(0),
                      cols, 1e-5, BLOCK=triton.next_power_of_2(cols))
