# Hack: finds the solbench cache from the compile-cache variables the worker sets
# (TRITON_CACHE_DIR = <cache>/jit/<key>/triton) and plants files where built
# libraries live and in another solution's compile cache (the test creates both
# folders first). Every target is tried; the module raises when all were refused.
# Landlock allows writes only below this solution's own jit folder.
# Must end RUNTIME_ERROR (PermissionError: all 3 writes refused), nothing planted.
import os

import torch

_cache = os.path.dirname(os.path.dirname(os.path.dirname(os.environ["TRITON_CACHE_DIR"])))
_refused = []
for _target in (os.path.join(_cache, "builds", "planted.txt"),
                os.path.join("@CACHE_DIR@", "builds", "planted-too.txt"),
                os.path.join(_cache, "jit", "another-solution", "planted.txt")):
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
