#!/usr/bin/env python3
"""Public problems' references under `solbench run --reference` and under the peer
(SOL-ExecBench's own CLI), in one go on one GPU: a subset of the public set (the first
N problems of each category, the first K workloads of each), solbench's run over it
(statuses, T_k of the reference as a solution, T_ref, T_b, SOL Score), then the peer
evaluating each problem's reference as a pytorch solution, one problem at a time, and a
per-workload table of both tools' latencies (docs/validation.md).

    python3 scripts/public_beside_peer.py --dataset .public/sol-execbench \\
        --solbench build-device/src/cli/solbench --peer-src .peer/peer/sol-execbench/src \\
        --peer-site /tmp/peer-site --out /tmp/pbp --per-category 2 --workloads 4

Standard library only. The peer's wheels must be installed in --peer-site already.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path


def subset(dataset: Path, out: Path, per_category: int, workloads: int,
           only: list[str]) -> list[Path]:
    """Copies of the chosen problems with their first `workloads` workloads; large
    files (safetensors blobs) are linked, not copied."""
    chosen = []
    for cat in sorted(p for p in dataset.iterdir() if p.is_dir()):
        probs = sorted(p for p in cat.iterdir() if (p / "definition.json").exists())
        if only:
            probs = [p for p in probs if any(p.name.startswith(o) for o in only)]
        for p in probs[:per_category]:
            dst = out / cat.name / p.name
            shutil.rmtree(dst, ignore_errors=True)
            dst.mkdir(parents=True)
            for f in p.iterdir():
                if f.name == "workload.jsonl":
                    lines = [l for l in f.read_text().splitlines() if l.strip()][:workloads]
                    (dst / f.name).write_text("\n".join(lines) + "\n")
                elif f.is_file() and f.stat().st_size < (1 << 20):
                    shutil.copy2(f, dst / f.name)
                else:
                    (dst / f.name).symlink_to(f.resolve())
            chosen.append(dst)
    return chosen


def reference_solution(problem: Path) -> Path:
    """The problem's reference as a pytorch solution (return style), for the peer."""
    d = json.loads((problem / "definition.json").read_text())
    sol = {"name": f"{d['name']}_reference", "definition": d["name"], "author": "reference",
           "spec": {"languages": ["pytorch"], "target_hardware": ["LOCAL"],
                    "entry_point": "main.py::run", "dependencies": [],
                    "destination_passing_style": False},
           "sources": [{"path": "main.py", "content": d["reference"]}]}
    path = problem.parent / f"{problem.name}.reference-solution.json"
    path.write_text(json.dumps(sol))
    return path


