#!/usr/bin/env python3
"""Where a timed call's host time goes (docs/gpu-timing.md, "What a timed call costs the
host"): per timed loop, each step's milliseconds a call, from the phases every trace
carries (`timing_<step>_ms` for T_k, `reference_timing_<step>_ms` for T_ref, the same
names in T_b's phases), over warm-up and timed calls.

    # one binary
    python3 bench/timed_call_overhead.py --solbench build/src/cli/solbench \\
        --device cuda:0 PROBLEM_DIR [PROBLEM_DIR ...] -- --smallest 4
    # two binaries alternating in one run (a change against the tree before it)
    python3 bench/timed_call_overhead.py --solbench new/solbench --before old/solbench \\
        --rounds 2 --device cuda:0 PROBLEM_DIR -- --smallest 4

Each evaluation is `eval PROBLEM --reference --json --no-db` (T_b measured unless
`--no-baseline` is passed after `--`) with a cache folder of its own, so every round
starts cold. Prints, per binary and problem, the median over workloads of each step's
ms a call, and each loop's whole ms a call. Standard library only.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

LOOPS = {"T_k": "timing", "T_ref": "reference_timing"}
# Not steps of the loop: set-up before it, waits for the lock, the gate before T_ref.
NOT_STEPS = ("setup", "lock_wait", "go_wait")


def steps_per_call(phases: dict, prefix: str, calls: int) -> dict:
    """{step: ms a call} of one loop; "loop" is the whole loop's ms a call."""
    if calls <= 0:
        return {}
    out = {}
    for k, v in phases.items():
        if k == prefix + "_ms" or not (k.startswith(prefix + "_") and k.endswith("_ms")
                                       and isinstance(v, (int, float))):
            continue
        step = k[len(prefix) + 1:-3]
        if step in NOT_STEPS:
            continue
        out[step] = v / calls
    if isinstance(phases.get(prefix + "_ms"), (int, float)):
        out["loop"] = phases[prefix + "_ms"] / calls
    return out


def calls_of(timing: dict | None) -> int:
    return int((timing or {}).get("count") or 0) + int((timing or {}).get("warmup_calls") or 0)


def loops_of(trace: dict) -> dict:
    """{loop name: {step: ms a call}} of one trace."""
    ev = trace["evaluation"]
    ph = ev.get("solbench_phases_ms") or {}
    # Each loop's steps are phases `<prefix>_<step>_ms`, its timing `solbench_<prefix>`.
    out = {name: steps_per_call(ph, prefix, calls_of(ev.get(f"solbench_{prefix}")))
           for name, prefix in LOOPS.items()}
    tb = (ev.get("solbench_score") or {}).get("t_b") or {}
    if tb.get("phases"):
        out["T_b"] = steps_per_call(tb["phases"], "timing", calls_of(tb.get("timing")))
    return {k: v for k, v in out.items() if v}


def medians(traces: list) -> dict:
    """{loop: {step: median over workloads of ms a call}}."""
    per: dict = {}
    for t in traces:
        for loop, steps in loops_of(t).items():
            for step, ms in steps.items():
                per.setdefault(loop, {}).setdefault(step, []).append(ms)
    return {loop: {s: statistics.median(v) for s, v in sorted(steps.items())}
            for loop, steps in per.items()}


def evaluate(solbench: str, problem: str, device: str, extra: list) -> list:
    with tempfile.TemporaryDirectory(prefix="solbench-overhead-") as cache:
        env = dict(os.environ, SOLBENCH_CACHE_DIR=cache,
                   TORCHINDUCTOR_CACHE_DIR=os.path.join(cache, "ind"),
                   TRITON_CACHE_DIR=os.path.join(cache, "tri"))
        p = subprocess.run([solbench, "eval", problem, "--reference", "--device", device,
                            "--no-db", "--json", *extra],
                           env=env, capture_output=True, text=True)
    try:
        return json.loads(p.stdout)["results"]
    except (ValueError, KeyError):
        print(f"{solbench} eval {problem}: rc {p.returncode}: {p.stderr[-500:]}", file=sys.stderr)
        return []


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--solbench", required=True)
    ap.add_argument("--before", help="a second binary, run alternately with --solbench")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--json", action="store_true", help="print the medians as JSON")
    ap.add_argument("problems", nargs="+")
    argv = sys.argv[1:]
    cut = argv.index("--") if "--" in argv else len(argv)
    args, extra = ap.parse_args(argv[:cut]), argv[cut + 1:]  # after `--`: eval's flags
    binaries = [("after", args.solbench)] + ([("before", args.before)] if args.before else [])
    results = []
    for r in range(args.rounds):
        for name, binary in (binaries if r % 2 == 0 else binaries[::-1]):
            for problem in args.problems:
                traces = evaluate(binary, problem, args.device, extra)
                results.append({"binary": name, "round": r + 1, "problem": os.path.basename(problem),
                                "workloads": len(traces), "medians": medians(traces)})
    if args.json:
        json.dump(results, sys.stdout, indent=1)
        print()
        return 0
    for res in results:
        print(f"{res['binary']} round {res['round']} {res['problem']} ({res['workloads']} workloads)")
        for loop, steps in res["medians"].items():
            row = " ".join(f"{s}={ms:.3f}" for s, ms in steps.items() if s != "loop" and ms >= 0.01)
            print(f"  {loop:5s} loop {steps.get('loop', 0):.3f} ms a call: {row}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
