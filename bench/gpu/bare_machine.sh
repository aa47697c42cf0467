#!/usr/bin/env bash
# Runs a command as if on a bare GPU machine, to rehearse bench/gpu/run.sh on a Debian
# build machine: in a private mount namespace (needs root: unshare -m) the Debian
# packages vitune builds with are hidden by bind mounts -- their header and CMake folders,
# OpenBLAS, Fashion-MNIST and the CUDA toolkit become empty folders; zlib's headers and
# static library, the GoogleTest and Benchmark libraries, OpenBLAS's Fortran runtime and
# the libraries cmake loads become empty files; cmake, ninja, ctest and nvcc become
# programs that fail. Nothing outside the namespace changes. From the repository root:
#
#   bench/gpu/bare_machine.sh env DRY_RUN=1 BUILD=build-bare bench/gpu/run.sh
set -euo pipefail
[ $# -gt 0 ] || { echo "usage: $0 COMMAND [ARGUMENTS...]" >&2; exit 2; }

if [ "${VITUNE_BARE_NAMESPACE:-}" != 1 ]; then
  exec unshare -m env VITUNE_BARE_NAMESPACE=1 "$0" "$@"
fi

stand_ins=$(mktemp -d)
mkdir "$stand_ins/empty"
: > "$stand_ins/empty-file"
printf '#!/bin/sh\necho "$0: hidden on this simulated bare machine" >&2\nexit 127\n' > "$stand_ins/refuse"
chmod +x "$stand_ins/refuse"

lib=/usr/lib/x86_64-linux-gnu
for folder in /usr/include/nlohmann /usr/include/CLI /usr/include/stb /usr/include/gtest /usr/include/gmock \
  /usr/include/benchmark /usr/include/x86_64-linux-gnu/openblas-pthread /usr/share/cmake/nlohmann_json \
  /usr/share/cmake/CLI11 "$lib/cmake/GTest" "$lib/cmake/benchmark" "$lib/openblas-pthread" \
  /usr/share/datasets/fashion-mnist /usr/local/cuda /usr/share/cmake-3.25; do
  [ -e "$folder" ] && mount --bind "$stand_ins/empty" "$folder"
done
# Files behind links are hidden through the link; libz.so.1 itself stays (every program needs it).
for file in /usr/include/zlib.h /usr/include/zconf.h "$lib/libz.a" "$lib/libopenblas.so" "$lib/libopenblas.so.0" \
  "$lib/libblas.so.3" "$lib/libgtest.a" "$lib/libgtest_main.a" "$lib/libgmock.a" "$lib/libgmock_main.a" \
  "$lib/libbenchmark.a" "$lib/libbenchmark_main.a" "$lib/libbenchmark.so" "$lib/libgfortran.so.5" \
  "$lib/libquadmath.so.0" "$lib/libarchive.so.13" "$lib/libcurl.so.4" "$lib/libjsoncpp.so.25" \
  "$lib/librhash.so.0" "$lib/libuv.so.1"; do
  [ -e "$file" ] && mount --bind "$stand_ins/empty-file" "$file"
done
for program in /usr/bin/cmake /usr/bin/ninja /usr/bin/ctest /usr/local/cuda/bin/nvcc; do
  [ -e "$program" ] && mount --bind "$stand_ins/refuse" "$program"
done
exec "$@"
