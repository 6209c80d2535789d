#!/usr/bin/env bash
# Fails when a C++ file of the project is not formatted by .clang-format.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files -co --exclude-standard "*.cpp" "*.hpp" "*.h" 2>/dev/null || true)
if [ ${#files[@]} -eq 0 ]; then
  mapfile -t files < <(find include src cli tests bench examples python -name '*.cpp' -o -name '*.hpp')
fi
if ! clang-format --dry-run -Werror "${files[@]}"; then
  echo "error: C++ files above are not clang-formatted (run scripts/format.sh)" >&2
  exit 1
fi
echo "pathlift: formatting ok (${#files[@]} files)"
