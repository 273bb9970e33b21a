#!/usr/bin/env python3
"""Per-category table of a `solbench run` over a data set in the public layout, from its
results store, beside the data set's published B200 figures (metadata.json).

Usage: run_table.py DB DATASET_DIR [--solutions reference|all] [--tsol SOL_JSON]... [--anchor] [--json]

For every (definition, workload, solution) the latest trace in DB counts. Per category:
problems and workloads evaluated, statuses, mean SOL Score (a failed workload counts 0,
as in `solbench run`'s summary; the mean over PASSED ones beside it), and the medians of
T_b/T_SOL and T_ref/T_SOL on the GPU of the run, next to the published B200
baseline/SOL ratio of the same workloads. --tsol takes `solbench sol --json` outputs
(same hardware model as the run) and re-scores every trace with their T_SOL: the SOL
Score is S = 1 / (1 + (T_k - T_SOL) / (T_b - T_SOL)), 0 where T_b <= T_SOL unless
T_k <= T_SOL too (then 1), as `solbench eval` computes it. --anchor prints, per
problem and solution, the smallest T/T_SOL over its PASSED workloads (T = T_k, and T_b
for the baseline): a value below 1 is a bound above a measured time. Standard library
only.
"""
import argparse
import json
import os
import sqlite3
import statistics
import sys
from collections import defaultdict


def dataset_index(root):
    """definition name -> (category, {workload uuid: published {sol_ms, baseline_latency_ms}})."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        if "definition.json" not in filenames:
            continue
        with open(os.path.join(dirpath, "definition.json")) as f:
            name = json.load(f)["name"]
        rel = os.path.relpath(dirpath, root).split(os.sep)
        category = rel[0] if len(rel) > 1 else ""
        published = {}
        meta = os.path.join(dirpath, "metadata.json")
        wl = os.path.join(dirpath, "workload.jsonl")
        if os.path.exists(meta) and os.path.exists(wl):
            with open(meta) as f:
                per = (json.load(f).get("sol") or {}).get("per_workload") or []
            with open(wl) as f:
                uuids = [json.loads(line)["uuid"] for line in f if line.strip()]
            for p in per:
                i = p.get("index")
                if isinstance(i, int) and i < len(uuids):
                    published[uuids[i]] = p
        out[name] = (category, published)
    return out


def sol_score(t_k, t_sol, t_b):
    """S as score/sol_score.h computes it (None when an input is missing)."""
    if not t_k or not t_sol or not t_b:
        return None
    if t_b <= t_sol:
        return 1.0 if t_k <= t_sol else 0.0
    return 1.0 / (1.0 + (t_k - t_sol) / (t_b - t_sol))


def load_tsol(paths):
    """(definition name, workload uuid) -> T_SOL in ms, from `solbench sol --json` outputs."""
    out = {}
    for path in paths:
        with open(path) as f:
            doc = json.load(f)
        for p in doc.get("problems", []):
            for w in p.get("workloads", []):
                t = (w.get("time_us") or {}).get("sol")
                if w.get("status") == "ok" and t:
                    out[(p["name"], w["uuid"])] = t / 1000.0
    return out


def median(xs):
    return statistics.median(xs) if xs else None


def fmt(x, spec=".2f"):
    return "-" if x is None else format(x, spec)


def anchor_table(latest, index):
    """Smallest T/T_SOL per (problem, solution) and of its baseline, PASSED workloads only."""
    rows = defaultdict(lambda: {"tk": [], "tb": []})
    for (definition, _uuid, sol), r in latest.items():
        if r[3] != "PASSED" or not r[6]:
            continue
        key = (index[definition][0], definition, sol)
        if r[4]:
            rows[key]["tk"].append(r[4] / r[6])
        if r[7]:
            rows[key]["tb"].append(r[7] / r[6])
    print("| category | problem | solution | workloads | min T_k/T_SOL | min T_b/T_SOL |")
    print("|---|---|---|---:|---:|---:|")
    below = 0
    for (cat, definition, sol), v in sorted(rows.items()):
        lo_k = min(v["tk"]) if v["tk"] else None
        lo_b = min(v["tb"]) if v["tb"] else None
        below += sum(1 for x in v["tk"] + v["tb"] if x < 1.0)
        print(f"| {cat} | {definition} | {sol.split('/')[-1] if sol.endswith('/reference') else sol} "
              f"| {len(v['tk'])} | {fmt(lo_k)} | {fmt(lo_b)} |")
    print(f"\nmeasured times below T_SOL: {below}")
    return 1 if below else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("db")
    ap.add_argument("dataset")
    ap.add_argument("--solutions", choices=["reference", "all"], default="reference",
                    help="the references evaluated as solutions (run --reference), or every solution")
    ap.add_argument("--tsol", action="append", default=[],
                    help="`solbench sol --json` output whose T_SOL re-scores the traces")
    ap.add_argument("--anchor", action="store_true",
                    help="per problem and solution: the smallest T/T_SOL (T_k, and T_b)")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    index = dataset_index(a.dataset)
    tsol = load_tsol(a.tsol)
    con = sqlite3.connect(f"file:{a.db}?mode=ro", uri=True)
    rows = con.execute(
        "SELECT t.definition, t.workload_uuid, s.name, t.status, t.latency_ms, "
        "t.reference_latency_ms, t.t_sol_ms, t.t_b_ms, t.sol_score, t.id "
        "FROM traces t JOIN solutions s ON s.hash = t.solution_hash ORDER BY t.id").fetchall()
    latest = {}
    for r in rows:
        if r[0] not in index:
            continue
        if a.solutions == "reference" and not r[2].endswith("/reference"):
            continue
        r = list(r)
        if (r[0], r[1]) in tsol:  # re-scored with the given bound
            r[6] = tsol[(r[0], r[1])]
            if r[3] == "PASSED":
                r[8] = sol_score(r[4], r[6], r[7])
        latest[(r[0], r[1], r[2])] = r
    if a.anchor:
        return anchor_table(latest, index)
    cats = defaultdict(lambda: defaultdict(list))
    for (definition, uuid, _sol), r in latest.items():
        category, published = index[definition]
        c = cats[category]
        c["problems"].append(definition)
        c["status"].append(r[3])
        score = r[8] if r[3] == "PASSED" and r[8] is not None else (0.0 if r[3] != "PASSED" else None)
        if score is not None:
            c["score"].append(score)
        if r[3] == "PASSED" and r[8] is not None:
            c["score_passed"].append(r[8])
        t_sol, t_b, t_ref = r[6], r[7], r[5]
        if r[3] == "PASSED" and t_sol and t_b:
            c["tb_tsol"].append(t_b / t_sol)
            if t_b <= t_sol:
                c["tb_below_tsol"].append(definition)
        if r[3] == "PASSED" and t_sol and t_ref:
            c["tref_tsol"].append(t_ref / t_sol)
        p = published.get(uuid)
        if p and p.get("sol_ms") and p.get("baseline_latency_ms"):
            c["pub_tb_tsol"].append(p["baseline_latency_ms"] / p["sol_ms"])
    table = []
    total = defaultdict(list)
    for category in sorted(cats):
        c = cats[category]
        for k, v in c.items():
            total[k].extend(v)
        table.append((category, c))
    table.append(("all", total))
    doc = []
    for category, c in table:
        statuses = defaultdict(int)
        for s in c["status"]:
            statuses[s] += 1
        doc.append({
            "category": category,
            "problems": len(set(c["problems"])),
            "workloads": len(c["status"]),
            "statuses": dict(statuses),
            "mean_sol_score": statistics.mean(c["score"]) if c["score"] else None,
            "mean_sol_score_passed": statistics.mean(c["score_passed"]) if c["score_passed"] else None,
            "median_tb_over_tsol": median(c["tb_tsol"]),
            "median_tref_over_tsol": median(c["tref_tsol"]),
            "published_b200_median_tb_over_tsol": median(c["pub_tb_tsol"]),
            "tb_at_or_below_tsol": len(c["tb_below_tsol"]),
        })
    if a.json:
        print(json.dumps(doc, indent=2))
        return 0
    print("| category | problems | workloads | PASSED | mean S (failed = 0) | mean S (PASSED) "
          "| median T_b/T_SOL | median T_ref/T_SOL | published B200 median T_b/T_SOL | T_b <= T_SOL |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for d in doc:
        print(f"| {d['category']} | {d['problems']} | {d['workloads']} | "
              f"{d['statuses'].get('PASSED', 0)} | {fmt(d['mean_sol_score'], '.3f')} | "
              f"{fmt(d['mean_sol_score_passed'], '.3f')} | {fmt(d['median_tb_over_tsol'], '.1f')} | "
              f"{fmt(d['median_tref_over_tsol'], '.1f')} | "
              f"{fmt(d['published_b200_median_tb_over_tsol'], '.1f')} | {d['tb_at_or_below_tsol']} |")
    others = {s for d in doc for s in d["statuses"] if s != "PASSED"}
    if others:
        print("\nNot PASSED: " + ", ".join(
            f"{d['category']}: " + ", ".join(f"{n} {s}" for s, n in sorted(d["statuses"].items())
                                            if s != "PASSED")
            for d in doc[:-1] if any(s != "PASSED" for s in d["statuses"])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
