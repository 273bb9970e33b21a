#!/usr/bin/env bash
# Validation of issue #5 item 6 on the GPU machine, in one script:
#   build (-j16) + ctest, then
#   a. timer fidelity: solbench's median with `--timer profiler` (ncu's counter) vs
#      `ncu --clock-control none` gpu__time_duration for a 1 GiB copy, a bf16 cuBLAS
#      GEMM 8192^3 and a ~5 us kernel (within 3%); the default timer beside it;
#   b. repeatability: five evaluations of one solution, coefficient of variation < 2%;
#   c. SOL sanity: measured / T_SOL of `solbench sol` (copy 1.0-1.3, GEMM 1.0-1.6);
#   d. every bundled problem's reference and GPU solutions PASSED (+ public
#      references through scripts/eval_public_refs.sh when present);
#   e. a side-stream solution is timed with its work;
#   f. an illegal address in one workload leaves the others PASSED.
# Prints a table and writes $OUT/validation.json and $OUT/validation.md (OUT
# defaults to /tmp/solbench-validate). Pieces that are missing (no `eval` on cuda,
# no ncu, no `sol`) are reported as SKIPPED with the reason, never as passed.
#
#   s. the CUDA driver works under the worker sandbox (tests/gpu/sandbox_cuda_probe);
#   o. CUPTI's host cost per launch under each collector setting (measurements only);
#   t. the ~5 us kernel against its own clock (%globaltimer stamps, bench/timer_probe):
#      how much each tool adds around the kernel's execution.
#
#   x. issue #12: every peer example, pytorch solutions with Triton / torch.compile,
#      and solbench beside the peer (scripts/gpu_compat.sh, which says what it needs).
#
#   h. issue #14 item 7: the hack corpus's gpu_only entries (tests/hacks) under solbench,
#      then under the peer (.peer/peer with its wheels .peer/whl, scripts/fetch_peer.sh;
#      left out, and said so, without them): $OUT/hacks-gpu.md (the table of both
#      columns and the reasons), hacks-gpu.json, hacks-gpu.log. HACK_JOBS (3) evaluations
#      at once; nothing starts after HACK_BUDGET_S (420) seconds; HACK_PARTS
#      (default "solbench peer") runs one column alone.
#
#   scripts/gpu_validate.sh [--skip-build] [--no-ctest] [--items soatbcdefxh]
# Environment: BUILD_DIR (default build-device), SOLBENCH_EVAL_FLAGS (extra flags
# for every `solbench eval`), SOLBENCH_ARCH (default h100_sxm), PUBLIC_DATA (default
# ../shared/sol-execbench), PUBLIC_JOBS (4), PUBLIC_BUDGET_S (1500).
set -uo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-/tmp/solbench-validate}"
mkdir -p "$out"
skip_build=0
run_ctest=1
items=soatbcdef
while [ $# -gt 0 ]; do
  case "$1" in
    --skip-build) skip_build=1; shift ;;
    --no-ctest) run_ctest=0; shift ;;
    --items) items="$2"; shift 2 ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) echo "usage: $0 [--skip-build] [--no-ctest] [--items soatbcdef]" >&2; exit 2 ;;
  esac
done
build="${BUILD_DIR:-build-device}"
py="$(command -v python3)"
if [ -d .deps ]; then source scripts/device_env.sh; fi

build_status="skipped"
if [ "$skip_build" = 0 ]; then
  if cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPython3_EXECUTABLE="$py" \
       >"$out/build.log" 2>&1 && ninja -C "$build" -j16 solbench gpu_tests sandbox_cuda_probe timer_probe >>"$out/build.log" 2>&1; then
    build_status="ok"
    ninja -C "$build" -j16 -k 0 >>"$out/build.log" 2>&1 || build_status="ok (some other targets failed)"
  else
    echo "BUILD FAILED"; tail -40 "$out/build.log"; exit 1
  fi
fi
ctest_summary="skipped"
if [ "$run_ctest" = 1 ]; then
  ctest --test-dir "$build" -j4 --timeout 900 --output-on-failure >"$out/ctest.log" 2>&1
  ctest_summary="$(grep -E 'tests passed|tests failed' "$out/ctest.log" | tail -1)"
  echo "ctest: $ctest_summary"
fi

