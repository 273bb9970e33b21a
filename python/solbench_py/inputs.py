"""Input generation, output allocation and poisoning for the evaluation worker.

Device-agnostic: every function takes a torch device ("cpu", "cuda:0", ...)
and creates tensors there, so the GPU worker reuses it unchanged.

Random inputs follow the problem format's rule (docs/formats.md, "Random input
generation"): standard normal floats in their dtype, FP8 from clamped float32
normals, FP4 quantised and packed, uniform booleans and integers, and the name
heuristics for float inputs. Every random tensor draws from its own
torch.Generator seeded from (seed, round, input index), so the same seed gives
the same values in every run and on every device, independent of the order in
which other tensors were generated. Custom inputs
(definition.custom_inputs_entrypoint) use torch's global generator, which is
seeded from (seed, round) right before the call. The tracer (tracer.py) makes
its inputs through generate_inputs too, with a rule of its own (ValueRule).
"""
from __future__ import annotations

import json
import math
import os
import struct
from typing import Any, Optional

import torch

# ---------------------------------------------------------------- dtypes

_DTYPES = {
    "float64": "float64",
    "float32": "float32",
    "float16": "float16",
    "bfloat16": "bfloat16",
    "float8_e4m3fn": "float8_e4m3fn",
    "float8_e5m2": "float8_e5m2",
    "float4_e2m1": "float4_e2m1fn_x2",  # no unpacked FP4 dtype in torch; stored as packed bytes
    "float4_e2m1fn_x2": "float4_e2m1fn_x2",
    "int64": "int64",
    "int32": "int32",
    "int16": "int16",
    "int8": "int8",
    "uint8": "uint8",
    "bool": "bool",
}

LOW_PRECISION = ("float8_e4m3fn", "float8_e5m2", "float4_e2m1", "float4_e2m1fn_x2")


class UnsupportedDtype(RuntimeError):
    """The installed torch has no such dtype (FP8/FP4 before torch 2.1)."""


def torch_dtype(name: str) -> torch.dtype:
    attr = _DTYPES.get(name)
    if attr is None:
        raise ValueError(f"unknown dtype {name!r}")
    dt = getattr(torch, attr, None)
    if dt is None:
        raise UnsupportedDtype(
            f"dtype {name} needs torch >= 2.1; this is torch {torch.__version__}")
    return dt


def dtype_supported(name: str) -> bool:
    try:
        torch_dtype(name)
        return True
    except (UnsupportedDtype, ValueError):
        return False


# ---------------------------------------------------------------- seeding

_MASK64 = (1 << 64) - 1


def _splitmix64(x: int) -> int:
    x = (x + 0x9E3779B97F4A7C15) & _MASK64
    z = x
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
    return z ^ (z >> 31)


def derive_seed(seed: int, round_index: int, slot: int) -> int:
    """A 63-bit seed for one (seed, round, input slot); slot -1 is the custom-input call."""
    h = _splitmix64(seed & _MASK64)
    h = _splitmix64(h ^ (round_index & _MASK64))
    h = _splitmix64(h ^ ((slot + 1) & _MASK64))
    return h & ((1 << 63) - 1)


def make_generator(device: torch.device, seed: int) -> torch.Generator:
    g = torch.Generator(device=device)
    g.manual_seed(seed)
    return g


# ---------------------------------------------------------------- name heuristics

_WEIGHT_SUFFIXES = ("_weight", "_weights", "_proj", "_projs", "_proj_weight", "_proj_weights",
                    "_weight_matrix")
_NORM_PREFIX_ENDS = ("_norm", "_layernorm", "layernorm")


def _strip_digits(name: str) -> str:
    return name.rstrip("0123456789")


def is_weight_matrix(name: str, shape) -> bool:
    if len(shape) < 2:
        return False
    if name == "weight" or name.endswith(_WEIGHT_SUFFIXES):
        return True
    base = _strip_digits(name)
    return bool(base) and (base == "weight" or base.endswith(_WEIGHT_SUFFIXES))


