"""Smoke test of bench/paper_experiment.py (issue 7): the paper's experiment on a tiny grid, one
repetition. The script itself checks, before timing, that every method returns pathlift's
Jacobian in the paper's (q, P1, d) layout and exits non-zero otherwise; here we check that it
ran, that the CSV has a row per method and point with the right sizes, that a memory limit turns
the dense methods into "needs N" rows, and that the figure is written.

Run with PATHLIFT_BUILD_DIR=<build> /usr/bin/python3 -m pytest tests/python/test_paper_experiment.py
"""
import csv
import importlib.util
import os
import pathlib
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("functorch")
pytest.importorskip("matplotlib")

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "paper_experiment.py"


@pytest.fixture(scope="module")
def experiment():
    spec = importlib.util.spec_from_file_location("paper_experiment", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_script(build_dir, *args):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(build_dir / "python"), env.get("PYTHONPATH", "")])
    proc = subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], capture_output=True,
                          text=True, env=env, timeout=300)
    assert proc.returncode == 0, f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    return proc


def read_rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def test_paper_module_matches_pathlift(pathlift_module, experiment):
    """The paper's SkeletonMatrix and PathLifting (written from its pseudo-code) are pathlift's B
    and Phi in the (q, P1) layout of group_by_output, and so is the padded path index."""
    pl = pathlift_module
    import numpy as np

    for sizes in ([5, 2, 2], [5, 3, 2, 2], [2, 3, 1, 2, 3]):
        net = pl.feed_forward(sizes[0], sizes[1:-1], sizes[-1], True)
        module = experiment.PaperModule(sizes)
        assert module.P1 * module.q == pl.count_paths(net).paths and module.d == net.d
        order = pl.group_by_output(net).order
        B = pl.skeleton(net, dense=True)[order].reshape(module.q, module.P1, net.d)
        assert np.array_equal(module.skeleton_matrix(torch, torch.float64).numpy(), B)
        theta = pl.normal_weights(net.d, 1)
        phi = pl.path_lifting(net, theta)[order].reshape(module.q, module.P1)
        got = module.path_lifting(torch, torch.from_numpy(theta)).numpy()
        assert np.allclose(got, phi, rtol=1e-12, atol=0)
        index = experiment.torch_path_index(torch, sizes)
        vec = experiment.vectorized_phi(torch, index)(torch.from_numpy(theta)).numpy()
        assert np.allclose(vec, phi.reshape(-1), rtol=1e-12, atol=0)


def test_tiny_grid_writes_csv_and_png(build_dir, tmp_path, experiment):
    """Two tiny points where everything runs, and L = 3, w = 8 under a 3 MB memory limit, where
    the dense methods are reported as "needs N" and not run while pathlift's sparse ones keep
    going (what --scale does at L = 3, w = 64)."""
    out_csv, out_png = tmp_path / "exp.csv", tmp_path / "exp.png"
    proc = run_script(build_dir, "--grid", "5,2,2", "--grid", "5,2,2,2", "--grid", "5,8,8,8,2",
                      "--reps", "1", "--max-seconds", "5", "--max-memory", "3MB", "--threads", "1",
                      "--csv", out_csv, "--png", out_png)
    assert proc.stderr.count("agree with pathlift's float64 Jacobian") == 3
    rows = read_rows(out_csv)
    assert [r["method"] for r in rows] == experiment.METHODS * 3
    assert set(rows[0]) >= {"method", "shape", "L", "w", "P", "d", "nnz", "P*d", "median",
                            "min", "max", "status"}
    sizes = {r["shape"]: (int(r["P"]), int(r["d"]), int(r["P*d"])) for r in rows}
    assert sizes == {"5,2,2": (26, 18, 468), "5,2,2,2": (54, 24, 1296),
                     "5,8,8,8,2": (6290, 210, 6290 * 210)}
    for r in rows:
        if r["shape"] == "5,8,8,8,2":
            continue
        if r["method"] == "autograd_loop":  # may be skipped on a loaded machine, estimated
            assert r["status"].startswith(("ok", "skipped: est.")), r
        else:
            assert r["status"] == "ok", r
        if r["status"] == "ok":
            assert 0 < float(r["min"]) <= float(r["median"]) <= float(r["max"]), r
            assert r["reps"] == "1" and r["threads"] == "1" and r["dtype"] == "float32"
    status = {r["method"]: r["status"] for r in rows if r["shape"] == "5,8,8,8,2"}
    for m in ("pathlift_build", "pathlift_phi", "pathlift_sparse_jacobian", "pathlift_end_to_end",
              "torch_index_build"):
        assert status[m] == "ok", (m, status[m])
    for m in ("pathlift_dense_jacobian", "paper_skeleton_build", "paper_einsum", "autograd_loop",
              "functorch_jacfwd", "functorch_jacrev"):
        assert status[m].startswith("needs "), (m, status[m])
    assert out_png.stat().st_size > 10_000
    assert "ratios at 5,8,8,8,2" in proc.stdout

    # --plot redraws the figure from the CSV alone (no torch)
    redrawn = tmp_path / "again.png"
    run_script(build_dir, "--plot", out_csv, "--png", redrawn)
    assert redrawn.stat().st_size > 10_000
