"""CLI tests of the path-free computations (issue 8): `pathlift norm` and `pathlift kernel`.

References are independent of pathlift: the paths of a feed-forward network are enumerated here
in Python (PyTorch parameter order: per Linear layer W (out x in, row-major), then b), and the
path-norms are also checked with the PyTorch recipe done in numpy (weights replaced by |w|^s,
all-ones input, identity activations, sum of the outputs).
"""
import copy
import json
import math

import numpy as np
import pytest


def ff_structure(sizes, bias=True):
    """Edges (src, dst) in PyTorch order and the input / output nodes of ff:sizes."""
    node = 0
    layers = []
    for n in sizes:
        layers.append(list(range(node, node + n)))
        node += n
    bias_nodes = []
    edges = []
    for l in range(1, len(sizes)):
        b = None
        if bias:
            b = node
            node += 1
            bias_nodes.append(b)
        for out in layers[l]:
            for inp in layers[l - 1]:
                edges.append((inp, out))
        if bias:
            for out in layers[l]:
                edges.append((b, out))
    inputs = layers[0] + bias_nodes
    outputs = layers[-1]
    return edges, inputs, outputs


def enumerate_paths(edges, inputs, outputs):
    out_edges = {}
    for k, (a, _) in enumerate(edges):
        out_edges.setdefault(a, []).append(k)
    outs = set(outputs)
    paths = []

    def walk(v, prefix, start):
        for k in out_edges.get(v, []):
            w = edges[k][1]
            p = prefix + [k]
            if w in outs:
                paths.append((p, start, w))
            walk(w, p, start)

    for i in inputs:
        walk(i, [], i)
    return paths


def jacobian(paths, theta):
    d = len(theta)
    j = np.zeros((len(paths), d))
    for r, (p, _, _) in enumerate(paths):
        for k in p:
            j[r, k] = np.prod([theta[e] for e in p if e != k])
    return j


def torch_recipe_norm_power(sizes, theta, s):
    """sum_p |Phi_p|^s by the PyTorch recipe: |W|^s, |b|^s, input of ones, sum of outputs."""
    x = np.ones(sizes[0])
    pos = 0
    for l in range(1, len(sizes)):
        n_in, n_out = sizes[l - 1], sizes[l]
        w = np.abs(theta[pos:pos + n_in * n_out].reshape(n_out, n_in)) ** s
        pos += n_in * n_out
        b = np.abs(theta[pos:pos + n_out]) ** s
        pos += n_out
        x = w @ x + b
    assert pos == len(theta)
    return x.sum()


def save_theta(tmp_path, theta, name="theta.npy"):
    path = tmp_path / name
    np.save(path, np.asarray(theta, dtype=np.float64))
    return path


def rel_close(a, b, tol=1e-10):
    return abs(a - b) <= tol * max(abs(a), abs(b), 1e-300)


# ------------------------------------------------------------------------------------------
# pathlift norm


def test_norm_json_against_torch_recipe_and_enumeration(run_cli, tmp_path):
    sizes = [3, 4, 3, 2]
    edges, inputs, outputs = ff_structure(sizes)
    theta = np.random.default_rng(1).standard_normal(len(edges))
    theta[5] = 0.0  # a zero weight
    paths = enumerate_paths(edges, inputs, outputs)
    phi = np.array([np.prod(theta[p]) for p, _, _ in paths])
    res = run_cli("norm", "--ff", "3,4,3,2", "--theta", save_theta(tmp_path, theta),
                  "--s", "0,0.5,1,2,3", "--json", check=True)
    j = json.loads(res.stdout)
    assert list(j)[5:8] == ["P", "norms", "log10_norms"]  # after the header (docs/cli.md#json)
    assert j["P"] == len(paths)
    assert set(j["norms"]) == {"0", "0.5", "1", "2", "3"}
    for key, s in [("0.5", 0.5), ("1", 1.0), ("2", 2.0), ("3", 3.0)]:
        power = torch_recipe_norm_power(sizes, theta, s)
        assert rel_close(power, np.sum(np.abs(phi) ** s), 1e-12)
        want = power ** (1.0 / s)
        assert rel_close(j["norms"][key], want), (key, j["norms"][key], want)
        assert abs(j["log10_norms"][key] - math.log10(want)) < 1e-10
    assert j["norms"]["0"] == len(paths)


