"""The CLI on layer graphs (issue 17): `norm`, `kernel --diag|--trace|--top-eig` and `info` on an
ONNX model or a pathlift-layers file run on the layer graph without unrolling, and print what the
same commands print on the unrolled network written as a plain pathlift-network file (`pathlift
convert`); the commands that need edges unroll on demand and refuse, with the node and edge
counts, when the unrolled network exceeds --max-memory.

Run with PATHLIFT_BUILD_DIR=<build> /usr/bin/python3 -m pytest tests/python/test_cli_layers.py
"""
import io
import json
import math
import pathlib

import numpy as np
import pytest

from conftest import run_json

ROOT = pathlib.Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"

# The layer graph of docs/layers.md#json with weights: conv 3x3 (padding 1), ReLU, 2x2 max pool,
# flatten, linear 8 -> 3. 47 parameters; unrolled: 61 nodes, 291 edges.
SMALL_CNN = {
    "format": "pathlift-layers",
    "version": 1,
    "input_shape": [1, 4, 4],
    "layers": [
        {"name": "input", "kind": "input"},
        {"name": "conv1", "kind": "conv", "inputs": [0], "out_channels": 2, "kernel": [3, 3],
         "padding": [1, 1], "groups": 1, "weight_offset": 0, "bias_offset": 18},
        {"name": "relu1", "kind": "activation", "inputs": [1], "activation": "relu"},
        {"name": "pool1", "kind": "max_pool", "inputs": [2], "kernel": [2, 2]},
        {"name": "flatten", "kind": "flatten", "inputs": [3]},
        {"name": "fc", "kind": "linear", "inputs": [4], "out_features": 3, "weight_offset": 20,
         "bias_offset": 44},
    ],
    "outputs": [5],
    "num_params": 47,
}

# An MLP 4-5-3 as layers: unrolled, edge k carries parameter k (feed_forward(4, [5], 3)).
MLP = {
    "format": "pathlift-layers",
    "version": 1,
    "input_shape": [4],
    "layers": [
        {"name": "input", "kind": "input"},
        {"name": "fc1", "kind": "linear", "inputs": [0], "out_features": 5, "weight_offset": 0,
         "bias_offset": 20},
        {"name": "relu", "kind": "activation", "inputs": [1], "activation": "relu"},
        {"name": "fc2", "kind": "linear", "inputs": [2], "out_features": 3, "weight_offset": 25,
         "bias_offset": 40},
    ],
    "outputs": [3],
    "num_params": 43,
}

# name -> network arguments of the layer-graph model (files written under tmp by `models`).
MODELS = {
    "small-cnn": ["--network", "{tmp}/small_cnn.json"],
    "mlp": ["--network", "{tmp}/mlp.json"],
    "residual": ["--onnx", DATA / "residual.onnx", "--input-shape", "3,6,6"],
    "conv1d": ["--onnx", DATA / "conv1d.onnx", "--input-shape", "4,16"],
}


def layers_file(doc, path, seed):
    doc = dict(doc)
    doc["weights"] = np.random.default_rng(seed).normal(size=doc["num_params"]).tolist()
    path.write_text(json.dumps(doc))


@pytest.fixture(scope="module")
def models(tmp_path_factory, cli_path):
    """name -> (layer-graph args, plain-network args): the plain file is `pathlift convert`'s
    unrolled network."""
    import subprocess

    tmp = tmp_path_factory.mktemp("layers")
    layers_file(SMALL_CNN, tmp / "small_cnn.json", 1)
    layers_file(MLP, tmp / "mlp.json", 2)
    out = {}
    for name, args in MODELS.items():
        args = [str(a).format(tmp=tmp) for a in args]
        plain = tmp / f"{name}.plain.json"
        proc = subprocess.run([str(cli_path), "convert", *args, "-o", str(plain)],
                              capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr
        out[name] = (args, ["--network", str(plain)])
    return out


def assert_close(a, b, rel=1e-9, path="", abs_tol=0.0):
    """Equal JSON values, numbers to `rel` (null and booleans exactly)."""
    if isinstance(a, dict):
        assert isinstance(b, dict) and list(a) == list(b), (path, a, b)
        for k in a:
            assert_close(a[k], b[k], rel, f"{path}.{k}", abs_tol)
    elif isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), (path, a, b)
        for i, (x, y) in enumerate(zip(a, b)):
            assert_close(x, y, rel, f"{path}[{i}]", abs_tol)
    elif isinstance(a, bool) or a is None or isinstance(a, str):
        assert a == b, (path, a, b)
    else:
        assert b is not None and math.isclose(a, b, rel_tol=rel, abs_tol=abs_tol), (path, a, b)


