"""Operator tracer for speed-of-light bounds.

Runs a definition's reference ``run()`` under a ``TorchDispatchMode`` recorder and
returns the aten operators it issued as a JSON graph (the C++ cost model in
src/sol/ turns that graph into work and bytes). Called from C++ through
``bridge::call_json("tracer", "trace", request)``; the request and the answer are
described in docs/sol.md ("The operator graph").

Modes:
  meta  inputs are meta tensors with the workload's shapes: nothing is computed,
        so any size works, but a reference that reads values (``.item()``,
        data-dependent sizes, Python branches on tensor values) fails.
  cpu   inputs are real CPU tensors (random, or built by the definition's
        custom_inputs_entrypoint); large matrix products are not computed (their
        outputs are random) so that big shapes stay cheap.
  hybrid  floating-point tensors are meta, integer and bool tensors real (on the
        CPU): index arithmetic, ``.item()`` on indices/lengths and masks run on
        real values while every float computation costs nothing. For paged and
        ragged attention (FlashInfer's indptr/indices) and routing built from
        integer inputs. An operator that mixes the two runs on meta; a read of a
        float value (``.item()`` on a meta tensor) fails the attempt.
  scalars  hybrid, and a float or truth value read from a meta tensor
        (``.item()``, ``float(t)``, ``if t == 0:``) is a stand-in: 1.0 for a
        number, False for a truth value. For references that read a global scale
        or test a guard (``if amax == 0``) of values that steer no shape; every
        read is listed in the answer's notes.
  auto  meta, then hybrid, then scalars, then cpu, each when the one before
        fails; the answer says which one ran and why.

Whatever the reference does with devices, "cuda" is mapped to the tracing device.
A dtype this torch lacks (torch 1.13 has no float8/float4) makes the problem
"untraceable" with the reason; it is never a crash.
"""
from __future__ import annotations

import gc
import importlib
import json
import math
import os
import sys
import time
import types
import traceback

try:
    import torch
    from torch.overrides import TorchFunctionMode
    from torch.utils._python_dispatch import TorchDispatchMode

    from . import inputs as inputs_mod  # the workers' input and reference code
    from .loading import load_reference, reference_function
except ImportError as _e:  # reported per request, not at import
    torch = None
    _TORCH_IMPORT_ERROR = str(_e)
else:
    _TORCH_IMPORT_ERROR = ""

# Identical operators (same name, overload, argument shapes and values, reading
# the same tensors once a loop's repeated outputs stand for its first
# iteration's) are recorded once with a count; references that loop in Python
# over thousands of small operators stay small. The dataflow ids of an
# aggregated node are those of its first occurrence.
#
# Matrix products above this many multiply-accumulates are not computed in cpu
# mode: their shapes come from a meta run and their values are random.
_HEAVY_MACS = 1 << 26
# cpu mode allocates real tensors; refuse workloads whose inputs exceed this.
_CPU_INPUT_LIMIT_BYTES = 6 << 30

# How often (in operators) record() looks at the clock for the time budget.
_BUDGET_STRIDE = 64

_HEAVY_OPS = {"mm", "bmm", "addmm", "baddbmm", "addbmm", "convolution",
              "_convolution", "matmul", "linear"}


class Untraceable(Exception):
    """This torch cannot run the reference at all (missing dtype or API)."""


class _BudgetSpent(BaseException):
    """The request's time budget ran out mid-trace (raised from the recorder). A
    BaseException, so that a reference's own `except Exception:` cannot swallow it."""


class NeedsValues(Exception):
    """A meta trace hit something that needs real tensor values."""


def _dtype_name(dt) -> str:
    return str(dt).replace("torch.", "")


def _torch_dtype(name: str):
    """The workers' dtype table (inputs.torch_dtype); a dtype this torch lacks makes
    the problem untraceable."""
    try:
        return inputs_mod.torch_dtype(name)
    except (inputs_mod.UnsupportedDtype, ValueError):
        raise Untraceable(f"torch {torch.__version__} has no dtype {name}") from None


def _jsonable_scalar(v):
    if isinstance(v, float) and not math.isfinite(v):
        return str(v)
    return v


# Data variants (different tensors read) of one call signature kept as separate
# nodes; see _Graph.record().
_MAX_VARIANTS = 8

# id(operator) -> (name, overload, argument names, the names of the first n
# arguments by n, the operator: kept alive so that its id stays its own),
# looked up once per operator.
_SCHEMA_NAMES: dict = {}


