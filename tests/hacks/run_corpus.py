#!/usr/bin/env python3
"""Evaluates hack-corpus entries through the real binary and prints the table.

The same evaluation as test_hack_corpus.cc (one private copy of the problem, cache
and staging folder per entry; placeholders substituted; the flags of manifest.json),
for people and for the GPU call, which runs the gpu_only entries:

    python3 tests/hacks/run_corpus.py --binary build/src/cli/solbench            # CPU entries
    python3 tests/hacks/run_corpus.py --binary ... --device cuda:0 --gpu-only    # on the GPU
    python3 tests/hacks/run_corpus.py --binary ... --names py_cache_values,cpp_honest
    python3 tests/hacks/run_corpus.py --binary ... --device cuda:0 --gpu-only \
        --peer .peer/peer --peer-wheels .peer/whl --table hacks-gpu.md   # + the peer's column

Options: --jobs N (evaluations at once, default 3), --json FILE (every result, logs
included), --markdown (the table of docs/anti-hack.md), --table FILE (the table with
the peer's column and the reasons, markdown), --deadline-s S (no evaluation starts
after S seconds; the rest are reported "not run"). An entry expected to PASS with
`honest_time_vs` / `honest_reference_vs` fails when its latency is below 0.3x its
twin's or its reference's above 3x the twin's reference (the twin is run too).

--peer DIR (the unpacked peer: DIR/sol-execbench/src) runs every entry again under
SOL-ExecBench's own CLI after solbench's evaluations, on the workloads solbench
evaluated (peer_column.py: conversion, what the peer cannot run, HACK_CORRECT_CALLS);
--peer-wheels DIR installs its wheels into --peer-site (default /tmp/peer-site) first;
--peer-jobs N (default --jobs); --peer-as-written keeps HACK_CORRECT_CALLS as written;
--skip-solbench runs the peer's column alone. The peer's statuses never change the
exit status: 0 when every solbench evaluation got its expected status, 1 otherwise.
Known gaps are reported, not failed.
"""
from __future__ import annotations

import argparse
import concurrent.futures as cf
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import peer_column

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


def evaluate(binary: str, manifest: dict, entry: dict, device: str, root: str,
             timeout_s: float = 900) -> dict:
    name = entry["name"]
    work = os.path.join(root, name)
    problem = os.path.join(work, manifest["problem"])
    os.makedirs(problem)
    for f in ("definition.json", "workload.jsonl"):
        shutil.copy(os.path.join(REPO, "problems", manifest["problem"], f), problem)
    cache, staging = os.path.join(work, "cache"), os.path.join(work, "staging")
    os.makedirs(cache)
    os.makedirs(staging)
    fill = peer_column.placeholders(problem, cache)
    sol_path = peer_column.write_solution(
        entry, json.load(open(os.path.join(HERE, name, "solution.json"))), work, fill)
    before = {f: open(os.path.join(problem, f), "rb").read()
              for f in ("definition.json", "workload.jsonl")}
    cmd = [binary, "eval", problem, "-s", sol_path, *manifest["flags"],
           "--smallest", str(entry.get("workloads", 1)), "--no-db", "--no-baseline", "--json",
           "--timeout", "120", "--device", device]
    if device.startswith("cuda") and entry["kind"].startswith("cuda") and "--cuda-arch" not in cmd:
        cmd += ["--cuda-arch", os.environ.get("SOLBENCH_HACK_CUDA_ARCH", "auto")]
    env = dict(os.environ, SOLBENCH_CACHE_DIR=cache, SOLBENCH_STAGING_DIR=staging)
    t0 = time.monotonic()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout_s)
    except subprocess.TimeoutExpired as e:
        p = subprocess.CompletedProcess(cmd, 124, "", f"killed after {timeout_s:.0f} s: "
                                        + str(e.stderr or "")[-1000:])
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
        for path in glob.glob(fill(a)):  # "*": one folder level (a content-keyed cache)
            problems.append(f"{path} exists")
            if path.startswith(("/tmp/solbench-hack-", "/dev/shm/solbench-hack-")):
                os.remove(path)  # outside the entry's folder
    for f, data in before.items():
        if open(os.path.join(problem, f), "rb").read() != data:
            problems.append(f"{f} of the problem copy changed")
    log_ok = not entry.get("log_any") or any(s in log for s in entry["log_any"])
    return {"name": name, "expected": entry["expected"], "measured": status,
            "log_ok": log_ok, "problems": problems, "log": log,
            "latency_ms": perf.get("latency_ms"),
            "reference_latency_ms": perf.get("reference_latency_ms"),
            "speedup": perf.get("speedup_factor"), "wall_s": round(wall, 2),
            "workloads": [r["workload"]["uuid"] for r in doc.get("results") or []
                          if (r.get("workload") or {}).get("uuid")],
            "build": doc.get("build"), "exit_code": p.returncode,
            "import_violations": [v.get("symbol") for v in
                                  ((doc.get("build") or {}).get("import_violations") or [])]}