def _is_norm_param(name: str, suffix: str) -> bool:
    if name == "norm" + suffix:
        return True
    if not name.endswith(suffix):
        return False
    prefix = name[: -len(suffix)]
    if prefix.endswith(_NORM_PREFIX_ENDS):
        return True
    base = _strip_digits(prefix)
    return bool(base) and base.endswith(("norm", "layernorm"))


def is_norm_weight(name: str) -> bool:
    return _is_norm_param(name, "_weight")


def is_norm_bias(name: str) -> bool:
    return _is_norm_param(name, "_bias")


def is_causal_mask(name: str, shape, description: str) -> bool:
    if len(shape) < 2 or shape[-1] != shape[-2]:
        return False
    if name in ("attention_mask", "causal_mask"):
        return True
    d = (description or "").lower()
    return "attention mask" in d and "causal" in d


def is_binary_mask(name: str, description: str) -> bool:
    if name in ("x_mask", "text_mask", "aspect_ratio_mask", "drop_mask", "attention_mask"):
        return True
    if name.endswith("_mask") and description:
        d = description.lower()
        return any(k in d for k in ("binary", "{0, 1}", "0 or 1", "1.0 for valid",
                                    "0.0 for masked"))
    return False


_COS_NAMES = ("cos", "cos_cached", "rope_cos")
_SIN_NAMES = ("sin", "sin_cached", "rope_sin")


def is_positive(name: str) -> bool:
    names = ("rstd", "std", "variance", "var")
    if name in names or name.endswith(("_rstd", "_std", "_variance", "_var")):
        return True
    base = _strip_digits(name)
    return base in names or base.endswith(("_rstd", "_std", "_var"))


def is_softmax_output(name: str, description: str) -> bool:
    if name in ("attn_weights", "attention_weights", "routing_weights"):
        return True
    d = (description or "").lower()
    return "softmax" in d and "output" in d


def heuristic_kind(name: str, shape, dtype_name: str, description: str = "") -> Optional[str]:
    """Which special distribution a float input gets, or None for plain random."""
    if dtype_name not in ("float64", "float32", "float16", "bfloat16"):
        return None
    if is_norm_weight(name):
        return "ones"
    if is_norm_bias(name):
        return "zeros"
    if is_causal_mask(name, shape, description):
        return "causal_mask"
    if is_binary_mask(name, description):
        return "binary"
    if name in _COS_NAMES:
        return "cos"
    if name in _SIN_NAMES:
        return "sin"
    if is_positive(name):
        return "positive"
    if name in ("A", "A_log", "A_cumsum", "g"):
        return "ssm_" + name
    if is_softmax_output(name, description):
        return "softmax"
    if is_weight_matrix(name, shape):
        return "weight_matrix"
    return None


# ---------------------------------------------------------------- random tensors

_FP4_BOUNDS = (0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0)  # E2M1 magnitudes 0,0.5,1,1.5,2,3,4,6


def quantize_fp4_packed(x: torch.Tensor) -> torch.Tensor:
    """float32 (..., 2n) -> uint8 (..., n): E2M1 codes, even columns in the low nibble.

    Round-half-to-even on the magnitude grid, sign in bit 3 (negative zero for
    small negatives), saturating at 6.
    """
    a = x.abs()
    code = torch.zeros_like(a, dtype=torch.uint8)
    # Ties go to the even code: bounds that are ties use <= for the lower code.
    lower_inclusive = (True, False, True, False, True, False, True)
    for i, (b, incl) in enumerate(zip(_FP4_BOUNDS, lower_inclusive)):
        above = (a > b) if incl else (a >= b)
        code = torch.where(above, torch.full_like(code, i + 1), code)
    code = torch.where(x < 0, code | 8, code)
    packed = code[..., 0::2] | (code[..., 1::2] << 4)
    return packed


_PLAIN_FLOATS = ("float64", "float32", "float16", "bfloat16")


