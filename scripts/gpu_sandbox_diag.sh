#!/usr/bin/env bash
# Which piece of the worker sandbox a CUDA worker trips over: evaluates one plain
# PyTorch GPU solution with each piece switched off in turn (diagnosis knobs:
# SOLBENCH_WORKER_PIDNS=0, SOLBENCH_WORKER_PROC=0, SOLBENCH_SANDBOX_LANDLOCK=0|exec|writes),
# then once more under tests/gpu/fs_trace_shim.c, which lists the calls refused
# with EACCES or EPERM.
#   scripts/gpu_sandbox_diag.sh SOLBENCH_BINARY [OUT_DIR]
set -u
sb=$1
out=${2:-/tmp}
p=problems/001_rmsnorm_llama3_8b_h4096
one() {
  env "$@" "$sb" eval $p -s $p/solutions/torch_gpu_rmsnorm.json --device cuda:0 -w 71630508 \
      --rounds 1 --no-timing --json 2>/dev/null |
    python3 -c "import json,sys; d=json.load(sys.stdin); r=d['results'][0]['evaluation']; print('[$*]', r['status'], (r.get('log') or '')[:160].replace(chr(10),' '), d.get('sandbox',{}).get('proc'))"
}
for knobs in "X=1" "SOLBENCH_SANDBOX_LANDLOCK=exec"; do
  one $knobs
done
# Which folder, made writable, lets the driver start.
for extra in /tmp /dev /proc /sys /run /var /root /; do
  one SOLBENCH_SANDBOX_WRITABLE_EXTRA=$extra
done
gcc -shared -fPIC -O1 -o "$out/fs_trace_shim.so" tests/gpu/fs_trace_shim.c -ldl &&
  one LD_PRELOAD="$out/fs_trace_shim.so" FS_TRACE_LOG="$out/fs_trace.log" &&
  grep -vE "No such file" "$out/fs_trace.log" | sort | uniq -c | sort -rn | head -30
