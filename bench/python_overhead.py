#!/usr/bin/env python3
"""What one `solbench.eval` costs an agent: wall time from a warm Python process, and
where it goes (docs/python.md, "Overhead").

    # CPU (defaults: the bundled C++ RMSNorm solution, one workload)
    PYTHONPATH=build/src/pyapi python3 bench/python_overhead.py
    # GPU: a cached CUDA solution on the device
    PYTHONPATH=build/src/pyapi python3 bench/python_overhead.py --device cuda:0 \\
        --solution problems/001_rmsnorm_llama3_8b_h4096/solutions/cuda_rmsnorm.json

The first call (not counted) compiles the solution, traces T_SOL and measures the baseline
T_b; the counted calls then find all three cached, as an agent's repeated calls do.
The breakdown reads the document's own timestamps (the runner's and the worker's, on
CLOCK_MONOTONIC like time.monotonic_ns here) and phase timers; `--json` prints it all.
"""
from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import solbench

REPO = Path(__file__).resolve().parents[1]
PROBLEM = REPO / "problems" / "001_rmsnorm_llama3_8b_h4096"


def breakdown(doc: dict, t0: int, t1: int) -> dict:
    """Milliseconds per stage of one eval call that started at t0 and returned at t1 (ns)."""
    ms = lambda a, b: (b - a) / 1e6  # noqa: E731
    w = doc["workers"][0]
    phases = w.get("phases_ms", {})
    [trace] = doc["results"]
    ev = trace["evaluation"]
    wl = w["workloads"][0]
    p = ev.get("solbench_phases_ms", {})
    timing = p.get("timing_setup_ms", 0) + p.get("timing_ms", 0) + p.get("verify_ms", 0)
    stages = {
        "total": ms(t0, t1),
        # 1: the worker was a spare the zygote made ahead (its sandbox and runtime ready)
        "solution_worker_spare": 1.0 if w.get("launch") == "spare" else 0.0,
        # executable start, problem load, build cache lookup, T_SOL and T_b look-ups, store open
        "before_worker": ms(t0, w["spawn_t_ns"]),
        "build_cache_lookup": (doc.get("build") or {}).get("seconds", 0) * 1e3,
        "worker_start": ms(w["spawn_t_ns"], w["hello_t_ns"]),
        "sandbox": ms(w["hello_t_ns"], w.get("sandboxed_t_ns", w["hello_t_ns"])),
        "python_torch_init": phases.get("python_init_ms", 0),
        "reference_load": phases.get("reference_load_ms", 0),
        "solution_load": phases.get("solution_load_ms", 0),
        "workload_total": ms(wl["begin_t_ns"], wl["result_t_ns"]),
        "inputs": p.get("inputs_ms", 0),
        "correctness": p.get("correctness_ms", 0),
        "timing_solution": timing,
        "timing_reference": p.get("reference_timing_ms", 0),
        # worker exit, scoring, the store's transaction, the JSON document, process exit
        "after_worker": ms(wl["result_t_ns"], t1),
    }
    # The parent's own stages (eval's "timeline_t_ns") and the reference worker's.
    tl = doc.get("timeline_t_ns") or {}
    if tl:
        stages["parent:exec_to_main"] = ms(t0, tl["start"])
        stages["parent:inputs"] = ms(tl["start"], tl["inputs_loaded"])
        # On the CPU T_SOL is found before the build; on a GPU its model beside the build
        # and its bounds at the first result (then this is not on the way to the worker).
        key = "parent:t_sol_lookup" if tl["t_sol"] <= tl["store_ready"] else "parent:t_sol_by_first_result"
        stages[key] = ms(tl["zygote_asked"], tl["t_sol"])
        stages["parent:store_open"] = ms(min(tl["t_sol"], tl["store_ready"]), tl["store_ready"])
        stages["parent:build_lookup"] = ms(tl["store_ready"], tl["built"])
        stages["parent:plan"] = ms(tl["built"], tl.get("plan_ready", tl["built"]))
        stages["parent:first_spawn"] = ms(tl.get("plan_ready", tl["built"]), w["spawn_t_ns"])
    refs = doc.get("reference_workers") or []
    if refs and refs[0].get("workloads"):
        r = refs[0]
        rw = r["workloads"][0]
        stages["judge:started_early"] = 1.0 if r.get("started_early") else 0.0
        stages["judge:spare"] = 1.0 if r.get("launch") == "spare" else 0.0
        stages["judge:ready_after_solution_result"] = ms(wl["result_t_ns"], r.get("ready_t_ns", 0))
        stages["judge:begin_after_solution_result"] = ms(wl["result_t_ns"], rw["begin_t_ns"])
        stages["judge:workload"] = ms(rw["begin_t_ns"], rw["result_t_ns"])
        if rw.get("judged_t_ns"):  # a streamed Judge: when its judging began, then "go"
            stages["judge:judging_after_solution_result"] = ms(wl["result_t_ns"], rw["judged_t_ns"])
            stages["judge:begin_after_judging"] = ms(rw["judged_t_ns"], rw["begin_t_ns"])
        if tl:
            stages["parent:after_judge"] = ms(rw["result_t_ns"], tl["workers_done"])
        # That tail in parts: the Judge's "done", its caches taken back, the parent's rest.
        if "done_t_ns" in r and "end_t_ns" in r:
            stages["judge:result_to_done"] = ms(rw["result_t_ns"], r["done_t_ns"])
            stages["judge:take_back"] = float(r.get("take_back_ms", 0))
            if tl:
                stages["parent:judge_end_to_workers_done"] = ms(r["end_t_ns"], tl["workers_done"])
        if "take_back_ms" in w:
            stages["solution:take_back"] = float(w["take_back_ms"])
        # The solution's worker after its result: until it said "done", then its exit
        # (CUDA's teardown), which the judge awaits before it times T_ref.
        if "done_t_ns" in w and "exit_t_ns" in w:
            stages["solution:result_to_done"] = ms(wl["result_t_ns"], w["done_t_ns"])
            stages["solution:done_to_exit"] = ms(w["done_t_ns"], w["exit_t_ns"])
            stages["judge:begin_after_solution_exit"] = ms(w["exit_t_ns"], rw["begin_t_ns"])
    if tl:
        stages["parent:baseline_lookup"] = ms(tl["workers_done"], tl["baseline_done"])
        stages["parent:record"] = ms(tl["baseline_done"], tl["recorded"])
        stages["parent:document_and_exit"] = ms(tl["recorded"], t1)
    # What the spare did before this call claimed it (zygote.cc): its warm-up's
    # milliseconds, and whether it paid Triton's first launch (1) or not (0).
    sb = doc.get("sandbox") or {}
    if "spare_warm_ms" in sb:
        stages["spare:warm_ms"] = float(sb["spare_warm_ms"])
        stages["spare:triton_warm"] = 1.0 if sb.get("spare_triton_warm") else 0.0
    # Phases this script does not name (e.g. a GPU worker's own), as reported.
    known = {"python_init_ms", "reference_load_ms", "solution_load_ms", "inputs_ms",
             "correctness_ms", "timing_setup_ms", "timing_ms", "verify_ms",
             "reference_timing_ms", "total_ms"}
    for source, table in (("worker", phases), ("workload", p)):
        for k, v in table.items():
            if k not in known and isinstance(v, (int, float)):
                stages[f"{source}:{k.removesuffix('_ms')}"] = v
    return stages


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--problem", type=Path, default=PROBLEM)
    ap.add_argument("--solution", type=Path,
                    default=PROBLEM / "solutions" / "cpp_rowwise" / "solution.json")
    ap.add_argument("--workload", default="71630508", help="uuid or prefix (default: batch 1)")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--arch", default=None, help="T_SOL model (default: h100_sxm on the CPU, "
                    "the device's own on a GPU)")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--time-budget-ms", type=float, default=None,
                    help="the eval's timing budget (default: the CLI's, 500 ms per candidate)")
    ap.add_argument("--db", type=Path, default=None, help="store (default: a temporary one)")
    ap.add_argument("--json", action="store_true", help="print every call's breakdown as JSON")
    ap.add_argument("--spares", choices=("on", "off"), default="on",
                    help="spare workers made ahead by the zygote (eval's spare_workers)")
    ap.add_argument("--pause-s", type=float, default=0.0,
                    help="seconds between counted calls (an agent's think time: a spare "
                    "made after one call is ready for the next)")
    args = ap.parse_args()
    arch = args.arch or ("h100_sxm" if args.device == "cpu" else None)
    db = args.db or Path(tempfile.mkdtemp(prefix="solbench-overhead-")) / "overhead.db"
    kw = dict(workloads=[args.workload], device=args.device, arch=arch, db=db,
              time_budget_ms=args.time_budget_ms, spare_workers=args.spares == "on")

    def call():
        t0 = time.monotonic_ns()
        doc = solbench.eval(args.problem, args.solution, **kw)
        t1 = time.monotonic_ns()
        return doc, t0, t1

    exe_ms = []
    for _ in range(5):  # the executable alone: exec, dynamic linking, CLI setup, exit
        t0 = time.monotonic_ns()
        solbench.command(["hw", "list", "--json"])
        exe_ms.append((time.monotonic_ns() - t0) / 1e6)

    doc, t0, t1 = call()
    status = doc["results"][0]["evaluation"]["status"]
    built = doc.get("build") or {}  # null for a Python solution: nothing is compiled
    print(f"warm-up: {(t1 - t0) / 1e9:.2f} s, {status}, build "
          f"{'none (Python)' if not built else 'cache hit' if built['cache_hit'] else 'compiled'}, "
          f"T_b {'cached' if doc['score']['baselines']['cached'] else 'measured'}")
    runs = []
    for _ in range(args.repeat):
        time.sleep(args.pause_s)
        doc, t0, t1 = call()
        assert not doc.get("build") or doc["build"]["cache_hit"], \
            "the build should be cached after the warm-up"
        runs.append(breakdown(doc, t0, t1))
    if args.json:
        last = {"phases_ms": doc["results"][0]["evaluation"].get("solbench_phases_ms"),
                "workers": doc.get("workers"), "reference_workers": doc.get("reference_workers"),
                "timeline_t_ns": doc.get("timeline_t_ns")}
        print(json.dumps({"executable_alone_ms": exe_ms, "calls": runs, "last_call": last},
                         indent=2))
    env = doc.get("environment") or {}
    print(f"{args.repeat} calls of solbench.eval({args.problem.name}, {args.solution.name}, "
          f"workload {args.workload}, device {args.device}) on {env.get('hardware', '?')}, "
          f"spares {args.spares}, {args.pause_s:g} s between calls")
    print(f"{'stage':<22} {'median_ms':>10} {'min_ms':>10} {'max_ms':>10}")
    for key in runs[0]:
        vals = [r.get(key, 0) for r in runs]
        print(f"{key:<22} {statistics.median(vals):>10.1f} {min(vals):>10.1f} {max(vals):>10.1f}")
    print(f"{'executable_alone':<22} {statistics.median(exe_ms):>10.1f} {min(exe_ms):>10.1f} "
          f"{max(exe_ms):>10.1f}   (solbench hw list --json)")


if __name__ == "__main__":
    main()
