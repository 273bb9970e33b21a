#!/usr/bin/env python3
"""`solbench eval --profile` beside Nsight Compute, and what --profile costs (issue #30
items 4 and 5). On the GPU machine, for one problem, solution and workload:

  1. `eval --profile --json` once: the profile's kernels, counters and verdict;
  2. `eval --json` twice without it: T_k and wall time, to show that the default path
     is unchanged (T_k within noise) and what --profile added;
  3. ncu on the same kernels: per kernel gpu__time_duration.sum, dram__bytes_read.sum
     and dram__bytes_write.sum, either through bench/gpu_kernel_driver.py (native,
     torch-binding and Python solutions: `--ncu driver`, NVTX range "solution") or on
     the eval itself
     (`--ncu eval`: --target-processes all, kernels filtered by the names the profile
     found, no sandbox, since ncu injects itself into the workers);

and prints the side-by-side table (deviations in %, 5% the issue's bar). Writes every
raw output under --out.

    python3 bench/profile_vs_ncu.py --solbench SB --problem DIR --solution S.json \\
        --workload UUID --out DIR [--ncu driver|eval|none] [--calls N]
"""
import argparse
import json
import os
import pathlib
import re
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
METRICS = ["gpu__time_duration.sum", "dram__bytes_read.sum", "dram__bytes_write.sum"]
SCALE = {"nsecond": 1.0, "ns": 1.0, "usecond": 1e3, "us": 1e3, "msecond": 1e6, "ms": 1e6,
         "second": 1e9, "byte": 1.0, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "KB": 1e3,
         "MB": 1e6, "GB": 1e9, "B": 1.0}


def sh(cmd, out: pathlib.Path, env=None, timeout=600):
    t0 = time.time()
    try:
        p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, env=env,
                           timeout=timeout)
        rc, so, se = p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired as e:
        rc, so, se = 124, e.stdout or "", (e.stderr or "") + "\n(timed out)"
        so = so.decode() if isinstance(so, bytes) else so
        se = se.decode() if isinstance(se, bytes) else se
    wall = time.time() - t0
    out.write_text(f"$ {' '.join(map(str, cmd))}\nrc={rc} wall={wall:.2f}s\n--- stdout\n{so}\n--- stderr\n{se}\n")
    return rc, so, se, wall


def eval_doc(a, extra, tag, out, env=None):
    rc, so, se, wall = sh([a.solbench, "eval", a.problem, "-s", a.solution, "-w", a.workload,
                           "--device", "cuda:0", "--json", "--no-db", *extra], out / f"{tag}.log",
                          env=env)
    try:
        doc = json.loads(so)
    except ValueError:
        doc = {}
    res = (doc.get("results") or [{}])[0]
    return rc, res.get("evaluation", {}), wall


def ncu_rows(so):
    """[(kernel name, {metric: value in ns or bytes})] per profiled kernel, in order."""
    header, rows, by_id = None, [], {}
    for line in so.splitlines():
        if not line.startswith('"'):
            continue
        cells = [c.strip('"') for c in re.findall(r'"((?:[^"]|"")*)"', line)]
        if header is None:
            header = cells
            continue
        rec = dict(zip(header, cells))
        m = rec.get("Metric Name")
        if m not in METRICS:
            continue
        key = rec.get("ID", str(len(by_id)))
        if key not in by_id:
            by_id[key] = (rec.get("Kernel Name", "?"), {})
            rows.append(by_id[key])
        v = float(rec["Metric Value"].replace(",", "")) * SCALE.get(rec.get("Metric Unit", ""), 1.0)
        by_id[key][1][m] = v
    return rows


def base_name(demangled):
    """`void ns::kernel<...>(args)` -> `kernel` (what ncu's -k matches by default)."""
    s = demangled.strip()
    if s.endswith(")"):  # drop the parameter list: from its matching "("
        depth = 0
        for i in range(len(s) - 1, -1, -1):
            depth += {")": 1, "(": -1}.get(s[i], 0)
            if depth == 0:
                s = s[:i]
                break
    out, depth = [], 0
    for ch in s:  # drop template arguments
        depth += {"<": 1, ">": -1}.get(ch, 0)
        if depth == 0 and ch != ">":
            out.append(ch)
    s = "".join(out).split("::")[-1].split()
    return s[-1] if s else demangled