class _Graph:
    """The recorded operators and the identities of the tensors they touch."""

    def __init__(self):
        self.next_id = 0
        self.nodes = {}      # signature -> [(tensor ids read, node)]
        self.order = []      # nodes in first-seen order
        self.recording = False
        self.raw_ops = 0
        self.input_ids = {}  # tensor id -> definition input name
        # (source id, first dim, dims) -> (source shape, bool mask of the
        # positions selected over those dims); see select().
        self.selections = {}
        # Outputs of an aggregated (repeated) call stand for the first call's
        # outputs, so later operators that consume them point at recorded ids.
        self.alias = {}
        # time.perf_counter() past which record() stops the trace (None: no budget);
        # looked at every _BUDGET_STRIDE operators.
        self.deadline = None

    def tid(self, t) -> int:
        i = getattr(t, "_solbench_id", None)
        if i is None:
            i = self.next_id
            self.next_id += 1
            try:
                t._solbench_id = i
            except Exception:  # some tensor subclasses refuse attributes
                pass
        return self.alias.get(i, i)

    def root(self, t) -> int:
        b = t
        while getattr(b, "_base", None) is not None:
            b = b._base
        return self.tid(b)

    def ref(self, t) -> dict:
        r = {"id": self.tid(t), "shape": list(t.shape), "dtype": _dtype_name(t.dtype)}
        base = self.root(t)
        if base != r["id"]:
            r["base"] = base
        return r

    def encode(self, v):
        if isinstance(v, torch.Tensor):
            return self.ref(v)
        if isinstance(v, (list, tuple)):
            return [self.encode(x) for x in v]
        if v is None or isinstance(v, (bool, int, str)):
            return v
        if isinstance(v, float):
            return _jsonable_scalar(v)
        if isinstance(v, torch.dtype):
            return _dtype_name(v)
        return str(v)

    def record(self, func, args, kwargs, out, name=None, overload=None):
        """Adds one operator call. `func` is an aten OpOverload; a synthetic
        operator (func None) passes its name, overload and arguments by keyword.

        One pass over the arguments gives both the signature (what matters for
        cost: shapes, dtypes, scalar values, the definition input a tensor
        derives from; see _sig_of()) and the tensors read: a loop issues tens
        of thousands of calls, and this is most of the tracer's own time per
        call (FlashInfer 012 at batch 64: 43,656 calls)."""
        self.raw_ops += 1
        if self.deadline is not None and not self.raw_ops % _BUDGET_STRIDE \
                and time.perf_counter() > self.deadline:
            raise _BudgetSpent()
        read = []  # the ids of the tensors read, in _flatten_tensors() order
        sig_of = self._sig_of
        if func is not None:
            named = _SCHEMA_NAMES.get(id(func))
            if named is None:
                schema = func._schema
                named = _SCHEMA_NAMES[id(func)] = (schema.name, func._overloadname,
                                                   [a.name for a in schema.arguments], {}, func)
            name, overload, names, keys_by_count, _ = named
            # The argument names and the arguments' signatures side by side (as
            # a key, equal exactly when the (name, signature) pairs are).
            keys = keys_by_count.get(len(args))
            if keys is None:
                keys = keys_by_count[len(args)] = tuple(
                    names[i] if i < len(names) else f"arg{i}" for i in range(len(args)))
            vals = []
            input_ids = self.input_ids
            alias = self.alias
            for v in args:
                if type(v) is _Tensor and input_ids:
                    # _sig_of(v, read), inline: most arguments are tensors.
                    i = getattr(v, "_solbench_id", None)
                    i = self.tid(v) if i is None else alias.get(i, i)
                    read.append(i)
                    src = input_ids.get(i)
                    if src is None:
                        b = getattr(v, "_base", None)
                        while b is not None:
                            i = getattr(b, "_solbench_id", None)
                            src = input_ids.get(self.tid(b) if i is None else alias.get(i, i))
                            if src is not None:
                                break
                            b = getattr(b, "_base", None)
                    vals.append(("T", v.shape, v.dtype, src))
                elif type(v) is int:
                    vals.append(v)
                else:
                    vals.append(sig_of(v, read))
            if kwargs:
                keys += tuple(kwargs)
                vals += [sig_of(v, read) for v in kwargs.values()]
        else:
            keys = tuple(kwargs)
            vals = [sig_of(v, read) for v in kwargs.values()]
        if type(out) is _Tensor:
            outs = (out,)
            sig = (name, overload, keys, tuple(vals), ((out.shape, out.dtype),))
        else:
            outs = _flatten_tensors(out)
            sig = (name, overload, keys, tuple(vals), tuple([(o.shape, o.dtype) for o in outs]))
        # The tensors read (aliases resolved): a loop's later iterations read
        # the first iteration's ids and join its node; the same operator on
        # other data (a quantiser's and a dequantiser's reshape of one shape)
        # is a node of its own, so dataflow (value provenance, contractions)
        # stays right. Past _MAX_VARIANTS data variants of one signature (a
        # recurrence h = f(h) over many steps) calls join the last variant.
        in_ids = tuple(read)
        variants = self.nodes.get(sig)
        if variants is None:
            variants = self.nodes[sig] = []
        node = None
        for ids, n in variants:
            if ids == in_ids:
                node = n
                break
        if node is None and len(variants) >= _MAX_VARIANTS:
            node = variants[-1][1]
        if node is not None:
            node["count"] += 1
            alias = self.alias
            input_ids = self.input_ids
            for o, first in zip(outs, node["outputs"]):
                raw = getattr(o, "_solbench_id", None)
                if raw is None:  # a new tensor (the usual case): tid() without alias
                    raw = self.tid(o)
                else:
                    raw = alias.get(raw, raw)
                if raw != first["id"] and raw not in input_ids:
                    alias[raw] = first["id"]
            return node
        if func is not None:
            bound = list(zip(keys, args))
            if kwargs:
                bound += kwargs.items()
        else:
            bound = list(kwargs.items())
        node = {
            "op": name,
            "overload": overload or "default",
            "count": 1,
            "args": {k: self.encode(v) for k, v in bound},
            "outputs": [self.ref(o) for o in outs],
        }
        variants.append((in_ids, node))
        self.order.append(node)
        return node

    def select(self, node, base, args, kwargs):
        """Records what a gather (`base`: index, index_select, embedding, gather,
        take) selects of its source when its indices are real: the union over
        every call of the positions it reads along the indexed dims, per source
        tensor and dims. The node says which dims ("selects"), or False when
        some call's indices were not real (meta) or not representable."""
        sel = _selection(base, args, kwargs)
        prior = node.get("selects")
        if sel is None:
            node["selects"] = False
            return
        src, d0, k, lin = sel
        if prior is False or (prior is not None and (prior["dim"], prior["ndims"]) != (d0, k)):
            node["selects"] = False
            return
        node["selects"] = {"dim": d0, "ndims": k}
        key = (self.tid(src), d0, k)
        entry = self.selections.get(key)
        if entry is None:
            n = math.prod(src.shape[d0:d0 + k])
            entry = self.selections[key] = (list(src.shape), torch.zeros(n, dtype=torch.bool))
        if lin.numel():
            entry[1][lin.reshape(-1)] = True

    def selection_list(self):
        """The selections as the answer's "selections": the selected positions
        as [start, end) runs over the flattened indexed dims (only their count
        past _SELECT_RANGES runs)."""
        out = []
        for (tid, d0, k), (shape, mask) in self.selections.items():
            pos = mask.nonzero().reshape(-1)
            r = {"id": tid, "shape": shape, "dim": d0, "ndims": k, "selected": int(pos.numel())}
            if pos.numel():
                brk = (pos[1:] - pos[:-1]) != 1
                starts = torch.cat([pos[:1], pos[1:][brk]])
                ends = torch.cat([pos[:-1][brk], pos[-1:]]) + 1
                if starts.numel() <= _SELECT_RANGES:
                    r["ranges"] = torch.stack([starts, ends], 1).tolist()
            else:
                r["ranges"] = []
            out.append(r)
        return out

    def _sig_of(self, v, read):
        """An argument as it matters for cost: shapes and values, not
        identities. A tensor derived from a definition input keeps that input's
        name (the first input on its view chain: a custom input may itself be a
        view, get_inputs() returning weight.squeeze(0)), so that aggregated
        nodes read the same inputs. The ids (tid()) of the tensors in `v` are
        appended to `read`, in _flatten_tensors() order."""
        if type(v) is int:
            return v
        if isinstance(v, _Tensor):
            i = getattr(v, "_solbench_id", None)
            if i is None:
                i = self.tid(v)
            else:
                i = self.alias.get(i, i)
            read.append(i)
            input_ids = self.input_ids
            if not input_ids:
                return ("T", v.shape, v.dtype, None)
            src = input_ids.get(i)
            if src is None:
                b = getattr(v, "_base", None)
                while b is not None:
                    src = input_ids.get(self.tid(b))
                    if src is not None:
                        break
                    b = getattr(b, "_base", None)
            return ("T", v.shape, v.dtype, src)
        if isinstance(v, (list, tuple)):
            return tuple([self._sig_of(x, read) for x in v])
        if isinstance(v, float) and not math.isfinite(v):
            return str(v)
        if isinstance(v, (bool, int, float, str)) or v is None:
            return v
        return str(v)


# Gathers whose real indices are recorded (_Graph.select); id(operator) ->
# (its base name if it is one, else "", the operator: kept alive).
_SELECT_OPS = {"index", "_unsafe_index", "index_select", "embedding", "gather", "take"}
_SELECTS: dict = {}
# Positions tracked per source and dims (a bool mask each), and the most
# [start, end) runs the answer lists per selection.
_SELECT_MAX = 1 << 27
_SELECT_RANGES = 1 << 16


def _real_index(t):
    return isinstance(t, torch.Tensor) and not t.is_meta and not (
        t.dtype.is_floating_point or t.dtype.is_complex)


def _selection(base, args, kwargs):
    """What a gather reads of its source, from its real indices: (source, first
    indexed dim, number of indexed dims, flat positions over those dims), or
    None when an index is meta or the indexed dims are not adjacent."""
    a = list(args)

    def arg(i, name):
        return a[i] if i < len(a) else kwargs.get(name)
    src = arg(0, "weight" if base == "embedding" else "self")
    if not isinstance(src, torch.Tensor) or src.numel() == 0:
        return None
    shape = list(src.shape)
    if base in ("index", "_unsafe_index"):
        pairs, d = [], 0  # (dim, index tensor) per indexed dim
        for t in arg(1, "indices") or []:
            if t is None:
                d += 1
                continue
            if not _real_index(t):
                return None
            if t.dtype in (torch.bool, torch.uint8):
                for j, p in enumerate(t.nonzero().unbind(1)):
                    pairs.append((d + j, p))
                d += t.dim()
            else:
                pairs.append((d, t))
                d += 1
        dims = [p[0] for p in pairs]
        if not dims or dims != list(range(dims[0], dims[0] + len(dims))):
            return None
        d0, k = dims[0], len(dims)
        idx = torch.broadcast_tensors(*[p[1].long() for p in pairs])
        lin = torch.zeros(idx[0].shape, dtype=torch.long)
        for (dim, _), t in zip(pairs, idx):
            lin = lin * shape[dim] + t % shape[dim]
    elif base == "index_select":
        index = arg(2, "index")
        if not _real_index(index) or not shape:
            return None
        d0, k = arg(1, "dim") % len(shape), 1
        lin = index.long() % shape[d0]
    elif base == "embedding":
        index = arg(1, "indices")
        if not _real_index(index) or not shape:
            return None
        d0, k = 0, 1
        lin = index.long() % shape[0]
    elif base == "gather":
        index = arg(2, "index")
        if not _real_index(index) or not shape or index.numel() > _SELECT_MAX:
            return None
        dim = arg(1, "dim") % len(shape)
        d0, k = 0, len(shape)
        lin = torch.zeros(index.shape, dtype=torch.long)
        for j, size in enumerate(shape):
            if j == dim:
                c = index.long() % size
            else:
                c = torch.arange(index.shape[j]).reshape(
                    [-1 if i == j else 1 for i in range(index.dim())])
            lin = lin * size + c
    else:  # take: flat positions
        index = arg(1, "index")
        if not _real_index(index):
            return None
        d0, k = 0, len(shape)
        lin = index.long() % max(src.numel(), 1)
    if math.prod(shape[d0:d0 + k]) > _SELECT_MAX:
        return None
    return src, d0, k, lin


