"""pathlift.LayerNetwork (issue 17): what from_torch and from_onnx return, a network known by its
layer graph. The path-free functions run on the graph without unrolling and must give what the
same functions give on the unrolled DAG (pathlift.unroll(graph)); every other function unrolls
on demand, once, and refuses with TooLarge's sizes when the DAG does not fit. Also
path_norm_gradient on a Network, against torch autograd and finite differences.

Run with PATHLIFT_BUILD_DIR=<build> /usr/bin/python3 -m pytest tests/python/test_layer_network.py
"""
import json
import math
import pathlib
import pickle

import numpy as np
import pytest

torch = pytest.importorskip("torch")
nn = torch.nn

DATA = pathlib.Path(__file__).resolve().parents[1] / "data"
ONNX_SHAPES = {name: tuple(v["input_shape"]) for name, v in
               json.loads((DATA / "onnx_reference.json").read_text()).items()}


# --- models ----------------------------------------------------------------------------------


def lenet_like():
    """Conv + BatchNorm + ReLU + max pool, conv + ReLU + average pool, Linear (1 x 10 x 10)."""
    return nn.Sequential(
        nn.Conv2d(1, 3, 3, padding=1), nn.BatchNorm2d(3), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(3, 4, 3), nn.ReLU(), nn.AvgPool2d(2, stride=1),
        nn.Flatten(), nn.Linear(4 * 2 * 2, 3))


def resnet18():
    torchvision = pytest.importorskip("torchvision", reason="torchvision (Debian: "
                                      "python3-torchvision) is needed for the resnet18 tests")
    return torchvision.models.resnet18(num_classes=10)


# float64, eval mode, random weights and BatchNorm running statistics: test_cnn's.
from test_cnn import prepare  # noqa: E402


# name -> a function of pathlift giving (LayerNetwork, model or None, input shape)
def _torch_case(factory, shape, seed):
    def make(pl):
        model = prepare(factory(), seed)
        return pl.from_torch(model, input_shape=shape), model, shape
    return make


def _onnx_case(name):
    def make(pl):
        shape = ONNX_SHAPES[name]
        return pl.from_onnx(DATA / name, input_shape=shape), None, shape
    return make


# Small enough to enumerate the paths and to run Lanczos in a blink.
SMALL = {
    "lenet-like": _torch_case(lenet_like, (1, 10, 10), 1),
    "conv1d.onnx": _onnx_case("conv1d.onnx"),
    "aliases.onnx": _onnx_case("aliases.onnx"),
}
# Larger: P = 2.5e12 for lenet5.onnx; torchvision's resnet18 at 3x16x16 (every block, the
# downsampling ones included; layer3 and layer4 at 1x1) unrolls into 4.6 M edges.
CASES = {**SMALL, "lenet5.onnx": _onnx_case("lenet5.onnx"),
         "residual.onnx": _onnx_case("residual.onnx"),
         "resnet18": _torch_case(resnet18, (3, 16, 16), 2)}


@pytest.fixture(scope="module")
def case(pl):
    """name -> (LayerNetwork, the unrolled Network made independently, model, shape)."""
    cache = {}

    def get(name):
        if name not in cache:
            net, model, shape = CASES[name](pl)
            cache[name] = (net, pl.unroll(net.layer_graph), model, shape)
        return cache[name]

    return get


def close(got, expected, rel):
    return float(got) == pytest.approx(float(expected), rel=rel, abs=0)


def same_count(a, b):
    """Exact counts (ints) equal; a count known by its log10 (a Count) equal to rounding."""
    if isinstance(a, int) and isinstance(b, int):
        return a == b
    log10 = [math.log10(c) if isinstance(c, int) else c.log10 for c in (a, b)]
    return log10[0] == pytest.approx(log10[1], rel=1e-12)


# --- what from_torch and from_onnx return ----------------------------------------------------


