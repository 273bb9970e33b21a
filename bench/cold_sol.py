#!/usr/bin/env python3
"""What a cold `solbench sol` of one workload costs (issue #27 item 1): for each
problem of a data set, its first workload bounded by a fresh `solbench sol PROBLEM
-w UUID --json --no-cache` process (a tracer process started for it, no result
cache), N problems at a time. Prints the wall and `trace_seconds` medians and maxima
per variant; with several variants, whether every problem's bound (time_us, work,
bytes, mode) is the same in all of them.

    python3 bench/cold_sol.py --solbench build/src/cli/solbench \\
        --variant now --variant before:SOLBENCH_PYTHON_DIR=/tmp/old/python
    python3 bench/cold_sol.py ... --variant dynamo:SOLBENCH_TRACER_DYNAMO=1

A variant is NAME or NAME:VAR=VALUE[,VAR=VALUE...] (environment for its processes).
Variants run one after the other, each over every problem. Standard library only.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def problems(dataset: Path) -> list[Path]:
    found = sorted(p.parent for p in dataset.glob("*/*/definition.json"))
    return found or sorted(p.parent for p in dataset.glob("*/definition.json"))


def first_uuid(problem: Path) -> str:
    with open(problem / "workload.jsonl") as f:
        for line in f:
            if line.strip():
                return json.loads(line)["uuid"]
    raise ValueError(f"{problem}/workload.jsonl: no workload")


def bound_once(solbench: str, arch: str, problem: Path, env: dict, timeout: float) -> dict:
    t = time.monotonic()
    r = subprocess.run([solbench, "sol", str(problem), "--arch", arch, "--json", "-w",
                        first_uuid(problem), "--no-cache"],
                       capture_output=True, text=True, env=env, timeout=timeout)
    wall = time.monotonic() - t
    try:
        w = json.loads(r.stdout)["problems"][0]["workloads"][0]
    except (ValueError, KeyError, IndexError):
        return {"problem": problem.name, "wall": wall, "error": r.stderr[-300:]}
    return {"problem": problem.name, "wall": wall, "trace_seconds": w.get("trace_seconds"),
            "status": w.get("status"),
            "bound": json.dumps([w.get("time_us"), w.get("work"), w.get("bytes"), w.get("mode")],
                                sort_keys=True)}


def parse_variant(text: str) -> tuple[str, dict]:
    name, _, assigns = text.partition(":")
    env = {}
    for a in filter(None, assigns.split(",")):
        k, _, v = a.partition("=")
        env[k] = v
    return name, env


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--solbench", required=True)
    ap.add_argument("--dataset", type=Path, default=REPO / ".public" / "sol-execbench")
    ap.add_argument("--arch", default="h100")
    ap.add_argument("-j", "--jobs", type=int, default=2, help="problems at a time")
    ap.add_argument("--variant", action="append", default=[], help="NAME[:VAR=VALUE,...]")
    ap.add_argument("--timeout", type=float, default=120)
    ap.add_argument("--json", type=Path, help="write every result here")
    a = ap.parse_args()
    probs = problems(a.dataset)
    if not probs:
        print(f"{a.dataset}: no problems", file=sys.stderr)
        return 2
    results = {}
    for v in a.variant or ["now"]:
        name, extra = parse_variant(v)
        env = dict(os.environ, **extra)
        with ThreadPoolExecutor(a.jobs) as ex:
            rows = list(ex.map(lambda p: bound_once(a.solbench, a.arch, p, env, a.timeout), probs))
        results[name] = rows
        walls = sorted(r["wall"] for r in rows)
        traces = sorted(r["trace_seconds"] for r in rows if r.get("trace_seconds") is not None)
        errors = sum(1 for r in rows if "error" in r)
        print(f"{name}: {len(rows)} problems, wall median {statistics.median(walls):.2f} s, "
              f"max {walls[-1]:.2f} s; trace_seconds median "
              f"{statistics.median(traces) if traces else float('nan'):.3f} s, "
              f"max {traces[-1] if traces else float('nan'):.2f} s; {errors} errors", flush=True)
    names = list(results)
    if len(names) > 1:
        first = {r["problem"]: r.get("bound") for r in results[names[0]]}
        for n in names[1:]:
            differ = [r["problem"] for r in results[n] if r.get("bound") != first.get(r["problem"])]
            print(f"bounds {n} vs {names[0]}: {len(differ)} problems differ"
                  + (f" ({', '.join(differ[:5])})" if differ else ""))
    if a.json:
        a.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
