#!/usr/bin/env bash
# The README's main command: installs what the demo needs and builds the solbench
# executable (scripts/setup.sh; the tests' packages are scripts/test.sh's), then
# measures this host's ceilings (hw calibrate --device cpu, cached) and evaluates
# the bundled CPU solution of the RMSNorm problem against them (no GPU needed) and
# prints the per-workload table with T_SOL, the baseline T_b and the SOL Score, and
# how long each phase took. Measurements: bench/cold_start.md.
set -euo pipefail
cd "$(dirname "$0")/.."
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.0f", b - a }'; }
t0=$(now)
bash scripts/setup.sh
t_setup=$(since "$t0")

problem=problems/001_rmsnorm_llama3_8b_h4096
echo
echo "== solbench eval $problem (C++ on the CPU, sandboxed worker) =="
# The 3 smallest of its 16 workloads keep the demo to seconds on a small CPU; drop
# --smallest for all of them (minutes on a CPU). Exit status 1 would mean a
# workload failed; the table says which.
# The bound is this machine's: `hw calibrate --device cpu` measures the host's
# memory bandwidth and FMA rate once (a few seconds; cached per host, docs/sol.md
# "Measured ceilings") and --arch cpu names that model.
t1=$(now)
status=0
build/src/cli/solbench hw calibrate --device cpu
build/src/cli/solbench eval "$problem" \
  --solution "$problem/solutions/cpp_rowwise/solution.json" \
  --smallest 3 --rounds 3 --arch cpu -o build/demo-traces.jsonl || status=$?
t_demo=$(since "$t1")

# Phase times: setup.sh wrote its own (build/setup-times.env).
setup_installed_packages=0 setup_install_first_s=0 setup_install_background_s=0 setup_build_s=0
[ -f build/setup-times.env ] && . build/setup-times.env
install="install ${setup_install_first_s} s (build packages) + ${setup_install_background_s} s (python3-torch, beside the build)"
[ "$setup_installed_packages" = 0 ] && install="install: nothing missing"
echo
echo "demo: $install, configure+build ${setup_build_s} s;" \
  "setup in all ${t_setup} s, demo ${t_demo} s, total $(since "$t0") s"
exit "$status"
