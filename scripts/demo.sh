#!/usr/bin/env bash
# The README's main command: installs the dependencies (scripts/setup.sh, which
# also builds into ./build), then evaluates the bundled CPU solution of the RMSNorm
# problem (no GPU needed) and prints the per-workload table.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
problem=problems/001_rmsnorm_llama3_8b_h4096
echo
echo "== solbench eval $problem (C++ on the CPU, sandboxed worker) =="
# The 10 smallest of its 16 workloads (up to 512 tokens) keep the demo under a
# minute on a small CPU; drop --smallest for all of them. Exit status 1 would mean
# a workload failed; the table says which.
build/src/cli/solbench eval "$problem" \
  --solution "$problem/solutions/cpp_rowwise/solution.json" \
  --smallest 10 --rounds 3 -o build/demo-traces.jsonl
if build/src/cli/solbench --help 2>/dev/null | grep -q '^  sol '; then
  echo
  echo "== solbench sol $problem (speed-of-light bounds) =="
  build/src/cli/solbench sol "$problem" --arch h100_sxm || true
fi
