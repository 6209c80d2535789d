#!/usr/bin/env bash
# Configures and builds pathlift. Usage: scripts/build.sh [release|main|asan]
#   release -> build/       (Release: CLI, Python module, tests, benchmarks, examples)
#   main    -> build/       (Release, what the main job needs: the library, the CLI and the
#                            Python module; no test program: the README's quick start)
#   asan    -> build-asan/  (tests under AddressSanitizer + UndefinedBehaviorSanitizer)
set -euo pipefail
cd "$(dirname "$0")/.."
kind=${1:-release}
jobs=$(nproc 2>/dev/null || echo 2)
# ccache, keyed relative to the checkout (CCACHE_BASEDIR), so that the pip build of
# scripts/check-install.sh (setup.py, build-pip/) reuses these objects.
launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  export CCACHE_BASEDIR=$PWD
fi
case "$kind" in
  release | main)
    cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DPython_EXECUTABLE=/usr/bin/python3 \
      "${launcher[@]}" >/dev/null
    if [ "$kind" = main ]; then
      cmake --build build -j "$jobs" --target pathlift_cli _pathlift
    else
      cmake --build build -j "$jobs"
    fi
    ;;
  asan)
    # -O1 -g1 (line tables for the sanitizers' stack traces): half the compile time of -O2 -g.
    cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPATHLIFT_SANITIZE=ON \
      "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" \
      -DPATHLIFT_BUILD_PYTHON=OFF -DPATHLIFT_BUILD_BENCHMARKS=OFF -DPATHLIFT_BUILD_EXAMPLES=OFF \
      "${launcher[@]}" >/dev/null
    cmake --build build-asan -j "$jobs"
    ;;
  *)
    echo "usage: $0 [release|main|asan]" >&2
    exit 2
    ;;
esac