def random_plain(shape, dtype_name: str, device, g: torch.Generator,
                 float32_draws: bool = False) -> torch.Tensor:
    """Random values of a dtype, without the name heuristics. `float32_draws` (the
    tracer's stand-ins, whose values only steer data-dependent paths): every float
    is drawn as a float32 normal and cast, as FP8 always is; FP4 has no such draw."""
    if dtype_name in _PLAIN_FLOATS and not float32_draws:
        return torch.randn(shape, dtype=torch_dtype(dtype_name), device=device, generator=g)
    if dtype_name in _PLAIN_FLOATS or dtype_name in ("float8_e4m3fn", "float8_e5m2"):
        dt = torch_dtype(dtype_name)
        t = torch.randn(shape, dtype=torch.float32, device=device, generator=g)
        if dtype_name not in _PLAIN_FLOATS:
            t = t.clamp_(-2.0, 2.0)
        return t.to(dt)
    if dtype_name in ("float4_e2m1fn_x2", "float4_e2m1") and not float32_draws:
        dt = torch_dtype(dtype_name)
        full = list(shape)
        if full:
            full[-1] *= 2
        t = torch.randn(full, dtype=torch.float32, device=device, generator=g)
        return quantize_fp4_packed(t).view(dt)
    if dtype_name == "bool":
        return torch.randint(0, 2, shape, dtype=torch.bool, device=device, generator=g)
    if dtype_name in ("int8", "int16", "int32", "int64", "uint8"):
        lo, hi = {"int8": (-128, 128), "uint8": (0, 256)}.get(dtype_name, (-1024, 1024))
        return torch.randint(lo, hi, shape, dtype=torch_dtype(dtype_name), device=device,
                             generator=g)
    raise ValueError(f"cannot generate random values of dtype {dtype_name}")


def random_tensor(name: str, shape, dtype_name: str, device, g: torch.Generator,
                  description: str = "", op_type: str = "") -> torch.Tensor:
    shape = list(shape)
    kind = heuristic_kind(name, shape, dtype_name, description)
    if kind is None:
        t = random_plain(shape, dtype_name, device, g)
        if op_type == "sampling" and name == "probs":
            t = torch.softmax(t, dim=-1)
        return t
    dt = torch_dtype(dtype_name)
    if kind == "ones":
        return torch.ones(shape, dtype=dt, device=device)
    if kind == "zeros":
        return torch.zeros(shape, dtype=dt, device=device)
    if kind == "causal_mask":
        n = shape[-1]
        above = torch.ones(n, n, device=device, dtype=torch.bool).triu_(1)
        mask = torch.zeros(shape, dtype=dt, device=device)
        mask[..., above] = torch.finfo(dt).min
        return mask
    if kind == "binary":
        return torch.randint(0, 2, shape, device=device, generator=g).to(dt)
    if kind in ("cos", "sin"):
        t = torch.randn(shape, dtype=torch.float32, device=device, generator=g)
        t = t.clamp_(-math.pi, math.pi)
        return (torch.cos(t) if kind == "cos" else torch.sin(t)).to(dt)
    if kind == "positive":
        return torch.randn(shape, dtype=dt, device=device, generator=g).abs_() + 0.1
    if kind == "ssm_A_cumsum":
        return torch.empty(shape, dtype=dt, device=device).uniform_(-0.1, 0.0, generator=g).cumsum(-1)
    if kind == "ssm_A_log":
        return torch.empty(shape, dtype=dt, device=device).uniform_(-5.0, -1.0, generator=g)
    if kind == "ssm_A":
        return torch.empty(shape, dtype=dt, device=device).uniform_(-1.0, -0.001, generator=g)
    if kind == "ssm_g":
        return torch.empty(shape, dtype=dt, device=device).uniform_(-5.0, 0.0, generator=g)
    if kind == "softmax":
        t = torch.randn(shape, dtype=torch.float32, device=device, generator=g)
        return torch.softmax(t, dim=-1).to(dt)
    if kind == "weight_matrix":
        t = torch.randn(shape, dtype=dt, device=device, generator=g)
        return t / math.sqrt(shape[-1])
    raise AssertionError(kind)


