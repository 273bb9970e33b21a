#!/usr/bin/env bash
# Installs dependencies, builds, and runs the whole test suite (ctest).
set -euo pipefail
cd "$(dirname "$0")/.."
SOLBENCH_BUILD_TARGETS=all bash scripts/setup.sh
ctest --test-dir build --output-on-failure -j "$(nproc)"
