#!/usr/bin/env bash
# Benchmark (issue #4 item 12): wall time of `solbench eval` on the RMSNorm problem
# with a cached CPU solution, broken down into build (cache lookup), worker start
# (spawn -> hello), sandbox, interpreter start (Python + torch import + warm-up),
# reference/solution load, and per workload: correctness rounds and timing.
#
# usage: scripts/bench_eval.sh [extra eval args...]   (default: all 16 workloads, 5 rounds)
# Env: SOLBENCH (binary; default build/src/cli/solbench), SOLBENCH_CACHE_DIR (kept warm).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${SOLBENCH:-build/src/cli/solbench}
problem=problems/001_rmsnorm_llama3_8b_h4096
sol=$problem/solutions/cpp_rowwise/solution.json
tmp=$(mktemp -d /tmp/solbench-bench-XXXXXX)
# Warm the build cache first: the measured run must not compile.
"$bin" eval "$problem" --solution "$sol" --smallest 1 --rounds 1 --no-timing --json > /dev/null || true
t0=$(date +%s.%N)
"$bin" eval "$problem" --solution "$sol" --json "$@" > "$tmp/run.json" || true
t1=$(date +%s.%N)
python3 - "$tmp/run.json" "$t0" "$t1" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
wall = float(sys.argv[3]) - float(sys.argv[2])
print(f"solbench eval {d['definition']} / {d['solution']} on {d['environment'].get('hardware', '?')}")
b = d.get("build") or {}
print(f"total wall time                 {wall:8.2f} s  ({len(d['results'])} workloads)")
print(f"build (cache {'hit' if b.get('cache_hit') else 'MISS'})               {b.get('seconds', 0):8.3f} s")
for i, w in enumerate(d["workers"]):
    ms = lambda a, b: (w[b] - w[a]) / 1e6 if a in w and b in w else float("nan")
    ph = w.get("phases_ms", {})
    print(f"worker {i}: process start (spawn->hello) {ms('spawn_t_ns', 'hello_t_ns'):8.1f} ms")
    print(f"          plan + sandbox               {ms('hello_t_ns', 'sandboxed_t_ns'):8.1f} ms")
    print(f"          interpreter start (torch)    {ph.get('python_init_ms', float('nan')):8.1f} ms")
    print(f"          reference + solution load    {ph.get('reference_load_ms', 0) + ph.get('solution_load_ms', 0):8.1f} ms")
    print(f"          ready after spawn            {ms('spawn_t_ns', 'ready_t_ns'):8.1f} ms")
print()
print(f"{'workload':>10} {'axes':>18} {'status':>8} {'correct_ms':>10} {'inputs':>8} {'ref':>8} {'sol':>8} {'check':>8} {'timing_ms':>10} {'ref_timing_ms':>13} {'n':>5} {'rse%':>6}")
tot = {"correctness_ms": 0, "timing_ms": 0, "reference_timing_ms": 0, "timing_setup_ms": 0, "verify_ms": 0}
for r in d["results"]:
    e = r.get("evaluation", {})
    p = e.get("solbench_phases_ms", {})
    t = e.get("solbench_timing", {})
    for k in tot: tot[k] += p.get(k, 0)
    axes = " ".join(f"{k}={v}" for k, v in r["workload"].get("axes", {}).items())
    print(f"{r['workload']['uuid'][:8]:>10} {axes:>18} {e.get('status', 'SKIP')[:8]:>8} "
          f"{p.get('correctness_ms', 0):10.1f} {p.get('inputs_ms', 0):8.1f} {p.get('reference_ms', 0):8.1f} "
          f"{p.get('solution_ms', 0):8.1f} {p.get('check_ms', 0):8.1f} "
          f"{p.get('timing_ms', 0) + p.get('timing_setup_ms', 0) + p.get('verify_ms', 0):10.1f} "
          f"{p.get('reference_timing_ms', 0):13.1f} {t.get('count', 0):5d} {100 * t.get('rse', 0):6.2f}")
print()
print("sums over workloads: " + ", ".join(f"{k} {v / 1000:.2f} s" for k, v in tot.items()))
PY
rm -rf "$tmp"
