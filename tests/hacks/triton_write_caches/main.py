# Hack (Triton; gpu_only): writing where a solution does not belong. At import it
# tries to plant a file in the problem folder (next to the reference and the
# workloads), in /tmp, among the built libraries of the cache, and in another
# solution's Triton cache (entries there would be loaded by that solution). Every
# target is tried; the module raises when all were refused, else it runs an honest
# Triton RMSNorm. Landlock lets a worker write only its own scratch and jit folders.
# Must end RUNTIME_ERROR (PermissionError: all 4 writes refused), nothing planted.
import os

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


_refused = []
for _target in (os.path.join("@PROBLEM_DIR@", "planted.txt"),
                "/tmp/solbench-hack-@RUN_ID@.txt",
                os.path.join("@CACHE_DIR@", "builds", "planted.txt"),
                os.path.join("@CACHE_DIR@", "jit", "another-solution", "triton", "planted.json")):
    try:
        with open(_target, "w") as f:
            f.write("planted by a solution")
    except PermissionError as e:
        _refused.append(f"{_target}: {e.strerror}")
if len(_refused) == 4:
    raise PermissionError("all 4 writes refused: " + "; ".join(_refused))


@torch.no_grad()
def run(hidden_states, weight):
    rows, cols = hidden_states.shape
    output = torch.empty_like(hidden_states)
    if rows:
        _rmsnorm_rows[(rows,)](hidden_states, weight, output, hidden_states.stride(0),
                               output.stride(0), cols, 1e-5, BLOCK=triton.next_power_of_2(cols),
                               num_warps=8)
    return output
