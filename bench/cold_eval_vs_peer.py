#!/usr/bin/env python3
"""Cold `solbench eval` beside the peer (SOL-ExecBench's CLI) on the peer's own examples,
on the GPU machine, in one call (issue #27 item 2). Every run starts with empty caches
(build, Triton, TorchInductor, torch extensions), as a new user meets it.

    bench/cold_eval_vs_peer.py --solbench BIN --peer-src DIR --peer-site DIR --out DIR \
        [--examples triton/rmsnorm pytorch/gemma3_swiglu ...] [--deadline-s S] \
        [--variant one:SOLBENCH_BASELINE_WORKERS=1 --variant auto --variant nob::--no-baseline]
        [--pycache DIR]

--pycache DIR gives both tools Python bytecode of torch (PYTHONPYCACHEPREFIX=DIR,
filled first by a process that imports torch, Dynamo, Inductor, Triton and the peer and
compiles a function), as on an installation whose site-packages hold bytecode; without
it, each run meets the interpreter as it is (on the GPU host: no bytecode beside
torch's sources, PYTHONDONTWRITEBYTECODE set, so every process compiles them).

Prints, per example, both walls and their ratio, and solbench's timeline (seconds after
start: build done, T_SOL ready, first worker ready, workloads done, T_b done); writes
cold_eval.json under --out.
"""
import argparse
import json
import os
import pathlib
import shutil
import subprocess
import sys
import time

DEFAULT = ["triton/rmsnorm", "pytorch/gemma3_swiglu", "pytorch/linear_backward",
           "triton/olmo3_post_norm", "cuda_cpp/rmsnorm"]


def fresh_env(cache: pathlib.Path) -> dict:
    shutil.rmtree(cache, ignore_errors=True)
    cache.mkdir(parents=True)
    return {"TRITON_CACHE_DIR": str(cache / "triton"),
            "TORCH_EXTENSIONS_DIR": str(cache / "torch_extensions"),
            "TORCHINDUCTOR_CACHE_DIR": str(cache / "inductor"),
            "SOLBENCH_CACHE_DIR": str(cache / "solbench")}


def run(cmd, env, timeout):
    t0 = time.time()
    try:
        p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True,
                           env={**os.environ, **env}, timeout=timeout)
        return p.returncode, p.stdout, p.stderr, time.time() - t0
    except subprocess.TimeoutExpired:
        return 124, "", "timeout", time.time() - t0


def timeline(doc: dict) -> dict:
    t = doc.get("timeline_t_ns") or {}
    start = t.get("start")
    if start is None:
        return {}
    out = {k: round((v - start) / 1e9, 2) for k, v in t.items() if isinstance(v, (int, float))}
    ready = [w.get("ready_t_ns") for w in doc.get("workers", []) if w.get("ready_t_ns")]
    if ready:
        out["first_worker_ready"] = round((min(ready) - start) / 1e9, 2)
    return dict(sorted(out.items(), key=lambda kv: kv[1]))