# ---------------------------------------------------------------- safetensors

_ST_DTYPES = {"F64": "float64", "F32": "float32", "F16": "float16", "BF16": "bfloat16",
              "F8_E4M3": "float8_e4m3fn", "F8_E5M2": "float8_e5m2", "I64": "int64",
              "I32": "int32", "I16": "int16", "I8": "int8", "U8": "uint8", "BOOL": "bool",
              "F4": "float4_e2m1fn_x2"}


class MissingBlob(RuntimeError):
    """A safetensors file named by a workload is not present."""


def load_safetensors_tensor(path: str, key: str) -> torch.Tensor:
    """Reads one tensor of a .safetensors file (no third-party package needed)."""
    if not os.path.isfile(path):
        raise MissingBlob(f"safetensors blob missing: {path}")
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        if n > 100 * 1024 * 1024:
            raise ValueError(f"{path}: header of {n} bytes is implausible")
        header = json.loads(f.read(n))
        if key not in header:
            raise ValueError(f"{path}: no tensor {key!r}")
        info = header[key]
        start, end = info["data_offsets"]
        f.seek(8 + n + start)
        data = bytearray(f.read(end - start))
    dt_name = _ST_DTYPES.get(info["dtype"])
    if dt_name is None:
        raise ValueError(f"{path}: tensor {key!r} has unsupported dtype {info['dtype']}")
    t = torch.frombuffer(data, dtype=torch_dtype(dt_name)) if data else torch.empty(
        0, dtype=torch_dtype(dt_name))
    return t.reshape(info["shape"])


# ---------------------------------------------------------------- workload inputs

class ValueRule:
    """How generate_inputs makes the values the workload does not give as such: the
    worker's rule, real values on the device, each random tensor from a generator
    of its own seeded from (seed, round, input index), safetensors blobs read. The
    tracer's rule (tracer.py _StandIns) has the same methods and makes stand-ins
    of the same shapes and dtypes instead (meta tensors, no blob read)."""

    def __init__(self, spec: dict, seed: int, round_index: int, device: torch.device):
        self.spec = spec
        self.seed = seed
        self.round_index = round_index
        self.device = device

    def custom_seed(self) -> int:
        """The seed of torch's global generator for the custom entry point's call."""
        return derive_seed(self.seed, self.round_index, -1)

    def from_custom(self, index: int, inp: dict, v):
        """Input `index` as the custom entry point returned it."""
        shape = inp["shape"]
        if isinstance(v, torch.Tensor):
            if shape is not None and list(v.shape) != list(shape):
                raise ValueError(f"custom input {inp['name']} has shape {list(v.shape)}, "
                                 f"expected {list(shape)}")
            v = v.to(self.device)
        return v

    def from_safetensors(self, index: int, inp: dict):
        name, src, shape = inp["name"], inp["source"], inp["shape"]
        path = src["path"]
        if not os.path.isabs(path):
            path = os.path.join(self.spec.get("dataset_root") or ".", path)
        t = load_safetensors_tensor(path, src["tensor_key"])
        if list(t.shape) != list(shape):
            raise ValueError(f"input {name}: safetensors shape {list(t.shape)}, "
                             f"expected {list(shape)}")
        if t.dtype != torch_dtype(inp["dtype"]):
            raise ValueError(f"input {name}: safetensors dtype {t.dtype}, "
                             f"expected {inp['dtype']}")
        return t.to(self.device)

    def random(self, index: int, inp: dict):
        """Input `index` drawn by the format's rule (a scalar: a Python number)."""
        g = make_generator(self.device, derive_seed(self.seed, self.round_index, index))
        shape = inp["shape"]
        t = random_tensor(inp["name"], [] if shape is None else shape, inp["dtype"], self.device,
                          g, inp.get("description", ""), self.spec.get("op_type", ""))
        return t.item() if shape is None else t


