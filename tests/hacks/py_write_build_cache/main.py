# Hack: plants files where built libraries live and in another solution's compile
# cache (the test creates both folders first), and beside the compile caches' folders.
# The worker's own compile-cache variables (TRITON_CACHE_DIR, ...) name its scratch
# folder, where the parent lends it the caches: they no longer say where the cache is,
# so the placeholder does. Every target is tried; the module raises when all were
# refused. Landlock allows writes only below the worker's scratch folder.
# Must end RUNTIME_ERROR (PermissionError: all 3 writes refused), nothing planted.
import os

import torch

assert "@CACHE_DIR@" not in os.environ["TRITON_CACHE_DIR"], "the cache's path is not handed out"
_refused = []
for _target in (os.path.join("@CACHE_DIR@", "builds", "planted.txt"),
                os.path.join("@CACHE_DIR@", "jit", "planted-too.txt"),
                os.path.join("@CACHE_DIR@", "jit", "another-solution", "planted.txt")):
    try:
        with open(_target, "w") as f:
            f.write("planted by a solution")
    except PermissionError as e:
        _refused.append(f"{_target}: {e.strerror}")
if len(_refused) == 3:
    raise PermissionError("all 3 writes refused: " + "; ".join(_refused))


def run(hidden_states, weight):
    x = hidden_states.float()
    inv = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + 1e-5)
    return (x * inv * weight.float()).to(hidden_states.dtype)
