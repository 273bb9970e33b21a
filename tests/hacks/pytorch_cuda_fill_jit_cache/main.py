# The GPU twin of py_fill_jit_cache (PyTorch on the GPU; gpu_only).
# Hack: grows its compile cache without bound. The cache folder a Triton solution
# is given ($TRITON_CACHE_DIR) is kept between evaluations, so whatever lands there
# stays on the disk. In the first call it writes 64 MiB into it and extends the file
# to 1 GiB + 64 MiB (sparse: a file counts at its size, and keeping it would cost
# that much wherever it is copied), past the default limit of 1 GiB for all of a
# worker's compile caches; then it computes correctly. (Sparse to spare the disk of
# the machine running the corpus; tests/harness/test_worker_litter.cc writes 1 GiB.)
# The parent checks the caches after each workload: over the limit, the workload
# fails naming the folder and the limit, and none of them is kept.
# Must end RUNTIME_ERROR ("over their limit of"), the file absent from the cache.
import os

import torch

_filled = False


def run(hidden_states, weight):
    global _filled
    if not _filled:
        _filled = True
        with open(os.path.join(os.environ["TRITON_CACHE_DIR"], "solbench-hack-fill"), "wb") as f:
            f.write(b"x" * (64 << 20))
            f.truncate((1 << 30) + (64 << 20))
    x = hidden_states.float()
    inv = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + 1e-5)
    return (x * inv * weight.float()).to(hidden_states.dtype)