export SB="$build/src/cli/solbench" OUTDIR="$out" ITEMS="$items" BUILD_STATUS="$build_status" \
  CTEST_SUMMARY="$ctest_summary"
python3 - <<'PY'
import json, os, re, shlex, statistics, subprocess, sys, time, datetime, pathlib

SB, OUT, ITEMS = os.environ["SB"], pathlib.Path(os.environ["OUTDIR"]), os.environ["ITEMS"]
FLAGS = shlex.split(os.environ.get("SOLBENCH_EVAL_FLAGS", ""))
ARCH = os.environ.get("SOLBENCH_ARCH", "h100_sxm")
T = "tests/gpu/problems"
COPY, SCALE, GEMM = f"{T}/copy_1gib", f"{T}/scale_5us", f"{T}/gemm_bf16_8192"
log = open(OUT / "validate.log", "w")
rows, report = [], {"date": datetime.datetime.utcnow().isoformat() + "Z",
                    "build": os.environ["BUILD_STATUS"], "ctest": os.environ["CTEST_SUMMARY"]}


def sh(cmd, timeout=900, env=None):
    log.write("$ " + " ".join(cmd) + "\n"); log.flush()
    t0 = time.time()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                           env=None if env is None else {**os.environ, **env})
    except subprocess.TimeoutExpired:
        return 124, "", "timeout", time.time() - t0
    log.write(p.stderr[-4000:] + "\n")
    return p.returncode, p.stdout, p.stderr, time.time() - t0


def uuid_where(problem, **axes):
    for line in open(f"{problem}/workload.jsonl"):
        w = json.loads(line)
        if all(w["axes"].get(k) == v for k, v in axes.items()):
            return w["uuid"]
    raise KeyError(axes)


def evaluate(problem, solution=None, workloads=(), extra=(), env=None):
    cmd = [SB, "eval", problem, "--device", "cuda:0", "--json"] + FLAGS + list(extra)
    cmd += ["--reference"] if solution is None else ["--solution", solution]
    for w in workloads:
        cmd += ["--workload", w]
    rc, so, se, secs = sh(cmd, env=env)
    try:
        d = json.loads(so)
    except ValueError:
        raise RuntimeError(f"`solbench eval` gave no JSON (rc {rc}): {se.strip()[-300:]}")
    return d


def status_of(d):
    return [r["evaluation"]["status"] for r in d.get("results", [])]


def median_of(d, i=0):
    if not d.get("results"):
        raise RuntimeError("`solbench eval` returned no results")
    r = d["results"][i]
    t = r.get("solbench_timing") or {}
    ms = t.get("median_ms") or (r["evaluation"].get("performance") or {}).get("latency_ms")
    if ms is None:
        ev = r["evaluation"]
        raise RuntimeError(f"no latency: {ev['status']}: {(ev.get('log') or '').strip()[-240:]}")
    return ms


def row(item, name, value, expect, ok, note=""):
    # ok: True / False, None (a piece is missing: SKIPPED), "info" (a measurement only)
    result = {True: "PASS", False: "FAIL", "info": "INFO"}.get(ok, "SKIPPED")
    rows.append({"item": item, "check": name, "value": value, "expected": expect,
                 "result": result, "note": note})


def guarded(item, fn):
    if item not in ITEMS:
        return
    try:
        fn()
    except Exception as e:  # a missing piece: say which, never count it as passed
        row(item, "(item)", None, None, None, f"{type(e).__name__}: {e}"[:400])


def have_ncu():
    return subprocess.run(["which", "ncu"], capture_output=True).returncode == 0


def ncu_durations(target, extra=()):
    """(kernel name, gpu__time_duration in ms) per profiled kernel, in launch order."""
    cmd = ["ncu", "--clock-control", "none", *extra, "--metrics", "gpu__time_duration.sum", "--csv",
           *target]
    rc, so, se, _ = sh(cmd, timeout=600)
    # ncu's CSV as bench/profile_vs_ncu.py reads it (values in ns and bytes).
    sys.path.insert(0, "bench")
    from profile_vs_ncu import ncu_rows
    rows = [(name, m["gpu__time_duration.sum"] / 1e6) for name, m in ncu_rows(so)
            if "gpu__time_duration.sum" in m]
    if not rows:
        raise RuntimeError(f"ncu captured no kernels (rc {rc}): {se.strip()[-300:]}")
    return rows


