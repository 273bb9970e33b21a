#!/usr/bin/env bash
# Sourced on the GPU machine (which has no package archive): points CMake and the
# loader at Debian packages unpacked into .deps/root (fetched on a Debian machine
# with scripts/fetch_device_deps.sh and carried with the working tree).
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
root="$here/.deps/root"
if [ ! -d "$root" ]; then
  mkdir -p "$root"
  for f in "$here"/.deps/debs/*.deb; do dpkg -x "$f" "$root"; done
fi
export CMAKE_PREFIX_PATH="$root/usr:$root/usr/lib/x86_64-linux-gnu/cmake:$root/usr/share/cmake${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
export CPATH="$root/usr/include${CPATH:+:$CPATH}"
export LIBRARY_PATH="$root/usr/lib/x86_64-linux-gnu${LIBRARY_PATH:+:$LIBRARY_PATH}"
export LD_LIBRARY_PATH="$root/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PKG_CONFIG_PATH="$root/usr/lib/x86_64-linux-gnu/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
