"""A trivial entry point the bridge's tests call."""
import json
import sys


def echo(arg: str) -> str:
    data = json.loads(arg)
    return json.dumps({"echo": data, "python": sys.version.split()[0]})


def fail(arg: str) -> str:
    raise ValueError("requested failure: " + arg)


def compare_in_slices(arg: str) -> str:
    """correctness.compare on small cases, whole and in slices of 7 elements:
    the bridge test checks both give the same verdicts and numbers."""
    import torch

    from . import correctness

    g = torch.Generator().manual_seed(int(json.loads(arg).get("seed", 1)))
    ref = torch.randn(40, 25, generator=g)
    tol = {"max_atol": 1e-3, "max_rtol": 1e-3, "required_matched_ratio": 0.99}
    off = ref.clone()
    off.view(-1)[::20] += 1.0  # 5% of the elements wrong
    nan_last = ref.clone()
    nan_last.view(-1)[-1] = float("nan")
    neg = ref.clone()
    neg.view(-1)[3::50] = float("-inf")
    cases = {
        "equal": (ref.clone(), ref, tol),
        "five_percent_off": (off, ref, tol),
        "nan_in_last_slice": (nan_last, ref, tol),
        "matching_neg_inf": (neg, neg.clone(), dict(tol, allow_negative_inf=True)),
        "zeros": (torch.zeros_like(ref), ref, dict(tol, max_atol=10.0)),
        "over_cap": (ref + 0.5, ref, dict(tol, max_rtol=1.0, max_atol=1.0, max_error_cap=0.25)),
        "bf16": (ref.bfloat16(), ref.bfloat16(), tol),
    }
    out = {}
    for name, (o, r, t) in cases.items():
        out[name] = {"whole": correctness.compare(o, r, t),
                     "slices": correctness.compare(o, r, t, chunk=7),
                     "ref_problem": [correctness.reference_problem(r, t),
                                     correctness.reference_problem(r, t, chunk=7)]}
    return json.dumps(out)
