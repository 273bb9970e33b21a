#!/usr/bin/env python3
"""The whole public set through `solbench run` on one GPU, in parts resumed from one
store (issue #27 item 4), and what each problem cost.

    # one part: run until the time limit, then SIGINT (finished workloads are kept)
    python3 bench/public_set.py part --solbench build/src/cli/solbench \\
        --dataset .public/sol-execbench --db STORE --seconds 540 --out part1.json
    # again, as often as needed (each resumes from STORE), then the table
    python3 bench/public_set.py table part1.json part2.json ... --db STORE

`part` runs `solbench run DATASET --reference --device cuda:0 --db STORE --json` (extra
`run` flags after `--`) and stops it with SIGINT after --seconds: `run` then prints its
summary with what it had finished, and a later part resumes from the store. `table`
reads the parts' summaries and the store: per problem the seconds of its finished
evaluations summed over the parts that ran them (a skip that is not stored is evaluated
again by the next part, and costs again; an evaluation cut by a part's end counts in
"lost"), those seconds per workload evaluated, its workloads and statuses, the
solution's worker's own time (the traces' `total_ms` phases, summed) and the rest (the
worker's start, T_b's workers after the solution's, T_SOL beside them), then the totals
per category and the run's. `part` also samples how busy the host's CPUs and the GPU
were (every 5 s; `PART.json.usage.json`). Standard library only.
"""
from __future__ import annotations

import argparse
import collections
import json
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path


def cpu_times() -> tuple[int, int]:
    """(busy, total) jiffies of all CPUs so far, from /proc/stat; (0, 0) without it."""
    try:
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
    except (OSError, ValueError):
        return 0, 0
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle and iowait
    return sum(fields) - idle, sum(fields)


class Usage:
    """The host's CPUs and the GPU, sampled every `every` seconds while a part runs:
    how busy they were (session 52 found the whole-set run leaving both mostly idle).
    The GPU's through `nvidia-smi` where there is one."""

    def __init__(self, every: float = 5.0):
        self.every = every
        self.cpu: list[float] = []
        self.gpu: list[float] = []
        self.stop = threading.Event()
        self.smi = None
        if shutil.which("nvidia-smi"):
            self.smi = subprocess.Popen(
                ["nvidia-smi", "--query-gpu=utilization.gpu", "--format=csv,noheader,nounits",
                 "-l", str(max(1, int(every)))], stdout=subprocess.PIPE, text=True,
                stderr=subprocess.DEVNULL)
            threading.Thread(target=self._read_gpu, daemon=True).start()
        self.thread = threading.Thread(target=self._sample_cpu, daemon=True)
        self.thread.start()

    def _sample_cpu(self) -> None:
        busy0, total0 = cpu_times()
        while not self.stop.wait(self.every):
            busy, total = cpu_times()
            if total > total0:
                self.cpu.append(100.0 * (busy - busy0) / (total - total0))
            busy0, total0 = busy, total

    def _read_gpu(self) -> None:
        for line in self.smi.stdout:
            if line.strip().isdigit():
                self.gpu.append(float(line.strip()))

    def finish(self) -> dict:
        self.stop.set()
        self.thread.join()
        if self.smi:
            self.smi.terminate()
            self.smi.wait()
        mean = lambda v: round(sum(v) / len(v), 1) if v else None  # noqa: E731
        return {"every_s": self.every, "cpu_busy_percent": mean(self.cpu),
                "cpu_samples": len(self.cpu), "gpu_busy_percent": mean(self.gpu),
                "gpu_samples": len(self.gpu),
                "gpu_idle_samples": sum(1 for g in self.gpu if g == 0)}


def part(args: argparse.Namespace) -> int:
    cmd = [args.solbench, "run", args.dataset, "--reference", "--device", args.device,
           "--db", args.db, "--json", *args.run_args]
    start = time.monotonic()
    usage = Usage()
    with open(args.out, "w") as out, open(args.out + ".err", "w") as err:
        p = subprocess.Popen(cmd, stdout=out, stderr=err)
        try:
            p.wait(timeout=args.seconds)
        except subprocess.TimeoutExpired:
            p.send_signal(signal.SIGINT)  # run keeps what its evaluations finished
            try:
                p.wait(timeout=60)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
    used = usage.finish()
    Path(args.out + ".usage.json").write_text(json.dumps(used) + "\n")
    gpu = (f"GPU {used['gpu_busy_percent']} % busy ({used['gpu_idle_samples']} of "
           f"{used['gpu_samples']} samples idle)" if used["gpu_samples"] else "no GPU sampled")
    print(f"part: rc {p.returncode}, {time.monotonic() - start:.1f} s, {args.out}; CPUs "
          f"{used['cpu_busy_percent']} % busy, {gpu}")
    return 0