def ncu_ms(problem, solution, uuid, calls=10):
    rows = ncu_durations([sys.executable, "bench/gpu_kernel_driver.py", "ncu", problem, solution, uuid,
                          "--calls", str(calls)], ["--nvtx", "--nvtx-include", "solution/"])
    return sum(ms for _, ms in rows) / calls, len(rows)


CASES = [("copy 1 GiB", COPY, f"{COPY}/solutions/cuda_copy.json", uuid_where(COPY, N=1 << 28)),
         ("bf16 GEMM 8192^3", GEMM, f"{GEMM}/solutions/cuda_cublas_gemm.json", uuid_where(GEMM, M=8192)),
         ("~5 us scale", SCALE, f"{SCALE}/solutions/cuda_scale.json", uuid_where(SCALE, N=1 << 21))]
measured = {}


def item_a():
    # The check is made with --timer profiler: each kernel's gpu__time_duration, the
    # counter ncu reads. The default timer (CUPTI activity records) is shown beside it:
    # its bracket around a kernel is tighter than ncu's (item t), which shows at ~5 us.
    for name, prob, sol, uuid in CASES:
        d = evaluate(prob, sol, [uuid], ["--rounds", "1"])
        sb_ms = median_of(d)
        measured[name] = (sb_ms, d)
        dp = evaluate(prob, sol, [uuid], ["--rounds", "1", "--timer", "profiler"])
        pr_ms = median_of(dp)
        if not have_ncu():
            row("a", name, pr_ms, "within 3% of ncu", None, "ncu not on PATH")
            continue
        n_ms, n = ncu_ms(prob, sol, uuid)
        dev = abs(pr_ms - n_ms) / n_ms
        dev_default = (sb_ms - n_ms) / n_ms
        report.setdefault("a_raw", {})[name] = {"profiler_ms": pr_ms, "default_ms": sb_ms, "ncu_ms": n_ms}
        row("a", f"{name}: --timer profiler", f"solbench {pr_ms:.4f} ms / ncu {n_ms:.4f} ms ({100 * dev:.1f}%)",
            "<= 3%", dev <= 0.03, f"timer {dp['environment'].get('timer')}, {n} ncu kernel records")
        row("a", f"{name}: default timer", f"solbench {sb_ms:.4f} ms / ncu {n_ms:.4f} ms ({100 * dev_default:+.1f}%)",
            "measurement", "info", f"timer {d['environment'].get('timer')}")


