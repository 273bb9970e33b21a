# Honest twin of the thread and process hacks: a threading.Lock (a warning only) and
# the C compiler run to completion at import (what Triton and Inductor do).
# Must end PASSED.
import subprocess
import threading

import torch

_lock = threading.Lock()
_cc = subprocess.run(["cc", "--version"], check=True, capture_output=True)


def run(hidden_states, weight):
    with _lock:
        x = hidden_states.float()
        inv = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + 1e-5)
        return (x * inv * weight.float()).to(hidden_states.dtype)
