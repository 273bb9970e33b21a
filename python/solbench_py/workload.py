"""One workload in the worker (src/harness/worker/worker_session.h): its inputs,
the reference's outputs, the checks of the solution's outputs and inputs, and
the arguments of its timed calls (pool.py); with the outputs a call returns
(normalize_outputs) and the copies the checks compare (clone_all, same_bits).
"""
from __future__ import annotations

from typing import Any

import torch

from . import correctness, inputs as inputs_mod, record
from .pool import ArgPool, CallValues
from .record import harness_only


# ---------------------------------------------------------------- outputs

def normalize_outputs(result: Any, names: list, dtypes: list, device) -> list:
    """A return-style call's result as a list of tensors in output order.

    Accepts one tensor, a tuple/list in output order, a dict by name, or a
    Python scalar for a single output (as SOL-ExecBench does).
    """
    device = torch.device(device)

    def as_tensor(i, v):
        if isinstance(v, torch.Tensor):
            return v
        if isinstance(v, (bool, int, float)):
            return torch.tensor(v, dtype=inputs_mod.torch_dtype(dtypes[i]), device=device)
        raise TypeError(f"output {names[i]}: got {type(v).__name__}, expected a tensor")

    if isinstance(result, dict):
        missing = [n for n in names if n not in result]
        if missing:
            raise TypeError(f"returned dict lacks outputs {missing}")
        return [as_tensor(i, result[n]) for i, n in enumerate(names)]
    if isinstance(result, (torch.Tensor, bool, int, float)):
        if len(names) != 1:
            raise TypeError(f"returned one value but {len(names)} outputs are defined")
        return [as_tensor(0, result)]
    if isinstance(result, (tuple, list)):
        if len(result) != len(names):
            raise TypeError(f"returned {len(result)} values but {len(names)} outputs are defined")
        return [as_tensor(i, v) for i, v in enumerate(result)]
    raise TypeError(f"returned {type(result).__name__}; expected a tensor, a tuple of "
                    "tensors or a dict of output name -> tensor")


def lazy_outputs(outs: list) -> str:
    """Names the outputs that are not plain tensors (subclasses can defer or fake work)."""
    bad = [f"{type(t).__module__}.{type(t).__name__}" for t in outs if type(t) is not torch.Tensor]
    return ", ".join(bad)


# ---------------------------------------------------------------- tensor copies