def item_t():
    # Where the ~5 us kernel's time goes (bench/timer_probe.cc): the same y = 2x,
    # plain and with %globaltimer stamps taken inside the kernel (first block's start,
    # last block's end after a fence), timed by solbench's timer and by ncu. The
    # stamps are the kernel's own clock: what each tool adds around them is its
    # bracket. The check: solbench's bracket is no wider than ncu's.
    probe = str(pathlib.Path(SB).parents[2] / "bench/timer_probe")
    args = ["--sizes", str(1 << 21), "--gaps-us", "0"]
    out = OUT / "timer_probe.jsonl"
    rc, so, se, _ = sh([probe, *args, "--iters", "100", "--out", str(out)], timeout=120)
    if rc != 0:
        raise RuntimeError(f"timer_probe failed (rc {rc}): {se.strip()[-200:]}")
    alone = {c["variant"]: c for c in map(json.loads, out.read_text().splitlines())}
    prof_out = OUT / "timer_probe_profiler.jsonl"
    rc, so, se, _ = sh([probe, *args, "--iters", "100", "--timer", "profiler", "--out", str(prof_out)], timeout=120)
    prof = ({c["variant"]: c for c in map(json.loads, prof_out.read_text().splitlines())}
            if rc == 0 else None)
    if not have_ncu():
        row("t", "timer probe under ncu", None, "", None, "ncu not on PATH")
        return
    under = OUT / "timer_probe_ncu.jsonl"
    rows = ncu_durations([probe, *args, "--iters", "20", "--out", str(under)],
                         ["--kernel-name", "regex:scale"])
    ncu_us = {v: 1e3 * statistics.median(ms for name, ms in rows if ("scale_stamped" in name) == (v == "stamped"))
              for v in ("plain", "stamped")}
    under_span = {c["variant"]: c["median_span_us"] for c in map(json.loads, under.read_text().splitlines())}
    st = alone["stamped"]
    sb_bracket = st["median_timer_us"] - st["median_span_us"]
    ncu_bracket = ncu_us["stamped"] - under_span["stamped"]
    report["t"] = {"alone": {k: {x: v[x] for x in ("median_timer_us", "median_span_us", "timer")}
                             for k, v in alone.items()}, "ncu_us": ncu_us, "span_under_ncu_us": under_span,
                   "profiler": prof and {k: {x: v[x] for x in ("median_timer_us", "median_span_us")}
                                         for k, v in prof.items()}}
    row("t", "~5 us scale (plain): solbench vs ncu", f"{alone['plain']['median_timer_us']:.2f} / {ncu_us['plain']:.2f} us",
        "measurement", "info", f"timer {alone['plain']['timer']}")
    row("t", "stamped y=2x: kernel's own span alone / under ncu",
        f"{st['median_span_us']:.2f} / {under_span['stamped']:.2f} us", "measurement", "info",
        "%globaltimer, first block start to last block end")
    row("t", "bracket around the kernel's own span: solbench vs ncu",
        f"solbench +{sb_bracket:.2f} us ({st['median_timer_us']:.2f}), ncu +{ncu_bracket:.2f} us ({ncu_us['stamped']:.2f})",
        "solbench's <= ncu's", sb_bracket <= ncu_bracket + 0.1)
    if prof is None:
        row("t", "timer probe, --timer profiler", None, "", None, f"rc {rc}: {se.strip()[-200:]}")
    else:
        row("t", "--timer profiler (plain / stamped) vs ncu",
            f"{prof['plain']['median_timer_us']:.2f} / {prof['stamped']['median_timer_us']:.2f} us vs "
            f"{ncu_us['plain']:.2f} / {ncu_us['stamped']:.2f} us", "measurement", "info",
            f"stamped span under the profiler {prof['stamped']['median_span_us']:.2f} us")


def item_sandbox():
    probe = pathlib.Path(SB).parents[2] / "tests/gpu/sandbox_cuda_probe"
    rc, so, se, _ = sh([str(probe), "cuda"])
    try:
        d = json.loads(so.strip().splitlines()[-1])
    except (ValueError, IndexError):
        raise RuntimeError(f"sandbox_cuda_probe gave no JSON (rc {rc}): {se.strip()[-200:]}")
    ok = d["cuInit"] == 0 and d["alloc"] == 0
    if d["cuInit"] == -1:
        ok = None  # no libcuda.so.1 here: nothing to check
    row("s", "CUDA under the worker sandbox (seccomp on, AF_UNIX IPC allowed)",
        f"cuInit {d['cuInit']}, context {d['context']}, alloc {d['alloc']}, NVML {d['nvmlInit']}",
        "all 0", ok, "" if ok else "refused: " + ", ".join(r["syscall"] for r in d.get("refused", [])))


def item_o():
    # Host cost of a launch inside a CUPTI window, per collector setting
    # (SOLBENCH_CUPTI_DIAG, docs/gpu-timing.md), and what it does to a launch-bound
    # reference (RMSNorm at batch 1: about nine small PyTorch kernels).
    tests = pathlib.Path(SB).parents[2] / "tests/gpu/gpu_tests"
    for diag in ["", "work-callbacks", "kernels-only", "no-activities", "no-callbacks"]:
        _, so, _, _ = sh([str(tests), "--gtest_filter=*LaunchesInsideTheWindow*"], timeout=120,
                         env={"SOLBENCH_CUPTI_DIAG": diag})
        m = re.search(r"host ([0-9.]+) us/launch, GPU span ([0-9.]+) us/launch", so)
        row("o", f"CUPTI window, SOLBENCH_CUPTI_DIAG={diag or '(default)'}",
            f"host {m.group(1)} us/launch, span {m.group(2)} us/launch" if m else "no output",
            "measurement", "info" if m else None, "" if m else so[-200:])
    prob = "problems/001_rmsnorm_llama3_8b_h4096"
    uuid = uuid_where(prob, batch_size=1)
    for label, env_set in [("cupti", {}), ("cupti work-callbacks", {"SOLBENCH_CUPTI_DIAG": "work-callbacks"}),
                           ("events", {"SOLBENCH_GPU_TIMER": "events"})]:
        ms = median_of(evaluate(prob, None, [uuid], ["--rounds", "1"], env=env_set))
        row("o", f"RMSNorm reference, batch 1, timer {label}", f"{1e3 * ms:.1f} us", "measurement", "info")