def twin_problems(r: dict, e: dict, by_result: dict) -> list[str]:
    """For an entry expected to PASS: a faked time (below 0.3x its honest twin's) or a
    slowed reference (above 3x the reference beside the twin), as the ctest asserts."""
    out = []
    if r["measured"] != "PASSED" or e["expected"] != "PASSED":
        return out
    twin = by_result.get(e.get("honest_time_vs", ""))
    if twin and r["latency_ms"] and twin["latency_ms"] and \
            r["latency_ms"] < 0.3 * twin["latency_ms"]:
        out.append(f"latency {r['latency_ms']:.4f} ms < 0.3x its twin {twin['name']}'s "
                   f"{twin['latency_ms']:.4f} ms (a faked time)")
    twin = by_result.get(e.get("honest_reference_vs", ""))
    if twin and r["reference_latency_ms"] and twin["reference_latency_ms"] and \
            r["reference_latency_ms"] > 3.0 * twin["reference_latency_ms"]:
        out.append(f"reference {r['reference_latency_ms']:.4f} ms > 3x the reference beside "
                   f"{twin['name']} ({twin['reference_latency_ms']:.4f} ms): a slowed reference")
    return out


def run_pool(fn, items, jobs: int, deadline: float):
    """fn(item, seconds_left) for each item, `jobs` at a time; an item whose turn comes
    after the deadline gets None."""
    def one(item):
        left = deadline - time.monotonic()
        return None if left <= 0 else fn(item, left)
    with cf.ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        return list(pool.map(one, items))


def cell_speedup(x: dict | None) -> str:
    if not x or x.get("speedup") is None or not x.get("latency_ms"):
        return "-"
    return f"{x['speedup']:.2f} ({1e3 * x['latency_ms']:.1f} µs)"


def stand_ins(entries: list) -> dict:
    """class -> the entry the peer can run for it (a torch-binding one first: the
    native entries' closest kin)."""
    out = {}
    for e in sorted(entries, key=lambda e: e["kind"] != "cuda_torch"):
        if e["kind"] not in peer_column.NOT_IN_PEER:
            out.setdefault(e["class"], e["name"])
    return out


def peer_cell(p: dict | None, e: dict, stand_in: dict) -> str:
    if p is None:
        return "not run (time limit)"
    if p["status"] == "n/a":
        s = p["why"]
        if stand_in.get(e["class"]):
            s = s[:-1] + f"; the class runs as `{stand_in[e['class']]}`)"
        return s
    s = p["status"]
    notes = []
    if p["tuned"]:
        notes.append(f"HACK_CORRECT_CALLS={peer_column.PEER_CORRECT_CALLS}")
    if p["planted"]:
        notes.append("planted: " + ", ".join(p["planted"]))
    return s + (f" ({'; '.join(notes)})" if notes else "")


