#!/usr/bin/env bash
# GPU smoke test for the device machine: configure + build (-j16), run the GPU
# unit tests, then evaluate every bundled GPU solution (problems/*/solutions/
# cuda_*.json, torch_gpu_*.json) on its smallest workloads with `solbench eval
# --device cuda:0`, and print one line per solution. Logs go to $OUT (or
# /tmp/solbench-selftest): build.log, gpu_tests.log, evals.jsonl, selftest.txt.
# SOLBENCH_EVAL_FLAGS adds flags to every eval (e.g. --no-sandbox);
# GTEST_FILTER selects GPU unit tests.
#
#   scripts/gpu_selftest.sh [--smallest N] [--skip-build]
set -uo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-/tmp/solbench-selftest}"
mkdir -p "$out"
smallest=2
skip_build=0
while [ $# -gt 0 ]; do
  case "$1" in
    --smallest) smallest="$2"; shift 2 ;;
    --skip-build) skip_build=1; shift ;;
    *) echo "usage: $0 [--smallest N] [--skip-build]" >&2; exit 2 ;;
  esac
done
build="${BUILD_DIR:-build-device}"
py="$(command -v python3)"
if [ -d .deps ]; then source scripts/device_env.sh; fi

if [ "$skip_build" = 0 ]; then
  {
    cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPython3_EXECUTABLE="$py" &&
      ninja -C "$build" -j16 solbench gpu_tests &&
      if [ "${FULL_BUILD:-0}" = 1 ]; then
        ninja -C "$build" -j16 -k 0 || echo "WARNING: some non-GPU targets failed to build"
      fi
  } >"$out/build.log" 2>&1 || { echo "BUILD FAILED (see $out/build.log)"; tail -40 "$out/build.log"; exit 1; }
fi
sb="$build/src/cli/solbench"

"$build/tests/gpu/gpu_tests" --gtest_filter="${GTEST_FILTER:-*}" 2>&1 | tee "$out/gpu_tests.log" | grep -E "^\[  (FAILED|PASSED|SKIPPED) |OK \]|FAILED \]" | tail -40

: >"$out/evals.jsonl"
summary="$out/selftest.txt"
: >"$summary"
run_eval() {  # problem solution_json label
  local problem="$1" sol="$2" label="$3" t0 t1 rc
  t0=$(date +%s.%N)
  timeout 900 "$sb" eval "$problem" --solution "$sol" --device cuda:0 --smallest "$smallest" \
    --json --time-budget-ms 300 ${SOLBENCH_EVAL_FLAGS:-} >"$out/one.json" 2>"$out/one.err"
  rc=$?
  t1=$(date +%s.%N)
  python3 - "$out/one.json" "$out/one.err" "$label" "$rc" "$t0" "$t1" >>"$summary" <<'PY'
import json, sys
path, err, label, rc, t0, t1 = sys.argv[1:]
try:
    d = json.load(open(path))
except Exception as e:  # no JSON: the command itself failed
    tail = open(err).read()[-600:].replace("\n", " | ")
    print(f"{label:60s} rc={rc} NO-JSON {tail}")
    sys.exit()
parts = []
for r in d.get("results", []):
    ev = r["evaluation"]
    perf = ev.get("performance") or {}
    lat = perf.get("latency_ms")
    ax = ",".join(f"{k}={v}" for k, v in r["workload"]["axes"].items())
    extra = ""
    if ev["status"] != "PASSED":
        extra = " " + (ev.get("log") or "")[-300:].replace("\n", " | ")
    parts.append(f"[{ax}] {ev['status']}" + (f" {lat:.4f}ms ref {perf.get('reference_latency_ms', 0):.4f}ms" if lat else "") + extra)
timer = d.get("environment", {}).get("timer")
print(f"{label:60s} rc={rc} {float(t1)-float(t0):5.1f}s timer={timer} " + " ; ".join(parts))
PY
  cat "$out/one.json" >>"$out/evals.jsonl" 2>/dev/null
  echo >>"$out/evals.jsonl"
}

for sol in problems/*/solutions/cuda_*.json problems/*/solutions/torch_gpu_*.json \
           tests/gpu/problems/*/solutions/*.json; do
  [ -e "$sol" ] || continue
  problem="$(dirname "$(dirname "$sol")")"
  run_eval "$problem" "$sol" "$(basename "$problem")/$(basename "$sol" .json)"
done
rm -f "$out/one.json" "$out/one.err"
echo "== solutions"
cat "$summary"