def expect_error(result, *culprits):
    """Exit code 2 (bad input), stderr 'error: ...' naming the culprits, no crash and no
    traceback."""
    assert result.returncode == 2, result
    assert result.stderr.startswith("error: "), result
    assert "Traceback" not in result.stderr and "terminate called" not in result.stderr, result
    for culprit in culprits:
        assert culprit in result.stderr, (culprit, result)


# --- the path-free commands: the layer graph equals its unrolled network ---------------------


@pytest.mark.parametrize("name", list(MODELS))
def test_info_equals_the_unrolled_network(run_cli, models, name):
    layers, plain = models[name]
    a = run_json(run_cli, "info", *layers)
    b = run_json(run_cli, "info", *plain)
    assert a.pop("layers") >= 2 and "layers" not in b
    a.pop("network")
    b.pop("network")
    assert a == b  # counts: exact integers (and the same nulls)


def test_info_counts_the_small_cnn_as_documented(run_cli, models):
    j = run_json(run_cli, "info", *models["small-cnn"][0])
    assert (j["layers"], j["nodes"], j["edges"], j["d"]) == (6, 61, 291, 47)
    assert (j["inputs"], j["bias"], j["outputs"], j["hidden"]) == (18, 2, 3, 40)
    assert j["d_minus_h"] is None  # shared parameters: see `rank`
    mlp = run_json(run_cli, "info", *models["mlp"][0])
    assert mlp["d_minus_h"] == 43 - 5  # edge k carries parameter k: Theorem 1's d - h


def test_info_text_on_a_layer_graph(run_cli, models):
    result = run_cli("info", *models["residual"][0])
    assert result.returncode == 0, result
    assert "layer graph" in result.stdout and "without unrolling" in result.stdout
    plain = run_cli("info", *models["residual"][1])
    # Every line of the unrolled network's summary is there, bar the description.
    lines = [ln for ln in result.stdout.splitlines()
             if not ln.startswith(("network", "layers"))]
    assert lines == [ln for ln in plain.stdout.splitlines() if not ln.startswith("network")]


@pytest.mark.parametrize("name", list(MODELS))
def test_norm_equals_the_unrolled_network(run_cli, models, name):
    layers, plain = models[name]
    a = run_json(run_cli, "norm", *layers, "--s", "0,0.5,1,2,3")
    b = run_json(run_cli, "norm", *plain, "--s", "0,0.5,1,2,3")
    assert a.pop("network") != b.pop("network")
    assert a["theta"] == b["theta"] == "the network file's weights"
    assert_close(a, b)


@pytest.mark.parametrize("name", ["small-cnn", "residual"])
def test_norm_per_node_equals_the_unrolled_network(run_cli, models, name):
    layers, plain = models[name]
    a = run_json(run_cli, "norm", *layers, "--per-node", "--seed", "4")
    b = run_json(run_cli, "norm", *plain, "--per-node", "--seed", "4")
    a.pop("network")
    b.pop("network")
    assert a["theta"] == "--seed 4"
    assert list(a["log10_per_output"]["1"])[:2] == ["y0", "y1"]
    assert_close(a, b)
    text = run_cli("norm", *layers, "--per-node")
    assert text.returncode == 0 and "  output y0" in text.stdout and "  input  x[" in text.stdout


@pytest.mark.parametrize("name", list(MODELS))
def test_kernel_trace_and_diagonal_equal_the_unrolled_network(run_cli, models, name, tmp_path):
    layers, plain = models[name]
    a = run_json(run_cli, "kernel", *layers, "--trace")
    b = run_json(run_cli, "kernel", *plain, "--trace")
    a.pop("network")
    b.pop("network")
    assert_close(a, b)
    diag = []
    for i, args in enumerate((layers, plain)):
        out = tmp_path / f"diag{i}.npy"
        j = run_json(run_cli, "kernel", *args, "--diag", "-o", out)
        assert j["what"] == "diagonal" and j["d"] == a["d"]
        assert math.isclose(j["trace"], a["trace"], rel_tol=1e-9)
        diag.append(np.load(out))
    assert diag[0].shape == (a["d"],)
    np.testing.assert_allclose(diag[0], diag[1], rtol=1e-9, atol=1e-300)
    assert math.isclose(diag[0].sum(), a["trace"], rel_tol=1e-9)


@pytest.mark.parametrize("name", list(MODELS))
def test_kernel_top_eigenvalues_equal_the_unrolled_network(run_cli, models, name):
    layers, plain = models[name]
    for method in ("auto", "lanczos"):
        a = run_json(run_cli, "kernel", *layers, "--top-eig", "2", "--method", method)
        b = run_json(run_cli, "kernel", *plain, "--top-eig", "2", "--method", method)
        assert a["status"] == b["status"] == "converged"
        assert set(a) == set(b)
        for key in ("trace", "log10_trace", "d"):
            assert_close(a[key], b[key])
        np.testing.assert_allclose(a["eigenvalues"], b["eigenvalues"], rtol=1e-7)