def write_table(path: str, entries: list, results: dict, peer: dict, device: str,
                seconds: dict) -> None:
    stand_in = stand_ins(entries)
    lines = [f"Device {device}; solbench {seconds.get('solbench', 0):.0f} s, peer "
             f"{seconds.get('peer', 0):.0f} s. Speedup = T_ref / T_k (latency of the first "
             "workload in brackets); \"-\" where the status is not PASSED.", "",
             "| entry | kind | class | expected | solbench | peer (SOL-ExecBench) | "
             "speedup solbench / peer |", "|---|---|---|---|---|---|---|"]
    reasons = []
    for e in entries:
        r, p = results.get(e["name"]), peer.get(e["name"]) if peer is not None else None
        if r is None:
            sb = "not run (time limit)" if "solbench" in seconds else "not run"
        else:
            sb = r["measured"] + ("" if r["ok"] else (" (known gap)" if r["known_gap"]
                                                       else " **unexpected**"))
            if r["problems"]:
                sb += " (" + "; ".join(r["problems"]) + ")"
        pc = peer_cell(p, e, stand_in) if peer is not None else "not run"
        lines.append(f"| `{e['name']}` | {e['kind']} | {e['class']} | {e['expected']} | {sb} | "
                     f"{pc} | {cell_speedup(r)} / {cell_speedup(p)} |")
        why_sb = (r["log"] or "").strip().replace("\n", " ")[:220] if r and r["measured"] != "PASSED" else ""
        why_p = (p or {}).get("why", "") if p and p["status"] not in ("PASSED", "n/a") else ""
        if why_sb or why_p:
            reasons.append(f"- `{e['name']}`: solbench: {why_sb or '-'}; peer: {why_p or '-'}")
    text = "\n".join(lines) + "\n"
    if reasons:
        text += "\nReasons (the deciding workload's log, shortened):\n\n" + "\n".join(reasons) + "\n"
    with open(path, "w") as f:
        f.write(text)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", default=os.path.join(REPO, "build", "src", "cli", "solbench"))
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--gpu-only", action="store_true", help="the gpu_only entries instead")
    ap.add_argument("--names", default="", help="comma-separated entry names")
    ap.add_argument("--jobs", type=int, default=3)
    ap.add_argument("--json", default="")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--table", default="", help="markdown table with the peer's column")
    ap.add_argument("--deadline-s", type=float, default=0, help="start nothing after S seconds")
    ap.add_argument("--peer", default="", help="the unpacked peer (DIR/sol-execbench/src)")
    ap.add_argument("--peer-wheels", default="", help="the peer's wheels, installed first")
    ap.add_argument("--peer-site", default="/tmp/peer-site")
    ap.add_argument("--peer-jobs", type=int, default=0)
    ap.add_argument("--peer-as-written", action="store_true")
    ap.add_argument("--skip-solbench", action="store_true")
    a = ap.parse_args()
    # The peer runs in each entry's folder: its paths must not be relative.
    a.peer, a.peer_site = (os.path.abspath(x) if x else x for x in (a.peer, a.peer_site))
    a.peer_wheels = os.path.abspath(a.peer_wheels) if a.peer_wheels else ""
    manifest = json.load(open(os.path.join(HERE, "manifest.json")))
    by_name = {e["name"]: e for e in manifest["entries"]}
    entries = [e for e in manifest["entries"] if e["gpu_only"] == a.gpu_only]
    if a.names:
        wanted = set(a.names.split(","))
        entries = [e for e in manifest["entries"] if e["name"] in wanted]
    # The honest twins that PASSED entries are compared with run too.
    twins = {e.get(k) for e in entries for k in ("honest_time_vs", "honest_reference_vs")}
    entries += [by_name[t] for t in sorted(twins - {e["name"] for e in entries} - {None})]
    t_start = time.monotonic()
    deadline = t_start + a.deadline_s if a.deadline_s > 0 else float("inf")
    root = tempfile.mkdtemp(prefix="solbench-hacks-")
    seconds, peer = {}, None
    try:
        results = []
        if not a.skip_solbench:
            # Torch-binding builds first: the slowest, they overlap the rest.
            order = sorted(entries, key=lambda e: not e["kind"].endswith("_torch"))
            got = run_pool(lambda e, left: evaluate(a.binary, manifest, e, a.device, root,
                                                    min(900, left + 60)),
                           order, a.jobs, deadline)
            rank = {e["name"]: k for k, e in enumerate(entries)}
            results = sorted((r for r in got if r is not None), key=lambda r: rank[r["name"]])
            seconds["solbench"] = time.monotonic() - t_start
        if a.peer:
            t_peer = time.monotonic()
            problem = a.peer_wheels and peer_column.install(a.peer_wheels, a.peer_site)
            if problem:
                print("peer wheels: install failed: " + problem, file=sys.stderr)
            uuids = {r["name"]: r.get("workloads") for r in results}
            order = sorted(entries, key=lambda e: e["kind"] != "cuda_torch")
            got = run_pool(lambda e, left: peer_column.evaluate(
                a.peer, a.peer_site, manifest, e, root, uuids.get(e["name"]) or None,
                a.peer_as_written, min(900, left + 60)), order, a.peer_jobs or a.jobs, deadline)
            peer = {e["name"]: g for e, g in zip(order, got) if g is not None}
            seconds["peer"] = time.monotonic() - t_peer
    finally:
        shutil.rmtree(root, ignore_errors=True)
    total = time.monotonic() - t_start
    by_result = {r["name"]: r for r in results}
    bad = 0
    for r in results:
        e = by_name[r["name"]]
        r["problems"] += twin_problems(r, e, by_result)
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
    not_run = [e["name"] for e in entries if e["name"] not in by_result]
    if not a.skip_solbench and not_run:
        bad += len(not_run)
        print("not run (time limit): " + ", ".join(not_run))
    for name, p in (peer or {}).items():
        print(f"peer {name:34s} {p['status']:20s} speedup={p['speedup']} lat={p['latency_ms']} "
              f"{p['wall_s']}s {p['why'][:160]}")
    print(f"{len(results)} entries in {total:.1f} s, {bad} unexpected"
          + (f"; peer: {len(peer)} in {seconds['peer']:.1f} s" if peer is not None else ""),
          file=sys.stderr)
    if a.json:
        json.dump({"device": a.device, "seconds": total, "phases_s": seconds, "results": results,
                   "peer": peer}, open(a.json, "w"), indent=2)
    if a.table:
        write_table(a.table, entries, by_result, peer, a.device, seconds)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
