"""The arguments of timed calls, each call's values drawn from the seed the parent
hands out for it (src/harness/values.h): ArgPool gives every call tensors at
addresses and with values no earlier call saw; CallValues generates a call's
inputs again from its seed, without a pool (the judge).
"""
from __future__ import annotations

import torch

from . import inputs as inputs_mod
from .record import harness_only


def pool_layout(v):
    """How ArgPool holds an input: None for a non-tensor or a self-overlapping layout
    (the input set's own tensor is passed), else (tensor, broadcast dims, compacted
    tensor). A broadcast view (stride 0, as `expand` makes; custom input generators
    return them) stays one: its distinct elements get the pool, and each call's
    argument is their view expanded again, the layout the reference was given."""
    if not isinstance(v, torch.Tensor):
        return None
    t = v if all(s >= 0 for s in v.stride()) else v.contiguous()
    bcast = tuple(d for d, (n, st) in enumerate(zip(t.shape, t.stride())) if st == 0 and n > 1)
    c = ArgPool._compact(t, bcast)
    if torch._debug_has_internal_overlap(c) == 1:
        return None
    return t, bcast, c


class CallValues:
    """The inputs pool call i is given: input set (i mod K) of `input_sets`, with
    each refreshable input (slots; tensors only) replaced by values drawn for call
    i alone (inputs.FreshValues, from the call's seed; none unless `fresh`).
    Broadcast and self-overlapping inputs keep their input set's values (fresh values
    are drawn for a tensor's full shape; pool_layout). ArgPool fills its views from
    the same rule, so the judge, which has no pool, can generate a sampled call's
    inputs again."""

    def __init__(self, spec, input_sets: list, fresh: bool, slots, device):
        self.sets = input_sets
        self.fresh = set()
        if fresh:
            for j in slots:
                layout = pool_layout(input_sets[0][j])
                if layout is not None and not layout[1]:
                    self.fresh.add(j)
        self.gen = inputs_mod.FreshValues(spec, device) if self.fresh else None

    def pristine(self, i: int, seed: int) -> list:
        """Call i's inputs as they were before the call (new tensors); `seed` is
        the one call i was given."""
        out = []
        with harness_only():
            for j, v in enumerate(self.sets[i % len(self.sets)]):
                if j in self.fresh:
                    out.append(self.gen.value(j, seed))
                else:
                    out.append(v.clone() if isinstance(v, torch.Tensor) else v)
        return out

    def fresh_inputs(self) -> list:
        return sorted(self.fresh)


class ArgPool:
    """Arguments for timed calls: every call gets tensors at addresses no earlier
    call saw, and values no earlier call saw.

    Each tensor argument has one flat buffer; call i's view of it starts 256 bytes
    after call (i-1)'s. Before the call (outside the measured span) the view is
    filled: refreshable inputs (Workload.fresh_slots) with values generated for
    call i alone (inputs.FreshValues: the input's own rule, from a generator seeded
    from the seed handed to next() for this call, and the input), the others with
    input set (i mod K). The seed of call i comes from the parent when call i is
    about to start (values.h), so nothing in the worker can draw call i's values
    before then. So a result
    cache keyed on any part of the generated values never hits, and the values of
    call i can be generated again afterwards (pristine) to check its outputs and
    whether it changed its inputs. DPS outputs get shifted views too and are
    poisoned before every call. Memory: one tensor's storage + capacity * 256 bytes.
    """

    SHIFT_BYTES = 256

    def __init__(self, input_sets, reference_sets, out_specs, capacity, dps, device,
                 fresh=None):
        self.sets = input_sets
        self.refs = reference_sets
        self.capacity = int(capacity)
        self.dps = dps
        self.device = torch.device(device)
        self.calls = 0
        spec, slots = fresh if fresh is not None else (None, [])
        self.in_entries = [self._entry(v) for v in input_sets[0]]
        # Broadcast inputs keep their input set's values (fresh values are drawn for a
        # tensor's full shape, which such a view does not have): CallValues decides,
        # from the same layouts (pool_layout), so that the judge, which has no pool,
        # draws the same values.
        self.values = CallValues(spec, input_sets, fresh is not None, slots, self.device)
        self.fresh = self.values.fresh
        self.gen = self.values.gen
        self.out_entries = []
        if dps:
            outs = inputs_mod.allocate_outputs(out_specs, device)
            self.out_entries = [self._entry(t) for t in outs]

    @staticmethod
    def _compact(t, bcast):
        """`t` with its broadcast dimensions (stride 0) cut to size 1."""
        if not bcast:
            return t
        return t[tuple(slice(0, 1) if d in bcast else slice(None) for d in range(t.dim()))]

    def _entry(self, v):
        layout = pool_layout(v)
        if layout is None:
            return None
        t, bcast, c = layout
        span = 1
        for size, stride in zip(c.shape, c.stride()):
            if size == 0:
                span = 0
                break
            span += (size - 1) * stride
        step = max(1, self.SHIFT_BYTES // c.element_size())
        pool = torch.empty(span + (self.capacity - 1) * step, dtype=c.dtype, device=c.device)
        return {"pool": pool, "shape": tuple(c.shape), "stride": tuple(c.stride()),
                "span": span, "step": step, "bcast": bcast,
                "full": tuple(t.shape) if bcast else None}

    def _view(self, e, i):
        return e["pool"].as_strided(e["shape"], e["stride"], i * e["step"])

    @staticmethod
    def _arg(e, view):
        return view.expand(e["full"]) if e["full"] else view

    def next(self, seed: int):
        """(set index, inputs, outputs, call index) for the next call, whose fresh
        values are drawn from `seed`."""
        if self.calls >= self.capacity:
            raise RuntimeError(f"argument pool exhausted after {self.capacity} calls")
        i = self.calls
        k = i % len(self.sets)
        self.calls += 1
        args = []
        with harness_only():
            for j, (e, v) in enumerate(zip(self.in_entries, self.sets[k])):
                if e is None:
                    args.append(v)
                    continue
                view = self._view(e, i)
                if j in self.fresh:
                    self.gen.fill_(view, j, seed)
                else:
                    view.copy_(self._compact(v, e["bcast"]))
                args.append(self._arg(e, view))
            outs = []
            refs = self.refs[k] if self.refs is not None else None
            for j, e in enumerate(self.out_entries):
                view = self._view(e, i)
                inputs_mod.poison_(view, refs[j] if refs is not None else None)
                outs.append(view)
        return k, args, outs, i

    def pristine(self, i: int, seed: int) -> list:
        """Call i's inputs as they were before the call (new tensors)."""
        return self.values.pristine(i, seed)

    def fresh_inputs(self) -> list:
        return sorted(self.fresh)
