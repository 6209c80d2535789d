"""examples/conservation_drift.py (docs/dynamics.md): SGD on the digits MLP at three step sizes;
the laws' drift shrinks with eta, about as eta^2, and the plot is written.

Run with PATHLIFT_BUILD_DIR=<build> /usr/bin/python3 -m pytest tests/python/test_conservation_example.py
"""
import re

from conftest import ROOT

EXAMPLE = ROOT / "examples" / "conservation_drift.py"


def test_the_example_runs_and_the_drift_shrinks_with_eta(run_example, tmp_path):
    plot = tmp_path / "drift.png"
    out = run_example(EXAMPLE.name, "--steps", "100", "--plot", plot)
    assert "32 conservation laws" in out, out
    rows = {int(m[0]): [float(x) for x in re.findall(r"\|\s+(\S+)\s+\S+", m[1])]
            for m in re.findall(r"^\s+(\d+)\s+(\|.*)$", out, re.M)}
    assert sorted(rows) == [0, 50, 100], out
    assert rows[0] == [0.0, 0.0, 0.0]
    drift = rows[100]  # eta = 0.2, 0.1, 0.05
    assert drift[0] > drift[1] > drift[2] > 0, drift
    ratios = [float(r) for r in re.findall(r"drift ratio ([0-9.]+)", out)]
    assert len(ratios) == 2 and all(2.5 < r < 6 for r in ratios), ratios  # eta^2: 4
    assert plot.is_file() and plot.stat().st_size > 1000