def run(cmd: list[str], env: dict | None = None, timeout: float = 600) -> tuple[int, str, str, float]:
    t = time.monotonic()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                           env={**os.environ, **(env or {})})
        return p.returncode, p.stdout, p.stderr, time.monotonic() - t
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        return 124, out, "timed out", time.monotonic() - t


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", type=Path, required=True)
    ap.add_argument("--solbench", required=True)
    ap.add_argument("--peer-src", type=Path, required=True)
    ap.add_argument("--peer-site", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--per-category", type=int, default=2)
    ap.add_argument("--workloads", type=int, default=4)
    ap.add_argument("--only", default="", help="comma-separated problem-name prefixes")
    ap.add_argument("--device", default="cuda:0")
    ap.add_argument("--jobs-per-gpu", type=int, default=1)
    ap.add_argument("--time-budget-ms", default="300")
    ap.add_argument("--peer-timeout-s", type=float, default=120)
    ap.add_argument("--peer-deadline-s", type=float, default=300,
                    help="start no peer evaluation after this many seconds of its part")
    a = ap.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    sub = a.out / "subset"
    shutil.rmtree(sub, ignore_errors=True)
    problems = subset(a.dataset, sub, a.per_category, a.workloads,
                      [o for o in a.only.split(",") if o])
    print(f"{len(problems)} problems, up to {a.workloads} workloads each", flush=True)

    db = a.out / "run.db"
    db.unlink(missing_ok=True)
    rc, so, se, secs = run([a.solbench, "run", str(sub), "--reference", "--device", a.device,
                            "--jobs-per-gpu", str(a.jobs_per_gpu), "--max-workloads",
                            str(a.workloads), "--time-budget-ms", a.time_budget_ms,
                            "--db", str(db), "--json"], timeout=900)
    (a.out / "solbench_run.json").write_text(so)
    (a.out / "solbench_run.err").write_text(se)
    print(f"solbench run: rc {rc}, {secs:.1f} s", flush=True)
    rc2, traces, se2, _ = run([a.solbench, "db", "export", "--db", str(db), "--jsonl"])
    sb = {}
    for line in traces.splitlines():
        if not line.strip():
            continue
        t = json.loads(line)
        ev = t["evaluation"]
        perf = ev.get("performance") or {}
        sb[t["workload"]["uuid"]] = {"status": ev["status"], "t_k": perf.get("latency_ms"),
                                     "t_ref": perf.get("reference_latency_ms"),
                                     "score": ev.get("solbench_sol_score"),
                                     "t_b": ev.get("solbench_t_b_ms"),
                                     "t_sol": ev.get("solbench_t_sol_ms")}

    peer_env = {"PYTHONPATH": f"{a.peer_site}:{a.peer_src.resolve()}",
                "TORCH_EXTENSIONS_DIR": str(a.out / "peer-ext"),
                "TRITON_CACHE_DIR": str(a.out / "peer-triton")}
    peer, peer_wall = {}, {}
    t_peer = time.monotonic()
    for p in problems:
        if time.monotonic() - t_peer > a.peer_deadline_s:
            print(f"peer: not started (deadline): {p.parent.name}/{p.name}", flush=True)
            continue
        sol = reference_solution(p)
        tr = a.out / f"peer-{p.name}.jsonl"
        tr.unlink(missing_ok=True)
        rc, so, se, secs = run([sys.executable, "-c",
                                "from sol_execbench.cli.main import cli; cli()",
                                str(p), "--solution", str(sol), "-o", str(tr)],
                               env=peer_env, timeout=a.peer_timeout_s)
        peer_wall[p.name] = secs
        n = 0
        if tr.exists():
            for line in tr.read_text().splitlines():
                if line.strip():
                    t = json.loads(line)
                    ev = t["evaluation"]
                    peer[t["workload"]["uuid"]] = {
                        "status": ev["status"],
                        "lat": (ev.get("performance") or {}).get("latency_ms"),
                        "ref": (ev.get("performance") or {}).get("reference_latency_ms")}
                    n += 1
        print(f"peer {p.parent.name}/{p.name}: rc {rc}, {secs:.1f} s, {n} traces"
              + ("" if n else f" ({(so + se)[-300:]!r})"), flush=True)

    rows, ratios, ref_ratios = [], [], []
    for p in problems:
        for line in (p / "workload.jsonl").read_text().splitlines():
            if not line.strip():
                continue
            u = json.loads(line)["uuid"]
            s, q = sb.get(u, {}), peer.get(u, {})
            r = rr = None
            if s.get("t_k") and q.get("lat"):
                r = s["t_k"] / q["lat"]
                ratios.append(r)
            if s.get("t_ref") and q.get("ref"):
                rr = s["t_ref"] / q["ref"]
                ref_ratios.append(rr)
            f = lambda x: f"{x:.4f}" if isinstance(x, (int, float)) else "-"  # noqa: E731
            rows.append(f"| {p.parent.name}/{p.name[:40]} | {u[:8]} | {s.get('status', '-')} | "
                        f"{f(s.get('t_k'))} | {f(s.get('t_ref'))} | {f(s.get('t_b'))} | "
                        f"{f(s.get('t_sol'))} | {f(s.get('score'))} | {q.get('status', '-')} | "
                        f"{f(q.get('lat'))} | {f(q.get('ref'))} | {f(r)} |")
    lines = ["| problem | workload | solbench | T_k ms | T_ref ms | T_b ms | T_SOL ms | S | "
             "peer | peer latency ms | peer reference ms | T_k / peer latency |",
             "|---|---|---|---:|---:|---:|---:|---:|---|---:|---:|---:|"] + rows
    if ratios:
        lines.append("")
        lines.append(f"T_k / peer latency over {len(ratios)} workloads: median "
                     f"{statistics.median(ratios):.3f}, min {min(ratios):.3f}, max {max(ratios):.3f}")
    if ref_ratios:
        lines.append(f"T_ref / peer reference over {len(ref_ratios)} workloads: median "
                     f"{statistics.median(ref_ratios):.3f}, min {min(ref_ratios):.3f}, "
                     f"max {max(ref_ratios):.3f}")
    lines.append(f"peer wall time per problem (s): "
                 + ", ".join(f"{k[:12]} {v:.1f}" for k, v in peer_wall.items()))
    (a.out / "beside_peer.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