@pytest.mark.parametrize("name", [n for n in CASES if n != "resnet18"])
def test_import_gives_a_layer_network_not_unrolled(pl, case, name):
    net, dag, model, shape = case(name)
    assert isinstance(net, pl.LayerNetwork) and not isinstance(net, pl.Network)
    assert not net.is_unrolled
    assert (net.num_nodes, net.num_edges) == (dag.num_nodes, dag.num_edges)
    size = net.unrolled_size
    assert (size.nodes, size.edges) == (dag.num_nodes, dag.num_edges)
    assert net.d == net.num_params == dag.d and net.has_weights
    np.testing.assert_array_equal(net.weights, dag.weights)
    assert not net.weights.flags.writeable
    assert net.num_layers == len(net.layer_graph.layers) >= 3
    assert net.layer_graph == pl.parse_layer_graph(pl.layer_graph_to_json(net.layer_graph))
    if model is not None:
        np.testing.assert_array_equal(net.weights, pl.theta_from_torch(model))
    text = repr(net)
    assert f"d = {net.d}" in text and f"{net.num_edges} edges" in text
    assert f"{net.num_layers} layers" in text and "not unrolled" in text
    assert not net.is_unrolled


# --- the path-free functions equal the DAG's, without unrolling -------------------------------


@pytest.mark.parametrize("name", list(CASES))
def test_path_norms_equal_the_unrolled_network(pl, case, name):
    net, dag, _, _ = case(name)
    theta = net.weights
    for s in (1.0, 2.0, 0.5):
        got, expected = pl.path_norm(net, theta, s), pl.path_norm(dag, theta, s)
        assert close(got.norm, expected.norm, 1e-11), s
        assert len(got.per_output) == len(expected.per_output) == len(dag.outputs)
        for a, b in zip(got.per_output, expected.per_output):
            assert close(a, b, 1e-11)
        assert got.per_input is None
    # theta=None: the stored weights; threads do not change a bit
    assert pl.path_norm(net, s=2.0).norm == pl.path_norm(net, theta, 2.0, threads=1).norm
    assert pl.path_norm(net, s=2.0, threads=2).norm == pl.path_norm(net, s=2.0, threads=1).norm
    assert close(pl.path_norm(net, s=0).norm, pl.count_paths_total(dag), 1e-12)
    assert not net.is_unrolled


@pytest.mark.parametrize("name", list(CASES))
def test_path_norm_gradient_equals_the_unrolled_network(pl, case, name):
    net, dag, _, _ = case(name)
    for s in (1.0, 2.0):
        got = pl.path_norm_gradient(net, None, s)
        expected = pl.path_norm_gradient(dag, dag.weights, s)
        assert got.dtype == np.float64 and got.shape == (net.d,)
        np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12 * np.abs(expected).max())
    assert not net.is_unrolled


@pytest.mark.parametrize("name", list(CASES))
def test_path_counts_equal_the_unrolled_network(pl, case, name):
    net, dag, _, _ = case(name)
    got, expected = pl.count_paths(net), pl.count_paths(dag)
    assert same_count(got.paths, expected.paths) and got.paths == pl.count_paths_total(net)
    assert same_count(pl.count_paths_total(dag), expected.paths)
    assert len(got.per_output) == len(expected.per_output)
    assert all(same_count(a, b) for a, b in zip(got.per_output, expected.per_output))
    if name != "resnet18":  # P ~ 1.9e52 there
        assert got.paths == expected.paths and got.per_output == expected.per_output
    assert got.per_input == [] and got.per_edge == []  # per node and per edge: the DAG's
    assert pl.count_paths_total(net, threads=1) == pl.count_paths_total(net, threads=2)
    assert not net.is_unrolled


@pytest.mark.parametrize("name", [n for n in CASES if n != "resnet18"])
def test_path_length_statistics_equal_the_unrolled_network(pl, case, name):
    """nnz(B), the length histogram and the longest path (layer_dp.hpp promises them)."""
    net, dag, _, _ = case(name)
    got, expected = pl.count_paths(net), pl.count_paths(dag)
    assert (got.nnz, got.max_path_length) == (expected.nnz, expected.max_path_length)
    assert got.length_histogram == expected.length_histogram


