#!/usr/bin/env python3
"""Several GPUs of one host (issue #28): what `run --gpus` and `import solbench` get
from a second GPU, whether each worker stays on its own GPU, and whether the store
survives two GPUs writing at once. Every part writes <out>/<part>.json and prints a
short summary; the numbers go to docs/run.md ("Several GPUs").

  scaling    `run --reference` over a data set with --gpus 0 (stopped at --budget-s),
             then --gpus all over exactly the problems the first run finished, each run
             with caches of its own (cold, as a new user meets them): wall, workloads
             per minute, the ratio, and the latency of every workload evaluated on GPU 1
             against the same workload's on GPU 0.
  isolation  bench/multi_gpu/solutions on problems/ 001 beside the references of the
             bundled problems, --gpus all: a solution that checks it sees one GPU
             (PASSED), one that faults its GPU (RUNTIME_ERROR) and one that hangs it
             (TIMEOUT), while `nvidia-smi` samples which process holds memory on which GPU.
  python     the same candidates evaluated from 2 threads of one Python process with
             device="cuda:0" and with device="cuda:any": evaluations per minute.
  resume     a --gpus all run stopped by SIGTERM mid-way and run again: no trace or
             baseline row lost or duplicated.
  peer       the peer beside solbench on a few problems' references: one peer process on
             GPU 0 against one per GPU (the peer has no multi-GPU mode), `run --gpus 0`
             against `--gpus all`.
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent


CACHE_ROOT = Path(tempfile.gettempdir()) / "solbench-multi-gpu-caches"


def cache_env(name: str) -> dict:
    """Caches of a run's own (outside the results folder): solbench's (builds, T_SOL,
    stores), Inductor's and Triton's, so that a second run does not start warm."""
    root = CACHE_ROOT / name
    root.mkdir(parents=True, exist_ok=True)
    return dict(os.environ, SOLBENCH_CACHE_DIR=str(root / "solbench"), XDG_CACHE_HOME=str(root / "xdg"),
                TORCHINDUCTOR_CACHE_DIR=str(root / "inductor"), TRITON_CACHE_DIR=str(root / "triton"))


def run_json(cmd: list, env: dict, limit_s: float | None, log: Path) -> tuple[dict | None, float, int]:
    """Runs a `solbench run ... --json`, SIGTERM at `limit_s` (it then prints what it
    has); returns (document, wall seconds, exit status)."""
    t0 = time.monotonic()
    with open(log, "w") as err:
        p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=err, text=True,
                             start_new_session=True)
        timer = None
        if limit_s:
            timer = threading.Timer(limit_s, lambda: p.send_signal(signal.SIGTERM))
            timer.start()
        out, _ = p.communicate()
        if timer:
            timer.cancel()
    wall = time.monotonic() - t0
    try:
        doc = json.loads(out)
    except json.JSONDecodeError:
        doc = None
    return doc, wall, p.returncode


def finished_evaluations(doc: dict) -> list:
    """(problem, evaluation) of every evaluation whose workloads all have a status."""
    out = []
    for p in doc.get("problems", []):
        for e in p.get("solutions", []):
            rs = e.get("workload_results", [])
            if rs and all(r.get("status") for r in rs):
                out.append((p, e))
    return out


def latencies(db: Path) -> dict:
    """workload uuid -> latency_ms of its PASSED reference trace (the latest)."""
    con = sqlite3.connect(db)
    rows = con.execute("SELECT workload_uuid, latency_ms FROM traces WHERE status='PASSED' ORDER BY id").fetchall()
    con.close()
    return {u: l for u, l in rows if l}


def scaling(a) -> dict:
    out = Path(a.out)
    base = [a.solbench, "run", a.dataset, "--reference", "--json", "--max-workloads", str(a.max_workloads)]
    for c in a.category:
        base += ["--category", c]
    one_db, all_db = out / "gpus0.db", out / "gpus_all.db"
    doc1, wall1, rc1 = run_json(base + ["--gpus", "0", "--db", str(one_db)], cache_env("gpus0"),
                                a.budget_s, out / "gpus0.log")
    if doc1 is None:
        return {"error": f"--gpus 0 printed no JSON (exit {rc1}; see gpus0.log)"}
    done = finished_evaluations(doc1)
    names = sorted({p["problem"] for p, _ in done})
    sel = []
    for n in names:
        sel += ["--problem", n]
    doc2, wall2, rc2 = run_json(base + sel + ["--gpus", "all", "--db", str(all_db)],
                                cache_env("gpus_all"), None, out / "gpus_all.log")
    if doc2 is None:
        return {"error": f"--gpus all printed no JSON (exit {rc2}; see gpus_all.log)"}
    # --gpus 0's wall for the finished problems only: its evaluations' own seconds
    # (one slot: they ran one after another), up to the last finished one.
    secs1 = sum(e["seconds"] for _, e in done)
    w1 = sum(len(e["workload_results"]) for _, e in done)
    w2 = sum(len(e["workload_results"]) for p in doc2["problems"] for e in p["solutions"])
    lat1, lat2 = latencies(one_db), latencies(all_db)
    on_gpu1 = [r["uuid"] for p in doc2["problems"] for e in p["solutions"] if e.get("device") == "cuda:1"
               for r in e["workload_results"]]
    ratios = sorted(lat2[u] / lat1[u] for u in on_gpu1 if u in lat1 and u in lat2)
    devices = collections.Counter(e.get("device") for p in doc2["problems"] for e in p["solutions"])
    per_problem = [{"problem": p["problem"], "category": p["category"], "seconds": e["seconds"],
                    "workloads": len(e["workload_results"]),
                    "statuses": dict(collections.Counter(r["status"] for r in e["workload_results"]))}
                   for p, e in done]
    res = {
        "problems": len(names), "workloads_gpus0": w1, "workloads_gpus_all": w2,
        "gpus0_wall_s_all": wall1, "gpus0_exit": rc1, "gpus0_seconds_finished": secs1,
        "gpus_all_wall_s": wall2, "gpus_all_exit": rc2,
        "per_min_gpus0": 60 * w1 / secs1 if secs1 else None,
        "per_min_gpus_all": 60 * w2 / wall2 if wall2 else None,
        "evaluations_per_device": devices,
        "gpu1_vs_gpu0_latency": {
            "workloads": len(ratios),
            "median": statistics.median(ratios) if ratios else None,
            "min": ratios[0] if ratios else None, "max": ratios[-1] if ratios else None,
            "within_3pct": sum(1 for r in ratios if abs(r - 1) <= 0.03),
        },
        "totals_gpus0": doc1.get("total"), "totals_gpus_all": doc2.get("total"),
        "per_problem_gpus0": per_problem,
    }
    if res["per_min_gpus0"] and res["per_min_gpus_all"]:
        res["scaling"] = res["per_min_gpus_all"] / res["per_min_gpus0"]
    # Like for like with --gpus 0's figure, which sums its evaluations' seconds (its
    # one slot runs them back to back) and so leaves out the run's own start: the
    # busiest GPU's evaluation seconds, each slot also running back to back.
    per_slot = collections.defaultdict(float)
    for p in doc2["problems"]:
        for e in p["solutions"]:
            per_slot[e.get("device")] += e.get("seconds", 0)
    res["gpus_all_seconds_per_device"] = dict(per_slot)
    if per_slot and secs1:
        res["scaling_by_evaluation_seconds"] = secs1 / max(per_slot.values())
    return res


class SmiSampler:
    """`nvidia-smi --query-compute-apps` every 0.2 s: which pid holds memory on which GPU."""

    def __init__(self):
        self.seen = collections.defaultdict(set)  # pid -> GPU uuids
        self.peak = collections.defaultdict(int)  # (pid, gpu) -> MiB
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._loop, daemon=True)

    def _loop(self):
        while not self._stop.is_set():
            try:
                r = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,gpu_uuid,used_memory",
                                    "--format=csv,noheader,nounits"], capture_output=True, text=True, timeout=10)
                for line in r.stdout.splitlines():
                    parts = [x.strip() for x in line.split(",")]
                    if len(parts) == 3 and parts[0].isdigit():
                        pid, gpu, mib = int(parts[0]), parts[1], parts[2]
                        self.seen[pid].add(gpu)
                        if mib.isdigit():
                            self.peak[(pid, gpu)] = max(self.peak[(pid, gpu)], int(mib))
            except (OSError, subprocess.SubprocessError):
                pass
            self._stop.wait(0.2)

    def __enter__(self):
        self._t.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._t.join()

    def summary(self) -> dict:
        gpus = collections.Counter(g for s in self.seen.values() for g in s)
        return {"processes": len(self.seen), "processes_per_gpu": dict(gpus),
                "on_two_gpus": sorted(p for p, s in self.seen.items() if len(s) > 1),
                "peak_mib": {f"{p}@{g[-8:]}": m for (p, g), m in sorted(self.peak.items())}}


def isolation(a) -> dict:
    out = Path(a.out)
    cmd = [a.solbench, "run", str(REPO / "problems"), "--reference", "--solutions", str(HERE / "multi_gpu" / "solutions"),
           "--gpus", "all", "--max-workloads", "2", "--timeout", str(a.hang_timeout_s), "--json",
           "--db", str(out / "isolation.db")]
    with SmiSampler() as smi:
        doc, wall, rc = run_json(cmd, cache_env("isolation"), None, out / "isolation.log")
    if doc is None:
        return {"error": f"no JSON (exit {rc}; see isolation.log)", "smi": smi.summary()}
    evals = []
    for p in doc["problems"]:
        for e in p["solutions"]:
            evals.append({"problem": p["problem"], "solution": e["solution"], "device": e.get("device"),
                          "seconds": e["seconds"],
                          "statuses": dict(collections.Counter(r["status"] for r in e["workload_results"])),
                          "reasons": sorted({r.get("reason", "")[:160] for r in e["workload_results"] if r.get("reason")})})
    return {"wall_s": wall, "exit": rc, "evaluations": evals, "smi": smi.summary(),
            "reference_latency_ms": latencies(out / "isolation.db")}


def python_threads(a) -> dict:
    sys.path.insert(0, a.pyapi)
    import solbench  # noqa: E402 - the module built beside the executable
    problem = REPO / "problems" / "001_rmsnorm_llama3_8b_h4096"
    hacks = REPO / "tests" / "hacks"
    candidates = [hacks / "pytorch_cuda_honest" / "solution.json", hacks / "triton_honest" / "solution.json", None]
    res = {}
    for device in ("cuda:0", "cuda:any"):
        db = Path(a.out) / f"python-{device.replace(':', '_')}.db"
        # T_b once per workload (a persistent store), before the clock starts.
        solbench.eval(problem, reference=True, smallest=3, device="cuda:0", db=db)
        jobs = [candidates[i % len(candidates)] for i in range(a.python_calls)]
        lock = threading.Lock()
        seen = collections.Counter()
        walls = []

        def worker():
            while True:
                with lock:
                    if not jobs:
                        return
                    sol = jobs.pop()
                t = time.monotonic()
                doc = solbench.eval(problem, sol, reference=sol is None, smallest=3, device=device, db=db)
                with lock:
                    walls.append(time.monotonic() - t)
                    seen[doc.get("device") or doc.get("summary", {}).get("device") or "?"] += 1
                    seen["status:" + ",".join(sorted({r["evaluation"]["status"] for r in doc["results"]}))] += 1

        t0 = time.monotonic()
        threads = [threading.Thread(target=worker) for _ in range(a.python_threads)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wall = time.monotonic() - t0
        res[device] = {"calls": a.python_calls, "threads": a.python_threads, "wall_s": wall,
                       "per_min": 60 * a.python_calls / wall, "call_median_s": statistics.median(walls),
                       "seen": dict(seen)}
    res["ratio"] = res["cuda:any"]["per_min"] / res["cuda:0"]["per_min"]
    return res


def resume(a) -> dict:
    out = Path(a.out)
    db = out / "resume.db"
    cmd = [a.solbench, "run", str(REPO / "problems"), "--reference", "--gpus", "all", "--max-workloads", "4",
           "--json", "--db", str(db)]
    env = cache_env("resume")
    _, wall1, rc1 = run_json(cmd, env, a.kill_after_s, out / "resume-1.log")
    con = sqlite3.connect(db)
    after_kill = con.execute("SELECT count(*) FROM traces").fetchone()[0]
    con.close()
    doc, wall2, rc2 = run_json(cmd, env, None, out / "resume-2.log")
    con = sqlite3.connect(db)
    traces = con.execute("SELECT count(*), count(DISTINCT solution_hash || workload_uuid || environment) FROM traces").fetchone()
    bases = con.execute("SELECT count(*), count(DISTINCT definition_hash || workload_uuid || gpu_model || driver || torch || timer) "
                        "FROM baselines").fetchone()
    envs = con.execute("SELECT hash, gpu_model, driver, torch, timer FROM environments").fetchall()
    con.close()
    expected = sum(len(e["workload_results"]) for p in (doc or {}).get("problems", []) for e in p["solutions"])
    resumed = sum(1 for p in (doc or {}).get("problems", []) for e in p["solutions"] for r in e["workload_results"]
                  if r.get("resumed"))
    return {"first": {"wall_s": wall1, "exit": rc1, "traces": after_kill},
            "second": {"wall_s": wall2, "exit": rc2, "resumed": resumed},
            "workloads_selected": expected, "traces": traces[0], "distinct_traces": traces[1],
            "baselines": bases[0], "distinct_baselines": bases[1],
            "environments": envs, "environment_probes": (doc or {}).get("environment_probes"),
            "statuses": (doc or {}).get("total")}


def peer(a) -> dict:
    """The peer (SOL-ExecBench's CLI) beside solbench on the same problems' references:
    the peer has no multi-GPU mode (its driver takes cuda:0), so its two-GPU equivalent
    is one process per GPU (CUDA_VISIBLE_DEVICES), each evaluating its half of the
    problems one after another; solbench is `run --gpus 0` and `--gpus all`. Each of the
    four runs has cold caches of its own."""
    sys.path.insert(0, str(REPO / "scripts"))
    from public_beside_peer import reference_solution, subset  # noqa: PLC0415
    out = Path(a.out)
    sub = out / "peer-subset"
    shutil.rmtree(sub, ignore_errors=True)
    problems = subset(Path(a.dataset), sub, 100, a.max_workloads, [o for o in a.peer_only.split(",") if o])
    sols = {p: reference_solution(p) for p in problems}

    def peer_lane(lane: list, gpu: int, tag: str, results: dict) -> None:
        env = cache_env(f"peer-{tag}")
        env["PYTHONPATH"] = f"{a.peer_site}:{Path(a.peer_src).resolve()}"
        env["CUDA_VISIBLE_DEVICES"] = str(gpu)
        env["TORCH_EXTENSIONS_DIR"] = str(CACHE_ROOT / f"peer-{tag}" / "ext")
        for p in lane:
            tr = out / f"peer-{tag}-{p.name}.jsonl"
            tr.unlink(missing_ok=True)
            t = time.monotonic()
            r = subprocess.run([sys.executable, "-c", "from sol_execbench.cli.main import cli; cli()",
                                str(p), "--solution", str(sols[p]), "-o", str(tr)], env=env,
                               capture_output=True, text=True, timeout=300)
            st = collections.Counter()
            if tr.exists():
                for line in tr.read_text().splitlines():
                    if line.strip():
                        st[json.loads(line)["evaluation"]["status"]] += 1
            results[p.name] = {"gpu": gpu, "seconds": time.monotonic() - t, "rc": r.returncode,
                               "statuses": dict(st)}

    res = {"problems": [f"{p.parent.name}/{p.name}" for p in problems],
           "workloads_per_problem": a.max_workloads}
    one: dict = {}
    t = time.monotonic()
    peer_lane(problems, 0, "1gpu", one)
    res["peer_1gpu"] = {"wall_s": time.monotonic() - t, "per_problem": one}
    two: dict = {}
    lanes = [problems[0::2], problems[1::2]]
    threads = [threading.Thread(target=peer_lane, args=(lane, g, f"2gpu-{g}", two)) for g, lane in enumerate(lanes)]
    t = time.monotonic()
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    res["peer_2gpu"] = {"wall_s": time.monotonic() - t, "per_problem": two}
    res["peer_scaling"] = res["peer_1gpu"]["wall_s"] / res["peer_2gpu"]["wall_s"]
    for gpus in ("0", "all"):
        cmd = [a.solbench, "run", str(sub), "--reference", "--json", "--gpus", gpus,
               "--max-workloads", str(a.max_workloads), "--db", str(out / f"peer-sb-{gpus}.db")]
        doc, wall, rc = run_json(cmd, cache_env(f"peer-sb-{gpus}"), None, out / f"peer-sb-{gpus}.log")
        res[f"solbench_gpus_{gpus}"] = {"wall_s": wall, "exit": rc, "totals": (doc or {}).get("total")}
    res["solbench_scaling"] = res["solbench_gpus_0"]["wall_s"] / res["solbench_gpus_all"]["wall_s"]
    return res


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("part", choices=["scaling", "isolation", "python", "resume", "peer"], nargs="+")
    ap.add_argument("--solbench", required=True)
    ap.add_argument("--pyapi", help="folder with the built solbench Python module (python)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--dataset", default=str(REPO / ".public" / "sol-execbench"))
    ap.add_argument("--category", action="append", default=[])
    ap.add_argument("--max-workloads", type=int, default=2)
    ap.add_argument("--budget-s", type=float, default=240, help="scaling: --gpus 0 is stopped here")
    ap.add_argument("--hang-timeout-s", type=float, default=30)
    ap.add_argument("--python-calls", type=int, default=12)
    ap.add_argument("--python-threads", type=int, default=2)
    ap.add_argument("--kill-after-s", type=float, default=25)
    ap.add_argument("--peer-src", default=str(REPO / ".peer" / "peer" / "sol-execbench" / "src"))
    ap.add_argument("--peer-site", default="/tmp/peer-site", help="the peer's wheels, installed")
    ap.add_argument("--peer-only", default="", help="peer: comma-separated problem-name prefixes")
    a = ap.parse_args()
    Path(a.out).mkdir(parents=True, exist_ok=True)
    parts = {"scaling": scaling, "isolation": isolation, "python": python_threads, "resume": resume,
             "peer": peer}
    for name in a.part:
        t = time.monotonic()
        try:
            r = parts[name](a)
        except Exception as e:  # noqa: BLE001 - one part's failure must not lose the others'
            r = {"error": f"{type(e).__name__}: {e}"}
        r["part_wall_s"] = time.monotonic() - t
        Path(a.out, f"{name}.json").write_text(json.dumps(r, indent=2, default=str))
        brief = {k: v for k, v in r.items() if k not in ("per_problem_gpus0", "reference_latency_ms")}
        print(f"== {name}\n{json.dumps(brief, indent=1, default=str)[:6000]}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
