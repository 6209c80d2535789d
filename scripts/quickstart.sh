#!/usr/bin/env bash
# The README's first command: install the Debian packages, build in Release what the main job
# needs (the library, the CLI and the Python module: no test program; the test command builds
# the rest), and run the main job on the built-in default network (the paper's Figure 1).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh main
echo
build/cli/pathlift report "$@"