@pytest.mark.parametrize("name", list(CASES))
def test_kernel_diagonal_and_trace_equal_the_unrolled_network(pl, case, name):
    net, dag, _, _ = case(name)
    theta = net.weights
    got, expected = pl.kernel_diagonal(net), pl.kernel_diagonal(dag, theta)
    assert got.dtype == np.float64 and got.shape == (net.d,)
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12 * expected.max())
    assert close(pl.kernel_trace(net, theta), pl.kernel_trace(dag, theta), 1e-10)
    assert np.array_equal(pl.kernel_diagonal(net, threads=1), pl.kernel_diagonal(net, threads=2))
    assert not net.is_unrolled


@pytest.mark.parametrize("name", list(CASES))
def test_kernel_matvec_equals_the_unrolled_network(pl, case, name):
    net, dag, _, _ = case(name)
    theta = net.weights
    rng = np.random.default_rng(3)
    v = rng.standard_normal(net.d)
    got, expected = pl.kernel_matvec(net, theta, v), pl.kernel_matvec(dag, theta, v)
    assert got.shape == (net.d,)
    np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-11 * np.abs(expected).max())
    if name in SMALL:
        V = rng.standard_normal((net.d, 2))
        got = pl.kernel_matvec(net, None, V)
        assert got.shape == (net.d, 2)
        expected = pl.kernel_matvec(dag, theta, V)
        np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-11 * np.abs(expected).max())
    assert not net.is_unrolled


@pytest.mark.parametrize("name", list(SMALL))
def test_kernel_top_eigenvalues_equal_the_unrolled_network(pl, case, name):
    net, dag, _, _ = case(name)
    # LOBPCG: a block method finds a multiple eigenvalue (aliases.onnx's top one is triple),
    # where single-vector Lanczos depends on roundoff to see it more than once.
    got = pl.kernel_top_eigenvalues(net, None, 3, method="lobpcg", threads=1)
    same = pl.kernel_top_eigenvalues(dag, dag.weights, 3, method="lobpcg")
    assert got.status == same.status == "converged" and not got.dense
    np.testing.assert_allclose(got.values, same.values, rtol=1e-9)
    if name == "lenet-like":  # random weights, a simple spectrum: the top three
        expected = np.linalg.eigvalsh(pl.kernel(dag, dag.weights))[::-1][:3]
        np.testing.assert_allclose(got.values, expected, rtol=1e-8)
    assert not net.is_unrolled


# --- everything else unrolls once, on demand ---------------------------------------------------


@pytest.mark.parametrize("name", list(SMALL))
def test_functions_that_need_edges_unroll_on_demand(pl, case, name):
    _, dag, model, shape = case(name)
    net = CASES[name](pl)[0]  # a fresh one: not unrolled yet
    theta = net.weights
    assert not net.is_unrolled
    J = pl.jacobian(net, theta)
    assert net.is_unrolled
    assert (J != pl.jacobian(dag, theta)).nnz == 0
    unrolled = net.unrolled()
    assert isinstance(unrolled, pl.Network) and unrolled is net.unrolled()  # kept, not copied
    assert unrolled.num_edges == net.num_edges
    np.testing.assert_array_equal(pl.path_lifting(net, theta), pl.path_lifting(dag, theta))
    X = np.random.default_rng(0).standard_normal((3, int(np.prod(shape))))
    np.testing.assert_array_equal(pl.forward(net, theta, X).outputs,
                                  pl.forward(dag, theta, X).outputs)
    if model is not None:
        with torch.no_grad():
            f = model(torch.from_numpy(X).reshape(3, *shape)).numpy()
        np.testing.assert_allclose(pl.forward(net, None, X).outputs, f, rtol=1e-12, atol=1e-12)
    # the Network's attributes are the DAG's, never forwarded: net.unrolled().h
    assert unrolled.nodes == dag.nodes and unrolled.h == dag.h
    np.testing.assert_array_equal(unrolled.sources, dag.sources)
    # (a from_torch network's DAG has no weights: theta is its module's, net.weights)
    assert (unrolled.weights is None) == (model is not None)
    assert unrolled.node_name(0) == dag.node_name(0)
    assert unrolled.with_weights(dag.weights).to_json() == dag.to_json()
    for name in ("sources", "h", "nodes", "to_json"):
        with pytest.raises(AttributeError, match=rf"net\.unrolled\(\)\.{name} \(unrolling makes "
                           rf"{dag.num_nodes} nodes and {dag.num_edges} edges\)"):
            getattr(net, name)
    assert "sources" not in dir(net) and "layer_graph" in dir(net)


