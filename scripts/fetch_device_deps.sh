#!/usr/bin/env bash
# Run here (Debian): downloads the -dev packages the GPU machine lacks into .deps/debs.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .deps/debs
cd .deps/debs
apt-get download nlohmann-json3-dev libcli11-dev libfmt-dev libfmt9 libgtest-dev libgmock-dev \
  libbenchmark-dev libbenchmark1debian libseccomp-dev libseccomp2 libssl-dev libssl3 pybind11-dev \
  libsqlite3-dev libsqlite3-0 zlib1g-dev
