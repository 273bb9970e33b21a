#!/usr/bin/env python3
"""T_b's workers with and without hand-back (docs/score.md "Handed back"), side by side:
for each problem, `solbench eval PROBLEM --reference --device cuda:0 --json --no-db` with
SOLBENCH_BASELINE_HAND_BACK=0 and =1 in turn (ABBA over --repeat pairs), each run with
empty caches (solbench's, Inductor's, Triton's), as a first run meets them.

    python3 bench/hand_back.py --solbench build/src/cli/solbench \\
        .public/sol-execbench/L1/075_* .public/sol-execbench/L2/002_* --timeout 280

Prints per run the wall, when the solution's workers were done and T_b's phase after
them (timeline_t_ns), T_b's workers (how many, what those ahead kept), and per problem
the median wall of each variant and T_b per workload, hand-back over none (median and
range): hand-back may change when T_b is measured, never what it measures. Standard
library only.
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


def one_run(solbench: str, problem: Path, hand_back: str, timeout: float, device: str,
            extra: list[str]) -> dict:
    scratch = Path(tempfile.mkdtemp(prefix="hand-back-"))
    env = dict(os.environ, SOLBENCH_BASELINE_HAND_BACK=hand_back,
               SOLBENCH_CACHE_DIR=str(scratch / "cache"),
               TORCHINDUCTOR_CACHE_DIR=str(scratch / "inductor"),
               TRITON_CACHE_DIR=str(scratch / "triton"))
    cmd = [solbench, "eval", str(problem), "--reference", "--device", device, "--json",
           "--no-db", *extra]
    start = time.monotonic()
    try:
        out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout).stdout
    except subprocess.TimeoutExpired:
        out = ""
    wall = time.monotonic() - start
    shutil.rmtree(scratch, ignore_errors=True)
    try:
        doc = json.loads(out)
    except json.JSONDecodeError:
        return {"wall": wall, "failed": True}
    t = doc.get("timeline_t_ns") or {}
    s0 = t.get("start", 0)
    done = (t.get("workers_done", s0) - s0) / 1e9
    tb_done = (t.get("baseline_done", s0) - s0) / 1e9
    workers = doc.get("baseline_workers") or []
    return {
        "wall": wall, "failed": False, "workers_done_s": done, "t_b_phase_s": tb_done - done,
        "workers": len(workers), "kept": [w["kept"] for w in workers if "kept" in w],
        "t_b": {r["workload"]["uuid"]: r["evaluation"].get("solbench_t_b_ms")
                for r in doc.get("results", [])},
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("problems", nargs="+", type=Path)
    ap.add_argument("--solbench", required=True)
    ap.add_argument("--repeat", type=int, default=1, help="pairs of runs (ABBA order)")
    ap.add_argument("--timeout", type=float, default=300)
    ap.add_argument("--device", default="cuda:0")
    ap.add_argument("--extra", default="", help="more eval flags, one string (e.g. '--smallest 4')")
    args = ap.parse_args()
    for problem in args.problems:
        runs: dict[str, list] = {"0": [], "1": []}
        for r in range(args.repeat):
            for variant in (("0", "1") if r % 2 == 0 else ("1", "0")):
                res = one_run(args.solbench, problem, variant, args.timeout, args.device,
                              args.extra.split())
                runs[variant].append(res)
                if res["failed"]:
                    print(f"{problem.name} hand_back={variant}: no JSON after {res['wall']:.1f} s")
                    continue
                print(f"{problem.name} hand_back={variant}: wall {res['wall']:.1f} s, solution's "
                      f"workers done {res['workers_done_s']:.1f} s, T_b after them "
                      f"{res['t_b_phase_s']:.1f} s, {res['workers']} T_b workers, kept "
                      f"{res['kept']}")
        ok = {v: [r for r in rs if not r["failed"]] for v, rs in runs.items()}
        if not ok["0"] or not ok["1"]:
            continue
        walls = {v: statistics.median(r["wall"] for r in rs) for v, rs in ok.items()}
        ratios = []
        for uuid, tb0 in ok["0"][0]["t_b"].items():
            tb1 = ok["1"][0]["t_b"].get(uuid)
            if tb0 and tb1:
                ratios.append(tb1 / tb0)
        line = (f"{problem.name}: wall {walls['0']:.1f} s without, {walls['1']:.1f} s with "
                f"({walls['1'] / walls['0']:.2f}x)")
        if ratios:
            line += (f"; T_b with/without median {statistics.median(ratios):.3f} "
                     f"({min(ratios):.3f}-{max(ratios):.3f}, {len(ratios)} workloads)")
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
