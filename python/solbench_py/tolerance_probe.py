"""Would an output that computes nothing pass a workload's correctness check?

`solbench validate --probe-tolerance` (src/cli/tolerance_probe.cc) asks, per workload:
the inputs are generated as the evaluation's first two correctness rounds generate them
(inputs.generate_inputs, the same seed and round indices), the definition's reference
runs on them, and outputs a solution could return without computing anything are
judged against the reference's with the judge's own rule (correctness.check_outputs)
and the workload's tolerance; a cheat is reported when it passes both rounds:

  zeros      all zeros (the rule rejects it unless the reference is all zero too)
  tiny       every element the dtype's smallest positive normal: zeros that escape the
             all-zero rule, so it passes where almost every reference value is within
             atol of zero
  constant   every element round 0's median: passes where the output hardly depends
             on the inputs
  input      a copy of an input of the same shape and dtype; also one of the same
             number of elements reshaped, and one of the same shape in another
             floating dtype, cast

Called from C++ through bridge::call_json("tolerance_probe", "probe", request) in a
child process (`solbench __probe-tolerance`), one request per workload. The reference
is the problem's code, not a solution's. On a CPU, a reference written for a GPU runs
under _CpuStandIn (its "cuda" is the CPU; half-precision operators this torch lacks on
the CPU run in float32); one that still needs a GPU (or a dtype this torch lacks, or a
safetensors blob that is absent) is "not_checked" with the reason.
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
    from .loading import load_reference
    global _WORK_DIR
    key = hashlib.sha256(source.encode()).hexdigest()
    mod = _REFERENCES.get(key)
    if mod is None:
        if _WORK_DIR is None:
            _WORK_DIR = tempfile.mkdtemp(prefix="solbench-probe-")
        mod = load_reference(source, os.path.join(_WORK_DIR, f"reference_{key[:16]}.py"))
        _REFERENCES.clear()  # one problem at a time
        _REFERENCES[key] = mod
    return mod


class _CpuStandIn:
    """Runs a reference written for a GPU on this CPU (an older torch's): the CUDA
    devices it names are the CPU (as the tracer maps them), torch.cuda.synchronize and
    current_device answer as if a GPU were there, scaled_dot_product_attention is the
    tracer's math version where torch lacks it, and an operator this torch has no
    half/bfloat16 CPU kernel for runs in float32 and is rounded back (`upcast` names
    them). Close enough to judge a tolerance; undone on exit. Does nothing on a GPU."""

    def __init__(self, device):
        self.device = device
        self.mode = None
        self.saved = []
        self.upcast: set = set()
        self.mapped = False  # ran under the stand-in at least once

    def __enter__(self):
        import torch
        import torch.nn.functional as F
        if self.device.type != "cpu" or torch.cuda.is_available():
            return self
        from .tracer import _DeviceMap, _sdpa_math
        patches = [(torch.cuda, "synchronize", lambda *a, **k: None),
                   (torch.cuda, "current_device", lambda: 0)]
        if getattr(F, "scaled_dot_product_attention", None) is None:
            patches.append((F, "scaled_dot_product_attention", _sdpa_math))
        for obj, name, value in patches:
            self.saved.append((obj, name, getattr(obj, name, None)))
            setattr(obj, name, value)
        upcast = self.upcast

        class Mode(_DeviceMap):
            def __torch_function__(self, func, types_, args=(), kwargs=None):
                try:
                    return super().__torch_function__(func, types_, args, kwargs)
                except (RuntimeError, NotImplementedError) as e:
                    return _in_float32(e, func, types_, args, kwargs, upcast,
                                       lambda a, k: super(Mode, self).__torch_function__(
                                           func, types_, a, k))

        self.mode = Mode("cpu")
        self.mode.__enter__()
        self.mapped = True
        return self

    def __exit__(self, *exc):
        if self.mode is not None:
            self.mode.__exit__(*exc)
        for obj, name, value in reversed(self.saved):
            if value is None:
                delattr(obj, name)
            else:
                setattr(obj, name, value)
        self.saved, self.mode = [], None  # entered again for the next round
        return False


def _in_float32(error, func, types_, args, kwargs, upcast: set, call):
    """`func` again with its half/bfloat16 tensors in float32, its float32 results
    rounded back, when `error` says the CPU has no kernel for the low precision.
    In-place and out= calls are not retried (a copy would lose the write)."""
    import torch
    name = getattr(func, "__name__", "")
    text = str(error)
    if not ("not implemented for 'Half'" in text or "not implemented for 'BFloat16'" in text) \
            or name.endswith("_") or (kwargs and "out" in kwargs):
        raise error
    low = []

    def up(x):
        if isinstance(x, torch.Tensor) and x.dtype in (torch.float16, torch.bfloat16):
            low.append(x.dtype)
            return x.float()
        if isinstance(x, (list, tuple)):
            return type(x)(up(v) for v in x)
        return x

    a = up(tuple(args))
    k = {key: up(v) for key, v in (kwargs or {}).items()}
    if not low:
        raise error
    out = call(a, k)
    upcast.add(name)

    def down(x):
        if isinstance(x, torch.Tensor) and x.dtype == torch.float32:
            return x.to(low[0])
        if isinstance(x, (list, tuple)):
            return type(x)(down(v) for v in x)
        return x

    return down(out)


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


def _cheats(ref, names: list, inputs: list):
    """(label, make) for reference output `ref` of round 0: make(inputs) gives an
    output that computes nothing. The constants are fixed here, from round 0, and
    judged again against round 1's reference: a constant a solution could know
    without computing (1/N of a softmax over N) passes both; the value of a scalar
    loss passes only its own round."""
    import torch
    yield "all zeros", lambda xs: torch.zeros_like(ref)
    if ref.dtype.is_floating_point and ref.element_size() >= 2:
        tiny = torch.finfo(ref.dtype).tiny
        yield (f"every element {tiny:.3g} (zeros that are not all zero)",
               lambda xs: torch.full_like(ref, tiny))
    if ref.numel() > 0 and ref.dtype != torch.bool and ref.element_size() >= 2:
        flat = ref.reshape(-1).float()
        finite = flat[torch.isfinite(flat)]
        if finite.numel():
            median = float(finite.median())
            yield (f"every element {median:.4g} (a constant: round 0's median)",
                   lambda xs: torch.full_like(ref, median))
    for j, (name, x) in enumerate(zip(names, inputs)):
        if not isinstance(x, torch.Tensor) or x.numel() != ref.numel() or x.is_complex():
            continue
        same_shape = tuple(x.shape) == tuple(ref.shape)
        if x.dtype == ref.dtype:
            yield (f"a copy of input '{name}'" if same_shape else
                   f"input '{name}' reshaped to {list(ref.shape)}"), \
                lambda xs, j=j: xs[j].detach().reshape(ref.shape).clone()
        elif x.dtype.is_floating_point and ref.dtype.is_floating_point and x.element_size() >= 2:
            yield (f"input '{name}' cast to {str(ref.dtype).replace('torch.', '')}" +
                   ("" if same_shape else f" and reshaped to {list(ref.shape)}")), \
                lambda xs, j=j: xs[j].detach().reshape(ref.shape).to(ref.dtype)


# The judge's correctness rounds a cheat must pass here (round indices of
# inputs.generate_inputs): two, so that a constant read off one round's reference
# does not count.
ROUNDS = (0, 1)


def probe(arg: str) -> str:
    """Request: {reference, custom_inputs_entrypoint (or absent), workload (the
    worker's workload spec, eval_plan.cc's workload_spec), device, seed}.
    Answer: {status: "checked", device_mapped, upcast, tolerance, rounds, outputs:
    [{name, passes: [{cheat, matched_ratio, max_absolute_error}]}]} (a cheat listed
    passes every round) or {status: "not_checked", reason}."""
    req = json.loads(arg)
    try:
        import torch
    except ImportError as e:
        return json.dumps(_not_checked("torch cannot be imported", str(e)))
    from . import correctness, inputs as inputs_mod
    from .loading import reference_function
    from .workload import clone_all, normalize_outputs

    spec = req["workload"]
    device = torch.device(req.get("device") or "cpu")
    if device.type == "cuda" and not torch.cuda.is_available():
        return json.dumps(_not_checked("no CUDA device here"))
    try:
        mod = _reference(req["reference"])
        run = reference_function(mod, "run")
        entry = req.get("custom_inputs_entrypoint")
        custom_fn = reference_function(mod, entry) if entry else None
    except Exception as e:  # noqa: BLE001 - the reference's own code
        return json.dumps(_not_checked("the reference does not load",
                                       f"{type(e).__name__}: {e}"))
    names = [i["name"] for i in spec["inputs"]]
    out_names = [o["name"] for o in spec["outputs"]]
    out_dtypes = [o["dtype"] for o in spec["outputs"]]
    tol = {**correctness.default_tolerance(), **(spec.get("tolerance") or {})}
    guard = _CpuStandIn(device)

    def round_of(index):
        with torch.no_grad(), guard:
            args = inputs_mod.generate_inputs(spec, int(req.get("seed", 200)), index, device,
                                              custom_fn)
            result = run(*clone_all(args))
            return args, normalize_outputs(result, out_names, out_dtypes, device)

    try:
        args, refs = round_of(ROUNDS[0])
    except Exception as e:  # noqa: BLE001 - classified and reported
        return json.dumps(_not_checked(_why_not(e), f"{type(e).__name__}: {e}"))

    outputs, live = [], []  # live: (output index, label, make, first round's result)
    for k, (name, ref) in enumerate(zip(out_names, refs)):
        entry = {"name": name, "passes": []}
        outputs.append(entry)
        why = correctness.reference_problem(ref, tol)
        if why:
            entry["not_checked"] = why
            continue
        for label, make in _cheats(ref, names, args):
            r = correctness.check_outputs([make(args)], [ref], [name], tol)
            if r["status"] == correctness.OK:
                live.append((k, label, make, r))
    rounds = 1
    for index in ROUNDS[1:]:
        if not live:
            break
        try:
            args, refs = round_of(index)
        except Exception as e:  # noqa: BLE001 - passed once, fails now: say so
            return json.dumps(_not_checked(_why_not(e), f"round {index}: {type(e).__name__}: {e}"))
        rounds += 1
        kept = []
        for k, label, make, first in live:
            r = correctness.check_outputs([make(args)], [refs[k]], [out_names[k]], tol)
            if r["status"] == correctness.OK:
                kept.append((k, label, make, min(first, r, key=lambda x: x["matched_ratio"])))
        live = kept
    for k, label, _, r in live:
        outputs[k]["passes"].append({"cheat": label, "matched_ratio": r["matched_ratio"],
                                     "max_absolute_error": r["max_absolute_error"]})
    return json.dumps({"status": "checked", "device_mapped": guard.mapped,
                       "upcast": sorted(guard.upcast), "rounds": rounds,
                       "tolerance": {k: tol[k] for k in ("max_atol", "max_rtol",
                                                         "required_matched_ratio")},
                       "outputs": outputs})