def test_kernel_full_unrolls_a_layer_graph(run_cli, models, tmp_path):
    layers, plain = models["small-cnn"]
    for i, args in enumerate((layers, plain)):
        run_cli("kernel", *args, "--full", "-o", tmp_path / f"k{i}.npy", check=True)
    k = np.load(tmp_path / "k0.npy")
    np.testing.assert_allclose(k, np.load(tmp_path / "k1.npy"), rtol=1e-12)
    np.testing.assert_allclose(np.diag(k), run_diag(run_cli, layers, tmp_path), rtol=1e-9)


def run_diag(run_cli, args, tmp_path):
    out = tmp_path / "d.npy"
    run_cli("kernel", *args, "--diag", "-o", out, check=True)
    return np.load(out)


def test_theta_options_on_a_layer_graph(run_cli, models, tmp_path):
    layers, plain = models["residual"]
    d = run_json(run_cli, "info", *layers)["d"]
    theta = tmp_path / "theta.npy"
    np.save(theta, np.random.default_rng(7).normal(size=d))
    for extra in (["--theta", theta], ["--seed", "3"]):
        a = run_json(run_cli, "norm", *layers, *extra)
        b = run_json(run_cli, "norm", *plain, *extra)
        assert a["theta"] == b["theta"]
        assert_close(a["norms"], b["norms"])
    short = tmp_path / "short.npy"
    np.save(short, np.ones(d - 1))
    expect_error(run_cli("norm", *layers, "--theta", short), f"{d - 1} entries", str(d))


# --- the commands that need edges: unrolled on demand, refused with the sizes -----------------


LENET = ["--onnx", DATA / "lenet5.onnx"]


def test_commands_needing_edges_refuse_with_the_unrolled_sizes(run_cli, tmp_path):
    info = run_json(run_cli, "info", *LENET, "--max-memory", "8M")
    nodes, edges = info["nodes"], info["edges"]
    assert (nodes, edges) == (8883, 419478)  # docs/layers.md#cli
    data = tmp_path / "x.npy"
    np.save(data, np.zeros((2, 784)))
    for args in (["lift", "-o", tmp_path / "phi.npy"], ["forward", "--data", data],
                 ["check"], ["norm", "--per-node"]):
        result = run_cli(*args, *LENET, "--max-memory", "8M")
        expect_error(result, f"{nodes} nodes", f"{edges} edges", "--max-memory")
        assert "without unrolling" in result.stderr
        if args[0] != "norm":  # norm --per-node says that norm itself need not unroll
            assert result.stderr.rstrip().endswith(
                "raise the limit with --max-memory SIZE (info, norm, kernel "
                "--diag|--trace|--top-eig, rank, bound, metric, paths --top|--sample and rescale "
                "compute on the layer graph without unrolling)"), result.stderr
        assert not (tmp_path / "phi.npy").exists()
    # kernel --full: d x d doubles are checked before the graph is unrolled.
    expect_error(run_cli("kernel", "--full", "-o", tmp_path / "k.npy", *LENET, "--max-memory",
                         "8M"), "61706 x 61706", "--max-memory")
    # Its d x d (1282^2 doubles, 13 MB) fits in 50 MB, its 3766710 unrolled edges do not.
    residual = ["--onnx", DATA / "residual.onnx", "--input-shape", "3,64,64"]
    big = run_json(run_cli, "info", *residual)
    expect_error(run_cli("kernel", "--full", "-o", tmp_path / "k.npy", *residual,
                         "--max-memory", "50M"), f"{big['nodes']} nodes", f"{big['edges']} edges")
    assert not (tmp_path / "k.npy").exists()
    # rank needs no edge: rank(B) = d - h_sym on the layers, within 8M as well.
    r = run_json(run_cli, "rank", *LENET, "--max-memory", "8M")
    assert (r["rank_B"], r["rank_B_method"], r["status"]) == (61480, "symmetry", "verified")