def item_b():
    prob = "problems/001_rmsnorm_llama3_8b_h4096"
    sol = f"{prob}/solutions/cuda_rmsnorm.json"
    uuid = uuid_where(prob, batch_size=8192)
    meds = [median_of(evaluate(prob, sol, [uuid], ["--rounds", "1"])) for _ in range(5)]
    cv = statistics.stdev(meds) / statistics.mean(meds)
    row("b", "5 evaluations, rmsnorm batch 8192", f"CV {100 * cv:.2f}% ({', '.join(f'{m:.4f}' for m in meds)} ms)",
        "< 2%", cv < 0.02)


def t_sol_ms(problem, uuid):
    rc, so, se, _ = sh([SB, "sol", problem, "--arch", ARCH, "--json", "--workload", uuid])
    if rc != 0:
        raise RuntimeError(f"`solbench sol` failed (rc {rc}): {se.strip()[-200:]}")
    for p in json.loads(so)["problems"]:
        for w in p["workloads"]:
            if w.get("uuid") == uuid:
                return w["time_us"]["sol"] / 1e3
    raise RuntimeError("no T_SOL for workload " + uuid)


def item_c():
    for name, lo, hi in [("copy 1 GiB", 1.0, 1.3), ("bf16 GEMM 8192^3", 1.0, 1.6)]:
        _, prob, sol, uuid = next(c for c in CASES if c[0] == name)
        if name not in measured:
            measured[name] = (median_of(evaluate(prob, sol, [uuid], ["--rounds", "1"])), None)
        ts = t_sol_ms(prob, uuid)
        ratio = measured[name][0] / ts
        row("c", f"{name} T/T_SOL ({ARCH})", f"{ratio:.3f} ({measured[name][0]:.4f} / {ts:.4f} ms)",
            f"{lo}-{hi}", lo <= ratio <= hi)


def item_d():
    import concurrent.futures
    jobs = []
    for prob in sorted(pathlib.Path("problems").iterdir()):
        if not (prob / "definition.json").exists():
            continue
        cands = [None] + sorted(str(s) for s in (prob / "solutions").glob("*.json")
                                if s.name.startswith(("cuda_", "torch_gpu_", "triton_")))
        jobs += [(prob, sol) for sol in cands]

    def one(job):  # correctness on every workload (timing is items a, b, c, e)
        prob, sol = job
        return job, status_of(evaluate(str(prob), sol, [], ["--no-timing"]))

    counts = {}
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        for (prob, sol), st in pool.map(one, jobs):
            label = f"{prob.name}/{'reference' if sol is None else pathlib.Path(sol).stem}"
            bad = [s for s in st if s != "PASSED"]
            for s in st:
                counts[s] = counts.get(s, 0) + 1
            row("d", label, f"{len(st) - len(bad)}/{len(st)} PASSED", "all PASSED",
                len(st) > 0 and not bad, ", ".join(sorted(set(bad))))
    report["d_counts"] = counts
    data = pathlib.Path(os.environ.get("PUBLIC_DATA", "../shared/sol-execbench"))
    if not data.is_dir():
        row("d", "public references", None, "PASSED where inputs exist", None, f"{data} not found")
        return
    env = dict(os.environ, SOLBENCH=SB, OUT=str(OUT / "public"))
    cmd = ["bash", "scripts/eval_public_refs.sh", str(data), "--device", "cuda:0", "--smallest", "0",
           "--jobs", os.environ.get("PUBLIC_JOBS", "4"), "--budget-s", os.environ.get("PUBLIC_BUDGET_S", "1500")]
    log.write("$ " + " ".join(cmd) + "\n")
    t0 = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    (OUT / "public_refs.txt").write_text(p.stdout + p.stderr)
    summary = {k: v for k, v in (l.split(":", 1) for l in p.stdout.splitlines()
                                 if l.startswith(("problems evaluated", "workloads ")))}
    failed = int(summary.get("workloads failed", "0").split()[0] or 0)
    row("d", "public references on the GPU (every workload)",
        "; ".join(f"{k}:{v}" for k, v in summary.items()), "PASSED where inputs exist",
        failed == 0 if p.returncode == 0 else False,
        f"{time.time() - t0:.0f} s; reasons in public_refs.txt")


