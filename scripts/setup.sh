#!/usr/bin/env bash
# Installs solbench's build and test dependencies (Debian 12 packages) and
# builds it into ./build. Idempotent: skips apt when everything is present.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  build-essential cmake ninja-build pkg-config
  nlohmann-json3-dev libcli11-dev libfmt-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  python3 python3-dev pybind11-dev python3-numpy python3-torch python3-pytest
  libtorch-dev  # torch/extension.h: torch-binding solutions build on CPU too
  libseccomp-dev libssl-dev libsqlite3-dev zlib1g-dev
  chromium  # headless: the report test renders the page (tests/report)
  slurm-wlm munge  # tests/slurm: a one-node Slurm cluster (docs/cluster.md)
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# Release: no debug info keeps a 2-core CI build well inside its time limit.
# Only the solbench executable by default (the demo needs nothing else);
# scripts/test.sh builds the tests too (SOLBENCH_BUILD_TARGETS=all).
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE="${SOLBENCH_BUILD_TYPE:-Release}"
cmake --build build -j "$(nproc)" --target ${SOLBENCH_BUILD_TARGETS:-solbench}
