"""Shared pytest fixtures: the CLI binary and the Python package of a pathlift build.

The build directory is $PATHLIFT_BUILD_DIR (default: build/ at the repository root). The
Python package is importable from <build>/python (the CMake build places it there).
"""
import importlib.util
import json
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
# bench/'s recipes (torch_recipes, ...) are imported by the tests that compare against them;
# last, so that a bench script never shadows a test helper or pathlift.
if str(ROOT / "bench") not in sys.path:
    sys.path.append(str(ROOT / "bench"))


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "slow: ImageNet-size tests (test_imagenet_scale.py; resnet50 and vgg11 "
        "only with PATHLIFT_SLOW_TESTS=1)")


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


def run_json(run_cli, *args):
    """`pathlift args... --json` as a dict: exit 0 and nothing on stderr (no progress bar when
    stderr is not a terminal)."""
    result = run_cli(*args, "--json")
    assert result.returncode == 0, result
    assert result.stderr == "", result
    return json.loads(result.stdout)


@pytest.fixture
def run_example(build_dir):
    """run_example("conservation_drift.py", "--steps", "100") -> its stdout: an example of
    examples/ run as a user runs it (the built package on PYTHONPATH, matplotlib without a
    display), skipped without torch, scikit-learn or matplotlib; fails on a non-zero exit."""

    def run(script, *args, timeout=300):
        pytest.importorskip("torch")
        for name, package in (("sklearn", "python3-sklearn"),
                              ("matplotlib", "python3-matplotlib")):
            if importlib.util.find_spec(name) is None:
                pytest.skip(f"{name} is not installed (Debian: {package})")
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(
            [str(build_dir / "python"), *filter(None, [os.environ.get("PYTHONPATH")])]),
            MPLBACKEND="Agg")
        proc = subprocess.run([sys.executable, str(ROOT / "examples" / script), *map(str, args)],
                              capture_output=True, text=True, env=env, timeout=timeout)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    return run


# --- The Python package (issue 6) ---------------------------------------------------------------


@pytest.fixture(scope="session")
def pathlift_module():
    """The pathlift package of the build under test (fails clearly when it is not built)."""
    try:
        import pathlift
    except ImportError as e:
        pytest.fail(f"the pathlift Python package is not built in {BUILD / 'python'} "
                    f"(set PATHLIFT_BUILD_DIR): {e}")
    return pathlift


@pytest.fixture(scope="session")
def pl(pathlift_module):
    """pathlift_module under the short name the tests use."""
    return pathlift_module


@pytest.fixture(scope="session")
def pt(pathlift_module):
    """pathlift.torch (PyTorch's face)."""
    import pathlift.torch

    return pathlift.torch


@pytest.fixture(scope="session")
def build_dir():
    """The build directory under test ($PATHLIFT_BUILD_DIR)."""
    return BUILD


class _Reference:
    """Independent pure-Python references, written from docs/conventions.md without the engine:
    the paths in canonical order by a plain depth-first search, and the forward pass of the
    DAG."""

    @staticmethod
    def roles(net):
        """(is_input, is_output) per node, from the edges and the designated outputs."""
        m = net.num_nodes
        src = [int(s) for s in net.sources]
        dst = [int(t) for t in net.targets]
        indeg = [0] * m
        outdeg = [0] * m
        for s, t in zip(src, dst):
            outdeg[s] += 1
            indeg[t] += 1
        is_input = [indeg[v] == 0 for v in range(m)]
        is_output = [outdeg[v] == 0 or net.is_designated_output(v) for v in range(m)]
        return is_input, is_output

    @staticmethod
    def paths(net):
        """[(edges tuple, start node, end node)] in canonical order: depth-first from the inputs
        in node order, outgoing edges by increasing index, a path emitted at each output."""
        src = [int(s) for s in net.sources]
        dst = [int(t) for t in net.targets]
        out_edges = [[] for _ in range(net.num_nodes)]
        for k, s in enumerate(src):
            out_edges[s].append(k)
        is_input, is_output = _Reference.roles(net)
        found = []

        def walk(start, v, stack):
            for k in out_edges[v]:
                stack.append(k)
                w = dst[k]
                if is_output[w]:
                    found.append((tuple(stack), start, w))
                walk(start, w, stack)
                stack.pop()

        for v in range(net.num_nodes):
            if is_input[v]:
                walk(v, v, [])
        return found

    @staticmethod
    def forward(net, theta, X):
        """f_theta(X): rows of X are samples over the data inputs (node order), bias inputs are
        1; the values at the outputs in node order."""
        import numpy as np

        m = net.num_nodes
        src = [int(s) for s in net.sources]
        dst = [int(t) for t in net.targets]
        is_input, is_output = _Reference.roles(net)
        in_edges = [[] for _ in range(m)]
        for k, t in enumerate(dst):
            in_edges[t].append(k)
        bias = {int(v) for v in net.bias}
        data = [v for v in range(m) if is_input[v] and v not in bias]
        X = np.asarray(X, dtype=np.float64)
        assert X.shape[1] == len(data)
        vals = np.zeros((X.shape[0], m))
        done = [False] * m
        for j, v in enumerate(data):
            vals[:, v] = X[:, j]
            done[v] = True
        for v in bias:
            vals[:, v] = 1.0
            done[v] = True
        remaining = [v for v in range(m) if not done[v]]
        while remaining:
            progress = []
            for v in remaining:
                if all(done[src[k]] for k in in_edges[v]):
                    pre = sum(theta[k] * vals[:, src[k]] for k in in_edges[v])
                    act = net.activation(v)
                    if act == "relu":
                        pre = np.maximum(pre, 0.0)
                    elif act.startswith("leaky_relu:"):
                        a = float(act.split(":", 1)[1])
                        pre = np.where(pre > 0, pre, a * pre)
                    vals[:, v] = pre
                    done[v] = True
                    progress.append(v)
            assert progress, "cycle"
            remaining = [v for v in remaining if not done[v]]
        return vals[:, [v for v in range(m) if is_output[v]]]


@pytest.fixture(scope="session")
def reference():
    """Independent references: reference.paths(net), reference.forward(net, theta, X)."""
    return _Reference