def test_per_input_path_norm_is_the_unrolled_networks(pl, case):
    net = SMALL["lenet-like"](pl)[0]
    dag = case("lenet-like")[1]
    got, expected = pl.path_norm(net, s=1.0, per_input=True), pl.path_norm(dag, s=1.0,
                                                                            per_input=True)
    assert net.is_unrolled  # per input node: a DAG quantity
    np.testing.assert_allclose(got.per_input, expected.per_input, rtol=1e-13)


def test_too_large_to_unroll(pl):
    """A LayerNetwork whose DAG exceeds its max_memory: the path-free functions still run; a
    function that needs edges, and unrolled(), raise TooLarge with the sizes; a Network
    attribute is an AttributeError naming net.unrolled() and the sizes, without unrolling."""
    model = prepare(lenet_like(), 4)
    # 64 KiB holds the unroller's plan (about 12 bytes per tensor entry), not the DAG.
    net = pl.from_torch(model, input_shape=(1, 10, 10), max_memory=65536)
    assert net.max_memory == 65536
    size = net.unrolled_size
    assert size.edges * 72 > 65536
    assert pl.path_norm(net, s=2.0).norm > 0 and pl.kernel_diagonal(net).shape == (net.d,)
    assert pl.count_paths_total(net) > 0 and net.num_edges == size.edges
    for call in (lambda: pl.jacobian(net), lambda: pl.path_lifting(net),
                 lambda: pl.kernel(net), lambda: net.unrolled()):
        with pytest.raises(pl.TooLarge) as info:
            call()
        message = str(info.value)
        assert f"{size.nodes} nodes" in message and f"{size.edges} edges" in message, message
        assert isinstance(info.value, MemoryError)
    # the rank needs no edge: rank(B) = d - h_sym on the layers
    assert pl.rank(net)["rank_B_method"] == "symmetry"
    assert not net.is_unrolled
    with pytest.raises(AttributeError, match=rf"net\.unrolled\(\)\.sources \(unrolling makes "
                       rf"{size.nodes} nodes and {size.edges} edges\)"):
        net.sources
    assert not hasattr(net, "no_such_attribute") and not net.is_unrolled
    # a larger limit, given once
    assert net.unrolled(max_memory=1 << 30).num_edges == size.edges and net.is_unrolled
    assert pl.jacobian(net).shape[1] == net.d


def test_constructor_pickle_and_errors(pl):
    graph = pl.layer_graph_from_torch(prepare(lenet_like(), 5), (1, 10, 10))
    net = pl.LayerNetwork(graph, max_memory=1 << 28)
    assert net.layer_graph == graph and net.max_memory == 1 << 28
    back = pickle.loads(pickle.dumps(net))
    assert isinstance(back, pl.LayerNetwork) and back.layer_graph == graph
    assert back.max_memory == net.max_memory and not back.is_unrolled
    bad = pl.LayerGraph(input_shape=[1, 3, 3], layers=[
        pl.Layer("input", "x"), pl.Layer("linear", "fc", [0], out_features=2, weight_offset=0)],
        outputs=[1], num_params=18)
    with pytest.raises(pl.NetworkError, match="fc"):
        pl.LayerNetwork(bad)
    bare = pl.LayerNetwork(pl.LayerGraph(graph.input_shape, graph.layers, graph.outputs,
                                         graph.num_params))
    assert bare.weights is None and not bare.has_weights
    with pytest.raises(ValueError, match="theta is required"):
        pl.path_norm(bare)
    with pytest.raises(ValueError, match="entries"):
        pl.path_norm(net, np.ones(3))
    with pytest.raises(ValueError, match="threads"):
        pl.kernel_diagonal(net, threads=-1)