def _distinct_numel(t):
    """Distinct storage elements of a view with stride-0 (broadcast) dims, when
    fewer than its numel; None otherwise. The cost model counts an output that
    is such a view at these elements (a kernel may return the same view)."""
    try:
        strides = t.stride()
    except Exception:  # noqa: BLE001 - sparse and other layouts have no strides
        return None
    distinct = full = 1
    for size, stride in zip(t.shape, strides):
        full *= size
        if stride != 0:
            distinct *= size
    return distinct if distinct < full else None


def _output_ref(graph, t, name):
    r = dict(graph.ref(t), name=name)
    d = _distinct_numel(t)
    if d is not None:
        r["distinct_numel"] = d
    return r


def _flatten_tensors(x):
    if isinstance(x, torch.Tensor):
        return [x]
    if isinstance(x, (list, tuple)):
        r = []
        for y in x:
            r.extend(_flatten_tensors(y))
        return r
    return []


def _tree_map(fn, x):
    if isinstance(x, (list, tuple)):
        return type(x)(_tree_map(fn, y) for y in x)
    if isinstance(x, dict):
        return {k: _tree_map(fn, v) for k, v in x.items()}
    return fn(x)


_GRAPH: _Graph | None = None
_Tensor = torch.Tensor if torch is not None else None


def _estimate_macs(name, args):
    """Multiply-accumulates of a matrix product, to decide whether to skip it."""
    shapes = [list(a.shape) for a in args if isinstance(a, torch.Tensor)]
    if name in ("mm", "bmm", "matmul", "linear") and len(shapes) >= 2:
        a, b = shapes[0], shapes[1]
        n = b[0] if name == "linear" else b[-1]
        return math.prod(a) * n
    if name in ("addmm", "baddbmm", "addbmm") and len(shapes) >= 3:
        return math.prod(shapes[1]) * shapes[2][-1]
    if name in ("convolution", "_convolution") and len(shapes) >= 2:
        x, w = shapes[0], shapes[1]
        return math.prod(x) * math.prod(w[0:1] + w[2:])
    return 0


def _is_half(t):
    return isinstance(t, torch.Tensor) and t.dtype in (torch.float16, torch.bfloat16)


class _Recorder(TorchDispatchMode):
    """Records every aten operator; in cpu mode also keeps them cheap and working."""

    def __init__(self, graph: _Graph, cpu: bool, hybrid: bool = False, scalars: bool = False):
        super().__init__()
        self.graph = graph
        self.cpu = cpu
        self.hybrid = hybrid
        self.scalars = scalars
        self.stubbed = 0
        self.upcast = 0
        self.stand_ins = {}  # "float"/"bool" -> reads answered with a stand-in

    def __torch_dispatch__(self, func, types_, args=(), kwargs=None):
        return self._dispatch(func, args, kwargs)

    def _dispatch(self, func, args, kwargs):
        kwargs = kwargs or {}
        if self.scalars and func._schema.name == "aten::_local_scalar_dense" and args \
                and _is_meta(args[0]) and not _is_integral(args[0].dtype):
            out = self._stand_in(args[0])
        elif self.hybrid:
            out = _hybrid_execute(func, args, kwargs, self._cpu_execute)
        else:
            out = self._cpu_execute(func, args, kwargs)
        if self.graph.recording:
            node = self.graph.record(func, args, kwargs, out)
            sel = _SELECTS.get(id(func))
            if sel is None:
                base = func._schema.name.split("::")[-1]
                sel = _SELECTS[id(func)] = (base if base in _SELECT_OPS else "", func)
            if sel[0]:
                self.graph.select(node, sel[0], args, kwargs)
        return out

    def _stand_in(self, t):
        """A value read from a meta (float-derived) tensor in scalars mode."""
        kind = "bool" if t.dtype == torch.bool else "float"
        self.stand_ins[kind] = self.stand_ins.get(kind, 0) + 1
        if kind == "bool":
            return False
        return complex(1.0) if t.dtype.is_complex else 1.0

    def _cpu_execute(self, func, args, kwargs):
        if not self.cpu:
            try:
                return _meta_call(func, args, kwargs)
            except (NotImplementedError, RuntimeError) as e:
                msg = str(e).splitlines()[0] if str(e) else type(e).__name__
                raise NeedsValues(f"{func._schema.name}: {msg[:160]}") from e
        base = func._schema.name.split("::")[-1]
        if base in _HEAVY_OPS and _estimate_macs(base, args) > _HEAVY_MACS:
            out = self._via_meta(func, args, kwargs)
            if out is not None:
                self.stubbed += 1
                return out
        try:
            return func(*args, **kwargs)
        except RuntimeError as e:
            # CPU kernels of old torch lack many half/bfloat16 variants: compute in
            # float32 and round back; the recorded dtypes stay the reference's.
            if "not implemented for" not in str(e) or not any(
                    _is_half(a) for a in _flatten_tensors(list(args) + list(kwargs.values()))):
                raise
        self.upcast += 1
        low = next(a.dtype for a in _flatten_tensors(list(args)) if _is_half(a)) \
            if any(_is_half(a) for a in _flatten_tensors(list(args))) else torch.bfloat16
        up = lambda x: x.float() if _is_half(x) else x
        res = func(*_tree_map(up, list(args)), **_tree_map(up, kwargs))
        down = lambda x: x.to(low) if isinstance(x, torch.Tensor) and x.dtype == torch.float32 else x
        res = _tree_map(down, res)
        if func._schema.name.endswith("_") and args and isinstance(args[0], torch.Tensor):
            args[0].copy_(res if isinstance(res, torch.Tensor) else res[0])
            return args[0]
        return res

    def _via_meta(self, func, args, kwargs):
        to_meta = lambda x: torch.empty_strided(x.shape, x.stride(), dtype=x.dtype, device="meta") \
            if isinstance(x, torch.Tensor) else x
        try:
            m = func(*_tree_map(to_meta, list(args)), **_tree_map(to_meta, kwargs))
        except Exception:
            return None

        def real(x):
            if not isinstance(x, torch.Tensor):
                return x
            if x.dtype.is_floating_point:
                return torch.randn(x.shape, dtype=torch.float32).to(x.dtype)
            return torch.zeros(x.shape, dtype=x.dtype)
        return _tree_map(real, m)


# torch 2.x wraps a mode's __torch_dispatch__ in torch._disable_dynamo (so that
# torch.compile never traces into it), a generic wrapper that costs about a
# microsecond per operator, a tenth of the tracer's time on a reference that
# loops over tens of thousands of operators. This does what it does for a
# dispatch mode, directly: the frame evaluation hook is off while the mode runs.
try:
    from torch._C._dynamo.eval_frame import set_eval_frame as _set_eval_frame
