#!/usr/bin/env bash
# SOL bounds over the public SOL-ExecBench problems on B200, compared with the
# published SOLAR numbers: writes OUT_DIR/{results.json,report.md}.
# Usage: scripts/sol_public.sh [SOLBENCH_BINARY] [PUBLIC_DIR] [OUT_DIR]
# Environment: SOL_JOBS (problems traced in parallel, default 1), SOL_TIMEOUT
# (seconds per problem, default 600).
# Self-contained: run it here (torch 1.13, CPU) or on the GPU machine (torch 2.x);
# results are cached, so a second run only re-costs.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="$(realpath "${1:-$root/build/src/cli/solbench}")"
public="$(realpath "${2:-$root/../shared/sol-execbench}")"
out="$(realpath -m "${3:-$root/build/sol-public}")"
mkdir -p "$out/problems"
start=$(date +%s.%N)

# Seconds since $1 (a `date +%s.%N` stamp); awk, as the GPU machine has no bc.
elapsed() { awk -v a="$(date +%s.%N)" -v b="$1" 'BEGIN { printf "%.2f", a - b }'; }

# One process per problem keeps a crash or a runaway trace local to it.
one_problem() {
  local bin="$1" dir="$2" out="$3"
  local name rc=0 res
  name="$(echo "${dir#"$PUBLIC/"}" | tr '/' '_')"
  local t0; t0=$(date +%s.%N)
  res="$(timeout "${SOL_TIMEOUT:-600}" "$bin" sol "$dir" --arch B200 --json 2>"$out/problems/$name.err")" || rc=$?
  # Wall seconds per problem (the speed target: none over 30 s).
  echo "$name $(elapsed "$t0") $rc" > "$out/problems/$name.wall"
  # rc 1 = some workloads failed to trace: the JSON still holds them.
  if [ -z "$res" ]; then
    res="$(python3 -c 'import json,sys; print(json.dumps({"hardware":"b200","problems":[{"name":sys.argv[1],"dir":sys.argv[2],"workloads":[],"failure":sys.argv[3]}]}))' \
      "$(basename "$dir")" "$dir" "solbench exited $rc: $(tail -c 400 "$out/problems/$name.err")")"
  fi
  printf '%s\n' "$res" > "$out/problems/$name.json"
}
export -f one_problem elapsed
export PUBLIC="$public"
find "$public" -name definition.json -printf '%h\n' | sort |
  xargs -P "${SOL_JOBS:-1}" -I{} bash -c 'one_problem "$@"' _ "$bin" {} "$out"

python3 - "$out" <<'PY'
import json, pathlib, sys
out = pathlib.Path(sys.argv[1])
docs = [json.loads(p.read_text()) for p in sorted((out / "problems").glob("*.json"))]
(out / "results.json").write_text(json.dumps(docs, indent=1) + "\n")
PY
echo "solbench sol over $(ls "$out"/problems/*.json | wc -l) problems: $(elapsed "$start") s"
python3 "$root/scripts/sol_compare.py" "$out/results.json" "$public" > "$out/report.md"
echo "report: $out/report.md"
