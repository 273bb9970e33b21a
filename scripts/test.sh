#!/usr/bin/env bash
# Installs every dependency (the demo's and the tests'), builds every target with
# the tests ON, and runs the whole suite (ctest).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --tests
ctest --test-dir build --output-on-failure -j "$(nproc)"
