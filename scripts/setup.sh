#!/usr/bin/env bash
# Installs solbench's Debian 12 packages and builds it into ./build.
#
#   bash scripts/setup.sh           what building `solbench` and running the demo need;
#                                   builds the solbench executable only
#   bash scripts/setup.sh --tests   also what only the tests need (GoogleTest, Google
#                                   Benchmark, pytest, libtorch-dev, Chromium, Slurm);
#                                   builds every target, tests ON (scripts/test.sh)
#
# Idempotent: apt runs only for packages that are missing. The packages the build
# does not use (python3-torch: the references run in it; the tests' Chromium,
# Slurm, ...) install in the background while solbench compiles. Environment:
# SOLBENCH_BUILD_TYPE (Release), SOLBENCH_BUILD_TARGETS (solbench, or all with
# --tests). Phase times go to build/setup-times.env (scripts/demo.sh prints them).
# Measurements: bench/cold_start.md.
set -euo pipefail
cd "$(dirname "$0")/.."

tests=0
case "${1:-}" in
  "") ;;
  --tests) tests=1 ;;
  *) echo "usage: bash scripts/setup.sh [--tests]" >&2; exit 2 ;;
esac

# Building solbench (configure needs every one of these).
build_packages=(
  build-essential cmake ninja-build pkg-config
  nlohmann-json3-dev libcli11-dev libfmt-dev
  python3 python3-dev pybind11-dev  # embedded Python: the worker runs the references
  libseccomp-dev libssl-dev libsqlite3-dev
)
# Running the demo, not building it: the PyTorch references (the build never
# imports torch). 177 of the demo's packages on a fresh machine are torch's.
run_packages=(python3-torch python3-numpy)
# Only the tests (scripts/test.sh, CI): what building them needs, then what running
# them needs (the latter installs beside the build, as python3-torch does).
test_build_packages=(
  libgtest-dev libgmock-dev libbenchmark-dev
  zlib1g-dev    # tests/report decodes Chromium's screenshot
)
test_run_packages=(
  python3-pytest
  libtorch-dev  # torch/extension.h: the torch-binding tests build solutions on the CPU
  chromium      # headless: the report test renders the page (tests/report)
  slurm-wlm munge  # tests/slurm: a one-node Slurm cluster (docs/cluster.md)
)

missing() {  # prints those of "$@" that are not installed
  local p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || echo "$p"
  done
}
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
apt_install() {
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "$@"
}

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.0f", b - a }'; }
t_start=$(now)

first=($(missing "${build_packages[@]}"))
later=($(missing "${run_packages[@]}"))
if [ "$tests" = 1 ]; then
  first+=($(missing "${test_build_packages[@]}"))
  later+=($(missing "${test_run_packages[@]}"))
fi
if [ ${#first[@]} -gt 0 ] || [ ${#later[@]} -gt 0 ]; then
  $sudo apt-get update -q
fi
if [ ${#first[@]} -gt 0 ]; then
  echo "setup: installing ${first[*]}"
  apt_install "${first[@]}"
fi
t_first=$(since "$t_start")

mkdir -p build
apt_pid=""
apt_log=build/setup-apt.log
if [ ${#later[@]} -gt 0 ]; then
  # dpkg's lock is held by this one apt-get until it ends; nothing else installs meanwhile.
  echo "setup: installing ${later[*]} in the background (log: $apt_log)"
  t_later=$(now)
  (apt_install "${later[@]}" >"$apt_log" 2>&1; rc=$?; since "$t_later" >build/.setup-apt-s; exit $rc) &
  apt_pid=$!
  trap '[ -n "$apt_pid" ] && wait "$apt_pid" 2>/dev/null' EXIT
fi

# Release: no debug info keeps a 2-core build well inside its time limit. The
# libraries compile as unity builds (cmake/unity_build.cmake): a third of the time.
# Tests and benchmarks: ON with --tests (CI fails rather than skips them without
# GoogleTest); else OFF in a new build folder (the demo builds the solbench
# executable only, and a GoogleTest found without the other test packages would
# stop configure), and as they were in an existing one (after scripts/test.sh).
t_build=$(now)
opts=()
if [ "$tests" = 1 ]; then
  opts=(-DSOLBENCH_BUILD_TESTS=ON -DSOLBENCH_BUILD_BENCH=ON)
elif [ ! -f build/CMakeCache.txt ]; then
  opts=(-DSOLBENCH_BUILD_TESTS=OFF -DSOLBENCH_BUILD_BENCH=OFF)
fi
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE="${SOLBENCH_BUILD_TYPE:-Release}" \
  -DSOLBENCH_UNITY_BUILD=ON "${opts[@]}"
if [ "$tests" = 1 ]; then targets=${SOLBENCH_BUILD_TARGETS:-all}; else targets=${SOLBENCH_BUILD_TARGETS:-solbench}; fi
cmake --build build -j "$(nproc)" --target $targets
t_build=$(since "$t_build")

t_rest=0
if [ -n "$apt_pid" ]; then
  if ! wait "$apt_pid"; then
    apt_pid=""
    tail -n 30 "$apt_log" >&2
    echo "setup: installing ${later[*]} failed (log: $apt_log)" >&2
    exit 1
  fi
  apt_pid=""
  t_rest=$(cat build/.setup-apt-s)
  echo "setup: installed ${later[*]}"
fi
cat >build/setup-times.env <<EOF
setup_installed_packages=$(( ${#first[@]} + ${#later[@]} ))
setup_install_first_s=$t_first
setup_install_background_s=$t_rest
setup_build_s=$t_build
setup_total_s=$(since "$t_start")
EOF
