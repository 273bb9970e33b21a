#!/usr/bin/env python3
"""Evaluates hack-corpus entries through the real binary and prints the table.

The same evaluation as test_hack_corpus.cc (one private copy of the problem, cache
and staging folder per entry; placeholders substituted; the flags of manifest.json),
for people and for the GPU call, which runs the gpu_only entries:

    python3 tests/hacks/run_corpus.py --binary build/src/cli/solbench            # CPU entries
    python3 tests/hacks/run_corpus.py --binary ... --device cuda:0 --gpu-only    # on the GPU
    python3 tests/hacks/run_corpus.py --binary ... --names py_cache_values,cpp_honest

Options: --jobs N (evaluations at once, default 3), --json FILE (every result, logs
included), --markdown (the table of docs/anti-hack.md). Exit status 0 when every entry
got its expected status, 1 otherwise. Known gaps are reported, not failed.
"""
from __future__ import annotations

import argparse
import concurrent.futures as cf
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


def measured_status(doc: dict) -> tuple[str, dict]:
    """The first non-PASSED workload's status (and that result), else PASSED."""
    results = doc.get("results") or []
    if not results:
        return "NO_RESULT", {}
    for r in results:
        if r["evaluation"]["status"] != "PASSED":
            return r["evaluation"]["status"], r
    return "PASSED", results[0]


def evaluate(binary: str, manifest: dict, entry: dict, device: str, root: str) -> dict:
    name = entry["name"]
    work = os.path.join(root, name)
    problem = os.path.join(work, manifest["problem"])
    os.makedirs(problem)
    for f in ("definition.json", "workload.jsonl"):
        shutil.copy(os.path.join(REPO, "problems", manifest["problem"], f), problem)
    cache, staging = os.path.join(work, "cache"), os.path.join(work, "staging")
    os.makedirs(cache)
    os.makedirs(staging)
    run_id = uuid.uuid4().hex[:12]
    subst = {"@PROBLEM_DIR@": problem, "@CACHE_DIR@": cache, "@RUN_ID@": run_id}

    def fill(text: str) -> str:
        for k, v in subst.items():
            text = text.replace(k, v)
        return text

    for d in entry.get("mkdirs", []):
        os.makedirs(fill(d), exist_ok=True)
    sol = json.load(open(os.path.join(HERE, name, "solution.json")))
    for s in sol["sources"]:
        s["content"] = fill(s["content"])
    sol_path = os.path.join(work, "solution.json")
    json.dump(sol, open(sol_path, "w"), indent=2)
    before = {f: open(os.path.join(problem, f), "rb").read()
              for f in ("definition.json", "workload.jsonl")}
    cmd = [binary, "eval", problem, "-s", sol_path, *manifest["flags"],
           "--smallest", str(entry.get("workloads", 1)), "--no-db", "--no-baseline", "--json",
           "--timeout", "120", "--device", device]
    if device.startswith("cuda") and entry["kind"].startswith("cuda") and "--cuda-arch" not in cmd:
        cmd += ["--cuda-arch", os.environ.get("SOLBENCH_HACK_CUDA_ARCH", "auto")]
    env = dict(os.environ, SOLBENCH_CACHE_DIR=cache, SOLBENCH_STAGING_DIR=staging)
    t0 = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    wall = time.monotonic() - t0
    try:
        doc = json.loads(p.stdout)
    except ValueError:
        doc = {}
    status, result = measured_status(doc)
    ev = result.get("evaluation", {}) if result else {}
    perf = ev.get("performance") or {}
    log = ev.get("log", "") if ev else (p.stderr[-2000:] or p.stdout[-2000:])
    problems = []
    for a in entry.get("absent", []):
        if os.path.exists(fill(a)):
            problems.append(f"{fill(a)} exists")
    for f, data in before.items():
        if open(os.path.join(problem, f), "rb").read() != data:
            problems.append(f"{f} of the problem copy changed")
    log_ok = not entry.get("log_any") or any(s in log for s in entry["log_any"])
    return {"name": name, "expected": entry["expected"], "measured": status,
            "log_ok": log_ok, "problems": problems, "log": log,
            "latency_ms": perf.get("latency_ms"),
            "reference_latency_ms": perf.get("reference_latency_ms"),
            "speedup": perf.get("speedup_factor"), "wall_s": round(wall, 2),
            "build": doc.get("build"), "exit_code": p.returncode,
            "import_violations": [v.get("symbol") for v in
                                  ((doc.get("build") or {}).get("import_violations") or [])]}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", default=os.path.join(REPO, "build", "src", "cli", "solbench"))
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--gpu-only", action="store_true", help="the gpu_only entries instead")
    ap.add_argument("--names", default="", help="comma-separated entry names")
    ap.add_argument("--jobs", type=int, default=3)
    ap.add_argument("--json", default="")
    ap.add_argument("--markdown", action="store_true")
    a = ap.parse_args()
    manifest = json.load(open(os.path.join(HERE, "manifest.json")))
    entries = [e for e in manifest["entries"] if e["gpu_only"] == a.gpu_only]
    if a.names:
        wanted = set(a.names.split(","))
        entries = [e for e in manifest["entries"] if e["name"] in wanted]
    root = tempfile.mkdtemp(prefix="solbench-hacks-")
    t0 = time.monotonic()
    try:
        with cf.ThreadPoolExecutor(max_workers=max(1, a.jobs)) as pool:
            results = list(pool.map(lambda e: evaluate(a.binary, manifest, e, a.device, root),
                                    entries))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    total = time.monotonic() - t0
    by_name = {e["name"]: e for e in manifest["entries"]}
    bad = 0
    for r in results:
        e = by_name[r["name"]]
        ok = r["measured"] == r["expected"] and r["log_ok"] and not r["problems"]
        r["ok"] = ok
        r["known_gap"] = e.get("known_gap", "")
        if not ok and not r["known_gap"]:
            bad += 1
        if a.markdown:
            lat = f"{r['latency_ms']:.4f}" if r["latency_ms"] else "-"
            print(f"| {r['name']} | {e['kind']} | {e['class']} | {r['expected']} | "
                  f"{r['measured']} | {lat} |")
        else:
            flag = "ok " if ok else ("GAP" if r["known_gap"] else "BAD")
            print(f"{flag} {r['name']:34s} expected {r['expected']:20s} measured "
                  f"{r['measured']:20s} lat={r['latency_ms']} ref={r['reference_latency_ms']} "
                  f"{r['wall_s']}s {'' if r['log_ok'] else '[log mismatch] '}"
                  f"{'; '.join(r['problems'])}")
            if not ok:
                print("    log: " + r["log"][:600].replace("\n", "\n         "))
    print(f"{len(results)} entries in {total:.1f} s, {bad} unexpected", file=sys.stderr)
    if a.json:
        json.dump({"device": a.device, "seconds": total, "results": results},
                  open(a.json, "w"), indent=2)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
