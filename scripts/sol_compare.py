#!/usr/bin/env python3
"""Compares `solbench sol --arch B200 --json` results with the published SOLAR
bounds (metadata.json beside each public problem) and prints a markdown report.

Usage: sol_compare.py RESULTS_JSON PUBLIC_DIR [--fail-on-violations]
RESULTS_JSON is a JSON list of solbench outputs (scripts/sol_public.sh writes it)
or one `solbench sol --json` output.
Self-contained (standard library only) so it runs on any machine.

Lower-bound check: T_SOL is a lower bound on any kernel's time, so it must never
exceed the *measured* baseline latency of the same workload on the same GPU
(`baseline_latency_ms` in metadata.json, measured on a B200). Every workload
where ours is higher is listed as a violation (a bug in the bound: work or bytes
counted that a kernel can avoid); --fail-on-violations makes them exit 1.
"""
import json
import os
import statistics
import sys
from collections import Counter, defaultdict

# SOLAR's B200 configuration (sol.md): 1.5 GHz, 603,751 BF16 MACs/clk, 8 TB/s.
SOLAR_BF16 = 603751 * 2 * 1.5e9
OUR_BF16 = 2250e12
B200_DRAM = 8e12


def quantiles(xs):
    xs = sorted(xs)
    if not xs:
        return {}
    q = lambda p: xs[min(len(xs) - 1, int(round(p * (len(xs) - 1))))]
    return {"min": xs[0], "p10": q(.1), "p25": q(.25), "median": q(.5), "p75": q(.75),
            "p90": q(.9), "max": xs[-1]}


def reason(ours, pub_ms):
    """A first explanation from the numbers; docs/sol-vs-published.md refines it."""
    t = ours["time_us"]
    r = t["sol"] / (pub_ms * 1e3)
    b = ours["bottleneck"]
    pub_bytes_mb = pub_ms * 1e-3 * B200_DRAM / 1e6
    min_mb = ours["bytes"]["min_mb"]
    if r < 0.75:
        if b == "tensor":
            return (f"tensor-bound; datasheet peak is {OUR_BF16 / SOLAR_BF16:.2f}x SOLAR's 1.5 GHz rate"
                    f"{'' if r > 0.7 else '; SOLAR also counts more MACs'}")
        if b == "dram":
            return (f"memory-bound on {min_mb:.2f} MB of boundary I/O; the published time equals "
                    f"{pub_bytes_mb:.2f} MB at 8 TB/s (SOLAR counts intermediates/extra traffic or a compute term)")
        return f"{b}-bound here; SOLAR binds elsewhere"
    if r > 1.25:
        terms = ", ".join(f"{k} {t[k]:.2f}us" for k in ("tensor", "cuda", "sfu", "dram"))
        return f"ours higher: {b}-bound ({terms}); SOLAR has no SFU term and counts CUDA-core work at 1.5 GHz x 40,251 MAC/clk"
    return ""


# Why ours and the published bound differ by more than 1.25x either way, by
# rule (docs/sol-vs-published.md, "Why the two bounds differ"). rule_of()
# tests them in order on one workload's numbers; "?" is a difference no rule
# explains.
RULES = {
    "1": "compute peaks: datasheet tensor peak 1.24x SOLAR's (tensor-bound, 0.7-0.8); "
         "FP32 CUDA-core peak 80 TFLOP/s below SOLAR's 120.7 (CUDA-core-bound, above)",
    "2": "no floor: a small workload (published at most 1 us) whose published bound is at least "
         "0.3 us above ours; SOLAR's smallest value is 0.4 us, ours has no fixed latency",
    "3": "boundary I/O above what the published time moves at 8 TB/s (DRAM-bound, above)",
    "4": "SFU term, which SOLAR lacks (SFU-bound, above)",
    "5": "causal masks: masked scores not computed (below)",
    "6": "inputs read in part (gathers, selections, slices, experts no token is routed to, "
         "unused inputs, in-place writes): with every input and output moved once, ours would "
         "be within 1.25x (below)",
    "7": "writes the L2 holds are not charged to DRAM: with them, ours would be within 1.25x "
         "(below)",
    "8": "SOLAR counts intermediate traffic: the published time lies between our fused and "
         "unfused bytes at 8 TB/s (below)",
}


