#!/usr/bin/env bash
# Evaluates each public problem's own reference, as a pytorch solution (issue #4
# item 11 on the CPU, issue #5 item 6d on the GPU): a solution.json is written per
# problem whose only source is the reference text (entry main.py::run, return
# style), then `solbench eval` checks it against the reference, correctness only.
# Workloads that cannot run are SKIPPED with the reason (safetensors blob missing,
# FP8/FP4 under an old torch, a reference that needs a GPU on a CPU run).
#
# usage: scripts/eval_public_refs.sh [DATASET_DIR] [--device D] [--smallest N] [--jobs J]
#                                    [--budget-s S] [--per-problem-s S] [--only A,B]
#   DATASET_DIR   default ../shared/sol-execbench (beside the checkout)
#   --device D    cpu (default) or cuda:N
#   --smallest N  workloads per problem, smallest first (default 2; 0 = every workload)
#   --jobs J      problems evaluated at once (default 1)
#   --budget-s S  stop starting new problems after S seconds (default 900)
#   --per-problem-s S  per-workload timeout (default 120)
#   --only A,B    only these problems (folder names), e.g. to re-run some alone
# Env: SOLBENCH (the binary; default build/src/cli/solbench), OUT (result folder),
# SOLBENCH_EVAL_FLAGS (extra flags for every `solbench eval`).
set -uo pipefail
cd "$(dirname "$0")/.."
data=../shared/sol-execbench
smallest=2
budget=900
per=120
jobs=1
device=cpu
only=
while [ $# -gt 0 ]; do
  case "$1" in
    --smallest) smallest=$2; shift 2 ;;
    --budget-s) budget=$2; shift 2 ;;
    --per-problem-s) per=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --device) device=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    -*) echo "unknown option $1" >&2; exit 2 ;;
    *) data=$1; shift ;;
  esac
done
export SB_BIN=${SOLBENCH:-build/src/cli/solbench} SB_OUT=${OUT:-$(mktemp -d /tmp/solbench-public-XXXXXX)}
export SB_DEVICE=$device SB_SMALLEST=$smallest SB_PER=$per SB_BUDGET=$budget SB_START=$(date +%s)
mkdir -p "$SB_OUT/solutions" "$SB_OUT/results"
rm -f "$SB_OUT/alone.txt"  # problems re-run alone by this invocation (below)
mapfile -t dirs < <(find -L "$data" -name definition.json -printf '%h\n' | sort)
if [ -n "$only" ]; then
  mapfile -t dirs < <(printf '%s\n' "${dirs[@]}" | grep -E "/($(echo "$only" | tr ',' '|'))\$")
fi
echo "public references on $device: ${#dirs[@]} problems under $data," \
     "$([ "$smallest" -gt 0 ] && echo "$smallest smallest workloads" || echo "every workload") each," \
     "$jobs at once, budget ${budget}s"