def test_mlp_round_trip_to_torch(pl):
    """to_torch takes a LayerNetwork (unrolled for its edges)."""
    m = prepare(nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2)), 6)
    net = pl.from_torch(m)
    back = pl.to_torch(net)
    X = torch.randn(5, 3, dtype=torch.float64)
    with torch.no_grad():
        np.testing.assert_allclose(back(X).numpy(), m(X).numpy(), rtol=1e-14)


# --- path_norm_gradient on a Network ----------------------------------------------------------


def mlp_norm(widths, theta, s):
    """||Phi||_s of nn.Sequential(Linear, ReLU, ..., Linear) with parameters theta (PyTorch
    order), by the recipe: weights |w|^s, no ReLU, all-ones input, outputs summed; ^(1/s).
    Differentiable in theta (torch)."""
    o, x = 0, torch.ones(widths[0], dtype=torch.float64)
    for a, b in zip(widths[:-1], widths[1:]):
        W = theta[o:o + a * b].view(b, a)
        o += a * b
        bias = theta[o:o + b]
        o += b
        x = W.abs() ** s @ x + bias.abs() ** s
    return x.sum() ** (1 / s)


@pytest.mark.parametrize("s", [1.0, 2.0, 0.5])
def test_path_norm_gradient_equals_torch_autograd(pl, s):
    widths = [4, 5, 3, 2]
    net = pl.feed_forward(widths[0], widths[1:-1], widths[-1])
    theta = np.random.default_rng(7).standard_normal(net.d)
    t = torch.tensor(theta, requires_grad=True)
    norm = mlp_norm(widths, t, s)
    norm.backward()
    assert float(norm) == pytest.approx(float(pl.path_norm(net, theta, s).norm), rel=1e-13)
    got = pl.path_norm_gradient(net, theta, s)
    assert got.dtype == np.float64 and got.shape == (net.d,)
    np.testing.assert_allclose(got, t.grad.numpy(), rtol=1e-11, atol=1e-13)
    # through a LayerNetwork of the same MLP, too
    model = pl.to_torch(net, theta)
    np.testing.assert_allclose(pl.path_norm_gradient(pl.from_torch(model), theta, s), got,
                               rtol=1e-11, atol=1e-13)


@pytest.mark.parametrize("s", [1.0, 2.0, 0.5, 3.0])
def test_path_norm_gradient_equals_finite_differences(pl, s):
    """On a random DAG (parallel edges, designated outputs, bias nodes): central differences of
    the dynamic programme's own norm."""
    net = pl.random_dag(9, 0.5, 3)
    rng = np.random.default_rng(11)
    theta = rng.uniform(0.5, 1.5, net.d) * rng.choice([-1.0, 1.0], net.d)
    got = pl.path_norm_gradient(net, theta, s)
    h = 1e-6
    fd = np.empty(net.d)
    for k in range(net.d):
        e = np.zeros(net.d)
        e[k] = h
        fd[k] = (float(pl.path_norm(net, theta + e, s).norm) -
                 float(pl.path_norm(net, theta - e, s).norm)) / (2 * h)
    np.testing.assert_allclose(got, fd, rtol=1e-6, atol=1e-8 * np.abs(fd).max())


def test_path_norm_gradient_at_zero_weights(pl):
    net = pl.feed_forward(3, [4], 2)
    theta = np.random.default_rng(2).standard_normal(net.d)
    theta[5] = 0.0
    for s in (1.0, 2.0):  # the (sub)gradient 0
        g = pl.path_norm_gradient(net, theta, s)
        assert g[5] == 0.0 and np.all(np.isfinite(g))
    with pytest.raises(ValueError, match=r"not differentiable at theta\[5\] = 0"):
        pl.path_norm_gradient(net, theta, 0.5)
    with pytest.raises(ValueError, match="> 0"):
        pl.path_norm_gradient(net, theta, 0.0)
    with pytest.raises(ValueError):
        pl.path_norm_gradient(net, theta[:-1], 1.0)
    stored = net.with_weights(theta)
    np.testing.assert_array_equal(pl.path_norm_gradient(stored, s=2.0),
                                  pl.path_norm_gradient(net, theta, 2.0))
