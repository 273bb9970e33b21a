#!/usr/bin/env python3
"""T_b's workers with and without shares of the GPU's memory (docs/score.md "Memory
shares"), side by side: for each problem, `solbench baseline PROBLEM --device DEV --json
--no-db` with SOLBENCH_BASELINE_MEMORY_SHARES=0 and =1 in turn, each with empty caches
(solbench's, Inductor's, Triton's), as a first run meets them, while `nvidia-smi` samples
the device's memory every 250 ms (where there is one).

    python3 bench/memory_shares.py --solbench build/src/cli/solbench \\
        .public/sol-execbench/L2/056_* --max-workloads 8

Prints per run the wall, the device's memory peak and, with shares, what each workload
held and waited; per problem the wall with over without shares, and T_b per workload
with over without (median and range): the shares may change how many workers measure at
once, never what they measure. Standard library only.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path


def memory_sampler(out: Path) -> subprocess.Popen | None:
    """nvidia-smi writing the device's used memory (MiB) to `out` every 250 ms; None
    without one (the CPU)."""
    if not shutil.which("nvidia-smi"):
        return None
    f = open(out, "w")
    return subprocess.Popen(["nvidia-smi", "--query-gpu=memory.used",
                             "--format=csv,noheader,nounits", "-lms", "250"],
                            stdout=f, stderr=subprocess.DEVNULL)


def one_run(solbench: str, problem: Path, shares: str, args: argparse.Namespace) -> dict:
    scratch = Path(tempfile.mkdtemp(prefix="memory-shares-"))
    env = dict(os.environ, SOLBENCH_BASELINE_MEMORY_SHARES=shares,
               SOLBENCH_CACHE_DIR=str(scratch / "cache"),
               TORCHINDUCTOR_CACHE_DIR=str(scratch / "inductor"),
               TRITON_CACHE_DIR=str(scratch / "triton"))
    cmd = [solbench, "baseline", str(problem), "--device", args.device, "--json", "--no-db"]
    if args.max_workloads:
        cmd += ["--max-workloads", str(args.max_workloads)]
    sampler = memory_sampler(scratch / "memory.txt")
    start = time.monotonic()
    try:
        out = subprocess.run(cmd, env=env, capture_output=True, text=True,
                             timeout=args.timeout).stdout
    except subprocess.TimeoutExpired:
        out = ""
    wall = time.monotonic() - start
    if sampler:
        sampler.terminate()
        sampler.wait()
    peak = 0
    if (scratch / "memory.txt").exists():
        peak = max((int(l) for l in (scratch / "memory.txt").read_text().split() if l.isdigit()),
                   default=0)
    shutil.rmtree(scratch, ignore_errors=True)
    try:
        doc = json.loads(out)
        workloads = doc["problems"][0]["workloads"]
    except (json.JSONDecodeError, KeyError, IndexError):
        workloads = []
    return {"shares": shares, "wall_s": wall, "peak_mib": peak,
            "t_b": {w["uuid"]: w.get("t_b_ms") for w in workloads},
            "phases": {w["uuid"]: w.get("phases") or {} for w in workloads}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("problems", nargs="+", type=Path)
    ap.add_argument("--solbench", required=True)
    ap.add_argument("--device", default="cuda:0")
    ap.add_argument("--max-workloads", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=280)
    ap.add_argument("--json", action="store_true", help="print every run as JSON too")
    args = ap.parse_args()
    for problem in args.problems:
        runs = [one_run(args.solbench, problem, shares, args) for shares in ("0", "1")]
        for r in runs:
            print(f"{problem.name}: shares {'on' if r['shares'] == '1' else 'off'}: "
                  f"{r['wall_s']:.1f} s, {len(r['t_b'])} workloads, "
                  f"device peak {r['peak_mib']} MiB")
            if r["shares"] == "1":
                for uuid, ph in r["phases"].items():
                    if "memory_shares" in ph:
                        print(f"  {uuid[:8]}: {ph['memory_shares']:.0f} shares, waited "
                              f"{ph.get('memory_share_wait_ms', 0):.1f} ms")
        off, on = runs
        ratios = [on["t_b"][u] / off["t_b"][u] for u in off["t_b"]
                  if off["t_b"][u] and on["t_b"].get(u)]
        line = f"{problem.name}: wall on/off {on['wall_s'] / max(off['wall_s'], 1e-9):.2f}"
        if ratios:
            line += (f"; T_b on/off median {statistics.median(ratios):.3f} "
                     f"({min(ratios):.3f}-{max(ratios):.3f}, {len(ratios)} workloads)")
        print(line)
        if args.json:
            print(json.dumps(runs))


if __name__ == "__main__":
    main()
