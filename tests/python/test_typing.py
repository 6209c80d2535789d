"""mypy (Debian's python3-mypy) on the package as built (python/pathlift and the generated
_pathlift.pyi), on examples/ and on typing_usage.py, with the repository's mypy.ini: the stubs
are precise enough for users' typed code, and the project's own code and examples type-check.

Run with PATHLIFT_BUILD_DIR=<build> /usr/bin/python3 -m pytest tests/python/test_typing.py
"""
import pathlib
import runpy
import subprocess
import sys

import pytest

from conftest import BUILD, ROOT

pytest.importorskip("mypy")
pytest.importorskip("scipy")


def test_typing_usage_runs(pathlift_module):
    runpy.run_path(str(pathlib.Path(__file__).with_name("typing_usage.py")))


def test_mypy_passes_on_the_package_the_examples_and_typed_usage():
    targets = [BUILD / "python" / "pathlift", *sorted((ROOT / "examples").glob("*.py")),
               pathlib.Path(__file__).with_name("typing_usage.py")]
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "mypy.ini"),
         "--cache-dir", str(BUILD / ".mypy_cache"), *map(str, targets)],
        capture_output=True, text=True, cwd=BUILD / "python", timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr
