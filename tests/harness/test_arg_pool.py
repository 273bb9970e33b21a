#!/usr/bin/env python3
"""The timing argument pool (python/solbench_py/runtime.py ArgPool) with a broadcast
input: a custom input generator may return an expanded view (stride 0), which the pool
must hand to every call with that layout and its values, at a new address each call
(L1/075 of the public set failed with "more than one element of the written-to tensor
refers to a single memory location" before). Exit status 0 when every case holds."""
import sys

import torch

from solbench_py import runtime


def main() -> int:
    base = torch.arange(6, dtype=torch.float32).reshape(1, 6)
    wide = base.expand(4, 6)              # stride (0, 1): one row seen four times
    plain = torch.randn(4, 6)
    sets = [[wide, plain, 3], [wide.clone().mul_(2)[0:1].expand(4, 6), plain + 1, 3]]
    pool = runtime.ArgPool(sets, [[], []], [], capacity=5, dps=False, device="cpu")
    seen = set()
    fails = []
    for call in range(4):
        k, args, _outs, _i = pool.next(1000 + call)
        a, b, n = args
        if a.stride() != (0, 1) or tuple(a.shape) != (4, 6):
            fails.append(f"call {call}: broadcast layout lost: shape {tuple(a.shape)} stride {a.stride()}")
        if not torch.equal(a, sets[k][0]) or not torch.equal(b, sets[k][1]) or n != 3:
            fails.append(f"call {call}: values differ from input set {k}")
        seen.add(a.data_ptr())
    if len(seen) != 4:
        fails.append(f"broadcast input reused an address: {len(seen)} distinct of 4 calls")
    for f in fails:
        print("FAIL", f)
    print("ok" if not fails else f"{len(fails)} failure(s)")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
