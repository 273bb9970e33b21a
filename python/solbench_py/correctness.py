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
    if t.dtype == torch.bool:
        # Its bytes: a bool the solution never wrote keeps the poison byte 0xFF
        # (inputs.poison_), which is then 255, neither 0 nor 1.
        return t.view(torch.uint8).to(torch.float32)
    if not t.dtype.is_floating_point or t.element_size() >= 2:
        return t.to(torch.float32)
    # FP8: convert through its own cast; packed FP4 compares as raw bytes.
    try:
        return t.to(torch.float32)
    except (RuntimeError, TypeError):
        return t.view(torch.uint8).to(torch.float32)


# Elements per slice of a comparison: outputs of several GB (a 5 GB fp16 video
# embedding) are compared slice by slice, so the float32 temporaries stay at a
# few hundred MB instead of several times the output's size.
CHUNK = 1 << 26


def _slices(t: torch.Tensor, chunk: int):
    flat = t.reshape(-1)
    for start in range(0, flat.numel(), chunk):
        yield _as_float(flat[start:start + chunk])


def reference_problem(ref: torch.Tensor, tol: dict, chunk: int = CHUNK) -> Optional[str]:
    """Why a reference output cannot be compared against (non-finite values), or None."""
    nan = inf = False
    for y in _slices(ref, chunk):
        nan = nan or bool(torch.isnan(y).any())
        bad_inf = torch.isinf(y)
        if tol.get("allow_negative_inf"):
            bad_inf = bad_inf & (y > 0)
        inf = inf or bool(bad_inf.any())
    if nan:
        return "the reference produced NaN"
    if inf:
        return "the reference produced infinite values" + (
            "" if tol.get("allow_negative_inf") else " (allow_negative_inf is off)")
    return None


def compare(out: torch.Tensor, ref: torch.Tensor, tol: dict, chunk: int = CHUNK) -> dict:
    """Numerical comparison of one output tensor (shapes already equal), slice by slice.

    Returns {ok, reason, max_absolute_error, max_relative_error, has_nan,
    has_inf, matched_ratio}.
    """
    atol = float(tol.get("max_atol", 1e-2))
    rtol = float(tol.get("max_rtol", 1e-2))
    ratio = float(tol.get("required_matched_ratio", 0.99))
    cap = tol.get("max_error_cap")
    allow_neg = bool(tol.get("allow_negative_inf"))
    res = {"ok": True, "reason": "", "max_absolute_error": 0.0, "max_relative_error": 0.0,
           "has_nan": False, "has_inf": False, "matched_ratio": 1.0}
    # Accumulated over the slices. Errors and matches count the positions where
    # both values are finite; -inf on both sides is excluded when allowed.
    bad = has_nan = out_nonzero = ref_nonzero = False
    finite_n = mismatched = 0
    max_abs = max_rel = 0.0
    for x, y in zip(_slices(out, chunk), _slices(ref, chunk)):
        finite = torch.isfinite(x) & torch.isfinite(y)
        if allow_neg:
            bad_here = ~(finite | (torch.isneginf(x) & torch.isneginf(y)))
        else:
            bad_here = ~finite
        if bool(bad_here.any()):
            bad = True
            has_nan = has_nan or bool((torch.isnan(x) | torch.isnan(y)).any())
        if not bool(finite.all()):
            x, y = x[finite], y[finite]
        if x.numel() == 0:
            continue
        err = (x - y).abs_()
        max_abs = max(max_abs, float(err.max().item()))
        max_rel = max(max_rel, float((err / y.abs().clamp_min(atol)).max().item()))
        mismatched += int((err > (atol + rtol * y.abs())).sum().item())
        finite_n += x.numel()
        out_nonzero = out_nonzero or bool((x != 0).any())
        ref_nonzero = ref_nonzero or bool((y != 0).any())

    # 1. Non-finite values. Errors are still reported over the finite positions
    #    (JSON has no NaN), with has_nan / has_inf saying what was found.
    if bad:
        res.update(ok=False, has_nan=has_nan, has_inf=not has_nan, max_absolute_error=max_abs,
                   max_relative_error=max_rel,
                   reason="NaN in the output" if has_nan else "infinite values in the output"
                   + ("" if not allow_neg else " (other than -inf matching the reference)"))
        return res
    if finite_n == 0:  # empty, or -inf on both sides everywhere
        return res

    # 2. All-zero output against a nonzero reference.
    if ref_nonzero and not out_nonzero:
        res["ok"] = False
        res["reason"] = "the output is all zeros but the reference is not"

    # 3./4. Matched fraction, error cap, reported errors.
    matched = 1.0 - float(mismatched) / float(finite_n)
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