def same_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Bit-for-bit equality (NaNs with the same payload are equal, unlike ==)."""
    if a.shape != b.shape or a.dtype != b.dtype or a.device != b.device:
        return False
    if a.numel() == 0:
        return True
    return torch.equal(a.contiguous().reshape(-1).view(torch.uint8),
                       b.contiguous().reshape(-1).view(torch.uint8))


def clone_all(values: list) -> list:
    with harness_only():
        return [v.clone() if isinstance(v, torch.Tensor) else v for v in values]


# ---------------------------------------------------------------- one workload

class Workload:
    """Inputs, reference and checks of one resolved workload.

    `spec`: {uuid, axes: {name: value}, inputs: [{name, dtype, shape, description,
    source}], outputs: [{name, dtype, shape}], tolerance: {...}, op_type,
    dataset_root}.
    """

    def __init__(self, spec: dict, device: str, reference_run, custom_fn=None):
        self.spec = spec
        self.device = torch.device(device)
        self.reference_run = reference_run
        self.custom_fn = custom_fn
        self.out_names = [o["name"] for o in spec["outputs"]]
        self.out_dtypes = [o["dtype"] for o in spec["outputs"]]
        self.tolerance = {**correctness.default_tolerance(), **(spec.get("tolerance") or {})}

    def make_inputs(self, round_index: int, seed: int) -> list:
        """Round `round_index`'s inputs (correctness rounds, then the timing input
        sets), drawn from `seed`, the round's seed (the parent's, handed out now)."""
        origins: list = []
        with harness_only():
            values = inputs_mod.generate_inputs(self.spec, int(seed), round_index, self.device,
                                                self.custom_fn, origins)
        self.input_origins = origins
        return values

    def fresh_slots(self) -> list:
        """Indices of the inputs that get fresh values in every timed call
        (inputs.refreshable); known once make_inputs has run."""
        origins = getattr(self, "input_origins", None) or []
        return [j for j, (inp, o) in enumerate(zip(self.spec["inputs"], origins))
                if inputs_mod.refreshable(inp, o)]

    def input_names(self, slots: list) -> list:
        return [self.spec["inputs"][j]["name"] for j in slots]

    def run_reference(self, args: list) -> list:
        # On copies: a reference that writes into its inputs must not change what
        # the solution sees. Which inputs it writes is remembered: the solution may
        # write those (a cache updated in place), and no others.
        copies = clone_all(args)
        out = self.reference_run(*copies)
        self.reference_writes = {i for i, (a, c) in enumerate(zip(args, copies))
                                 if isinstance(a, torch.Tensor) and not same_bits(a, c)}
        outs = normalize_outputs(out, self.out_names, self.out_dtypes, self.device)
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        return [t.detach().clone() if not t.is_contiguous() else t.detach() for t in outs]

    def snapshot(self, args: list) -> list:
        """Copies of the tensor inputs, to compare with after the solution's call."""
        return clone_all(args)

    def changed_inputs(self, args: list, before: list) -> list:
        """Names of the inputs whose bits differ from `before`, among those the
        reference leaves alone."""
        names = [i["name"] for i in self.spec["inputs"]]
        writes = getattr(self, "reference_writes", set())
        return [names[i] if i < len(names) else f"#{i}"
                for i, (a, b) in enumerate(zip(args, before))
                if i not in writes and isinstance(a, torch.Tensor) and not same_bits(a, b)]

    def judge_inputs(self, args: list, after: list, before=None) -> tuple:
        """The judge's look at one recorded call's inputs: `args` are the inputs
        generated again here, `after` and `before` the solution's worker's digests
        (record.digest) of the same inputs as the call left them and, for
        correctness rounds, as it was given them. Returns (names whose values the
        solution's worker did not start from: its inputs were not these, names the
        call changed, among those the reference leaves alone)."""
        names = [i["name"] for i in self.spec["inputs"]]
        mine = record.digests(args)
        for what, got in (("inputs_after", after), ("inputs_before", before)):
            if got is not None and (not isinstance(got, list) or len(got) != len(mine)):
                raise record.RecordError(f"{what}: {len(got) if isinstance(got, list) else got!r} "
                                         f"digests for {len(mine)} inputs")
        writes = getattr(self, "reference_writes", set())

        def name(i):
            return names[i] if i < len(names) else f"#{i}"
        unreproduced = [name(i) for i, m in enumerate(mine)
                        if before is not None and m is not None and before[i] != m]
        changed = [name(i) for i, m in enumerate(mine)
                   if m is not None and i not in writes and after[i] != m]
        return unreproduced, changed

    def call_values(self, input_sets: list) -> CallValues:
        """The values pool call i was given (CallValues.pristine, with the call's
        seed), as an ArgPool with the same sets fills them; needs no pool."""
        return CallValues(self.spec, input_sets, True, self.fresh_slots(), self.device)

    def alloc_outputs(self, refs=None) -> list:
        with harness_only():
            outs = inputs_mod.allocate_outputs(self.spec["outputs"], self.device)
            for i, t in enumerate(outs):
                inputs_mod.poison_(t, refs[i] if refs is not None else None)
        return outs

    def repoison(self, outs: list, refs=None) -> None:
        for i, t in enumerate(outs):
            inputs_mod.poison_(t, refs[i] if refs is not None else None)

    def collect(self, result, dps_outputs: list, dps: bool) -> list:
        if dps:
            return dps_outputs
        return normalize_outputs(result, self.out_names, self.out_dtypes, self.device)

    def check(self, outs: list, refs: list, check_meta: bool = True) -> dict:
        return correctness.check_outputs(outs, refs, self.out_names, self.tolerance, check_meta)

    def arg_pool(self, input_sets: list, reference_sets: list, capacity: int, dps: bool,
                 fresh: bool = True):
        """Timed-call arguments. With `fresh`, the refreshable inputs (fresh_slots)
        get values of their own in every call, drawn from the seed each call is
        given (ArgPool.next); the others rotate through `input_sets`."""
        return ArgPool(input_sets, reference_sets, self.spec["outputs"], capacity, dps,
                       self.device, (self.spec, self.fresh_slots()) if fresh else None)
