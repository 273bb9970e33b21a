#!/usr/bin/env bash
# Issue #12 on the GPU machine, in one script (results in $OUT/compat.md, compat.json):
#   x. every example of SOL-ExecBench (the peer) evaluated by solbench on this GPU:
#      PASSED on all workloads, or SKIPPED with the reason where it cannot run here;
#   y. solutions that declare only "pytorch" but bring Triton (with autotune) or
#      torch.compile, on two bundled problems, evaluated cold (empty caches) and warm;
#   p. solbench beside the peer, same GPU, same call: wall time of one evaluation cold
#      (empty build/compile caches) and warm, and per-workload latency of both tools.
#
#   scripts/gpu_compat.sh [--skip-build] [--items xyp] [--quick]
# Needs, carried with the working tree: .deps (scripts/fetch_device_deps.sh) and .peer
# (scripts/fetch_peer.sh): .peer/peer
# (a copy of ../shared/peer) and .peer/whl (its wheels: ../shared/peer/fetch-wheels.sh,
# plus the nvidia-cutlass wheel, whose CUTLASS headers the cutlass example includes).
# --quick: two workloads per example, no side-by-side (a smoke test); EXAMPLES=GLOB
# limits item x to some examples (space-separated globs, default */*); P_EXAMPLES the
# examples of item p (default: triton/rmsnorm pytorch/gemma3_swiglu cuda_cpp/rmsnorm).
set -uo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-/tmp/solbench-compat}"
mkdir -p "$out"
skip_build=0
items=xyp
quick=0
while [ $# -gt 0 ]; do
  case "$1" in
    --skip-build) skip_build=1; shift ;;
    --items) items="$2"; shift 2 ;;
    --quick) quick=1; shift ;;
    *) echo "usage: $0 [--skip-build] [--items xyp] [--quick]" >&2; exit 2 ;;
  esac
done
build="${BUILD_DIR:-build-device}"
py="$(command -v python3)"
if [ -d .deps ]; then source scripts/device_env.sh; fi
if [ "$skip_build" = 0 ]; then
  if ! { cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPython3_EXECUTABLE="$py" \
           >"$out/build.log" 2>&1 && ninja -C "$build" -j16 solbench >>"$out/build.log" 2>&1; }; then
    echo "BUILD FAILED"; tail -40 "$out/build.log"; exit 1
  fi
fi