eval_one() {
  local d=$1 force=${2:-} name sol
  if [ -z "$force" ] && [ $(( $(date +%s) - SB_START )) -ge "$SB_BUDGET" ]; then
    echo "$(basename "$d"): not started (time budget spent)"; return
  fi
  name=$(basename "$d")
  sol="$SB_OUT/solutions/$name.json"
  python3 - "$d/definition.json" "$sol" "$SB_DEVICE" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
hw = ["cpu"] if sys.argv[3] == "cpu" else ["cuda"]
json.dump({"name": d["name"] + "_reference_as_pytorch", "definition": d["name"],
           "author": "reference", "spec": {"languages": ["pytorch"], "target_hardware": hw,
           "entry_point": "main.py::run", "destination_passing_style": False},
           "sources": [{"path": "main.py", "content": d["reference"]}]}, open(sys.argv[2], "w"))
PY
  local sel=()
  [ "$SB_SMALLEST" -gt 0 ] && sel=(--smallest "$SB_SMALLEST")
  # shellcheck disable=SC2086
  "$SB_BIN" eval "$d" --solution "$sol" "${sel[@]}" --device "$SB_DEVICE" --rounds 2 --no-timing \
    --timeout "$SB_PER" --json ${SOLBENCH_EVAL_FLAGS:-} > "$SB_OUT/results/$name.json" \
    2> "$SB_OUT/results/$name.err"
  python3 - "$SB_OUT/results/$name.json" "$name" <<'PY'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception as e:
    print(f"{sys.argv[2]}: no result ({e})"); sys.exit()
parts = []
for r in d["results"]:
    if r.get("skipped"):
        parts.append("SKIP(" + r["skip_reason"].split(":")[0] + ")")
    else:
        parts.append(r["evaluation"]["status"])
print(f"{sys.argv[2]}: {' '.join(parts)}")
PY
}
export -f eval_one
printf '%s\n' "${dirs[@]}" | xargs -P "$jobs" -I{} bash -c 'eval_one "$1"' _ {}
# Problems evaluated side by side share one GPU: a workload that ran out of memory
# beside other jobs gets its problem evaluated again, alone (the result replaces it;
# the budget does not stop these re-runs: their first result is not an answer).
if [ "$jobs" -gt 1 ] && [ "$device" != cpu ]; then
  for d in "${dirs[@]}"; do
    r="$SB_OUT/results/$(basename "$d").json"
    if [ -f "$r" ] && grep -q "CUDA out of memory" "$r"; then
      echo "$(basename "$d"): out of memory beside other jobs; again, alone"
      echo "$(basename "$d")" >> "$SB_OUT/alone.txt"
      eval_one "$d" force
    fi
  done
fi
python3 - "$SB_OUT/results" "$jobs" "$SB_OUT/alone.txt" <<'PY'
import collections, glob, json, os, sys
counts = collections.Counter(); skips = collections.Counter(); failed = []
problems = 0
rerun = set(open(sys.argv[3]).read().split()) if os.path.exists(sys.argv[3]) else set()
for f in sorted(glob.glob(os.path.join(sys.argv[1], "*.json"))):
    alone = sys.argv[2] == "1" or os.path.basename(f)[:-5] in rerun
    try:
        d = json.load(open(f))
    except Exception:
        failed.append((os.path.basename(f)[:-5], "no JSON result (see .err)")); continue
    problems += 1
    for r in d["results"]:
        if r.get("skipped"):
            reason = r["skip_reason"]
            key = ("safetensors blob missing" if "safetensors" in reason else
                   "dtype needs newer torch" if "torch >=" in reason else
                   "GPU lacks a feature the reference needs (FP4 cuBLAS before Blackwell)"
                   if "feature" in reason else
                   "reference needs a GPU" if "GPU" in reason else reason[:60])
            skips[key] += 1
        else:
            st = r["evaluation"]["status"]
            log = r["evaluation"].get("log") or ""
            # A reference that runs out of memory with the GPU to itself (the
            # problem ran alone, or was re-run alone) needs a bigger GPU: the
            # published problems were sized for a B200's 180 GB. Its trace status
            # stays INVALID_REFERENCE; here it is counted with the reasons.
            if st == "INVALID_REFERENCE" and "CUDA out of memory" in log and alone:
                skips["reference needs more memory than this GPU has (ran alone)"] += 1
                continue
            counts[st] += 1
            if st != "PASSED":
                failed.append((d["definition"], st + ": " + log.strip().splitlines()[-1][:160]
                               if log.strip() else st))
print()
print(f"problems evaluated: {problems}")
print(f"workloads PASSED: {counts.get('PASSED', 0)}")
print(f"workloads failed: {sum(v for k, v in counts.items() if k != 'PASSED')} {dict((k, v) for k, v in counts.items() if k != 'PASSED')}")
print(f"workloads skipped: {sum(skips.values())}")
for k, v in skips.most_common():
    print(f"  {v:4d}  {k}")
if failed:
    print("failures:")
    for n, why in failed:
        print(f"  {n}: {why}")
PY
echo "results: $SB_OUT"