def test_norm_against_pytorch_recipe_on_torch_mlp(run_cli, tmp_path):
    # The usual PyTorch recipe: weights replaced by |w|^s, an all-ones input, the sum of the
    # outputs = sum_p |Phi_p|^s (every value is >= 0, so the ReLUs pass it through).
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 5), torch.nn.ReLU(), torch.nn.Linear(5, 4),
                                torch.nn.ReLU(), torch.nn.Linear(4, 2)).double()
    theta = torch.cat([p.detach().reshape(-1) for p in model.parameters()]).numpy()
    res = run_cli("norm", "--ff", "3,5,4,2", "--theta", save_theta(tmp_path, theta), "--s",
                  "0.5,1,2,3", "--json", check=True)
    j = json.loads(res.stdout)
    for key, s in [("0.5", 0.5), ("1", 1.0), ("2", 2.0), ("3", 3.0)]:
        recipe = copy.deepcopy(model)
        with torch.no_grad():
            for p in recipe.parameters():
                p.copy_(p.abs() ** s)
            power = recipe(torch.ones(1, 3, dtype=torch.float64)).sum().item()
        assert rel_close(j["norms"][key], power ** (1.0 / s)), (key, j["norms"][key], power)


def test_norm_default_exponents_and_text(run_cli):
    j = json.loads(run_cli("norm", "--json", check=True).stdout)
    assert set(j["norms"]) == {"1", "2"}
    assert j["P"] == 5  # fig1
    text = run_cli("norm", "--example", "fig1", check=True).stdout
    assert "||Phi||_1" in text and "||Phi||_2" in text and "P " in text


def test_norm_per_node(run_cli, tmp_path):
    sizes = [2, 3, 2]
    edges, inputs, outputs = ff_structure(sizes)
    theta = np.random.default_rng(2).standard_normal(len(edges))
    paths = enumerate_paths(edges, inputs, outputs)
    res = run_cli("norm", "--ff", "2,3,2", "--theta", save_theta(tmp_path, theta), "--s", "1",
                  "--per-node", "--json", check=True)
    j = json.loads(res.stdout)
    per_out = j["log10_per_output"]["1"]
    per_in = j["log10_per_input"]["1"]
    # Output nodes are y0, y1; inputs x0, x1 then the bias nodes b1, b2 (node order).
    for name, node in zip(["y0", "y1"], outputs):
        want = sum(abs(np.prod(theta[p])) for p, _, end in paths if end == node)
        assert abs(per_out[name] - math.log10(want)) < 1e-10
    for name, node in zip(["x0", "x1", "b1", "b2"], inputs):
        want = sum(abs(np.prod(theta[p])) for p, start, _ in paths if start == node)
        assert abs(per_in[name] - math.log10(want)) < 1e-10
    text = run_cli("norm", "--ff", "2,3,2", "--theta", save_theta(tmp_path, theta),
                   "--per-node", check=True).stdout
    assert "output y0" in text and "input  b2" in text


@pytest.mark.parametrize("c", [3.0, 1e-3])
def test_norm_beyond_double_range(run_cli, tmp_path, c):
    # ff-nobias 2, 10 x 300, 1 with every weight c: sum_p |Phi_p| = 2 10^300 c^301 (10^443.7
    # for c = 3, 10^-602.7 for c = 1e-3): null in "norms", right in "log10_norms".
    layers = 300
    shape = ",".join(["2"] + ["10"] * layers + ["1"])
    d = 2 * 10 + (layers - 1) * 100 + 10
    res = run_cli("norm", "--ff", shape, "--no-bias", "--theta",
                  save_theta(tmp_path, np.full(d, c)), "--s", "1,2", "--json", check=True)
    j = json.loads(res.stdout)
    log_p = math.log10(2) + layers
    want1 = log_p + (layers + 1) * math.log10(c)
    want2 = (log_p + 2 * (layers + 1) * math.log10(c)) / 2
    assert j["norms"]["1"] is None
    assert abs(j["log10_norms"]["1"] - want1) < 1e-9
    assert abs(j["log10_norms"]["2"] - want2) < 1e-9
    assert j["P_exact"] is False  # P = 2 10^300 paths: beyond 64 bits, given as a double
    assert rel_close(j["P"], 2e300, 1e-9)
    assert abs(j["log10_P"] - log_p) < 1e-9
    assert abs(want1) > 400


def test_norm_errors(run_cli, tmp_path):
    res = run_cli("norm", "--theta", save_theta(tmp_path, np.ones(6)))
    assert res.returncode != 0
    assert "6" in res.stderr and "7" in res.stderr
    res = run_cli("norm", "--s", "-1")
    assert res.returncode != 0 and "error" in res.stderr
    theta = np.ones(7)
    theta[4] = np.nan
    path = tmp_path / "nan.txt"
    path.write_text("\n".join(str(x) for x in theta))
    res = run_cli("norm", "--theta", path)
    assert res.returncode != 0


