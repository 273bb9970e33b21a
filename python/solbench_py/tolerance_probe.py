"""Would an output that computes nothing pass a workload's correctness check?

`solbench validate --probe-tolerance` (src/cli/tolerance_probe.cc) asks, per workload:
the inputs are generated as the evaluation's first correctness round generates them
(inputs.generate_inputs, the same seed), the definition's reference runs on them, and
outputs a solution could return without computing anything are judged against the
reference's with the judge's own rule (correctness.check_outputs) and the workload's
tolerance:

  zeros      all zeros (the rule rejects it unless the reference is all zero too)
  tiny       every element the dtype's smallest positive normal: zeros that escape the
             all-zero rule, so it passes where almost every reference value is within
             atol of zero
  constant   every element the reference's median: passes where the output hardly
             depends on the inputs
  input      a copy of an input of the same shape and dtype; also one of the same
             number of elements reshaped, and one of the same shape in another
             floating dtype, cast

Called from C++ through bridge::call_json("tolerance_probe", "probe", request) in a
child process (`solbench __probe-tolerance`), one request per workload. The reference
is the problem's code, not a solution's. On a CPU, devices the reference names
("cuda") are mapped to the CPU as the tracer maps them; a reference that still needs a
GPU (or a dtype or kernel this torch lacks) is "not_checked" with the reason.
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile

_REFERENCES: dict = {}  # source hash -> module, for the workloads of one problem
_WORK_DIR = None


def ready(arg: str) -> str:
    """Imports torch (the child's start-up, outside any workload's time limit)."""
    import torch  # noqa: F401
    return "{}"


def _reference(source: str):
    from . import runtime
    global _WORK_DIR
    key = hashlib.sha256(source.encode()).hexdigest()
    mod = _REFERENCES.get(key)
    if mod is None:
        if _WORK_DIR is None:
            _WORK_DIR = tempfile.mkdtemp(prefix="solbench-probe-")
        mod = runtime.load_reference(source, os.path.join(_WORK_DIR, f"reference_{key[:16]}.py"))
        _REFERENCES.clear()  # one problem at a time
        _REFERENCES[key] = mod
    return mod


class _OnThisDevice:
    """Runs a reference written for CUDA on the CPU: the devices it names are mapped
    (the tracer's mode), and torch.cuda.synchronize/current_device answer as if a GPU
    were there. Undone on exit."""

    def __init__(self, device):
        self.device = device
        self.mode = None
        self.saved = []

    def __enter__(self):
        import torch
        if self.device.type != "cpu" or torch.cuda.is_available():
            return self
        from .tracer import _DeviceMap
        for name, value in (("synchronize", lambda *a, **k: None), ("current_device", lambda: 0)):
            self.saved.append((name, getattr(torch.cuda, name)))
            setattr(torch.cuda, name, value)
        self.mode = _DeviceMap("cpu")
        self.mode.__enter__()
        return self

    def __exit__(self, *exc):
        import torch
        if self.mode is not None:
            self.mode.__exit__(*exc)
        for name, value in reversed(self.saved):
            setattr(torch.cuda, name, value)
        return False


def _not_checked(why: str, detail: str = "") -> dict:
    first = (detail.strip().splitlines() or [""])[-1][:300]
    return {"status": "not_checked", "reason": why + (f": {first}" if first else "")}


def _why_not(e: BaseException) -> str:
    """A short class of failure: the GPU, a dtype, a blob, or the reference's own error."""
    text = f"{type(e).__name__}: {e}"
    low = text.lower()
    if any(k in low for k in ("cuda", "nvidia", "triton", "cudnn", "cublas", "nccl")):
        return "needs a GPU"
    if "float8" in low or "float4" in low or type(e).__name__ == "UnsupportedDtype":
        return "needs a dtype this torch lacks"
    if type(e).__name__ == "MissingBlob" or "safetensors" in low:
        return "needs a safetensors blob that is not here"
    if isinstance(e, MemoryError) or "out of memory" in low:
        return "out of memory"
    if isinstance(e, (NotImplementedError,)) or "not implemented for" in low:
        return "an operator this torch lacks on this device"
    return "the reference failed"


def _candidates(ref, inputs: list, names: list):
    """(label, tensor) outputs that compute nothing, for reference output `ref`."""
    import torch
    yield "all zeros", torch.zeros_like(ref)
    if ref.dtype.is_floating_point and ref.element_size() >= 2:
        tiny = torch.finfo(ref.dtype).tiny
        yield f"every element {tiny:.3g} (zeros that are not all zero)", torch.full_like(ref, tiny)
    if ref.numel() > 0 and ref.dtype != torch.bool and ref.element_size() >= 2:
        flat = ref.reshape(-1).float()
        finite = flat[torch.isfinite(flat)]
        if finite.numel():
            median = float(finite.median())
            yield f"every element {median:.4g} (the reference's median)", \
                torch.full_like(ref, median)
    for name, x in zip(names, inputs):
        if not isinstance(x, torch.Tensor) or x.numel() != ref.numel() or x.is_complex():
            continue
        same_shape = tuple(x.shape) == tuple(ref.shape)
        if x.dtype == ref.dtype:
            yield (f"a copy of input '{name}'" if same_shape else
                   f"input '{name}' reshaped to {list(ref.shape)}"), \
                x.detach().reshape(ref.shape).clone()
        elif x.dtype.is_floating_point and ref.dtype.is_floating_point and x.element_size() >= 2:
            yield (f"input '{name}' cast to {str(ref.dtype).replace('torch.', '')}" +
                   ("" if same_shape else f" and reshaped to {list(ref.shape)}")), \
                x.detach().reshape(ref.shape).to(ref.dtype)


def probe(arg: str) -> str:
    """Request: {reference, custom_inputs_entrypoint (or absent), workload (the
    worker's workload spec, eval_plan.cc's workload_spec), device, seed}.
    Answer: {status: "checked", device_mapped, outputs: [{name, passes: [{cheat,
    matched_ratio, max_absolute_error}]}]} or {status: "not_checked", reason}."""
    req = json.loads(arg)
    try:
        import torch
    except ImportError as e:
        return json.dumps(_not_checked("torch cannot be imported", str(e)))
    from . import correctness, inputs as inputs_mod, runtime

    spec = req["workload"]
    device = torch.device(req.get("device") or "cpu")
    if device.type == "cuda" and not torch.cuda.is_available():
        return json.dumps(_not_checked("no CUDA device here"))
    try:
        mod = _reference(req["reference"])
        run = runtime.reference_function(mod, "run")
        entry = req.get("custom_inputs_entrypoint")
        custom_fn = runtime.reference_function(mod, entry) if entry else None
    except Exception as e:  # noqa: BLE001 - the reference's own code
        return json.dumps(_not_checked("the reference does not load",
                                       f"{type(e).__name__}: {e}"))
    names = [i["name"] for i in spec["inputs"]]
    out_names = [o["name"] for o in spec["outputs"]]
    out_dtypes = [o["dtype"] for o in spec["outputs"]]
    tol = {**correctness.default_tolerance(), **(spec.get("tolerance") or {})}
    guard = _OnThisDevice(device)
    try:
        with torch.no_grad(), guard:
            args = inputs_mod.generate_inputs(spec, int(req.get("seed", 200)), 0, device, custom_fn)
            result = run(*runtime.clone_all(args))
            refs = runtime.normalize_outputs(result, out_names, out_dtypes, device)
    except Exception as e:  # noqa: BLE001 - classified and reported
        return json.dumps(_not_checked(_why_not(e), f"{type(e).__name__}: {e}"))

    outputs = []
    for name, ref in zip(out_names, refs):
        entry = {"name": name, "passes": []}
        why = correctness.reference_problem(ref, tol)
        if why:
            entry["not_checked"] = why
            outputs.append(entry)
            continue
        for label, cheat in _candidates(ref, args, names):
            r = correctness.check_outputs([cheat], [ref], [name], tol)
            if r["status"] == correctness.OK:
                entry["passes"].append({"cheat": label, "matched_ratio": r["matched_ratio"],
                                        "max_absolute_error": r["max_absolute_error"]})
        outputs.append(entry)
    return json.dumps({"status": "checked", "device_mapped": guard.mode is not None,
                       "tolerance": {k: tol[k] for k in ("max_atol", "max_rtol",
                                                         "required_matched_ratio")},
                       "outputs": outputs})
