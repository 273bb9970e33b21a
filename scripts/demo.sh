#!/usr/bin/env bash
# The README's main command: installs the dependencies (scripts/setup.sh, which
# builds the solbench executable into ./build), then evaluates the bundled CPU
# solution of the RMSNorm problem (no GPU needed) and prints the per-workload table
# with T_SOL, the baseline T_b and the SOL Score.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
problem=problems/001_rmsnorm_llama3_8b_h4096
echo
echo "== solbench eval $problem (C++ on the CPU, sandboxed worker) =="
# The 10 smallest of its 16 workloads (up to 512 tokens) keep the demo under a
# minute on a small CPU; drop --smallest for all of them. Exit status 1 would mean
# a workload failed; the table says which.
# A CPU has no hardware model, so the bound is the H100's (--arch): the score then
# shows the mechanics (T_SOL, T_b measured here, S), not a result worth comparing.
build/src/cli/solbench eval "$problem" \
  --solution "$problem/solutions/cpp_rowwise/solution.json" \
  --smallest 10 --rounds 3 --arch h100_sxm -o build/demo-traces.jsonl
