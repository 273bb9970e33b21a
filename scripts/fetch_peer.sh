#!/usr/bin/env bash
# Run here (a machine that reaches PyPI): prepares .peer/ for a device call of
# scripts/gpu_compat.sh (carry .peer and .deps): a copy of the peer (../shared/peer,
# SOL-ExecBench's CLI and examples), its wheels, and the nvidia-cutlass wheel whose
# CUTLASS headers the cutlass example includes.
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf .peer
mkdir -p .peer
cp -r ../shared/peer .peer/
bash ../shared/peer/fetch-wheels.sh .peer/whl >/dev/null
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform any \
  -d .peer/whl nvidia-cutlass==4.2.0.0
du -sh .peer
