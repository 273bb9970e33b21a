"""The correctness rule of the problem format (docs/formats.md), in torch.

Reductions run on the tensors' device; only a small summary (Python floats and
bools) comes back, so the GPU worker reuses this unchanged.
"""
from __future__ import annotations

from typing import Optional

import torch

OK = "OK"
INCORRECT_SHAPE = "INCORRECT_SHAPE"
INCORRECT_DTYPE = "INCORRECT_DTYPE"
INCORRECT_NUMERICAL = "INCORRECT_NUMERICAL"
INVALID_REFERENCE = "INVALID_REFERENCE"


def default_tolerance() -> dict:
    return {"max_atol": 1e-2, "max_rtol": 1e-2, "required_matched_ratio": 0.99,
            "max_error_cap": None, "allow_negative_inf": False}


def _as_float(t: torch.Tensor) -> torch.Tensor:
    if t.dtype == torch.bool or not t.dtype.is_floating_point or t.element_size() >= 2:
        return t.to(torch.float32)
    # FP8: convert through its own cast; packed FP4 compares as raw bytes.
    try:
        return t.to(torch.float32)
    except (RuntimeError, TypeError):
        return t.view(torch.uint8).to(torch.float32)


def reference_problem(ref: torch.Tensor, tol: dict) -> Optional[str]:
    """Why a reference output cannot be compared against (non-finite values), or None."""
    y = _as_float(ref)
    if y.numel() == 0:
        return None
    if bool(torch.isnan(y).any()):
        return "the reference produced NaN"
    inf = torch.isinf(y)
    if tol.get("allow_negative_inf"):
        inf = inf & (y > 0)
    if bool(inf.any()):
        return "the reference produced infinite values" + (
            "" if tol.get("allow_negative_inf") else " (allow_negative_inf is off)")
    return None


def compare(out: torch.Tensor, ref: torch.Tensor, tol: dict) -> dict:
    """Numerical comparison of one output tensor (shapes already equal).

    Returns {ok, reason, max_absolute_error, max_relative_error, has_nan,
    has_inf, matched_ratio}.
    """
    x = _as_float(out)
    y = _as_float(ref)
    atol = float(tol.get("max_atol", 1e-2))
    rtol = float(tol.get("max_rtol", 1e-2))
    ratio = float(tol.get("required_matched_ratio", 0.99))
    cap = tol.get("max_error_cap")
    res = {"ok": True, "reason": "", "max_absolute_error": 0.0, "max_relative_error": 0.0,
           "has_nan": False, "has_inf": False, "matched_ratio": 1.0}
    if x.numel() == 0:
        return res

    # 1. Non-finite values. Errors are still reported over the finite positions
    #    (JSON has no NaN), with has_nan / has_inf saying what was found.
    finite = torch.isfinite(x) & torch.isfinite(y)
    if tol.get("allow_negative_inf"):
        both_neg = torch.isneginf(x) & torch.isneginf(y)
        bad = ~(finite | both_neg)
    else:
        both_neg = None
        bad = ~finite
    if bool(bad.any()):
        has_nan = bool((torch.isnan(x) | torch.isnan(y)).any())
        fx, fy = x[finite], y[finite]
        if fx.numel():
            err = (fx - fy).abs_()
            res["max_absolute_error"] = float(err.max().item())
            res["max_relative_error"] = float((err / fy.abs().clamp_min(atol)).max().item())
        res.update(ok=False, has_nan=has_nan, has_inf=not has_nan,
                   reason="NaN in the output" if has_nan else "infinite values in the output"
                   + ("" if both_neg is None else " (other than -inf matching the reference)"))
        return res
    if both_neg is not None and bool(both_neg.any()):
        x = x[finite]
        y = y[finite]
        if x.numel() == 0:
            return res

    # 2. All-zero output against a nonzero reference.
    if bool((y != 0).any()) and not bool((x != 0).any()):
        res["ok"] = False
        res["reason"] = "the output is all zeros but the reference is not"

    # 3./4. Matched fraction, error cap, reported errors.
    err = (x - y).abs_()
    mismatched = err > (atol + rtol * y.abs())
    n = err.numel()
    matched = 1.0 - float(mismatched.sum().item()) / float(n)
    max_abs = float(err.max().item())
    max_rel = float((err / y.abs().clamp_min(atol)).max().item())
    res.update(max_absolute_error=max_abs, max_relative_error=max_rel, matched_ratio=matched)
    if res["ok"] and matched < ratio:
        res["ok"] = False
        res["reason"] = (f"{matched * 100:.4g}% of elements within tolerance "
                         f"(atol {atol:g}, rtol {rtol:g}); {ratio * 100:.4g}% required")
    if res["ok"] and cap is not None and max_abs > float(cap):
        res["ok"] = False
        res["reason"] = f"max absolute error {max_abs:.6g} exceeds max_error_cap {float(cap):g}"
    return res


def check_outputs(outs: list, refs: list, names: list, tol: dict, check_meta: bool = True) -> dict:
    """Compares every output with its reference.

    Returns {status (OK or one of the INCORRECT_*/INVALID_REFERENCE statuses),
    message, output (the failing output's name, or ""), max_absolute_error,
    max_relative_error, has_nan, has_inf, matched_ratio (the lowest)}.
    """
    summary = {"status": OK, "message": "", "output": "", "max_absolute_error": 0.0,
               "max_relative_error": 0.0, "has_nan": False, "has_inf": False,
               "matched_ratio": 1.0}
    if len(outs) != len(refs):
        summary.update(status=INCORRECT_SHAPE,
                       message=f"{len(outs)} outputs returned, {len(refs)} expected")
        return summary
    for name, ref in zip(names, refs):
        why = reference_problem(ref, tol)
        if why:
            summary.update(status=INVALID_REFERENCE, output=name, message=f"{name}: {why}")
            return summary
    if check_meta:
        for name, out, ref in zip(names, outs, refs):
            if not isinstance(out, torch.Tensor):
                summary.update(status=INCORRECT_DTYPE, output=name,
                               message=f"{name}: got {type(out).__name__}, expected a tensor")
                return summary
            if tuple(out.shape) != tuple(ref.shape):
                summary.update(status=INCORRECT_SHAPE, output=name,
                               message=f"{name}: shape {list(out.shape)}, expected "
                                       f"{list(ref.shape)}")
                return summary
        for name, out, ref in zip(names, outs, refs):
            if out.dtype != ref.dtype:
                summary.update(status=INCORRECT_DTYPE, output=name,
                               message=f"{name}: dtype {out.dtype}, expected {ref.dtype}")
                return summary
    for name, out, ref in zip(names, outs, refs):
        if tuple(out.shape) != tuple(ref.shape):
            summary.update(status=INCORRECT_SHAPE, output=name,
                           message=f"{name}: shape {list(out.shape)}, expected {list(ref.shape)}")
            return summary
        r = compare(out, ref, tol)
        for k in ("max_absolute_error", "max_relative_error"):
            summary[k] = max(summary[k], r[k])
        summary["has_nan"] |= r["has_nan"]
        summary["has_inf"] |= r["has_inf"]
        summary["matched_ratio"] = min(summary["matched_ratio"], r["matched_ratio"])
        if not r["ok"]:
            summary.update(status=INCORRECT_NUMERICAL, output=name,
                           message=f"{name}: {r['reason']}")
            return summary
    return summary
