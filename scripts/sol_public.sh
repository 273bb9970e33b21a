#!/usr/bin/env bash
# SOL bounds over the public SOL-ExecBench problems on B200, compared with the
# published SOLAR numbers: writes build/sol-public/{results.json,report.md}.
# Usage: scripts/sol_public.sh [SOLBENCH_BINARY] [PUBLIC_DIR] [OUT_DIR]
# Self-contained: run it here (torch 1.13, CPU) or on the GPU machine (torch 2.x);
# results are cached, so a second run only re-costs.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="${1:-$root/build/src/cli/solbench}"
public="${2:-$root/../shared/sol-execbench}"
out="${3:-$root/build/sol-public}"
mkdir -p "$out"
start=$(date +%s.%N)
# One process per problem keeps a crash or a runaway trace local to it.
echo "[" > "$out/results.json.tmp"
first=1
while IFS= read -r def; do
  dir="$(dirname "$def")"
  rc=0
  res="$(timeout "${SOL_TIMEOUT:-600}" "$bin" sol "$dir" --arch B200 --json 2>"$out/last.err")" || rc=$?
  if [ "$rc" -ne 0 ]; then
    # rc 1 = some workloads failed to trace: the JSON still holds them.
    if [ -z "$res" ]; then
      res="$(python3 -c 'import json,sys; print(json.dumps({"hardware":"b200","problems":[{"name":sys.argv[1],"dir":sys.argv[2],"workloads":[],"failure":sys.argv[3]}]}))' \
        "$(basename "$dir")" "$dir" "solbench exited $rc: $(tail -c 400 "$out/last.err")")"
    fi
  fi
  [ $first -eq 1 ] || echo "," >> "$out/results.json.tmp"
  first=0
  printf '%s\n' "$res" >> "$out/results.json.tmp"
done < <(find "$public" -name definition.json | sort)
echo "]" >> "$out/results.json.tmp"
mv "$out/results.json.tmp" "$out/results.json"
end=$(date +%s.%N)
echo "solbench sol over $(grep -c '"hardware"' "$out/results.json") problems: $(echo "$end - $start" | bc) s"
python3 "$root/scripts/sol_compare.py" "$out/results.json" "$public" > "$out/report.md"
echo "report: $out/report.md"