def generate_inputs(spec: dict, seed: int, round_index: int, device,
                    custom_fn=None, origins: Optional[list] = None, rule=None) -> list:
    """All input values of one workload, in definition order.

    `spec` (built by the C++ worker from the plan):
      inputs: [{name, dtype, shape (list, or None for scalars), description,
                source: {type, value?, path?, tensor_key?}}]
      axes: {name: value}: every axis (const, var and expr) and every scalar
            input's value (core's axes_and_scalars, what the custom entry point gets)
      op_type, dataset_root
    Precedence per input: safetensors, scalar, a value returned by the custom
    entry point, random (as in SOL-ExecBench). `origins`, when given, receives
    one of "safetensors", "scalar", "custom", "random" per input. `rule` makes
    the values (ValueRule's methods; None: the worker's ValueRule).
    """
    device = torch.device(device)
    if rule is None:
        rule = ValueRule(spec, seed, round_index, device)
    custom = None
    needs_custom = any(i["source"]["type"] == "custom" for i in spec["inputs"])
    if custom_fn is not None:
        torch.manual_seed(rule.custom_seed())
        custom = custom_fn(dict(spec["axes"]), device)
        if not isinstance(custom, dict):
            raise TypeError(f"custom_inputs_entrypoint returned {type(custom).__name__}, "
                            "expected a dict of input name -> tensor")
    elif needs_custom:
        raise ValueError("the workload has custom inputs but the definition has no "
                         "custom_inputs_entrypoint")

    values = []
    for index, inp in enumerate(spec["inputs"]):
        name, kind = inp["name"], inp["source"]["type"]
        if kind == "safetensors":
            origin, v = "safetensors", rule.from_safetensors(index, inp)
        elif kind == "scalar":
            origin, v = "scalar", inp["source"]["value"]
        elif custom is not None and name in custom:
            origin, v = "custom", rule.from_custom(index, inp, custom[name])
        elif kind == "custom":
            raise ValueError(f"custom_inputs_entrypoint did not return input {name!r}")
        else:
            origin, v = "random", rule.random(index, inp)
        values.append(v)
        if origins is not None:
            origins.append(origin)
    return values


# ---------------------------------------------------------------- fresh timing values

# Heuristic kinds whose values do not depend on the generator: nothing to refresh.
_CONSTANT_KINDS = ("ones", "zeros", "causal_mask")

# Round indices of timed calls start here, far from the correctness rounds and
# the timing input sets (round indices rounds + k), so no timed call repeats them.
TIMED_ROUND_BASE = 1 << 40


def refreshable(inp: dict, origin: str) -> bool:
    """Whether an input gets fresh values in every timed call: tensors drawn from
    the random rule whose distribution depends on the generator. Safetensors,
    custom-entry-point and scalar inputs, and the constant heuristics (norm
    weights of ones, zero biases, causal masks), keep their generated values."""
    if origin != "random" or inp.get("shape") is None:
        return False
    return heuristic_kind(inp["name"], list(inp["shape"]), inp["dtype"],
                          inp.get("description", "")) not in _CONSTANT_KINDS


def _fast_kind(inp: dict, op_type: str) -> Optional[str]:
    """The in-place fill that draws an input's plain random rule (random_plain)
    cheaply, or None when only random_tensor can (heuristics, FP8/FP4, probs)."""
    if heuristic_kind(inp["name"], list(inp["shape"]), inp["dtype"],
                      inp.get("description", "")) is not None:
        return None
    if op_type == "sampling" and inp["name"] == "probs":
        return None
    dt = inp["dtype"]
    if dt in ("float64", "float32", "float16", "bfloat16"):
        return "normal"
    if dt in ("bool", "int8", "int16", "int32", "int64", "uint8"):
        return "integer"
    return None