except Exception:  # noqa: BLE001 - torch without dynamo: no wrapper to replace
    _set_eval_frame = None
if _set_eval_frame is not None and getattr(_Recorder.__dict__["__torch_dispatch__"],
                                           "__wrapped__", None) is not None:
    def _dispatch_without_dynamo(self, func, types_, args=(), kwargs=None):
        prior = _set_eval_frame(None)
        try:
            return self._dispatch(func, args, kwargs)
        finally:
            _set_eval_frame(prior)
    _Recorder.__torch_dispatch__ = _dispatch_without_dynamo



def _is_meta(x):
    return isinstance(x, torch.Tensor) and x.is_meta


# Meta kernels of torch 2.x are largely Python (torch._refs, torch._prims): a
# few hundred microseconds per call, milliseconds for decomposed ones such as
# logsumexp. A reference that loops over batch rows and heads issues the same
# call tens of thousands of times (FlashInfer paged decode: 44k operators), so
# the output metadata of a meta call is remembered by its signature (operator,
# argument shapes, strides, dtypes and scalar values) and later calls make
# fresh meta tensors of that metadata without running the kernel. Only calls
# that return new tensors qualify: no mutating operator, no view (whose output
# must alias its input), every tensor argument on meta.
_META_MEMO: dict = {}
_META_MEMO_LIMIT = 1 << 16
_NOT_MEMOISABLE = object()


def _meta_key(x):
    if isinstance(x, torch.Tensor):
        if not x.is_meta:
            raise TypeError("not meta")
        return ("T", tuple(x.shape), tuple(x.stride()), x.dtype)
    if isinstance(x, (list, tuple)):
        return (type(x).__name__,) + tuple(_meta_key(y) for y in x)
    if isinstance(x, float) and x != x:
        return ("nan",)
    hash(x)  # raises for unhashable arguments: not memoised
    return (type(x).__name__, x)


def _memoisable(func):
    ok = getattr(func, "_solbench_memo", None)
    if ok is None:
        schema = func._schema
        ok = not schema.is_mutable and all(r.alias_info is None for r in schema.returns) and \
            bool(schema.returns)
        try:
            func._solbench_memo = ok
        except Exception:  # noqa: BLE001 - an overload that takes no attributes
            pass
    return ok


def _meta_call(func, args, kwargs):
    """func(*args, **kwargs) on meta tensors, through the memo above."""
    if not _memoisable(func):
        return func(*args, **kwargs)
    # The operator by id (an OpOverload hashes in Python; _MEMO_FUNCS keeps
    # every operator in the memo alive, so its id stays its own).
    try:
        parts = []
        for x in args:
            if isinstance(x, _Tensor):
                if not x.is_meta:
                    return func(*args, **kwargs)
                parts.append(("T", x.shape, x.stride(), x.dtype))
            else:
                parts.append(_meta_key(x))
        key = (id(func), tuple(parts), _meta_key(sorted(kwargs.items())) if kwargs else None)
    except TypeError:
        return func(*args, **kwargs)
    spec = _META_MEMO.get(key)
    if spec is not None and spec is not _NOT_MEMOISABLE:
        return _from_spec(spec)
    out = func(*args, **kwargs)
    if spec is None and len(_META_MEMO) < _META_MEMO_LIMIT:
        _MEMO_FUNCS.add(func)
        _META_MEMO[key] = _to_spec(out)
    return out


_MEMO_FUNCS: set = set()


def _to_spec(out):
    if isinstance(out, torch.Tensor):
        if not out.is_meta:
            return _NOT_MEMOISABLE
        return ("T", tuple(out.shape), tuple(out.stride()), out.dtype)
    if isinstance(out, (list, tuple)):
        parts = [_to_spec(o) for o in out]
        if any(p is _NOT_MEMOISABLE for p in parts):
            return _NOT_MEMOISABLE
        return (type(out).__name__, parts)
    if out is None or isinstance(out, (bool, int, float)):
        return ("V", out)
    return _NOT_MEMOISABLE


def _from_spec(spec):
    if spec[0] == "T":
        return torch.empty_strided(spec[1], spec[2], dtype=spec[3], device="meta")
    if spec[0] == "V":
        return spec[1]
    parts = [_from_spec(p) for p in spec[1]]
    return tuple(parts) if spec[0] == "tuple" else parts


def _is_integral(dt):
    return not (dt.is_floating_point or dt.is_complex or dt == torch.bool)


def _to_meta(x):
    if isinstance(x, torch.Tensor) and x.device.type != "meta":
        return torch.empty_strided(x.shape, x.stride(), dtype=x.dtype, device="meta")
    return x


_INDEX_OPS = {"aten::index", "aten::index_put", "aten::index_put_", "aten::_index_put_impl_"}


def _expand_masks(indices):
    out = []
    for t in indices:
        if isinstance(t, torch.Tensor) and not t.is_meta and t.dtype in (torch.bool, torch.uint8):
            out.extend(t.nonzero().unbind(1))
        else:
            out.append(t)
    return out


# Operators that turn float scores into indices (a router's top-k, argmax). In
# hybrid mode their float inputs are meta; they run on real stand-ins of those
# inputs so that the routing they produce is real (integer) and what follows it
# (one_hot, bincount, masks) runs on real values. Their float outputs stay meta.
# The stand-in is one random row repeated over every leading index: every token
# routes alike, to the fewest distinct experts, so the weight traffic (and any
# capacity-limited work) is the least any routing gives; the bound stays a lower
# bound whatever the real router would choose.
_ROUTING_OPS = {"topk", "sort", "argsort", "argmax", "argmin", "max", "min", "kthvalue",
                "multinomial", "mode"}
_ROUTING_MAX_NUMEL = 1 << 26


def _routing_on_stand_ins(func, args, kwargs):
    gen = torch.Generator().manual_seed(_ROUTING_SEED)

    def real(x):
        if not isinstance(x, torch.Tensor):
            return x
        if x.dtype.is_floating_point:
            row = torch.randn(x.shape[-1:] if x.dim() else (), generator=gen, dtype=torch.float32)
            v = row.expand(x.shape).contiguous()
            return (v.softmax(-1) if "multinomial" in func._schema.name and v.dim() else v).to(x.dtype) \
                if x.dtype in (torch.float16, torch.bfloat16, torch.float32, torch.float64) else v
        return torch.zeros(x.shape, dtype=x.dtype)
    try:
        out = func(*_tree_map(real, list(args)), **_tree_map(real, kwargs))
    except RuntimeError:
        # Old CPU kernels lack some half variants: float32 stand-ins.
        up = lambda x: x.float() if _is_half(x) else x
        out = func(*_tree_map(lambda x: up(real(x)), list(args)), **_tree_map(lambda x: up(real(x)), kwargs))
    return _tree_map(lambda t: _to_meta(t) if isinstance(t, torch.Tensor) and
                     (t.dtype.is_floating_point or t.dtype.is_complex) else t, out)


_ROUTING_SEED = 201


def _gives_indices(base, func):
    """max/min give indices only along a dim (max.dim); the full reduction
    (a global amax for a quantisation scale) and the elementwise forms are
    float computations that stay on meta."""
    return base not in ("max", "min") or func._overloadname in ("dim", "names_dim")


# id(operator) -> (its name, whether the fast path of _hybrid_execute() may
# take it, the operator: kept alive so that its id stays its own).
_HYBRID_FAST: dict = {}


def _all_meta(args, kwargs):
    """Whether the arguments hold a tensor and every tensor is meta."""
    seen = False
    for a in args:
        if type(a) is int:
            continue
        if isinstance(a, _Tensor):
            if not a.is_meta:
                return False
            seen = True
        elif isinstance(a, (list, tuple)):
            for t in _flatten_tensors(a):
                if not t.is_meta:
                    return False
                seen = True
    if kwargs:
        for t in _flatten_tensors(list(kwargs.values())):
            if not t.is_meta:
                return False
            seen = True
    return seen