# ------------------------------------------------------------------------------------------
# pathlift kernel


def reference_kernel(sizes, theta, bias=True):
    edges, inputs, outputs = ff_structure(sizes, bias)
    j = jacobian(enumerate_paths(edges, inputs, outputs), theta)
    return j.T @ j


def test_kernel_diag_and_full_against_enumeration(run_cli, tmp_path):
    sizes = [2, 3, 3, 2]
    edges, _, _ = ff_structure(sizes)
    theta = np.random.default_rng(3).standard_normal(len(edges))
    theta[4] = 0.0
    k = reference_kernel(sizes, theta)
    tf = save_theta(tmp_path, theta)
    res = run_cli("kernel", "--ff", "2,3,3,2", "--theta", tf, "--diag", "-o", tmp_path / "D.npy",
                  check=True)
    assert res.stdout == "" and "trace(K)" in res.stderr  # the data is in the file
    diag = np.load(tmp_path / "D.npy")
    assert diag.shape == (len(edges),)
    np.testing.assert_allclose(diag, np.diag(k), rtol=1e-10, atol=1e-300)
    run_cli("kernel", "--ff", "2,3,3,2", "--theta", tf, "--full", "-o", tmp_path / "K.npy",
            "--threads", "2", check=True)
    kk = np.load(tmp_path / "K.npy")
    assert kk.shape == (len(edges), len(edges))
    np.testing.assert_allclose(kk, k, rtol=1e-10, atol=1e-12 * np.abs(k).max())
    res = run_cli("kernel", "--ff", "2,3,3,2", "--theta", tf, "--trace", "--json", check=True)
    assert rel_close(json.loads(res.stdout)["trace"], np.trace(k))


@pytest.mark.parametrize("shape,method", [("2,3,3,2", "dense"), ("4,16,16,2", "lanczos"),
                                          ("4,16,16,2", "auto")])
def test_kernel_top_eigenvalues(run_cli, tmp_path, shape, method):
    sizes = [int(x) for x in shape.split(",")]
    edges, _, _ = ff_structure(sizes)
    theta = np.random.default_rng(4).standard_normal(len(edges))
    k = reference_kernel(sizes, theta)
    want = np.sort(np.linalg.eigvalsh(k))[::-1][:4]
    res = run_cli("kernel", "--ff", shape, "--theta", save_theta(tmp_path, theta), "--top-eig",
                  "4", "--method", method, "--json", "-o", tmp_path / "eig.npy", check=True)
    j = json.loads(res.stdout)
    assert j["status"] == "converged"
    assert j["method"] == {"dense": "dense", "lanczos": "lanczos", "auto": "lanczos"}[method]
    np.testing.assert_allclose(j["eigenvalues"], want, rtol=1e-9)
    np.testing.assert_allclose(np.load(tmp_path / "eig.npy"), want, rtol=1e-9)
    assert rel_close(j["trace"], np.trace(k))
    text = run_cli("kernel", "--ff", shape, "--theta", save_theta(tmp_path, theta), "--top-eig",
                   "2", check=True).stdout
    assert "eigenvalues of K" in text


def test_kernel_refuses_full_over_memory_limit(run_cli, tmp_path):
    res = run_cli("kernel", "--ff", "10,20,10", "--full", "-o", tmp_path / "K.npy",
                  "--max-memory", "1M")
    assert res.returncode != 0
    assert "430" in res.stderr and "--max-memory" in res.stderr
    assert not (tmp_path / "K.npy").exists()
    # The diagonal needs no d x d memory.
    run_cli("kernel", "--ff", "10,20,10", "--diag", "-o", tmp_path / "D.npy", "--max-memory",
            "1M", check=True)
    assert np.load(tmp_path / "D.npy").shape == (430,)


def test_kernel_usage_errors(run_cli, tmp_path):
    assert run_cli("kernel").returncode != 0  # no mode
    assert run_cli("kernel", "--diag", "--full", "-o", tmp_path / "x.npy").returncode != 0
    res = run_cli("kernel", "--diag")
    assert res.returncode != 0 and "-o" in res.stderr
    assert run_cli("kernel", "--top-eig", "0").returncode != 0
    res = run_cli("kernel", "--top-eig", "8")  # fig1 has d = 7
    assert res.returncode != 0 and "7" in res.stderr
    help_text = run_cli("kernel", "--help", check=True).stdout
    for flag in ["--diag", "--full", "--top-eig", "--trace", "--theta", "--seed", "--threads",
                 "--max-memory"]:
        assert flag in help_text
    assert "--s" in run_cli("norm", "--help", check=True).stdout
