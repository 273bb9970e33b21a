#!/usr/bin/env python3
"""How fast the judge's records move a call's outputs (python/solbench_py/record.py):
the solution's worker writes each correctness round's and each sampled timed call's
outputs with their digest (write_call), the judge reads them back onto its device and
checks the digest (read_call). On the GPU host one SHA-256 over the whole file, a
pageable host copy and the write in turn ran at 0.35 GB/s; L1/001's 2.8 GB output
then took 8 s a round each way (docs/run.md, "Several GPUs").

    # this tree's record.py, one 2 GiB bfloat16 output on cuda:0
    python3 bench/record_speed.py --device cuda:0 --gib 2
    # another record.py beside it (a checkout of the code before a change)
    python3 bench/record_speed.py --device cuda:0 --gib 2 --python-dir /old/python

Prints GB/s for write_call and read_call (median of --repeat), the file's folder
(--dir, default $TMPDIR) and the host's SHA-256 speed on one thread for scale.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--gib", type=float, default=1.0, help="size of the one output")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--dir", default=tempfile.gettempdir(), help="where the records go")
    ap.add_argument("--python-dir", type=Path, default=REPO / "python",
                    help="folder holding the solbench_py package to time")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    sys.path.insert(0, str(a.python_dir))
    import torch
    from solbench_py import record  # noqa: E402 - the chosen source

    n = int(a.gib * (1 << 30)) // 2
    out = torch.randn(n, dtype=torch.float32, device=a.device).to(torch.bfloat16)
    ins = [torch.randn(1 << 20, device=a.device)]
    folder = Path(tempfile.mkdtemp(prefix="record-speed-", dir=a.dir))
    writes, reads = [], []
    try:
        for k in range(a.repeat):
            path = str(folder / f"r{k}.rec")
            if a.device != "cpu":
                torch.cuda.synchronize()
            t0 = time.perf_counter()
            sha = record.write_call(path, [out], ins, None)
            t1 = time.perf_counter()
            got = record.read_call(path, sha, a.device)["outputs"][0]
            if a.device != "cpu":
                torch.cuda.synchronize()
            t2 = time.perf_counter()
            if not torch.equal(got.view(torch.int16), out.view(torch.int16)):
                raise SystemExit("read back other bytes")
            del got
            os.remove(path)
            writes.append(t1 - t0)
            reads.append(t2 - t1)
    finally:
        for p in folder.iterdir():
            p.unlink()
        folder.rmdir()
    nbytes = out.numel() * out.element_size()
    block = os.urandom(64 << 20)
    t = time.perf_counter()
    for _ in range(8):
        hashlib.sha256(block).digest()
    sha_gbs = 8 * len(block) / (time.perf_counter() - t) / 1e9
    r = {"source": str(a.python_dir), "device": a.device, "bytes": nbytes, "dir": a.dir,
         "write_gbs": nbytes / statistics.median(writes) / 1e9,
         "read_gbs": nbytes / statistics.median(reads) / 1e9,
         "write_s": [round(x, 3) for x in writes], "read_s": [round(x, 3) for x in reads],
         "sha256_one_thread_gbs": sha_gbs, "threads": len(os.sched_getaffinity(0))}
    if a.json:
        print(json.dumps(r))
    else:
        print(f"{a.python_dir}: {nbytes / 1e9:.2f} GB on {a.device}: write {r['write_gbs']:.2f} GB/s, "
              f"read {r['read_gbs']:.2f} GB/s (median of {a.repeat}; SHA-256 on one thread "
              f"{sha_gbs:.2f} GB/s, {r['threads']} cores, records in {a.dir})")


if __name__ == "__main__":
    main()