def _hybrid_execute(func, args, kwargs, real_execute):
    """One operator in hybrid mode. Meta when any tensor argument is meta (the
    real ones are replaced by meta stand-ins of their shapes), or when a factory
    (no tensor argument) makes a floating-point tensor; real otherwise. An
    in-place operator on a real tensor with meta arguments checks its shapes on
    meta and leaves the real tensor as it was (its values no longer matter: only
    a float computation writes into it)."""
    dev = kwargs.get("device")
    info = _HYBRID_FAST.get(id(func))
    if info is None:
        name = func._schema.name
        info = _HYBRID_FAST[id(func)] = (
            name, name not in _INDEX_OPS and name.split("::")[-1] not in _ROUTING_OPS, func)
    if dev is None and info[1] and _all_meta(args, kwargs):
        # The common case (a loop of float operators on meta tensors): what the
        # general path below does for it (no index or routing operator), without
        # its checks.
        try:
            return _meta_call(func, args, kwargs)
        except (NotImplementedError, RuntimeError) as e:
            msg = str(e).splitlines()[0] if str(e) else type(e).__name__
            raise NeedsValues(f"{info[0]}: {msg[:160]}") from e
    if dev is not None and torch.device(dev).type == "meta":
        # `device=x.device` of a meta (float) input: the tensor made here is
        # meta or real by the rules below, as if the reference had said "cuda".
        kwargs = dict(kwargs, device=torch.device("cpu"))
    flat = _flatten_tensors(list(args) + list(kwargs.values()))
    if not flat:
        if "device" in kwargs:
            mk = dict(kwargs, device=torch.device("meta"))
            try:
                m = func(*args, **mk)
            except Exception:  # noqa: BLE001 - run it for real below
                m = None
            if m is not None and not any(t.dtype.is_floating_point or t.dtype.is_complex
                                         for t in _flatten_tensors(m)):
                m = None
            if m is not None:
                return m
        return real_execute(func, args, kwargs)
    if not any(_is_meta(t) for t in flat):
        return real_execute(func, args, kwargs)
    if func._schema.name in _INDEX_OPS and len(args) > 1 and isinstance(args[1], (list, tuple)):
        # A real boolean mask indexing a meta tensor: its true positions (real)
        # give the result's length, as torch itself expands masks.
        args = (args[0], _expand_masks(args[1])) + tuple(args[2:])
    base = func._schema.name.split("::")[-1]
    if base in _ROUTING_OPS and _gives_indices(base, func) and all(_is_meta(t) for t in flat) and \
            sum(t.numel() for t in flat) <= _ROUTING_MAX_NUMEL:
        return _routing_on_stand_ins(func, args, kwargs)
    if kwargs.get("device") is not None:
        # A meta operand stays on meta (`softmax(x, dtype=...)` passes the
        # device it was given to `_to_copy`).
        kwargs = dict(kwargs, device=torch.device("meta"))
    if not all(_is_meta(t) for t in flat):
        args, kwargs = _tree_map(_to_meta, list(args)), _tree_map(_to_meta, kwargs)
    try:
        out = _meta_call(func, args, kwargs)
    except (NotImplementedError, RuntimeError) as e:
        msg = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise NeedsValues(f"{func._schema.name}: {msg[:160]}") from e
    if func._schema.name.endswith("_") and args and isinstance(args[0], torch.Tensor) \
            and not _is_meta(args[0]):
        return args[0]
    return out


class _DeviceMap(TorchFunctionMode):
    """Sends every "cuda" device the reference names to the tracing device."""

    def __init__(self, device: str):
        super().__init__()
        self.device = device

    def _map(self, d):
        if isinstance(d, torch.device) and d.type == "cuda":
            return torch.device(self.device)
        if isinstance(d, str) and d.startswith("cuda"):
            return self.device
        if isinstance(d, int) and not isinstance(d, bool):
            return self.device  # a bare CUDA ordinal
        return d

    def __torch_function__(self, func, types_, args=(), kwargs=None):
        if not kwargs:
            kwargs = {}
        elif "device" in kwargs:
            kwargs = dict(kwargs)
            kwargs["device"] = self._map(kwargs["device"])
        name = getattr(func, "__name__", "")
        if name == "cuda":
            return args[0]
        if name == "to" and len(args) > 1 and isinstance(args[1], (str, torch.device)):
            args = (args[0], self._map(args[1])) + tuple(args[2:])
        return func(*args, **kwargs)


# --- polyfills for operators older torch lacks --------------------------------

def _sdpa_math(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False,
               scale=None, enable_gqa=False):
    L, S = query.size(-2), key.size(-2)
    scale = 1.0 / math.sqrt(query.size(-1)) if scale is None else scale
    if key.dim() >= 3 and key.size(-3) != query.size(-3):
        rep = query.size(-3) // key.size(-3)
        key = key.repeat_interleave(rep, dim=-3)
        value = value.repeat_interleave(rep, dim=-3)
    attn = torch.matmul(query, key.transpose(-2, -1)) * scale
    if is_causal:
        keep = torch.ones(L, S, dtype=torch.bool, device=query.device).tril()
        attn = attn.masked_fill(~keep, float("-inf"))
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            attn = attn.masked_fill(~attn_mask, float("-inf"))
        else:
            attn = attn + attn_mask
    return torch.matmul(torch.softmax(attn, dim=-1), value)


def _sdpa_recorded(original):
    """scaled_dot_product_attention as one recorded operator, whatever torch's
    dispatcher would decompose it into (the cost model needs is_causal, which a
    decomposition loses, and flash-style bytes)."""

    def sdpa(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False,
             scale=None, enable_gqa=False):
        g = _GRAPH
        was = g.recording if g else False
        if g:
            g.recording = False
        try:
            kw = {"attn_mask": attn_mask, "dropout_p": dropout_p, "is_causal": is_causal,
                  "scale": scale}
            if enable_gqa:
                kw["enable_gqa"] = True
            if original is None:
                out = _sdpa_math(query, key, value, **kw)
            else:
                try:
                    out = original(query, key, value, **kw)
                except TypeError:  # torch before enable_gqa
                    kw.pop("enable_gqa", None)
                    out = original(query, key, value, **kw) if key.size(-3) == query.size(-3) \
                        else _sdpa_math(query, key, value, **kw)
        finally:
            if g:
                g.recording = was
        if g and was:
            args = {"query": query, "key": key, "value": value, "attn_mask": attn_mask,
                    "dropout_p": dropout_p, "is_causal": is_causal, "scale": scale,
                    "enable_gqa": bool(enable_gqa)}
            g.record(None, (), args, out, name="aten::scaled_dot_product_attention",
                     overload="default")
        return out
    return sdpa


def _repeat_interleave_recorded(original):
    """repeat_interleave with an int repeat count as one recorded operator,
    computed as unsqueeze/expand/reshape (the same values). torch 1.13 cannot run
    it on meta tensors (it builds a repeats tensor and reads its sum), which sent
    such references to a slow CPU trace; a tensor of repeats is left to torch."""

    def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):
        if isinstance(repeats, bool) or not isinstance(repeats, int) or not isinstance(input, torch.Tensor):
            if repeats is None:  # torch.repeat_interleave(repeats_tensor)
                return original(input, output_size=output_size)
            return original(input, repeats, dim, output_size=output_size)
        g = _GRAPH
        was = g.recording if g else False
        if g:
            g.recording = False
        try:
            x = input.reshape(-1) if dim is None else input
            d = 0 if dim is None else dim % max(x.dim(), 1)
            if x.dim() == 0:
                x, d = x.reshape(1), 0
            shape = list(x.shape)
            out = x.unsqueeze(d + 1).expand(*shape[:d + 1], repeats, *shape[d + 1:]) \
                .reshape(*shape[:d], shape[d] * repeats, *shape[d + 1:])
        finally:
            if g:
                g.recording = was
        if g and was:
            g.record(None, (), {"self": input, "repeats": repeats, "dim": dim}, out,
                     name="aten::repeat_interleave", overload="self_int")
        return out
    return repeat_interleave


