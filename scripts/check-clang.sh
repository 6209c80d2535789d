#!/usr/bin/env bash
# Fails when a C++ file of a build does not compile with clang (-fsyntax-only), the compiler of
# the fuzz build (scripts/fuzz.sh): GCC, which builds everything else, accepts C++20 that
# Debian 12's clang 14 does not (a structured binding captured by a lambda, deduction of an
# aggregate's template arguments from designated initializers). Reads the compile commands of
# BUILD (default build/, configured by scripts/build.sh) and checks every file, in parallel.
#   scripts/check-clang.sh [BUILD]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
jobs=$(nproc 2>/dev/null || echo 2)
/usr/bin/python3 - "$build/compile_commands.json" "$jobs" <<'PY'
import concurrent.futures
import json
import shlex
import subprocess
import sys

commands = json.load(open(sys.argv[1]))


def check(entry):
    args = [a for a in shlex.split(entry["command"]) if a != "ccache"]
    out = args.index("-o")
    del args[out:out + 2]
    args = ["clang++" if i == 0 else a for i, a in enumerate(args) if a != "-c"]
    run = subprocess.run(args + ["-fsyntax-only", "-Wno-unknown-warning-option"],
                         cwd=entry["directory"], capture_output=True, text=True)
    return entry["file"], run.returncode, run.stderr


failed = 0
with concurrent.futures.ThreadPoolExecutor(int(sys.argv[2])) as pool:
    for file, rc, err in pool.map(check, commands):
        if rc != 0:
            failed += 1
            print(f"{file}:\n{err}", file=sys.stderr)
if failed:
    print(f"error: {failed} of {len(commands)} files do not compile with clang (the fuzz build's "
          "compiler)", file=sys.stderr)
    sys.exit(1)
print(f"pathlift: clang compiles every file ({len(commands)})")
PY