def rule_of(ours, pub_ms):
    """The rule behind a difference over 1.25x (RULES), "?" if none applies, or
    "" when ours is within 1.25x of the published bound."""
    pub_us = pub_ms * 1e3
    r = ours["time_us"]["sol"] / pub_us
    b = ours["bottleneck"]
    by = ours["bytes"]
    us_of = lambda mb: mb * 1e6 / B200_DRAM * 1e6  # microseconds to move `mb` MB
    if r > 1.25:
        return {"dram": "3", "sfu": "4", "cuda": "1"}.get(b, "?")
    if r >= 0.8:
        return ""
    if pub_us <= 1.0 + 1e-9 and pub_us - ours["time_us"]["sol"] >= 0.3 - 1e-9:
        return "2"
    if b == "tensor" and r >= 0.7:
        return "1"
    if us_of(by["min_mb"]) >= 0.8 * pub_us:
        return "7"
    if us_of(by["boundary_mb"]) >= 0.8 * pub_us:
        return "6"
    if any("causal" in o.get("note", "") for o in ours.get("ops", [])):
        return "5"
    if us_of(by["min_mb"]) < pub_us <= us_of(by["unfused_mb"]):
        return "8"
    return "?"


def lower_bound_violation(ours, baseline_ms):
    """(ours_us, baseline_us, ratio) when T_SOL exceeds the measured baseline, else None."""
    if not baseline_ms or baseline_ms <= 0:
        return None
    ours_us = ours["time_us"]["sol"]
    base_us = baseline_ms * 1e3
    return (ours_us, base_us, ours_us / base_us) if ours_us > base_us else None


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    fail_on_violations = "--fail-on-violations" in sys.argv[1:]
    if len(args) != 2:
        sys.exit(__doc__)
    results, public = args
    runs = json.load(open(results))
    if isinstance(runs, dict):
        runs = [runs]
    problems = []
    for run in runs:
        problems.extend(run.get("problems", []))
    total_defs = sorted(os.path.dirname(os.path.join(dp, "definition.json"))
                        for dp, _, fs in os.walk(public) if "definition.json" in fs)
    by_dir = {os.path.realpath(p["dir"]): p for p in problems}

    status = Counter()
    uncosted = Counter()
    ratios = []
    rows = []
    untraceable = []
    violations = []
    checked = 0
    by_rule = defaultdict(Counter)  # rule -> problem -> workloads beyond 1.25x
    for d in total_defs:
        name = os.path.relpath(d, public)
        meta_path = os.path.join(d, "metadata.json")
        meta = json.load(open(meta_path)) if os.path.exists(meta_path) else {}
        per_wl = meta.get("sol", {}).get("per_workload", [])
        pub = {w["index"]: w.get("sol_ms") for w in per_wl}
        base = {w["index"]: w.get("baseline_latency_ms") for w in per_wl}
        p = by_dir.get(os.path.realpath(d))
        if p is None or not p.get("workloads"):
            status["problem not run"] += 1
            rows.append((name, None, "not run", "", p.get("failure", "") if p else "missing from results"))
            continue
        pr = []
        reasons = Counter()
        last_reason = ""
        modes = Counter()
        why_not = Counter()
        rules = Counter()
        for w in p["workloads"]:
            st = w.get("status")
            status[st] += 1
            if st != "ok":
                why_not[(st, (w.get("reason") or "")[:160])] += 1
                continue
            modes[w.get("mode")] += 1
            for op, n in w.get("uncosted", {}).items():
                uncosted[op] += 1
            checked += 1 if base.get(w.get("index")) else 0
            v = lower_bound_violation(w, base.get(w.get("index")))
            if v:
                t = w["time_us"]
                terms = ", ".join(f"{k} {t[k]:.2f}" for k in ("tensor", "cuda", "sfu", "dram"))
                violations.append((name, w.get("index"), w.get("uuid", "")[:8], v, w.get("bottleneck"),
                                   terms, w["bytes"]["min_mb"], pub.get(w.get("index"))))
            ms = pub.get(w.get("index"))
            if not ms:
                continue
            r = w["time_us"]["sol"] / (ms * 1e3)
            pr.append(r)
            ratios.append(r)
            rule = rule_of(w, ms)
            if rule:
                rules[rule] += 1
                by_rule[rule][name] += 1
            rs = reason(w, ms)
            if rs:
                reasons[rs.split(";")[0]] += 1
                last_reason = rs
        if why_not and not pr:
            (st, msg), _ = why_not.most_common(1)[0]
            untraceable.append((name, st, msg))
        med = statistics.median(pr) if pr else None
        note = ""
        if med is not None and (med < 0.75 or med > 1.25):
            note = last_reason
        elif why_not:
            (st, msg), n = why_not.most_common(1)[0]
            note = f"{n} workloads {st}: {msg}"
        mode = "/".join(sorted(m for m in modes if m))
        rule_s = ", ".join(f"{k}: {v}" for k, v in sorted(rules.items()))
        rows.append((name, med, mode, rule_s, note))

    out = []
    out.append("# solbench SOL vs published SOLAR bounds (B200)\n")
    n_w = sum(status.values())
    bounded_problems = sum(1 for r in rows if r[1] is not None)
    out.append(f"- problems: {len(total_defs)}; with at least one bounded workload: {bounded_problems}")
    out.append(f"- workloads: {n_w}; " + ", ".join(f"{k}: {v}" for k, v in sorted(status.items())))
    out.append(f"- workloads with uncosted operators: {sum(uncosted.values()) and len([1 for p in problems for w in p.get('workloads', []) if w.get('uncosted')])}")
    if uncosted:
        out.append("- uncosted operators (workloads): " + ", ".join(f"`{k}` ({v})" for k, v in uncosted.most_common()))
    out.append("")
    if ratios:
        q = quantiles(ratios)
        out.append(f"## ours / published over {len(ratios)} workloads\n")
        out.append("| min | p10 | p25 | median | p75 | p90 | max | geomean |")
        out.append("|---|---|---|---|---|---|---|---|")
        gm = statistics.geometric_mean([max(r, 1e-9) for r in ratios])
        out.append("| " + " | ".join(f"{q[k]:.3f}" for k in ("min", "p10", "p25", "median", "p75", "p90", "max"))
                   + f" | {gm:.3f} |")
        bins = Counter("< 0.75" if r < 0.75 else "> 1.25" if r > 1.25 else "0.75-1.25" for r in ratios)
        out.append("")
        out.append("within ±25%: {}; below 0.75: {}; above 1.25: {}\n".format(
            bins["0.75-1.25"], bins["< 0.75"], bins["> 1.25"]))
    out.append("## Lower-bound check: T_SOL vs the measured baseline\n")
    out.append(f"{checked} bounded workloads have a measured `baseline_latency_ms`; "
               f"T_SOL exceeds it in **{len(violations)}** (each one a bug in the bound).\n")
    if violations:
        out.append("| problem | workload | T_SOL us | baseline us | T_SOL / baseline | bound | terms (us) | min MB | published SOL us |")
        out.append("|---|---|---|---|---|---|---|---|---|")
        for name, idx, uuid, (o_us, b_us, r), b, terms, mb, pub_ms in violations:
            pub_s = "-" if not pub_ms else f"{pub_ms * 1e3:.2f}"
            out.append(f"| {name} | {idx} ({uuid}) | {o_us:.2f} | {b_us:.2f} | {r:.2f} | {b} | {terms} | {mb:.2f} | {pub_s} |")
        out.append("")
    beyond = sum(sum(c.values()) for c in by_rule.values())
    out.append("## Differences over 1.25x, by rule\n")
    out.append(f"{beyond} workloads are above 1.25x or below 0.8x of the published bound; the rule "
               "behind each (tested in this order on the workload's numbers, scripts/sol_compare.py "
               "rule_of):\n")
    out.append("| rule | workloads | problems (workloads) |")
    out.append("|---|---|---|")
    for k in sorted(by_rule, key=lambda k: (k == "?", k)):
        what = RULES.get(k, "no rule applies (unexplained)")
        probs = ", ".join(f"{n} ({c})" for n, c in sorted(by_rule[k].items()))
        out.append(f"| {k} {what} | {sum(by_rule[k].values())} | {probs} |")
    out.append("")
    out.append("## per problem (median ratio over its bounded workloads)\n")
    out.append("| problem | ours/published | trace mode | rules beyond 1.25x (workloads) | note (off by >25%, or not bounded) |")
    out.append("|---|---|---|---|---|")
    for name, med, mode, rule_s, note in rows:
        m = "-" if med is None else f"{med:.3f}"
        out.append(f"| {name} | {m} | {mode} | {rule_s} | {note.replace('|', '/')} |")
    if untraceable:
        out.append("\n## not bounded here\n")
        for name, st, msg in untraceable:
            out.append(f"- {name}: {st}: {msg}")
    print("\n".join(out))
    if violations:
        print(f"sol_compare: {len(violations)} workloads with T_SOL above the measured baseline",
              file=sys.stderr)
    return 1 if violations and fail_on_violations else 0


if __name__ == "__main__":
    sys.exit(main())