class _Patches:
    """Temporary changes to torch while a reference runs; undone on exit."""

    def __init__(self):
        self.saved = []

    def set(self, obj, name, value):
        self.saved.append((obj, name, getattr(obj, name, _MISSING)))
        setattr(obj, name, value)

    def __enter__(self):
        F = torch.nn.functional
        self.set(F, "scaled_dot_product_attention",
                 _sdpa_recorded(getattr(F, "scaled_dot_product_attention", None)))
        ri = _repeat_interleave_recorded(torch.repeat_interleave)
        self.set(torch, "repeat_interleave", ri)
        self.set(torch.Tensor, "repeat_interleave", ri)
        # References may synchronise or query the current CUDA device.
        self.set(torch.cuda, "synchronize", lambda *a, **k: None)
        self.set(torch.cuda, "current_device", lambda: 0)
        return self

    def __exit__(self, *exc):
        for obj, name, old in reversed(self.saved):
            if old is _MISSING:
                delattr(obj, name)
            else:
                setattr(obj, name, old)


_MISSING = object()


# --- inputs --------------------------------------------------------------------
#
# The workers' input code (inputs.generate_inputs: the custom entry point, then
# each input by its source) with a rule of the tracer's own: shapes and dtypes are
# the workload's, values are stand-ins.

class _StandIns:
    """The tracer's values for inputs.generate_inputs (its `rule`; the worker's is
    inputs.ValueRule). Tensors for which `meta(dtype)` holds are meta. Integer
    and bool tensors (indices, lengths, masks: the values that steer gathers,
    slices and routing) are the values the evaluation uses: the worker's rule
    for random ones (a generator per input seeded from (seed, round 0, index)),
    the blob's values for safetensors ones whose blob is present, the custom
    entry point called with the worker's seed. Real floating-point tensors (cpu
    mode) are simplified random values (one generator for every such input,
    drawn as float32: inputs.random_plain's float32_draws): the bound depends on
    their shapes only. A float blob is never read; an absent index blob gets
    structurally valid stand-in values (_index_tensor). Each is noted."""

    def __init__(self, req, meta, notes):
        self.req = req
        self.seed = int(req.get("seed", 200))
        self.meta = meta
        self.notes = notes
        self.gen = torch.Generator().manual_seed(self.seed)
        self.worker = inputs_mod.ValueRule({}, self.seed, 0, torch.device("cpu"))

    def custom_seed(self) -> int:
        return self.worker.custom_seed()

    def from_custom(self, index, inp, v):
        return v  # float tensors made under the recorder are meta (hybrid): not moved

    def from_safetensors(self, index, inp):
        return self._tensor(index, inp, blob=True)

    def random(self, index, inp):
        return self._tensor(index, inp, blob=False)

    def _tensor(self, index, inp, blob):
        name, shape = inp["name"], inp["shape"]
        if shape is None:
            return None  # a scalar input has a "scalar" source (core/workload.cc)
        dt = _torch_dtype(inp["dtype"])
        if self.meta(dt):
            return torch.empty(shape, dtype=dt, device="meta")
        values = not (dt.is_floating_point or dt.is_complex)  # indices, lengths, masks
        if blob and values:
            t = self._blob(inp)
            if t is not None:
                return t
            self.notes.append(f"input {name}: safetensors blob absent; structurally valid "
                              "index values used")
            return _index_tensor(self.req, inp, dt)
        if blob:
            self.notes.append(f"input {name}: safetensors blob not read; random values of its "
                              "shape used")
        if values:
            return self.worker.random(index, inp)
        return inputs_mod.random_plain(shape, inp["dtype"], "cpu", self.gen, float32_draws=True)

    def _blob(self, inp):
        """The blob's tensor when its file is present (the request names it by
        absolute path), else None."""
        src = inp["source"]
        path = src.get("path")
        if not path or not os.path.isfile(path):
            return None
        t = inputs_mod.load_safetensors_tensor(path, src.get("tensor_key", inp["name"]))
        if list(t.shape) != list(inp["shape"]) or t.dtype != _torch_dtype(inp["dtype"]):
            raise ValueError(f"input {inp['name']}: safetensors tensor {list(t.shape)} {t.dtype}, "
                             f"expected {inp['shape']} {inp['dtype']}")
        return t


def _index_tensor(req, spec, dt):
    """Stand-in values for index inputs whose blobs are absent (FlashInfer's
    indptr/indices): *_indptr splits its partner's length evenly (0 .. total),
    *_indices enumerates rows of the paged cache. Costs then follow shapes."""
    name, shape = spec["name"], spec["shape"]
    by_name = {i["name"]: i for i in req["inputs"]}
    axes = req.get("axes_and_scalars", {})
    n = shape[0] if shape else 1
    if name.endswith("indptr"):
        prefix = name[: -len("indptr")]
        partner = by_name.get(prefix + "indices")
        if partner is None:
            partner = by_name.get(prefix.rstrip("_").split("_")[0]) or by_name.get(prefix[:1])
        total = partner["shape"][0] if partner and partner["shape"] else n - 1
        return torch.linspace(0, total, n).round().to(dt)
    rows = int(axes.get("num_pages", n)) or 1
    return (torch.arange(n) % rows).to(dt).reshape(shape)


def _make_inputs(req, device, reference, notes, input_mode=None):
    """Argument list for run(): scalars by value, tensors on `device` ("hybrid":
    floating-point tensors on meta, the others real on the CPU; custom inputs are
    built under `input_mode`, which makes their float tensors meta)."""
    hybrid = device == "hybrid"
    if hybrid:
        device = "cpu"
    spec = {"inputs": [dict(i, source={"type": i["source"], "value": i.get("value"),
                                       "path": i.get("path"), "tensor_key": i.get("tensor_key")})
                       for i in req["inputs"]],
            "axes": req.get("axes_and_scalars", {})}
    custom = [i["name"] for i in req["inputs"] if i["source"] == "custom"]
    custom_fn = None
    if custom:
        fn = reference_function(reference, req.get("custom_inputs_entrypoint") or "")

        def custom_fn(axes, dev):
            # Only the inputs declared custom take the entry point's values.
            if input_mode is not None:
                with input_mode:
                    made = fn(axes, dev)
            else:
                made = fn(axes, dev)
            for name in custom:
                if name not in made:
                    raise ValueError(f"custom_inputs_entrypoint did not return input {name}")
            return {name: made[name] for name in custom}

    def meta(dt):
        return device == "meta" or (hybrid and (dt.is_floating_point or dt.is_complex))

    rule = _StandIns(req, meta, notes)
    return inputs_mod.generate_inputs(spec, rule.seed, 0, device, custom_fn, rule=rule)


