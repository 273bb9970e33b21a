#!/usr/bin/env python3
"""Speed figures of `solbench sol --json` runs, as docs/sol.md reports them.

Usage: sol_timing.py COLD_JSON [CACHED_JSON] [--wall-cold S] [--wall-cached S]

COLD_JSON is the output of a run with an empty SOLBENCH_CACHE_DIR, CACHED_JSON
the output of the same command run again. --wall-* give the process wall times
(e.g. from /usr/bin/time); without them the runs' own summary.seconds are used.
Prints a markdown table: wall times, traces, bounded/untraceable/error counts,
trace modes, the sum of trace_seconds (the tracers' own time) and of
trace_wall_seconds (that plus tracer process starts), and the slowest problems
by the sum of their workloads' trace_seconds (the "no problem over 30 s"
target) and the slowest workload. Standard library only.
"""
import json
import sys
from collections import Counter


def load(path):
    with open(path) as f:
        return json.load(f)


def figures(doc):
    s = doc["summary"]
    modes = Counter(w.get("mode") or w.get("status") for p in doc["problems"] for w in p["workloads"])
    per_problem = []
    slowest_wl = (0.0, "", "")
    total_own = total_wall = 0.0
    for p in doc["problems"]:
        name = "/".join(p.get("dir", p["name"]).rstrip("/").split("/")[-2:])
        own = sum(w.get("trace_seconds", 0.0) for w in p["workloads"])
        wall = sum(w.get("trace_wall_seconds", w.get("trace_seconds", 0.0)) for w in p["workloads"])
        total_own += own
        total_wall += wall
        per_problem.append((own, wall, name))
        for w in p["workloads"]:
            if w.get("trace_seconds", 0.0) > slowest_wl[0]:
                slowest_wl = (w["trace_seconds"], name, w.get("uuid", "")[:8])
    per_problem.sort(reverse=True)
    return s, modes, total_own, total_wall, per_problem, slowest_wl


def main():
    args, opts = [], {}
    it = iter(sys.argv[1:])
    for a in it:
        if a.startswith("--"):
            opts[a] = float(next(it))
        else:
            args.append(a)
    if not args or len(args) > 2:
        sys.exit(__doc__)
    cold = load(args[0])
    cached = load(args[1]) if len(args) > 1 else None
    s, modes, own, wall, per_problem, slowest = figures(cold)
    rows = [
        ("cold, wall", f"{opts.get('--wall-cold', s['seconds']):.1f} s (-j {s.get('jobs')}, "
                       f"--timeout {s.get('timeout_s')})"),
    ]
    if cached is not None:
        cs = cached["summary"]
        rows.append(("cached (second run), wall",
                     f"{opts.get('--wall-cached', cs['seconds']):.2f} s ({cs['cached']} of "
                     f"{cs['bounded'] + cs['untraceable'] + cs['errors']} from the cache)"))
    rows += [
        ("problems / workloads", f"{s['problems']} / {s['bounded'] + s['untraceable'] + s['errors']}"),
        ("bounded / untraceable / errors (timed out)",
         f"{s['bounded']} / {s['untraceable']} / {s['errors']} ({s['timed_out']})"),
        ("workloads with uncosted operators", str(s["with_uncosted_ops"])),
        ("traces run", str(s["traces"])),
        ("modes", ", ".join(f"{k} {v}" for k, v in modes.most_common())),
        ("sum of trace_seconds / trace_wall_seconds", f"{own:.1f} s / {wall:.1f} s"),
        ("slowest problem (sum of its trace_seconds)", f"{per_problem[0][0]:.1f} s ({per_problem[0][2]})"
         if per_problem else "-"),
        ("slowest workload", f"{slowest[0]:.2f} s ({slowest[1]} {slowest[2]})"),
    ]
    print("| | |\n|---|---|")
    for k, v in rows:
        print(f"| {k} | {v} |")
    print("\nslowest problems (sum of trace_seconds, of trace_wall_seconds):")
    for o, w, name in per_problem[:10]:
        print(f"  {o:8.2f} {w:8.2f}  {name}")
    over = [n for o, _, n in per_problem if o > 30]
    print(f"\nproblems over 30 s of trace_seconds: {len(over)}{': ' + ', '.join(over) if over else ''}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
