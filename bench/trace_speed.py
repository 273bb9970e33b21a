#!/usr/bin/env python3
"""How fast the SOL tracer follows a reference that loops in Python over query
tokens and heads (docs/sol.md, "Speed": "Loops"). The problem is the synthetic
paged prefill of tests/data/paged_prefill_loop (one sequence of T query tokens
over T pages, 32 query heads, 4 KV heads, head_dim 128 unless told otherwise):
about 24 aten operators per (token, head).

    # the tracer alone, in this Python (torch from PYTHONPATH or the venv running it)
    python3 bench/trace_speed.py --tokens 2048 8192
    # `solbench sol` end to end (tracer process, C++ cost model), cold cache
    python3 bench/trace_speed.py --tokens 2048 --solbench build/src/cli/solbench
    # another tracer source (a checkout of the code before a change)
    python3 bench/trace_speed.py --tokens 256 --python-dir /path/to/old/python

Prints, per size, seconds, aten operators recorded (raw_op_count), operators per
second, microseconds per operator and graph nodes; --json for one JSON line each.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PROBLEM = REPO / "tests" / "data" / "paged_prefill_loop"


def workload(tokens: int, heads: int, kv_heads: int, head_dim: int, seqs: int) -> dict:
    custom = {"type": "custom"}
    return {"uuid": f"bench-t{tokens}-h{heads}",
            "axes": {"num_qo_heads": heads, "num_kv_heads": kv_heads, "head_dim": head_dim,
                     "len_indptr": seqs + 1, "total_q": tokens, "num_kv_indices": tokens,
                     "num_pages": max(2 * tokens + 1, 64)},
            "inputs": {"q": {"type": "random"}, "k_cache": {"type": "random"},
                       "v_cache": {"type": "random"}, "qo_indptr": custom, "kv_indptr": custom,
                       "kv_indices": custom, "sm_scale": {"type": "scalar", "value": 0.125}},
            "tolerance": {"max_atol": 0.01, "max_rtol": 0.01}}


def request(definition: dict, wl: dict, mode: str) -> dict:
    """The tracer's request (src/sol/tracer.cc, trace_request()) for one workload."""
    axes = dict(wl["axes"])
    for k, a in definition["axes"].items():
        if a["type"] == "const":
            axes[k] = a["value"]

    def shape(s):
        return None if s is None else [axes[d] for d in s]
    inputs = []
    for name, spec in definition["inputs"].items():
        src = wl["inputs"][name]
        i = {"name": name, "dtype": spec["dtype"], "source": src["type"], "shape": shape(spec["shape"])}
        if src["type"] == "scalar":
            i["value"] = src["value"]
            axes[name] = src["value"]
        inputs.append(i)
    outputs = [{"name": n, "dtype": s["dtype"], "shape": shape(s["shape"])}
               for n, s in definition["outputs"].items()]
    return {"reference": definition["reference"], "inputs": inputs, "outputs": outputs,
            "axes_and_scalars": axes, "mode": mode, "seed": 200,
            "custom_inputs_entrypoint": definition["custom_inputs_entrypoint"]}


def trace_direct(req: dict, python_dir: Path) -> dict:
    sys.path.insert(0, str(python_dir))
    from solbench_py import tracer  # noqa: E402 - the chosen source
    tracer.ready("")
    t0 = time.perf_counter()
    answer = json.loads(tracer.trace(json.dumps(req)))
    seconds = time.perf_counter() - t0
    if answer["status"] != "ok":
        raise SystemExit(f"trace failed: {answer.get('reason')}\n{answer.get('traceback', '')}")
    return {"seconds": seconds, "tracer_seconds": answer["seconds"], "mode": answer["mode"],
            "raw_ops": answer["raw_op_count"], "nodes": len(answer["ops"])}


def trace_solbench(binary: str, wl: dict, timeout: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="trace-speed-") as tmp:
        prob = Path(tmp) / "paged_prefill_loop"
        prob.mkdir()
        (prob / "definition.json").write_text((PROBLEM / "definition.json").read_text())
        (prob / "workload.jsonl").write_text(json.dumps(wl) + "\n")
        env = dict(os.environ, SOLBENCH_CACHE_DIR=str(Path(tmp) / "cache"))
        t0 = time.perf_counter()
        p = subprocess.run([binary, "sol", str(prob), "--arch", "h100_sxm", "--json", "--no-cache",
                            "--timeout", str(timeout)], capture_output=True, text=True, env=env)
        wall = time.perf_counter() - t0
        if p.returncode != 0:
            raise SystemExit(f"solbench sol failed ({p.returncode}): {p.stderr[-2000:]}")
        r = json.loads(p.stdout)["problems"][0]["workloads"][0]
        if r["status"] != "ok":
            raise SystemExit(f"solbench sol: {r['status']}: {r.get('reason')}")
        return {"seconds": r["trace_seconds"], "wall_seconds": wall, "mode": r["mode"],
                "raw_ops": r["raw_op_count"], "sol_us": r["time_us"]["sol"],
                "tensor_tflop": r["work"]["tensor_tflop"], "cuda_tflop": r["work"]["cuda_tflop"],
                "sfu_gop": r["work"]["sfu_gop"], "min_mb": r["bytes"]["min_mb"],
                "dram_mb": r["bytes"]["dram_mb"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tokens", type=int, nargs="+", default=[2048])
    ap.add_argument("--heads", type=int, default=32)
    ap.add_argument("--kv-heads", type=int, default=4)
    ap.add_argument("--head-dim", type=int, default=128)
    ap.add_argument("--seqs", type=int, default=1, help="sequences the tokens are split over")
    ap.add_argument("--mode", default="hybrid", help="tracer mode (direct runs)")
    ap.add_argument("--python-dir", type=Path, default=REPO / "python",
                    help="folder holding the solbench_py package to time (direct runs)")
    ap.add_argument("--solbench", help="time `SOLBENCH sol` end to end instead of the tracer alone")
    ap.add_argument("--timeout", type=int, default=0, help="solbench sol --timeout (0: none)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    definition = json.loads((PROBLEM / "definition.json").read_text())
    for t in args.tokens:
        wl = workload(t, args.heads, args.kv_heads, args.head_dim, args.seqs)
        if args.solbench:
            r = trace_solbench(args.solbench, wl, args.timeout)
        else:
            r = trace_direct(request(definition, wl, args.mode), args.python_dir)
        r.update(tokens=t, heads=args.heads, ops_per_s=r["raw_ops"] / r["seconds"],
                 us_per_op=1e6 * r["seconds"] / r["raw_ops"])
        if args.json:
            print(json.dumps(r), flush=True)
        else:
            extra = f", {r['nodes']} nodes" if "nodes" in r else \
                f", T_SOL {r['sol_us']:.4g} us, wall {r['wall_seconds']:.2f} s"
            print(f"{t} tokens x {args.heads} heads: {r['seconds']:.2f} s, {r['raw_ops']} ops, "
                  f"{r['ops_per_s']:.0f} ops/s, {r['us_per_op']:.2f} us/op ({r['mode']}{extra})",
                  flush=True)


if __name__ == "__main__":
    main()
