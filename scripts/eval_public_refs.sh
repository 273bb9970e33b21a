#!/usr/bin/env bash
# Evaluates each public problem's own reference, as a pytorch solution, on the CPU
# (issue #4 item 11): a solution.json is written per problem whose only source is
# the reference text (entry main.py::run, return style), then `solbench eval`
# checks it against the reference on the problem's smallest workloads.
# Workloads that cannot run here are SKIPPED with the reason (safetensors blob
# missing, FP8/FP4 under torch 1.13, a reference that needs a GPU).
#
# usage: scripts/eval_public_refs.sh [DATASET_DIR] [--smallest N] [--budget-s S] [--per-problem-s S]
#   DATASET_DIR   default ../shared/sol-execbench (beside the checkout)
#   --smallest N  workloads per problem, smallest first (default 2)
#   --budget-s S  stop starting new problems after S seconds (default 900)
#   --per-problem-s S  per-workload timeout (default 120)
# Env: SOLBENCH (the binary; default build/src/cli/solbench), OUT (result folder).
set -uo pipefail
cd "$(dirname "$0")/.."
data=../shared/sol-execbench
smallest=2
budget=900
per=120
while [ $# -gt 0 ]; do
  case "$1" in
    --smallest) smallest=$2; shift 2 ;;
    --budget-s) budget=$2; shift 2 ;;
    --per-problem-s) per=$2; shift 2 ;;
    *) data=$1; shift ;;
  esac
done
bin=${SOLBENCH:-build/src/cli/solbench}
out=${OUT:-$(mktemp -d /tmp/solbench-public-XXXXXX)}
mkdir -p "$out/solutions" "$out/results"
start=$(date +%s)
mapfile -t dirs < <(find "$data" -name definition.json -printf '%h\n' | sort)
echo "public references on the CPU: ${#dirs[@]} problems under $data, $smallest smallest workloads each, budget ${budget}s"
done_n=0
for d in "${dirs[@]}"; do
  now=$(date +%s)
  if [ $((now - start)) -ge "$budget" ]; then
    echo "time budget spent after $done_n problems"
    break
  fi
  name=$(basename "$d")
  sol="$out/solutions/$name.json"
  python3 - "$d/definition.json" "$sol" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
json.dump({"name": d["name"] + "_reference_as_pytorch", "definition": d["name"],
           "author": "reference", "spec": {"languages": ["pytorch"], "target_hardware": ["cpu"],
           "entry_point": "main.py::run", "destination_passing_style": False},
           "sources": [{"path": "main.py", "content": d["reference"]}]}, open(sys.argv[2], "w"))
PY
  "$bin" eval "$d" --solution "$sol" --smallest "$smallest" --rounds 2 --no-timing \
    --timeout "$per" --json > "$out/results/$name.json" 2> "$out/results/$name.err"
  done_n=$((done_n + 1))
  python3 - "$out/results/$name.json" "$name" <<'PY'
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
done
python3 - "$out/results" <<'PY'
import collections, glob, json, os, sys
counts = collections.Counter(); skips = collections.Counter(); failed = []
problems = 0
for f in sorted(glob.glob(os.path.join(sys.argv[1], "*.json"))):
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
                   "reference needs a GPU" if "GPU" in reason else reason[:60])
            skips[key] += 1
        else:
            st = r["evaluation"]["status"]
            counts[st] += 1
            if st != "PASSED":
                failed.append((d["definition"], st + ": " + r["evaluation"]["log"].strip().splitlines()[-1][:160]
                               if r["evaluation"]["log"].strip() else st))
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
echo "results: $out"
