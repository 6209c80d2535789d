"""Shared pytest fixtures: the CLI binary and the Python package of a pathlift build.

The build directory is $PATHLIFT_BUILD_DIR (default: build/ at the repository root). The
Python package is importable from <build>/python (the CMake build places it there).
"""
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(os.environ.get("PATHLIFT_BUILD_DIR", ROOT / "build")).resolve()
CLI = BUILD / "cli" / "pathlift"

if str(BUILD / "python") not in sys.path:
    sys.path.insert(0, str(BUILD / "python"))


class CliResult:
    def __init__(self, proc):
        self.returncode = proc.returncode
        self.stdout = proc.stdout
        self.stderr = proc.stderr

    def __repr__(self):
        return f"CliResult(rc={self.returncode}, stdout={self.stdout[:500]!r}, stderr={self.stderr[:500]!r})"


@pytest.fixture(scope="session")
def cli_path():
    if not CLI.exists():
        pytest.fail(f"pathlift CLI not built at {CLI} (set PATHLIFT_BUILD_DIR)")
    return CLI


@pytest.fixture
def run_cli(cli_path):
    """run_cli('info', '--json') -> CliResult with returncode, stdout, stderr (text)."""

    def run(*args, check=False, input=None, cwd=None):
        proc = subprocess.run([str(cli_path), *map(str, args)], capture_output=True, text=True,
                              input=input, cwd=cwd, timeout=600)
        result = CliResult(proc)
        if check and result.returncode != 0:
            raise AssertionError(f"pathlift {' '.join(map(str, args))} failed: {result!r}")
        return result

    return run
