#!/usr/bin/env bash
# The README's second command: install the Debian packages, build, and run the whole test
# suite: formatting, every source under clang (the fuzz build's compiler), the C++ tests under
# ASan + UBSan, the C++ tests in Release, and the Python tests (bindings, CLI, PyTorch
# references, mypy) against the Release build; between them, `cmake --install` into a prefix
# and `pip install` into a virtual environment.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/check-format.sh
scripts/build.sh release
scripts/check-clang.sh build
scripts/check-install.sh build
scripts/build.sh asan
jobs=$(nproc 2>/dev/null || echo 2)
echo "== C++ tests (ASan + UBSan)"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build-asan --output-on-failure -j "$jobs"
echo "== C++ tests (Release)"
ctest --test-dir build --output-on-failure -j "$jobs"
echo "== Python and CLI tests"
PATHLIFT_BUILD_DIR="$PWD/build" /usr/bin/python3 -m pytest -q tests/python
echo "pathlift: all tests passed"