class FreshValues:
    """Generates input `index` of a timed call into a destination tensor: the same
    rule (dtype, range, heuristics) as generate_inputs, from a generator seeded
    from (the call's seed, index), so a call's values can be generated again
    (bit-identical) by whoever has its seed. Holds no seed of its own: each call's
    comes with it. Plain floats are drawn in float32 into a scratch buffer and cast
    (5x faster than drawing bfloat16 on a CPU); integers and booleans are drawn in
    place; everything else goes through random_tensor."""

    def __init__(self, spec: dict, device):
        self.spec = spec
        self.device = torch.device(device)
        self.g = torch.Generator(device=self.device)
        self.scratch: dict = {}
        self.kinds: dict = {}

    def fill_(self, dest: torch.Tensor, index: int, seed: int) -> torch.Tensor:
        inp = self.spec["inputs"][index]
        self.g.manual_seed(derive_seed(int(seed), TIMED_ROUND_BASE, index))
        if index not in self.kinds:
            self.kinds[index] = _fast_kind(inp, self.spec.get("op_type", ""))
        kind = self.kinds[index]
        if kind is None:
            dest.copy_(random_tensor(inp["name"], inp["shape"], inp["dtype"], self.device, self.g,
                                     inp.get("description", ""), self.spec.get("op_type", "")))
            return dest
        buf = self.scratch.get(index)
        if buf is None:
            n = 1
            for d in inp["shape"]:
                n *= int(d)
            dt = torch.float32 if kind == "normal" and dest.dtype != torch.float64 else dest.dtype
            buf = self.scratch[index] = torch.empty(n, dtype=dt, device=self.device)
        if kind == "normal":
            buf.normal_(generator=self.g)
        else:
            lo, hi = {"int8": (-128, 128), "uint8": (0, 256), "bool": (0, 2)}.get(
                inp["dtype"], (-1024, 1024))
            buf.random_(lo, hi, generator=self.g)
        dest.copy_(buf.view(dest.shape))
        return dest

    def value(self, index: int, seed: int) -> torch.Tensor:
        inp = self.spec["inputs"][index]
        t = torch.empty(list(inp["shape"]), dtype=torch_dtype(inp["dtype"]), device=self.device)
        return self.fill_(t, index, seed)


# ---------------------------------------------------------------- outputs

def allocate_outputs(out_specs: list, device) -> list:
    """Uninitialised output tensors (DPS), in output order."""
    device = torch.device(device)
    return [torch.empty([] if o["shape"] is None else list(o["shape"]),
                        dtype=torch_dtype(o["dtype"]), device=device) for o in out_specs]


_NAN_DTYPES = tuple(d for d in (torch.float64, torch.float32, torch.float16, torch.bfloat16,
                                getattr(torch, "float8_e4m3fn", None),
                                getattr(torch, "float8_e5m2", None)) if d is not None)


def poison_(t: torch.Tensor, reference: Optional[torch.Tensor] = None) -> torch.Tensor:
    """Fills an output so that an element the solution does not write fails the check.

    Floats: NaN. Signed integers: the dtype's minimum. uint8: 255. bool: the
    negation of the reference where one is given, else 0xFF bytes, which no bool
    value has (the correctness check reads bools as their bytes, so an unwritten
    element matches neither True nor False; the solution's worker under the judge
    has no reference). Packed FP4 (no NaN): 0xFF bytes (-6, -6).
    """
    dt = t.dtype
    if dt == torch.bool:
        if reference is not None and reference.shape == t.shape and reference.dtype == dt:
            torch.logical_not(reference, out=t)
        else:
            t.view(torch.uint8).fill_(255)
    elif dt in _NAN_DTYPES:
        t.fill_(float("nan"))
    elif dt == torch.uint8:
        t.fill_(255)
    elif dt in (torch.int8, torch.int16, torch.int32, torch.int64):
        t.fill_(torch.iinfo(dt).min)
    else:  # packed FP4 and anything else: raw 0xFF bytes
        t.view(torch.uint8).fill_(255)
    return t