def worker_seconds(db: str | None) -> dict[str, float]:
    """definition -> the solution's worker's own seconds over its traces (total_ms)."""
    out: dict[str, float] = collections.defaultdict(float)
    if not db:
        return out
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    for definition, text in con.execute("SELECT definition, trace_json FROM traces"):
        phases = (json.loads(text).get("evaluation") or {}).get("solbench_phases_ms") or {}
        out[definition] += float(phases.get("total_ms", 0.0)) / 1000
    return out


def stored_baselines(db: str | None, uuids: list[str]) -> int:
    """How many of these workloads have a T_b in the store (any environment): what an
    evaluation cut by a part's end measured before the cut is kept there."""
    if not db or not uuids:
        return 0
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    marks = ",".join("?" * len(uuids))
    return con.execute(f"SELECT COUNT(DISTINCT workload_uuid) FROM baselines "
                       f"WHERE workload_uuid IN ({marks})", uuids).fetchone()[0]


def table(args: argparse.Namespace) -> int:
    rows: dict[str, dict] = {}
    lost = 0.0
    cut: list[str] = []
    for i, path in enumerate(args.parts, 1):
        doc = json.load(open(path))
        print(f"part {i}: {doc['seconds']:.1f} s, interrupted {doc['interrupted']}, "
              f"statuses so far {doc['total']['statuses']}, skipped {doc['total']['skipped']}, "
              f"not run {doc['total']['not_run']}")
        for pr in doc["problems"]:
            for s in pr["solutions"]:
                key = f"{pr['category']}/{pr['problem']}"
                fresh = s["evaluated"]  # results evaluated by this part (resumed ones not counted)
                if s["not_run"] and s["seconds"] > 0:
                    lost += s["seconds"]  # cut by this part's end: done again later
                    uuids = [w["uuid"] for w in s.get("workload_results", []) if "uuid" in w]
                    cut.append(f"{key} (part {i}, {s['seconds']:.1f} s; T_b in the store now "
                               f"for {stored_baselines(args.db, uuids)} of {len(uuids)})")
                    continue
                if fresh <= 0:
                    continue  # taken from the store
                # Every finished evaluation of the problem counts, in whichever part:
                # a workload evaluated again (a skip that is not stored) costs again.
                r = rows.setdefault(key, {"definition": pr["definition"], "seconds": 0.0,
                                          "evaluated": 0, "parts": []})
                r.update(workloads=s["workloads"], statuses=s["statuses"], skipped=s["skipped"])
                r["seconds"] += s["seconds"]
                r["evaluated"] += fresh
                r["parts"].append(str(i))
    worker = worker_seconds(args.db)
    print("\n| problem | workloads | result | evaluation s (parts) | s a workload evaluated "
          "| solution's worker s | rest s |")
    print("|---|---|---|---|---|---|---|")
    cats: dict[str, list[float]] = collections.defaultdict(lambda: [0, 0, 0.0, 0.0])
    for key, r in rows.items():
        result = ", ".join(f"{n} {st}" for st, n in r["statuses"].items())
        if r["skipped"]:
            result += (", " if result else "") + f"{r['skipped']} skipped"
        w = worker.get(r["definition"], 0.0)
        print(f"| {key} | {r['workloads']} | {result} | {r['seconds']:.1f} "
              f"({', '.join(r['parts'])}) | {r['seconds'] / max(1, r['evaluated']):.2f} | "
              f"{w:.1f} | {max(0.0, r['seconds'] - w):.1f} |")
        c = cats[key.split("/")[0]]
        c[0] += 1
        c[1] += r["workloads"]
        c[2] += r["seconds"]
        c[3] += w
    print("\n| category | problems | workloads | evaluation s | solution's worker s |")
    print("|---|---|---|---|---|")
    for cat, (n, wl, s, w) in cats.items():
        print(f"| {cat} | {n} | {wl} | {s:.1f} | {w:.1f} |")
    total = sum(c[2] for c in cats.values())
    print(f"\nfinished evaluations {total:.1f} s; cut by a part's end and done again: {lost:.1f} s")
    for line in cut:
        print(f"  cut: {line}")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="what", required=True)
    p = sub.add_parser("part", help="run one part until --seconds, then stop it")
    p.add_argument("--solbench", required=True)
    p.add_argument("--dataset", required=True)
    p.add_argument("--db", required=True)
    p.add_argument("--device", default="cuda:0")
    p.add_argument("--seconds", type=float, required=True)
    p.add_argument("--out", required=True)
    p.add_argument("run_args", nargs="*", help="more `solbench run` flags (after --)")
    t = sub.add_parser("table", help="per-problem costs from the parts and the store")
    t.add_argument("parts", nargs="+")
    t.add_argument("--db")
    args = ap.parse_args()
    return part(args) if args.what == "part" else table(args)


if __name__ == "__main__":
    sys.exit(main())