def test_path_free_commands_do_not_unroll(run_cli, tmp_path):
    """8 MB holds the process's LeNet-5, its activations and parameters, not its 419478 unrolled
    edges (30 MB)."""
    norm = run_json(run_cli, "norm", *LENET, "--max-memory", "8M")
    assert norm["d"] == 61706 and norm["norms"]["2"] > 0
    trace = run_json(run_cli, "kernel", *LENET, "--trace", "--max-memory", "8M")
    assert trace["trace"] > 0
    out = tmp_path / "diag.npy"
    j = run_json(run_cli, "kernel", *LENET, "--diag", "-o", out, "--max-memory", "8M")
    assert math.isclose(np.load(out).sum(), j["trace"], rel_tol=1e-9)
    eig = run_json(run_cli, "kernel", *LENET, "--top-eig", "1", "--max-memory", "8M")
    assert eig["status"] == "converged" and eig["eigenvalues"][0] <= trace["trace"] * (1 + 1e-9)
    # the other commands the refusal of an unrolling names (test above)
    bound = run_json(run_cli, "bound", *LENET, "--samples", "100", "--input-bound", "1",
                     "--max-memory", "8M")
    assert bound["d"] == 61706 and bound["bound"] > 0
    np.save(tmp_path / "zero.npy", np.zeros(61706))
    metric = run_json(run_cli, "metric", *LENET, "--theta2", tmp_path / "zero.npy",
                      "--max-memory", "8M")
    assert math.isclose(metric["metric"], norm["norms"]["1"], rel_tol=1e-12)  # ||Phi - 0||_1
    top = run_json(run_cli, "paths", *LENET, "--top", "2", "--max-memory", "12M")
    sample = run_json(run_cli, "paths", *LENET, "--sample", "2", "--max-memory", "8M")
    assert len(top["paths"]) == len(sample["paths"]) == 2
    for method in ("--path-cond", "--enorm"):
        r = run_json(run_cli, "rescale", *LENET, method, "-o", tmp_path / "r.npy",
                     "--max-memory", "8M")
        assert r["d"] == 61706 and np.load(tmp_path / "r.npy").shape == (61706,)


def test_a_file_that_is_not_a_layer_graph_keeps_its_reader(run_cli, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "pathlift-layers", "version": 1, "input_shape": [2], '
                   '"layers": [{"name": "input", "kind": "input"}, {"name": "fc", '
                   '"kind": "linear", "inputs": [0], "out_features": -2, "weight_offset": 0}], '
                   '"outputs": [1], "num_params": 4}')
    expect_error(run_cli("norm", "--network", bad), str(bad), "out_features")
    expect_error(run_cli("info", "--network", tmp_path / "missing.json"), "missing.json")
    plain = run_json(run_cli, "info", "--network", DATA / "fig1.json")
    assert "layers" not in plain and plain["d"] == 7


# --- help --------------------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["norm", "kernel", "info"])
def test_help_says_layer_graphs_run_without_unrolling(run_cli, command):
    result = run_cli(command, "--help")
    assert result.returncode == 0, result
    text = " ".join(result.stdout.split())
    assert "without unrolling" in text and "ONNX" in text


# --- an ONNX CNN exported here from PyTorch ----------------------------------------------------


def test_an_exported_onnx_cnn_equals_its_unrolled_network(run_cli, tmp_path):
    torch = pytest.importorskip("torch")
    pytest.importorskip("onnx")
    nn = torch.nn
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(2, 3, 3, padding=1), nn.BatchNorm2d(3), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(3, 4, 3, stride=2, bias=False), nn.ReLU(), nn.AvgPool2d(2, padding=1),
        nn.Flatten(), nn.Linear(4 * 2 * 2, 5), nn.ReLU(), nn.Linear(5, 3)).double()
    with torch.no_grad():
        model[1].running_mean.uniform_(-0.5, 0.5)
        model[1].running_var.uniform_(0.5, 2.0)
    model.eval()
    buffer = io.BytesIO()
    torch.onnx.export(model, torch.zeros((1, 2, 10, 10), dtype=torch.float64), buffer,
                      training=torch.onnx.TrainingMode.PRESERVE, do_constant_folding=False,
                      input_names=["x"], output_names=["y"], opset_version=13)
    path = tmp_path / "cnn.onnx"
    path.write_bytes(buffer.getvalue())
    plain = tmp_path / "cnn.json"
    run_cli("convert", "--onnx", path, "-o", plain, check=True)
    layers, unrolled = ["--onnx", path], ["--network", plain]
    for args in (["info"], ["norm", "--s", "1,2"], ["kernel", "--trace"],
                 ["kernel", "--top-eig", "2", "--method", "lanczos"]):
        a = run_json(run_cli, *args, *layers)
        b = run_json(run_cli, *args, *unrolled)
        for j in (a, b):
            j.pop("network")
            j.pop("layers", None)
            j.pop("seconds", None)
            j.pop("products", None)
            j.pop("iterations", None)
        if "eigenvalues" in a:
            np.testing.assert_allclose(a.pop("eigenvalues"), b.pop("eigenvalues"), rtol=1e-7)
            # Fresh residuals at roundoff: the two products round differently.
            for j in (a, b):
                assert max(j.pop("residuals")) <= 1e-9, j
        assert_close(a, b)