def _run_once(req, device: str, deadline=None):
    """One trace in mode `device`, without cyclic garbage collection: the
    graph grows by the operator and each full collection walks all of it (a
    Python loop of hundreds of thousands of calls spent a quarter of its
    time there); and a collection that clears a cycle holding tensors drops
    their attributes (the ids the graph knows them by) while views still
    point at them. What the trace leaves in cycles is collected after it."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _run_traced(req, device, deadline)
    finally:
        if collecting:
            gc.enable()


def _run_traced(req, device: str, deadline=None):
    global _GRAPH
    graph = _Graph()
    graph.deadline = deadline
    partial = False
    notes = []
    scalars = device == "scalars"
    if scalars:
        device = "hybrid"
    hybrid = device == "hybrid"
    recorder = _Recorder(graph, cpu=(device != "meta"), hybrid=hybrid, scalars=scalars)
    _GRAPH = graph
    try:
        with _Patches():
            reference = load_reference(req["reference"], None, register=True)
            run = reference_function(reference, "run")
            with torch.no_grad(), _DeviceMap("cpu" if hybrid else device):
                args = _make_inputs(req, device, reference, notes,
                                    input_mode=recorder if hybrid else None)
                tensors = {}
                for spec, a in zip(req["inputs"], args):
                    if isinstance(a, torch.Tensor):
                        tensors[spec["name"]] = a
                        graph.input_ids[graph.tid(a)] = spec["name"]
                with recorder:
                    graph.recording = True
                    try:
                        result = run(*args)
                    except _BudgetSpent:
                        # What was recorded is a part of the whole: its work and the
                        # bytes it read are lower bounds of the whole's (docs/sol.md,
                        # "Time budget"). The outputs are not known.
                        result, partial = None, True
                    graph.recording = False
    finally:
        _GRAPH = None
    if isinstance(result, dict):
        # Outputs by name, in definition order (as workload.normalize_outputs
        # takes them); a dict used to give no outputs at all, so none was
        # named and a broadcast one was counted in full.
        result = [result[o["name"]] for o in req["outputs"] if o["name"] in result]
    outs = _flatten_tensors(result)
    if recorder.stubbed:
        notes.append(f"{recorder.stubbed} large matrix products were not computed on the CPU "
                     "(shapes from a meta run, values random)")
    if recorder.upcast:
        notes.append(f"{recorder.upcast} half/bfloat16 operators computed in float32 on the CPU")
    if recorder.stand_ins:
        notes.append("values read from meta tensors answered with stand-ins: " + ", ".join(
            f"{n} {'float (1.0)' if k == 'float' else 'truth (False)'}"
            for k, n in sorted(recorder.stand_ins.items())))
    answer = {
        "inputs": [dict(graph.ref(t), name=n) for n, t in tensors.items()],
        "outputs": [_output_ref(graph, t, req["outputs"][k]["name"] if k < len(req["outputs"]) else f"out{k}")
                    for k, t in enumerate(outs)],
        "ops": graph.order,
        "selections": graph.selection_list(),
        "raw_op_count": graph.raw_ops,
        "notes": notes,
    }
    if partial:
        answer["partial"] = {"budget_s": req["budget_s"], "ops": graph.raw_ops}
    return answer


def _classify(e: BaseException) -> Exception:
    """Missing dtypes or APIs in this torch are Untraceable; anything else stays."""
    if isinstance(e, Untraceable):
        return e
    msg = str(e)
    if isinstance(e, AttributeError) and ("module 'torch" in msg or "torch." in msg):
        return Untraceable(f"torch {torch.__version__} lacks {msg.split('attribute')[-1].strip()}")
    if isinstance(e, (ImportError, SyntaxError)):
        return Untraceable(f"reference needs a newer Python or torch: {msg}")
    return e


def _input_bytes(req):
    total = 0
    for i in req["inputs"]:
        if i["shape"] is not None:
            bits = 4 if i["dtype"].startswith("float4") and i["dtype"] != "float4_e2m1fn_x2" else 0
            total += math.prod(i["shape"]) * (bits / 8 if bits else _itemsize(i["dtype"]))
    return total


def _itemsize(name):
    return {"float64": 8, "int64": 8, "float32": 4, "int32": 4, "float16": 2, "bfloat16": 2,
            "int16": 2}.get(name, 1)


# A tiny reference traced once by ready(): torch imports much of itself on first
# use under the dispatch and function modes (torch 2.x: torch._dynamo, about
# 1 s alone, more with many processes starting at once), which would otherwise
# fall into the first workload's time limit and trace_seconds.
_WARM_UP = {
    "reference": "import torch\n"
                 "def run(x, i):\n"
                 "    y = torch.softmax(x.float() @ x.t().float(), -1).to(x.dtype)\n"
                 "    return y[i.long()]\n",
    "inputs": [{"name": "x", "dtype": "bfloat16", "source": "random", "shape": [4, 4]},
               {"name": "i", "dtype": "int32", "source": "random", "shape": [2]}],
    "outputs": [{"name": "y", "dtype": "bfloat16", "shape": [2, 4]}],
    "axes_and_scalars": {}, "seed": 200,
}


def _one_thread():
    """Tracing runs one intra-op thread: its real computations are small index
    and mask operators, and `solbench sol -j N` runs N tracer processes side by
    side. With torch's default (a thread per core in every process), each small
    operator pays OpenMP start-up and spin-waits on busy cores: a 64k-element
    nonzero() took 16 ms instead of 0.09 ms with two threads on two shared cores."""
    if torch is not None and torch.get_num_threads() != 1:
        torch.set_num_threads(1)


class _StandIn(types.ModuleType):
    """A module put in a real one's place in a tracer process (_install) until
    something needs the real one (_real_module)."""


_SHAPES = "torch.fx.experimental.symbolic_shapes"
# The real modules a stand-in's real one must find loaded first: the real
# symbolic_shapes binds sympy at its top, which must not be sympy's stand-in.
_LOADED_FIRST = {_SHAPES: "sympy"}


def _install(name: str, kind) -> None:
    """A stand-in of `kind` in sys.modules and its parent package for module `name`."""
    stub = sys.modules[name] = kind(name)
    parent, _, child = name.rpartition(".")
    if parent:
        setattr(importlib.import_module(parent), child, stub)


def _real_loaded(name: str) -> bool:
    return not isinstance(sys.modules.get(name), _StandIn)


def _real_module(name: str):
    """The real module behind a stand-in: imported (and put in sys.modules and its
    parent package) on first need, after those it needs (_LOADED_FIRST)."""
    if name in _LOADED_FIRST:
        _real_module(_LOADED_FIRST[name])
    if not _real_loaded(name):
        del sys.modules[name]
    real = importlib.import_module(name)
    parent, _, child = name.rpartition(".")
    if parent:
        setattr(sys.modules[parent], child, real)
    return real


class _DeferredDynamo(_StandIn):
    """Stands for torch._dynamo in a tracer process until something needs more of it
    than disable(). torch 2.x wraps its Python meta kernels and reference operators
    in torch._disable_dynamo, whose first call imports torch._dynamo (0.8-1.3 s, most
    of a tracer's start after torch itself) only to turn frame evaluation off around
    them. Nothing in a tracer compiles, so there is nothing to turn off: disable()
    here returns the function as it is. Any other attribute imports the real module
    and answers from it (a reference that calls torch.compile, say); so does an
    import of a torch._dynamo submodule, which asks this module for its __path__
    first. What was disabled before stays plain."""

    def __getattr__(self, name):
        if name == "disable":
            return _plain_disable
        return getattr(_real_module("torch._dynamo"), name)


def _plain_disable(fn=None, recursive=True, **_kwargs):
    return fn if fn is not None else (lambda f: f)


def _defer_dynamo() -> bool:
    """Puts _DeferredDynamo in torch._dynamo's place, where torch has the wrapper it
    serves (torch >= 2: torch._disable_dynamo) and Dynamo is not loaded already (a
    process forked from one that imported it). True when it did."""
    if (getattr(torch, "_disable_dynamo", None) is None or "torch._dynamo" in sys.modules
            or os.environ.get("SOLBENCH_TRACER_DYNAMO") == "1"):
        return False
    _install("torch._dynamo", _DeferredDynamo)
    return True


class _NotSympy:
    """sympy.Basic while sympy is not loaded: nothing is an instance of it, as no
    sympy expression can exist before sympy is imported."""


class _DeferredSympy(_StandIn):
    """Stands for sympy in a tracer process until something needs more of it than
    an isinstance test against sympy.Basic (torch's elementwise type promotion
    imports sympy on every call for that test alone). sympy's import is 0.25-0.4 s,
    a fifth of a cold `solbench sol`. Any other attribute (and a submodule's import,
    which asks for __path__) imports the real sympy and answers from it."""

    def __getattr__(self, name):
        if name == "Basic" and not _real_loaded("sympy"):
            return _NotSympy
        return getattr(_real_module("sympy"), name)


def _plain(*values) -> bool:
    """True when every value is a plain Python bool, int or float (no SymInt,
    SymBool, SymFloat): the only values a tracer without fake tensors meets."""
    return all(type(v) in (bool, int, float) for v in values)


def _plain_identity(name, kinds):
    """symbolic_shapes' `name` where it returns a plain value of `kinds` as it is."""
    def f(a, *args, **kwargs):
        if type(a) in kinds:
            return a
        return getattr(_real_shapes(), name)(a, *args, **kwargs)
    return f


def _plain_bool(name):
    return _plain_identity(name, (bool,))


def _sym_eq(x, y):
    if isinstance(x, (tuple, list)) and isinstance(y, (tuple, list)):
        return len(x) == len(y) and all(_sym_eq(a, b) for a, b in zip(x, y))
    if type(x) is int and type(y) is int:
        return x == y
    return _real_shapes().sym_eq(x, y)


def _joined(name, join):
    def f(x, *others):
        if all(type(v) is bool for v in (x, *others)):
            return join((x, *others))
        return getattr(_real_shapes(), name)(x, *others)
    return f


def _is_nested_int(s):
    return False if _plain(s) else _real_shapes().is_nested_int(s)


def _has_hint(a):
    return True if _plain(a) else _real_shapes().has_hint(a)


def _advise(name):
    def f(a, *args, **kwargs):
        if _plain(a):  # the real ones act on unbacked SymInts only
            return None
        return getattr(_real_shapes(), name)(a, *args, **kwargs)
    return f


# What torch's meta kernels, references and decompositions take from
# torch.fx.experimental.symbolic_shapes, each answered for plain values as the real
# function answers them (torch 2.11: symbolic_shapes.py), anything else by the real one.
_PLAIN_SHAPES = {
    "expect_true": _plain_bool("expect_true"),
    "guard_bool": _plain_bool("guard_bool"),
    "guard_or_false": _plain_bool("guard_or_false"),
    "guard_or_true": _plain_bool("guard_or_true"),
    "guard_size_oblivious": _plain_bool("guard_size_oblivious"),
    "statically_known_true": _plain_bool("statically_known_true"),
    "guard_int": _plain_identity("guard_int", (int,)),
    "size_hint": _plain_identity("size_hint", (int,)),
    "guard_scalar": _plain_identity("guard_scalar", (bool, int, float)),
    "sym_eq": _sym_eq,
    "sym_and": _joined("sym_and", all),
    "sym_or": _joined("sym_or", any),
    "is_nested_int": _is_nested_int,
    "has_hint": _has_hint,
    "_advise_is_size": _advise("_advise_is_size"),
    "_advise_is_bounded": _advise("_advise_is_bounded"),
}


class _DeferredShapes(_StandIn):
    """Stands for torch.fx.experimental.symbolic_shapes (which imports sympy at its
    top) in a tracer process. torch._check, every meta kernel's shape test, imports
    it for expect_true; a tracer runs on real and meta tensors, whose sizes are plain
    ints, so those tests are answered here (_PLAIN_SHAPES) the way the real functions
    answer plain values. A symbolic value, any other name, or a submodule's import
    loads the real module (and sympy) and answers from it."""

    def __getattr__(self, name):
        if name == "__path__":  # a module, not a package: `from ... import` asks
            raise AttributeError(name)
        if name in _PLAIN_SHAPES and not _real_loaded(_SHAPES):
            return _PLAIN_SHAPES[name]
        return getattr(_real_shapes(), name)


_STAND_INS = {"sympy": _DeferredSympy, _SHAPES: _DeferredShapes}


def _real_shapes():
    return _real_module(_SHAPES)


def _defer_sympy() -> bool:
    """Puts _DeferredSympy and _DeferredShapes in sympy's and symbolic_shapes' places
    where neither is loaded (not in a process forked from one that compiled), this
    torch has meta kernels that ask them (>= 2.0) and SOLBENCH_TRACER_SYMPY is not 1.
    True when it did."""
    if (getattr(torch, "_disable_dynamo", None) is None
            or os.environ.get("SOLBENCH_TRACER_SYMPY") == "1"
            or any(name in sys.modules for name in _STAND_INS)):
        return False
    for name, kind in _STAND_INS.items():
        _install(name, kind)
    return True


def ready(arg: str) -> str:
    """Imports done (torch included) and a tiny trace run in meta and hybrid
    modes; called once by `solbench sol` tracer processes before their per-trace
    time limit starts."""
    if torch is not None:
        _one_thread()
        try:
            if not _defer_dynamo():
                # Meta kernels of torch 2.x would import it on first use (through
                # torch._disable_dynamo): here, before any trace's time starts.
                importlib.import_module("torch._dynamo")
        except Exception:  # noqa: BLE001 - torch 1.x has no torch._dynamo
            pass
        _defer_sympy()
        for mode in ("meta", "hybrid"):
            try:
                trace(json.dumps(dict(_WARM_UP, mode=mode)))
            except Exception:  # noqa: BLE001 - a real trace reports any problem
                pass
    return json.dumps({"torch": torch.__version__ if torch is not None else None})


def trace(arg: str) -> str:
    """JSON request in, JSON graph out (see the module docstring and docs/sol.md)."""
    req = json.loads(arg)
    start = time.perf_counter()
    answer = {"status": "ok", "mode": None, "mode_reason": "", "torch": None}
    if torch is None:
        answer.update(status="untraceable", reason=f"torch cannot be imported: {_TORCH_IMPORT_ERROR}")
        return json.dumps(answer)
    answer["torch"] = torch.__version__
    _one_thread()
    mode = req.get("mode", "auto")
    # A budget stops the trace where it stands (the answer's "partial"); every
    # mode attempt counts against it.
    budget = req.get("budget_s") or 0
    deadline = start + budget if budget > 0 else None
    try:
        for i in req["inputs"] + req["outputs"]:
            _torch_dtype(i["dtype"])
        attempts = ["meta", "hybrid", "scalars", "cpu"] if mode == "auto" else [mode]
        failed = []  # (mode, why) of the attempts that did not finish
        last_tb = ""
        for device in attempts:
            if device == "cpu" and _input_bytes(req) > _CPU_INPUT_LIMIT_BYTES:
                failed.append(("cpu", f"inputs of {_input_bytes(req) / 2**30:.1f} GiB are too large "
                                      "to trace on the CPU"))
                break
            try:
                answer.update(_run_once(req, device, deadline))
                answer["mode"] = device
                if failed:
                    answer["mode_reason"] = "; ".join(f"{m} trace failed ({why})" for m, why in failed) + \
                        ({"hybrid": "; traced with real integer tensors and meta floating-point tensors",
                          "scalars": "; traced with real integer tensors, meta floating-point tensors "
                                     "and stand-ins for values read from them"}.get(
                            device, "; traced on real CPU tensors"))
                break
            except Exception as e:  # noqa: BLE001 - every failure is reported
                c = _classify(e)
                if isinstance(c, Untraceable):
                    raise c
                why = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
                if isinstance(e, NeedsValues) and e.__cause__ is not None:
                    why = str(e)
                failed.append((device, why))
                last_tb = traceback.format_exc(limit=6)
        if answer["mode"] is None:
            reason = failed[-1][1] if len(failed) == 1 else \
                "; ".join(f"{m}: {why}" for m, why in failed)
            answer.update(status="error", reason=reason, traceback=last_tb)
    except Untraceable as e:
        answer.update(status="untraceable", reason=str(e))
    answer["seconds"] = round(time.perf_counter() - start, 4)
    return json.dumps(answer)
