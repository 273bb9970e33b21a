#!/usr/bin/env bash
# The Slurm array's default GPUs per task (scripts/slurm/solbench-array.sbatch
# node_gpus): the fewest GPUs any GPU node of the partition has, read from a stand-in
# `sinfo` that prints GRES as clusters do; 1 where no node has GPUs; the partition
# taken from SOLBENCH_SBATCH_ARGS.
set -euo pipefail
script="$1"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
eval "$(sed -n '/^node_gpus() {/,/^}/p' "$script")"
fail=0
check() {  # check WHAT EXPECTED ACTUAL
  if [ "$2" != "$3" ]; then echo "FAIL: $1: expected $2, got $3"; fail=1; else echo "ok: $1 = $3"; fi
}
fake() {  # fake SINFO_OUTPUT: a sinfo that logs its arguments and prints the lines
  printf '#!/usr/bin/env bash\necho "$*" > %q/args\nprintf %%b %q\n' "$tmp" "$1" > "$tmp/sinfo"
  chmod +x "$tmp/sinfo"
}
export PATH="$tmp:$PATH"
fake 'gpu:h100:8(S:0-1)\n(null)\ngpu:4,shard:8\ngpu:a100:2(S:0)\n'
check "fewest of mixed GRES" 2 "$(SOLBENCH_SBATCH_ARGS='--time 1:00 -p gpuq' node_gpus)"
check "partition passed to sinfo" "-h -N -p gpuq -o %G" "$(cat "$tmp/args")"
check "--partition=NAME" "-h -N -p big -o %G" "$(SOLBENCH_SBATCH_ARGS='--partition=big' node_gpus >/dev/null; cat "$tmp/args")"
fake 'gpu:h100:8\ngpu:h100:8(S:0-1)\n'
check "a uniform partition" 8 "$(SOLBENCH_SBATCH_ARGS= node_gpus)"
check "no partition named" "-h -N -o %G" "$(cat "$tmp/args")"
fake '(null)\n(null)\n'
check "no GPU node" 1 "$(node_gpus)"
exit $fail