# The peer's Python dependencies, installed once (not part of any timing).
peer_site=/tmp/peer-site
if [ -d .peer/whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target "$peer_site" .peer/whl/*.whl >"$out/peer-install.log" 2>&1 || echo "peer wheels: install failed"
fi
# CUTLASS headers for the cutlass example, from the nvidia-cutlass wheel.
if [ -d "$peer_site/cutlass_library/source/include" ]; then
  export SOLBENCH_CUTLASS_DIR="$peer_site/cutlass_library/source/include"
fi

export SB="$build/src/cli/solbench" OUTDIR="$out" ITEMS="$items" QUICK="$quick" PEER_SITE="$peer_site"
python3 - <<'PY'
import json, os, pathlib, shutil, subprocess, sys, time

SB, OUT, ITEMS = os.environ["SB"], pathlib.Path(os.environ["OUTDIR"]), os.environ["ITEMS"]
QUICK = os.environ["QUICK"] == "1"
PEER_SITE = os.environ["PEER_SITE"]
EX = pathlib.Path(".peer/peer/sol-execbench/examples")
PEER_SRC = pathlib.Path(".peer/peer/sol-execbench/src").resolve()
log = open(OUT / "compat.log", "w")
report = {"items": {}}


def sh(cmd, env=None, timeout=900):
    log.write("$ " + " ".join(map(str, cmd)) + "\n"); log.flush()
    t0 = time.time()
    try:
        p = subprocess.run(list(map(str, cmd)), capture_output=True, text=True, timeout=timeout,
                           env={**os.environ, **(env or {})})
    except subprocess.TimeoutExpired:
        return 124, "", "timeout", time.time() - t0
    log.write(p.stderr[-3000:] + "\n"); log.flush()
    return p.returncode, p.stdout, p.stderr, time.time() - t0


def solution_of(d):
    return sorted(d.glob("solution*.json"))[0]


def first_workloads(d, n):
    return [json.loads(l)["uuid"] for l in open(d / "workload.jsonl") if l.strip()][:n]


def sb_eval(problem, sol, cache, workloads=()):
    # No T_b here: the peer computes none, and statuses are what item x is about.
    cmd = [SB, "eval", problem, "-s", sol, "--device", "cuda:0", "--json", "--no-baseline"]
    for w in workloads:
        cmd += ["-w", w]
    rc, so, se, secs = sh(cmd, env={"SOLBENCH_CACHE_DIR": str(cache)})
    try:
        d = json.loads(so)
    except ValueError:
        d = {"error": f"no JSON (rc {rc}): {se.strip()[-400:]}"}
    d["_wall_s"] = secs
    return d


def sb_summary(d):
    if "error" in d:
        return {"statuses": {}, "skipped": {}, "error": d["error"]}
    st, sk = {}, {}
    for r in d.get("results", []):
        if r.get("skipped"):
            why = r.get("skip_reason") or r.get("reason") or "skipped"
            sk[why[:200]] = sk.get(why[:200], 0) + 1
            continue
        s = r["evaluation"]["status"]
        st[s] = st.get(s, 0) + 1
    first_bad = next((r["evaluation"].get("log", "")[:300] for r in d.get("results", [])
                      if "evaluation" in r and r["evaluation"]["status"] != "PASSED"), "")
    return {"statuses": st, "skipped": sk, "first_failure": first_bad,
            "build_log": (d.get("build_log") or "")[:300]}


def latencies_sb(d):
    return {r["workload"]["uuid"]: (r["evaluation"].get("performance") or {}).get("latency_ms")
            for r in d.get("results", []) if "evaluation" in r}


# ---- x: every peer example with solbench
if "x" in ITEMS:
    rows = []
    globs = os.environ.get("EXAMPLES", "*/*").split()  # e.g. "triton/* cutile/*"
    for d in sorted({p for g in globs for p in EX.glob(g) if p.is_dir()}):
        wl = first_workloads(d, 2) if QUICK else ()
        r = sb_eval(d, solution_of(d), OUT / "cache-x", wl)
        s = sb_summary(r)
        s.update(example=str(d.relative_to(EX)), wall_s=round(r["_wall_s"], 1))
        rows.append(s)
        print(f"x {s['example']:28s} {s['statuses']} skipped={s['skipped']} {s['wall_s']} s "
              f"{s.get('error', '')}{s['first_failure'][:160]}", flush=True)
    report["items"]["x"] = rows

# ---- y: pytorch-language solutions with Triton / torch.compile, cold then warm
if "y" in ITEMS:
    rows = []
    for prob, names in (("problems/001_rmsnorm_llama3_8b_h4096",
                         ["pytorch_triton_autotune", "pytorch_compile_rmsnorm", "triton_rmsnorm"]),
                        ("problems/002_swiglu_activation_llama3_8b",
                         ["pytorch_triton_swiglu", "pytorch_compile_swiglu"])):
        wl = first_workloads(pathlib.Path(prob), 3 if QUICK else 100)
        for n in names:
            cache = OUT / f"cache-y-{n}"
            shutil.rmtree(cache, ignore_errors=True)
            cold = sb_eval(prob, f"{prob}/solutions/{n}.json", cache, wl)
            warm = sb_eval(prob, f"{prob}/solutions/{n}.json", cache, wl)
            s = {"solution": n, "cold": sb_summary(cold), "warm": sb_summary(warm),
                 "cold_s": round(cold["_wall_s"], 1), "warm_s": round(warm["_wall_s"], 1),
                 "sandbox": (cold.get("sandbox") or {}).get("filesystem")}
            rows.append(s)
            print(f"y {n:26s} cold {s['cold']['statuses']} {s['cold_s']} s, warm "
                  f"{s['warm']['statuses']} {s['warm_s']} s {s['cold'].get('first_failure', '')[:200]}",
                  flush=True)
    report["items"]["y"] = rows

# ---- p: side by side with the peer
def peer_eval(d, sol, cache):
    env = {"PYTHONPATH": f"{PEER_SITE}:{PEER_SRC}",
           "TRITON_CACHE_DIR": str(cache / "triton"),
           "TORCH_EXTENSIONS_DIR": str(cache / "torch_extensions"),
           "TORCHINDUCTOR_CACHE_DIR": str(cache / "inductor")}
    traces = cache / "traces.jsonl"
    traces.unlink(missing_ok=True)
    rc, so, se, secs = sh([sys.executable, "-c", "from sol_execbench.cli.main import cli; cli()",
                           d, "--solution", sol, "-o", traces], env=env, timeout=900)
    lat, st = {}, {}
    if traces.exists():
        for line in open(traces):
            t = json.loads(line)
            ev = t["evaluation"]
            st[ev["status"]] = st.get(ev["status"], 0) + 1
            lat[t["workload"]["uuid"]] = (ev.get("performance") or {}).get("latency_ms")
    return {"rc": rc, "wall_s": secs, "statuses": st, "lat": lat,
            "tail": (so + se)[-600:] if not st else ""}


if "p" in ITEMS and not QUICK:
    rows = []
    for ex in os.environ.get("P_EXAMPLES", "triton/rmsnorm pytorch/gemma3_swiglu cuda_cpp/rmsnorm").split():
        d = EX / ex
        sol = solution_of(d)
        pc, sc = OUT / f"peer-{ex.replace('/', '_')}", OUT / f"sb-{ex.replace('/', '_')}"
        for c in (pc, sc):
            shutil.rmtree(c, ignore_errors=True)
            c.mkdir(parents=True)
        p_cold = peer_eval(d, sol, pc)
        p_warm = peer_eval(d, sol, pc)
        s_cold = sb_eval(d, sol, sc)
        s_warm = sb_eval(d, sol, sc)
        sl = latencies_sb(s_warm)
        per = []
        for u, pl in p_warm["lat"].items():
            if pl and sl.get(u):
                per.append({"uuid": u[:8], "peer_ms": pl, "solbench_ms": sl[u], "ratio": sl[u] / pl})
        row = {"example": ex,
               "peer_cold_s": round(p_cold["wall_s"], 1), "peer_warm_s": round(p_warm["wall_s"], 1),
               "sb_cold_s": round(s_cold["_wall_s"], 1), "sb_warm_s": round(s_warm["_wall_s"], 1),
               "peer_statuses": p_warm["statuses"], "sb_statuses": sb_summary(s_warm)["statuses"],
               "per_workload": per, "peer_tail": p_cold["tail"]}
        rows.append(row)
        print(f"p {ex:24s} peer cold {row['peer_cold_s']} warm {row['peer_warm_s']} | solbench cold "
              f"{row['sb_cold_s']} warm {row['sb_warm_s']} | peer {row['peer_statuses']} sb "
              f"{row['sb_statuses']}", flush=True)
        for w in per:
            print(f"    {w['uuid']} peer {w['peer_ms']:.4f} ms solbench {w['solbench_ms']:.4f} ms "
                  f"ratio {w['ratio']:.3f}", flush=True)
        if row["peer_tail"]:
            print("    peer output:", row["peer_tail"][-400:], flush=True)
    report["items"]["p"] = rows

(OUT / "compat.json").write_text(json.dumps(report, indent=1))

# Verdicts: every workload PASSED, or every one SKIPPED with a reason that says why it
# cannot run here (cuTile needs Blackwell; CuTe DSL needs its package).
fails = []
for r in report["items"].get("x", []):
    ok = (set(r["statuses"]) == {"PASSED"} and not r["skipped"]) or \
         (not r["statuses"] and r["skipped"] and r["example"].startswith(("cutile", "cute_dsl")))
    if not ok:
        fails.append(f"x {r['example']}")
for r in report["items"].get("y", []):
    if set(r["cold"]["statuses"]) != {"PASSED"} or set(r["warm"]["statuses"]) != {"PASSED"}:
        fails.append(f"y {r['solution']}")
for r in report["items"].get("p", []):
    if set(r["sb_statuses"]) != {"PASSED"}:
        fails.append(f"p {r['example']}")
print(f"compat: {len(fails)} FAIL" + (": " + ", ".join(fails) if fails else ""))
sys.exit(1 if fails else 0)
PY
