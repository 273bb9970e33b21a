#!/usr/bin/env python3
"""The tolerance probe (python/solbench_py/tolerance_probe.py) of `solbench validate
--probe-tolerance`: outputs that compute nothing, judged with the judge's rule over
two correctness rounds.
  - a constant read off round 0's reference (a scalar loss) does not count unless it
    passes round 1 too; one a solution could know (a near-uniform softmax) does;
  - zeros pass only an all-zero reference; values near zero pass where atol is loose;
  - a copy of an input, also reshaped or cast, where the tolerance accepts it;
  - a reference written for CUDA runs on the CPU, and torch is left as it was.
Exit status 0 when every case holds."""
import json
import sys

import torch

from solbench_py import tolerance_probe


def spec(inputs, outputs, tolerance):
    return {"axes": {}, "op_type": "", "dataset_root": "", "tolerance": tolerance,
            "inputs": [{"name": n, "dtype": d, "shape": s, "description": "",
                        "source": {"type": "random"}} for n, d, s in inputs],
            "outputs": [{"name": n, "dtype": d, "shape": s} for n, d, s in outputs]}


def probe(reference, inputs, outputs, tolerance=None):
    return json.loads(tolerance_probe.probe(json.dumps({
        "reference": reference, "device": "cpu", "seed": 200,
        "workload": spec(inputs, outputs, tolerance or {})})))


def passes(answer, output):
    return [p["cheat"] for o in answer["outputs"] if o["name"] == output for p in o["passes"]]


def main() -> int:
    failures = []

    def expect(what, ok, detail):
        if not ok:
            failures.append(f"{what}: {detail}")

    x = [("x", "float32", [8, 4096])]
    # A scalar loss (mean of x^2 is 1 +- 0.02 here): with rtol 1e-5 round 0's value
    # is wrong in round 1; with rtol 0.05 any value near 1 is right in both.
    loss = "def run(x):\n    return (x ** 2).mean().reshape(1)\n"
    a = probe(loss, x, [("loss", "float32", [1])], {"max_atol": 1e-8, "max_rtol": 1e-5})
    expect("tight scalar loss", a["status"] == "checked" and a["rounds"] == 2 and
           not passes(a, "loss"), a)
    a = probe(loss, x, [("loss", "float32", [1])], {"max_atol": 1e-8, "max_rtol": 0.05})
    expect("loose scalar loss", any("a constant" in c for c in passes(a, "loss")), a)

    # Softmax over 4096: every value ~2.4e-4, below the default atol. Exact zeros are
    # refused by the all-zero rule; the dtype's tiniest value passes.
    a = probe("import torch\ndef run(x):\n    return torch.softmax(x, dim=-1)\n", x,
              [("y", "float32", [8, 4096])])
    got = passes(a, "y")
    expect("softmax: near zero", any("zeros that are not all zero" in c for c in got), a)
    expect("softmax: not all zeros", "all zeros" not in got, a)

    # An all-zero reference: zeros pass.
    a = probe("import torch\ndef run(x):\n    return torch.zeros_like(x)\n", x,
              [("y", "float32", [8, 4096])])
    expect("all-zero reference", passes(a, "y")[:1] == ["all zeros"], a)

    # Copies: same shape, reshaped, cast; an honest computation has none.
    two = [("x", "bfloat16", [64, 128]), ("w", "float32", [128, 64])]
    a = probe("import torch\ndef run(x, w):\n    return x.float().t() * 1.001\n", two,
              [("y", "float32", [128, 64])])
    expect("a transpose is no reshape", a["status"] == "checked" and not passes(a, "y"), a)
    a = probe("import torch\ndef run(x, w):\n    return (x.float() * 1.001).to(x.dtype)\n", two,
              [("y", "bfloat16", [64, 128])])
    expect("same-shape copy", "a copy of input 'x'" in passes(a, "y"), a)
    a = probe("import torch\ndef run(x, w):\n    return w.reshape(64, 128) * 1.001\n", two,
              [("y", "float32", [64, 128])])
    expect("reshaped input", "input 'w' reshaped to [64, 128]" in passes(a, "y"), a)
    a = probe("import torch\ndef run(x, w):\n    return x.float() * 1.001\n", two,
              [("y", "float32", [64, 128])])
    expect("cast input", "input 'x' cast to float32" in passes(a, "y"), a)
    a = probe("def run(x):\n    return x * 2.0 + 1.0\n", x, [("y", "float32", [8, 4096])])
    expect("honest computation", a["status"] == "checked" and not passes(a, "y"), a)

    # A reference written for a GPU, on this CPU: devices mapped, torch restored.
    if torch.cuda.is_available():
        return report(failures)
    had_sdpa = hasattr(torch.nn.functional, "scaled_dot_product_attention")
    sync = torch.cuda.synchronize
    a = probe("import torch\ndef run(x):\n    y = x * torch.ones(1, device='cuda')\n"
              "    torch.cuda.synchronize()\n    return y.cuda() * 1.001\n", x,
              [("y", "float32", [8, 4096])])
    expect("cuda reference on the CPU", a["status"] == "checked" and
           "a copy of input 'x'" in passes(a, "y") and a["device_mapped"], a)
    expect("torch restored", torch.cuda.synchronize is sync and
           hasattr(torch.nn.functional, "scaled_dot_product_attention") == had_sdpa, "")
    a = probe("import torch\ndef run(x):\n    torch.cuda.get_device_name(0)\n    return x\n", x,
              [("y", "float32", [8, 4096])])
    expect("needs a GPU", a["status"] == "not_checked" and a["reason"].startswith("needs a GPU"), a)
    a = probe("def run(x):\n    raise ValueError('broken')\n", x, [("y", "float32", [8, 4096])])
    expect("a failing reference", a == {"status": "not_checked",
                                        "reason": "the reference failed: ValueError: broken"}, a)
    return report(failures)


def report(failures) -> int:
    for f in failures:
        print("FAIL:", f)
    print(f"{len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
