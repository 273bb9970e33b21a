#!/usr/bin/env bash
# Wall time of `solbench sol` over the bundled problems and the public set,
# cold (empty cache: interpreter start and tracing included) and warm (cached).
# Usage: scripts/bench_sol.sh [SOLBENCH_BINARY] [PUBLIC_DIR]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="${1:-$root/build/src/cli/solbench}"
public="${2:-$root/../shared/sol-execbench}"
cache="$(mktemp -d)"
trap 'rm -rf "$cache"' EXIT
export SOLBENCH_CACHE_DIR="$cache"
t() {  # label, command...: prints seconds and the summary line
  local label="$1"; shift
  local s e
  s=$(date +%s.%N)
  "$@" > "$cache/out.txt" 2>&1 || true
  e=$(date +%s.%N)
  printf '%-34s %8.2f s   %s\n' "$label" "$(echo "$e - $s" | bc)" "$(grep -o 'summary:.*' "$cache/out.txt" | cut -c1-110)"
}
t "bundled, cold (H100 SXM)" "$bin" sol "$root/problems" --arch h100_sxm
t "bundled, warm" "$bin" sol "$root/problems" --arch h100_sxm
t "bundled, other arch (re-cost only)" "$bin" sol "$root/problems" --arch b200
if [ -d "$public" ]; then
  t "public, cold (B200)" "$bin" sol "$public" --arch b200
  t "public, warm" "$bin" sol "$public" --arch b200
fi