def overhead(a, out):
    ws = [a.workload] + [w for w in a.overhead.split(",") if w]
    docs = {}
    for tag, extra in (("plain", []), ("profiled", ["--profile"])):
        args = [a.solbench, "eval", a.problem, "-s", a.solution, "--device", "cuda:0", "--json",
                "--no-db"]
        for w in ws:
            args += ["-w", w]
        rc, so, _, wall = sh(args + extra, out / f"overhead-{tag}.log")
        try:
            docs[tag] = (json.loads(so).get("results", []), wall)
        except ValueError:
            docs[tag] = ([], wall)
    print(f"   overhead over {len(ws)} workloads in one eval (wall s: plain {docs['plain'][1]:.1f}, "
          f"--profile {docs['profiled'][1]:.1f}):")
    for i in range(max(len(docs["plain"][0]), len(docs["profiled"][0]))):
        row = []
        for tag in ("plain", "profiled"):
            res = docs[tag][0]
            ev = res[i].get("evaluation", {}) if i < len(res) else {}
            row.append(((ev.get("solbench_timing") or {}).get("median_ms"),
                        (ev.get("solbench_profile") or {}).get("added_wall_ms")))
        uuid = (docs["plain"][0][i] if i < len(docs["plain"][0]) else {}).get("workload", {}).get("uuid", "?")
        print(f"     {uuid[:8]}: T_k plain {row[0][0]} ms, with --profile {row[1][0]} ms; "
              f"profile added {row[1][1]} ms")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--solbench", required=True)
    ap.add_argument("--problem", required=True)
    ap.add_argument("--solution", required=True)
    ap.add_argument("--workload", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--ncu", choices=["driver", "eval", "none"], default="driver")
    ap.add_argument("--calls", type=int, default=5)
    ap.add_argument("--profile-only", action="store_true",
                    help="skip the two evals without --profile (T_k and wall time side by side)")
    ap.add_argument("--overhead", default="",
                    help="more workloads (comma-separated uuid prefixes): one eval of all of them "
                         "with --profile and one without, T_k side by side; a workload after a "
                         "profiled one shows whether the profile pass disturbs later timing")
    a = ap.parse_args()
    out = pathlib.Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    name = pathlib.Path(a.solution).stem

    # Plain, profiled, plain: the first plain eval pays the build and the T_SOL trace
    # (cold caches), so the two after it compare like with like.
    skipped = (0, {}, 0.0)
    off = [skipped if a.profile_only else eval_doc(a, [], "plain1", out)]
    rc, prof_ev, prof_wall = eval_doc(a, ["--profile"], "profile", out)
    off.append(skipped if a.profile_only else eval_doc(a, [], "plain2", out))
    p = prof_ev.get("solbench_profile", {})
    tk = lambda ev: (ev.get("solbench_timing") or {}).get("median_ms")  # noqa: E731
    print(f"== {name} {a.workload[:8]}: status {prof_ev.get('status')} (rc {rc})")
    print(f"   verdict: {p.get('verdict')}")
    print(f"   T_k ms: off (cold) {tk(off[0][1])}, --profile {tk(prof_ev)}, off {tk(off[1][1])}")
    print(f"   eval wall s: off (cold) {off[0][2]:.2f}, --profile {prof_wall:.2f}, off {off[1][2]:.2f}; "
          f"profile's own added_wall_ms {p.get('added_wall_ms')}")
    rl = p.get("roofline") or {}
    print("   roofline: " + json.dumps({k: rl.get(k) for k in (
        "t_k_over_t_sol", "bytes_over_bound", "bytes_over_min", "dram_share_of_peak",
        "tensor_flops_over_bound", "tensor_share_of_peak", "fp32_share_of_peak", "intensity",
        "gaps_share_of_t_k")}))
    print(f"   counters: {json.dumps(p.get('counters', {}).get('reason') or 'allowed')}, replay "
          f"{p.get('counters', {}).get('replay')}, unavailable {p.get('counters', {}).get('unavailable')}")
    for k in p.get("activities", []):
        print(f"   trace: {k.get('duration_us', 0):10.2f} us gap {k.get('gap_before_us', 0):7.2f} us "
              f"grid {k.get('grid')} block {k.get('block')} {k.get('name', '')[:70]}")
    print(f"   span {p.get('span_us')} us busy {p.get('busy_us')} us gaps {p.get('gaps_us')} us "
          f"host {p.get('host_us')} us")
    ours = p.get("counters", {}).get("kernels", [])
    (out / "profile.json").write_text(json.dumps(p, indent=1))
    if a.overhead:
        overhead(a, out)
    if a.ncu == "none" or not ours:
        print("   ncu: not run" + ("" if ours else " (no counters from the profile)"))
        return
    env = dict(os.environ)
    if a.ncu == "driver":
        cmd = ["ncu", "--clock-control", "none", "--cache-control", "all", "--print-units", "base", "--nvtx",
               "--nvtx-include", "solution/", "--metrics", ",".join(METRICS), "--csv",
               sys.executable, ROOT / "bench/gpu_kernel_driver.py", "ncu", a.problem, a.solution,
               a.workload, "--calls", str(a.calls)]
    else:
        names = sorted({base_name(k["name"]) for k in ours})
        cmd = ["ncu", "--clock-control", "none", "--cache-control", "all", "--print-units", "base",
               "--target-processes", "all", "-k", "regex:" + "|".join(re.escape(n) for n in names),
               "--launch-count", str(a.calls * len(ours)), "--metrics", ",".join(METRICS), "--csv",
               a.solbench, "eval", a.problem, "-s", a.solution, "-w", a.workload, "--device",
               "cuda:0", "--no-db", "--no-baseline", "--no-sandbox", "--rounds", "1",
               "--time-budget-ms", "20"]
    nrc, nso, nse, nwall = sh(cmd, out / "ncu.log", env=env)
    rows = ncu_rows(nso)
    if not rows:
        print(f"   ncu: no kernel rows (rc {nrc}, {nwall:.0f} s): {nse.strip()[-300:]}")
        return
    # Per kernel position of one call, the mean over the profiled calls.
    k = len(ours)
    agg = [{m: [] for m in METRICS} for _ in range(k)]
    for i, (_, vals) in enumerate(rows[: (len(rows) // k) * k]):
        for m, v in vals.items():
            agg[i % k][m].append(v)
    print(f"   ncu: {len(rows)} kernel records ({nwall:.0f} s); per kernel, solbench vs ncu (mean):")
    worst = 0.0
    # Kernel replay's DRAM bytes, then the PM-sampled call's (bytes while it ran:
    # solbench's figure to compare with ncu's where the call is one kernel).
    pairs = list(zip(METRICS, ["duration_ns", "dram_read_bytes", "dram_write_bytes"])) + [
        ("dram__bytes_read.sum", "dram_read_bytes_during"),
        ("dram__bytes_write.sum", "dram_write_bytes_during")]
    for i, ok in enumerate(ours):
        for m, key in pairs:
            vs = agg[i][m]
            if not vs or ok.get(key) is None:
                continue
            n = sum(vs) / len(vs)
            dev = (ok[key] - n) / n if n else 0.0
            # Bytes below 1 MB are noise-level for a DRAM check (flushes, descriptors).
            # Replay's write count includes the write-back after the kernel: shown, but
            # the bar is on the sampled count where there is one.
            replay_writes = key == "dram_write_bytes" and ok.get("dram_write_bytes_during") is not None
            if (m == "gpu__time_duration.sum" or n >= 1e6) and not replay_writes:
                worst = max(worst, abs(dev))
            label = m + (" (during)" if key.endswith("_during") else "")
            print(f"     k{i} {label:33s} solbench {ok[key]:14.1f}  ncu {n:14.1f}  {100 * dev:+6.1f}%")
    # The traced call's kernel durations (CUPTI activity records, the breakdown's), which
    # are what the profile lists per kernel; the counter pass's gpu__time_duration is
    # that of a replayed kernel.
    acts = [x for x in p.get("activities", []) if x.get("kind", "kernel") == "kernel"]
    if len(acts) == k:
        for i, x in enumerate(acts):
            vs = agg[i]["gpu__time_duration.sum"]
            if vs and x.get("duration_us") is not None:
                n = sum(vs) / len(vs)
                dev = (x["duration_us"] * 1e3 - n) / n
                print(f"     k{i} traced call's duration   solbench {x['duration_us'] * 1e3:14.1f}  "
                      f"ncu {n:14.1f}  {100 * dev:+6.1f}%")
    print(f"   worst deviation {100 * worst:.1f}% ({'within' if worst <= 0.05 else 'OUTSIDE'} 5%)")


if __name__ == "__main__":
    main()
