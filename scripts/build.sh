#!/usr/bin/env bash
# Configures and builds pathlift. Usage: scripts/build.sh [release|asan]
#   release -> build/       (Release: CLI, Python module, benchmarks, examples)
#   asan    -> build-asan/  (tests under AddressSanitizer + UndefinedBehaviorSanitizer)
set -euo pipefail
cd "$(dirname "$0")/.."
kind=${1:-release}
jobs=$(nproc 2>/dev/null || echo 2)
case "$kind" in
  release)
    cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DPython_EXECUTABLE=/usr/bin/python3 >/dev/null
    cmake --build build -j "$jobs"
    ;;
  asan)
    cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPATHLIFT_SANITIZE=ON \
      -DPATHLIFT_BUILD_PYTHON=OFF -DPATHLIFT_BUILD_BENCHMARKS=OFF -DPATHLIFT_BUILD_EXAMPLES=OFF \
      >/dev/null
    cmake --build build-asan -j "$jobs"
    ;;
  *)
    echo "usage: $0 [release|asan]" >&2
    exit 2
    ;;
esac