def item_e():
    uuid = uuid_where(COPY, N=1 << 28)
    side = evaluate(COPY, f"{COPY}/solutions/cuda_copy_side_stream.json", [uuid], ["--rounds", "1"])
    ref = measured.get("copy 1 GiB", (None,))[0] or median_of(
        evaluate(COPY, f"{COPY}/solutions/cuda_copy.json", [uuid], ["--rounds", "1"]))
    ms = median_of(side)
    ratio = ms / ref
    row("e", "side-stream copy vs same-stream copy", f"{ms:.4f} / {ref:.4f} ms = {ratio:.2f}",
        "0.8-1.25 and PASSED", 0.8 <= ratio <= 1.25 and status_of(side) == ["PASSED"],
        f"status {status_of(side)}, timer {side['environment'].get('timer')}")


def item_f():
    d = evaluate(SCALE, f"{SCALE}/solutions/cuda_scale_crash.json", [], ["--time-budget-ms", "100"])
    by_n = {r["workload"]["axes"]["N"]: r["evaluation"]["status"] for r in d["results"]}
    ok = by_n.get(4096) == "RUNTIME_ERROR" and all(s == "PASSED" for n, s in by_n.items() if n != 4096)
    row("f", "illegal address on N=4096 only", json.dumps(by_n), "4096 RUNTIME_ERROR, rest PASSED", ok)


try:
    env = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,clocks.max.sm",
                          "--format=csv,noheader"], capture_output=True, text=True).stdout.strip()
except FileNotFoundError:
    env = "nvidia-smi not found"
report["gpu"] = env
for item, fn in [("s", item_sandbox), ("o", item_o), ("a", item_a), ("t", item_t), ("b", item_b), ("c", item_c), ("d", item_d), ("e", item_e), ("f", item_f)]:
    guarded(item, fn)
report["rows"] = rows
(OUT / "validation.json").write_text(json.dumps(report, indent=2))
md = [f"# solbench GPU validation ({report['date']})", "", f"GPU: {env}", "",
      f"Build: {report['build']}; ctest: {report['ctest']}", "",
      "| item | check | value | expected | result | note |", "|---|---|---|---|---|---|"]
md += [f"| {r['item']} | {r['check']} | {r['value']} | {r['expected']} | {r['result']} | {r['note']} |" for r in rows]
(OUT / "validation.md").write_text("\n".join(md) + "\n")
print("\n".join(md))
fails = sum(r["result"] == "FAIL" for r in rows)
print(f"\n{len(rows)} rows: {sum(r['result'] == 'PASS' for r in rows)} PASS, {fails} FAIL, "
      f"{sum(r['result'] == 'SKIPPED' for r in rows)} SKIPPED, {sum(r['result'] == 'INFO' for r in rows)} INFO")
sys.exit(1 if fails else 0)
PY
rc=$?
case "$items" in
  *x*) BUILD_DIR="$build" OUT="$out" bash scripts/gpu_compat.sh --skip-build || rc=1 ;;
esac
case "$items" in
  *h*)
    parts="${HACK_PARTS:-solbench peer}"
    hargs=(--binary "$build/src/cli/solbench" --device cuda:0 --gpu-only --jobs "${HACK_JOBS:-3}"
           --deadline-s "${HACK_BUDGET_S:-420}" --json "$out/hacks-gpu.json" --table "$out/hacks-gpu.md")
    case "$parts" in *solbench*) ;; *) hargs+=(--skip-solbench) ;; esac
    case "$parts" in
      *peer*)
        if [ -d .peer/peer/sol-execbench/src ]; then
          hargs+=(--peer .peer/peer)
          if [ -d .peer/whl ]; then hargs+=(--peer-wheels .peer/whl); fi
        else
          echo "h: no .peer/peer (scripts/fetch_peer.sh, carried): the peer's column is left out"
        fi ;;
    esac
    python3 tests/hacks/run_corpus.py "${hargs[@]}" 2>&1 | tee "$out/hacks-gpu.log"
    [ "${PIPESTATUS[0]}" = 0 ] || rc=1
    [ -f "$out/hacks-gpu.md" ] && cat "$out/hacks-gpu.md" ;;
esac
exit $rc
