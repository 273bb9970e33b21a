# Hack: at import, plants a file in the problem folder and loosens its
# definition.json (which later evaluations read). The test substitutes the path of
# its copy of the problem for @PROBLEM_DIR@. Both writes are tried; the module
# raises when both were refused (Landlock).
# Must end RUNTIME_ERROR (PermissionError: both writes refused), the folder unchanged.
import json

import torch

_refused = []
try:
    with open("@PROBLEM_DIR@/planted.txt", "w") as f:
        f.write("planted by a solution")
except PermissionError as e:
    _refused.append(f"planted.txt: {e.strerror}")
try:
    with open("@PROBLEM_DIR@/definition.json", "r+") as f:
        d = json.load(f)
        d["description"] = "tampered"
        f.seek(0)
        json.dump(d, f)
        f.truncate()
except PermissionError as e:
    _refused.append(f"definition.json: {e.strerror}")
if len(_refused) == 2:
    raise PermissionError("both writes refused: " + "; ".join(_refused))


def run(hidden_states, weight):
    x = hidden_states.float()
    inv = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + 1e-5)
    return (x * inv * weight.float()).to(hidden_states.dtype)
