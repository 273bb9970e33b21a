#!/usr/bin/env bash
# End-to-end seconds to evaluate a native CUDA solution on a 16-workload problem
# (RMSNorm, problems/001), cold (empty build cache: nvcc runs) and warm (cached
# build), against the same kernel built as a torch extension with
# torch.utils.cpp_extension.load and timed in Python the SOL-ExecBench way (CUDA
# events, L2 flush, 50 iterations per workload, median) -- same device, same run.
#
#   bench/bench_gpu_eval.sh [SOLBENCH_BINARY]     (default build-device/src/cli/solbench)
# Environment: SOLBENCH_EVAL_FLAGS (extra flags for `solbench eval`).
set -euo pipefail
cd "$(dirname "$0")/.."
sb="${1:-${BUILD_DIR:-build-device}/src/cli/solbench}"
problem=problems/001_rmsnorm_llama3_8b_h4096
solution=$problem/solutions/cuda_rmsnorm.json
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
now() { date +%s.%N; }
calc() { python3 -c "print($1)"; }

run_eval() {  # cache_dir -> seconds; the statuses go to stderr
  local t0 t1
  t0=$(now)
  SOLBENCH_CACHE_DIR="$1" "$sb" eval "$problem" --solution "$solution" --device cuda:0 --json \
    ${SOLBENCH_EVAL_FLAGS:-} >"$tmp/eval.json"
  t1=$(now)
  python3 -c "import json,sys; d=json.load(open('$tmp/eval.json')); print('  statuses:', d['summary']['statuses'], file=sys.stderr)"
  calc "$t1 - $t0"
}

cold=$(run_eval "$tmp/cache")
warm=$(run_eval "$tmp/cache")
t0=$(now)
TORCH_EXTENSIONS_DIR="$tmp/torch_ext" python3 bench/gpu_kernel_driver.py torch-ext "$problem" "$solution" \
  --iters 50 >"$tmp/torch.json"
t1=$(now)
torch_total=$(calc "$t1 - $t0")
torch_build=$(python3 -c "import json; print(round(json.load(open('$tmp/torch.json'))['build_s'], 2))")

printf '%-58s %8s\n' "what (16 workloads, RMSNorm, native CUDA kernel)" "seconds"
printf '%-58s %8.2f\n' "solbench eval, cold (nvcc build + eval)" "$cold"
printf '%-58s %8.2f\n' "solbench eval, warm (cached build)" "$warm"
printf '%-58s %8.2f  (of which cpp_extension.load %.2f s)\n' \
  "torch extension + Python timing (SOL-ExecBench way)" "$torch_total" "$torch_build"
printf 'ratio torch-extension / solbench: cold %.2fx, warm %.2fx\n' \
  "$(calc "$torch_total / $cold")" "$(calc "$torch_total / $warm")"
echo "note: solbench eval also checks correctness (5 rounds) and times the reference; the"
echo "      Python baseline times only the kernel, so the comparison favours the baseline."