def solbench_row(a, d, sol, scratch, extra, flags, left) -> dict:
    """One cold `solbench eval` of example `d` with fresh caches under `scratch`, the
    variables `extra` and the extra eval flags `flags`."""
    senv = {**fresh_env(scratch), **extra}
    src, sso, sse, swall = run([a.solbench, "eval", d, "-s", sol, "--device", "cuda:0",
                                "--json", "--no-db", *flags], senv, min(600, left))
    try:
        doc = json.loads(sso)
    except ValueError:
        doc = {}
    statuses = {}
    for r in doc.get("results", []):
        s = "SKIPPED" if r.get("skipped") else r["evaluation"]["status"]
        statuses[s] = statuses.get(s, 0) + 1
    phases = {}
    for r in doc.get("results", []):
        for k, v in (r.get("evaluation", {}).get("solbench_phases_ms") or {}).items():
            phases[k] = round(phases.get(k, 0) + v / 1000, 2)
    lines = []
    for kind in ("workers", "baseline_workers"):
        for w in doc.get(kind, []):
            ph = w.get("phases_ms", {})
            sp = w.get("spawn_t_ns")
            rel = lambda k: round((w[k] - sp) / 1e9, 2) if sp and w.get(k) else None  # noqa: E731
            lines.append(f"{kind[:-1]} {w.get('role', '?')}: hello {rel('hello_t_ns')} sandboxed "
                         f"{rel('sandboxed_t_ns')} ready {rel('ready_t_ns')} s after spawn; "
                         f"{len(w.get('workloads', []))} workloads; phases {ph}")
    # Per workload (by uuid): T_k and T_b, to compare variants' measurements.
    per = {}
    for r in doc.get("results", []):
        e = r.get("evaluation") or {}
        per[r.get("workload", {}).get("uuid", "?")] = {
            "t_k_ms": (e.get("performance") or {}).get("latency_ms"),
            "t_b_ms": e.get("solbench_t_b_ms"),
            "ahead": ((e.get("solbench_score") or {}).get("t_b") or {}).get("phases", {}) and
            bool(e["solbench_score"]["t_b"]["phases"].get("precompiled_ahead")
                 or "ahead_stopped_ms" in e["solbench_score"]["t_b"]["phases"])}
    return {"per_workload": per, "solution_phase_sums_s": phases, "solbench_s": round(swall, 1), "solbench_rc": src,
            "statuses": statuses, "timeline_s": timeline(doc),
            "baseline_workers": len(doc.get("baseline_workers", [])),
            "build_s": (doc.get("build") or {}).get("seconds"),
            "solbench_err_tail": sse[-800:] if src not in (0, 1) else "", "worker_lines": lines}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--solbench", required=True)
    ap.add_argument("--peer-src", required=True)
    ap.add_argument("--peer-site", required=True)
    ap.add_argument("--examples-dir", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--examples", nargs="*", default=DEFAULT)
    ap.add_argument("--deadline-s", type=float, default=1e9)
    ap.add_argument("--pycache", default="")
    ap.add_argument("--variant", action="append", default=[],
                    help="NAME[:KEY=VALUE,...[:EVAL FLAGS]]: solbench run once per variant "
                         "(fresh caches each) with these variables and extra eval flags "
                         "(space-separated), after the peer; default one run as it is")
    a = ap.parse_args()
    variants = []
    for v in a.variant or ["default"]:
        name, _, rest = v.partition(":")
        assigns, _, flags = rest.partition(":")
        variants.append((name, dict(kv.split("=", 1) for kv in assigns.split(",") if kv),
                         flags.split()))
    out = pathlib.Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    t_end = time.time() + a.deadline_s
    both = {}
    if a.pycache:
        both = {"PYTHONPYCACHEPREFIX": os.path.abspath(a.pycache), "PYTHONDONTWRITEBYTECODE": ""}
        warm = ("import torch, torch._dynamo, torch._inductor.compile_fx, torch.utils.cpp_extension, "
                "triton\nimport sol_execbench.cli.main\n"
                "f = torch.compile(lambda x: (x.sin() + 1).sum(-1))\n"
                "f(torch.randn(64, 64, device='cuda' if torch.cuda.is_available() else 'cpu'))\n")
        wenv = {**fresh_env(out / "pycache-warm"), **both,
                "PYTHONPATH": f"{os.path.abspath(a.peer_site)}:{os.path.abspath(a.peer_src)}"}
        rc, _, err, wall = run([sys.executable, "-c", warm], wenv, 600)
        print(f"bytecode under {a.pycache}: warmed in {wall:.1f} s (rc {rc}) {err[-300:] if rc else ''}",
              flush=True)
    rows = []
    for ex in a.examples:
        left = t_end - time.time()
        if left < 60:
            print(f"{ex}: skipped, {left:.0f} s left", flush=True)
            continue
        d = pathlib.Path(a.examples_dir) / ex
        sol = sorted(d.glob("solution*.json"))[0]
        tag = ex.replace("/", "_")
        penv = {**fresh_env(out / f"peer-{tag}"), **both}
        # Absolute: the peer's driver runs in a folder of its own.
        penv["PYTHONPATH"] = f"{os.path.abspath(a.peer_site)}:{os.path.abspath(a.peer_src)}"
        prc, pso, pse, pwall = run([sys.executable, "-c",
                                    "from sol_execbench.cli.main import cli; cli()", d,
                                    "--solution", sol, "-o", out / f"peer-{tag}" / "t.jsonl"],
                                   penv, min(600, left))
        pstat = {}
        ptraces = out / f"peer-{tag}" / "t.jsonl"
        if ptraces.exists():
            for line in open(ptraces):
                st = json.loads(line)["evaluation"]["status"]
                pstat[st] = pstat.get(st, 0) + 1
        for k, (name, extra, flags) in enumerate(variants):
            left = t_end - time.time()
            if left < 30:
                print(f"    {name}: skipped, {left:.0f} s left", flush=True)
                continue
            row = solbench_row(a, d, sol, out / f"sb-{tag}-{name}", {**both, **extra}, flags, left)
            row.update({"example": ex, "variant": name, "variant_env": extra, "variant_flags": flags,
                        "peer_s": round(pwall, 1), "peer_rc": prc, "peer_statuses": pstat,
                        "peer_tail": (pso + pse)[-1500:] if prc != 0 and k == 0 else "",
                        "ratio": round(row["solbench_s"] / pwall, 2) if pwall else None})
            rows.append(row)
            print(f"{ex:26s} peer {row['peer_s']:6.1f} s (rc {prc}) {pstat}  solbench[{name}] "
                  f"{row['solbench_s']:6.1f} s (rc {row['solbench_rc']}) {row['statuses']}  "
                  f"ratio {row['ratio']}", flush=True)
            if row["peer_tail"]:
                print("    peer: " + row["peer_tail"][-700:].replace("\n", "\n    "), flush=True)
            for line in row.pop("worker_lines"):
                print("    " + line, flush=True)
            print(f"    timeline: {row['timeline_s']}", flush=True)
            print(f"    per-workload phases, summed (s): {row['solution_phase_sums_s']}", flush=True)
            if row["solbench_err_tail"]:
                print("    " + row["solbench_err_tail"].replace("\n", "\n    "), flush=True)
    (out / "cold_eval.json").write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
