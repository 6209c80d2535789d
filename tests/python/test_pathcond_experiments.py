"""bench/pathcond_experiments.py keeps working (issue 51): a tiny run without pathcond's code
writes finite results and its figures, and docs/balance.md's command line is the script's own.

Run with PATHLIFT_BUILD_DIR=<build> /usr/bin/python3 -m pytest tests/python/test_pathcond_experiments.py
"""
import csv
import importlib.util
import json
import math
import os
import re
import shlex
import subprocess
import sys

import pytest

pytest.importorskip("torch")
pytest.importorskip("sklearn")
pytest.importorskip("matplotlib")

from conftest import BUILD, ROOT

SCRIPT = ROOT / "bench" / "pathcond_experiments.py"
DOC = ROOT / "docs" / "balance.md"
TINY = ["--lrs", "0.01", "--seeds", "1", "--epochs-moons", "3", "--epochs-digits", "1",
        "--inits", "default", "rescaled", "--rescale-sigma", "0.5"]


def run_script(*args):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(BUILD / "python"), env.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], capture_output=True,
                          text=True, env=env, timeout=300)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    out = tmp_path_factory.mktemp("pathcond_experiments")
    proc = run_script("--out", out, *TINY)
    assert proc.returncode == 0, f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    return out, proc


def test_tiny_run_writes_finite_results(tiny):
    out, proc = tiny
    assert "no --pathcond-src" in proc.stdout  # pathcond's runs are skipped, with a note
    with open(out / "runs.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    # 2 datasets x 2 inits x 1 lr x 1 seed x 2 methods (sgd, pathlift)
    assert len(rows) == 8
    assert {(r["dataset"], r["init"], r["method"]) for r in rows} == {
        (d, i, m) for d in ("digits", "moons") for i in ("default", "rescaled")
        for m in ("sgd", "pathlift")}
    for r in rows:
        assert r["diverged"] == "False" and r["rescale_error"] == ""
        for key in ("final_train_loss", "train_acc", "test_acc", "criterion_start",
                    "am_over_gm_start", "sum_g_start"):
            assert math.isfinite(float(r[key])), (key, r)
        assert 0 <= float(r["test_acc"]) <= 1
        assert float(r["am_over_gm_start"]) >= 1 - 1e-12  # AM >= GM

    results = json.loads((out / "results.json").read_text())
    assert results["methods"] == ["sgd", "pathlift"]
    for run in results["runs"]:
        assert run["curve"] and all(math.isfinite(v) for v in run["curve"])
    for row in results["criterion"]:
        assert row["pathlift_converged"]
        assert row["pathlift_after"] <= row["criterion_before"]
        assert row["pathlift_function_change"] < 1e-12
    summary = (out / "summary.md").read_text()
    assert "### digits" in summary and "### moons" in summary and "loss pathlift" in summary
    for dataset in ("digits", "moons"):
        for name in (f"pathcond_{dataset}.png", f"pathcond_{dataset}_curves.png"):
            assert (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_pathcond_restores_the_balanced_point(tiny):
    """PathCond lowers the criterion, and from the rescaled init (the default init moved along
    its rescaling orbit) it reaches the criterion it reaches from the default init: the
    optimum is one per orbit (float32 weights: to 1e-5)."""
    out, _ = tiny
    with open(out / "runs.csv", newline="") as f:
        crit = {(r["dataset"], r["init"], r["method"]): float(r["criterion_start"])
                for r in csv.DictReader(f)}
    for dataset in ("digits", "moons"):
        for init in ("default", "rescaled"):
            assert crit[dataset, init, "pathlift"] < crit[dataset, init, "sgd"]
        balanced = crit[dataset, "default", "pathlift"]
        assert crit[dataset, "rescaled", "pathlift"] == pytest.approx(balanced, rel=1e-5)
        assert crit[dataset, "rescaled", "sgd"] != pytest.approx(balanced, rel=1e-3)


def test_missing_pathcond_checkout_is_a_note(tmp_path):
    spec = importlib.util.spec_from_file_location("pathcond_experiments", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    pathcond = module.PathCond(tmp_path / "nowhere")
    assert not pathcond.available and "pathcond's runs skipped" in pathcond.note


def docs_command_lines():
    """The command lines in docs/balance.md's code blocks that run the script (continuation
    lines joined)."""
    blocks = re.findall(r"^```[\w-]*\n(.*?)^```", DOC.read_text(), re.M | re.S)
    return [line.strip() for block in blocks
            for line in block.replace("\\\n", " ").splitlines()
            if "bench/pathcond_experiments.py" in line]


def test_docs_command_line_is_the_scripts_interface():
    lines = docs_command_lines()
    assert lines, "docs/balance.md shows no command line of bench/pathcond_experiments.py"
    proc = run_script("--help")
    assert proc.returncode == 0, proc.stderr
    options = set(re.findall(r"--[a-z][a-z-]*", proc.stdout))
    for line in lines:
        used = set(re.findall(r"(?<![\w-])--[a-z][a-z-]*", line))
        assert used <= options, f"{line}: {sorted(used - options)} not in --help"
        # and it parses: the same arguments, with the output folder kept
        words = shlex.split(line)
        start = next(i for i, w in enumerate(words) if w.endswith("pathcond_experiments.py"))
        spec = importlib.util.spec_from_file_location("pathcond_experiments", SCRIPT)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        module.parse_args(words[start + 1:])
