"""The path-norm toolkit's layer kinds (k_max_pool, group_sort, interpolate) beyond PyTorch's
importer: ONNX's Resize in mode linear and Max / Min read by from_onnx (forward equal to PyTorch,
path-norms of the layer graph equal to those of its unrolled DAG, the refusals named), the
path-free quantities of each kind against brute-force enumeration of the unrolled network's
paths (path-norms s = 1, 2, the kernel diagonal, the path-metric), and the generalization
bound's P and K on them.

Run with PATHLIFT_BUILD_DIR=<build> /usr/bin/python3 -m pytest tests/python/test_toolkit_kinds_onnx.py
"""
import warnings

import numpy as np
import pytest

from onnx_export import onnx, onnx_bytes, torch  # the module is skipped without torch or onnx

nn = torch.nn
F = torch.nn.functional
helper = onnx.helper
numpy_helper = pytest.importorskip("onnx.numpy_helper")


def export(model, shape, opset=13):
    """model (float64, eval mode) as ONNX bytes, batch symbolic, the exporter's warnings
    silenced."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return onnx_bytes(model, shape, opset)


def ops(data):
    return [n.op_type for n in onnx.load_from_string(data).graph.node]


def check(pl, model, data, shape):
    """from_onnx computes what the model computes (1e-12), and the layer graph's path-norms
    (s = 1, 2) are those of its unrolled DAG. Returns the LayerNetwork."""
    net = pl.from_onnx(data)
    X = torch.randn((5, *shape), dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    got = pl.forward(net, None, X.reshape(5, -1).numpy()).outputs
    with torch.no_grad():
        want = model(X).reshape(5, -1).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    dag = pl.unroll(net.layer_graph)
    for s in (1.0, 2.0):
        assert pl.path_norm(net, s=s).norm == pytest.approx(pl.path_norm(dag, s=s).norm,
                                                            rel=1e-12)
    return net


def kinds(net):
    return [layer.kind for layer in net.layer_graph.layers]


class Up(nn.Module):
    def __init__(self, mode, align_corners, **resize):
        super().__init__()
        conv = nn.Conv2d if mode == "bilinear" else nn.Conv1d
        self.conv = conv(2, 3, 3, padding=1)
        self.mode, self.align_corners, self.resize = mode, align_corners, resize

    def forward(self, x):
        return F.interpolate(torch.relu(self.conv(x)), mode=self.mode,
                             align_corners=self.align_corners, **self.resize)


@pytest.mark.parametrize("opset", [11, 13])
@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("resize", [{"scale_factor": 2}, {"scale_factor": 3},
                                    {"size": (8, 9)}, {"size": (3, 4)}])
def test_bilinear_resize(pl, opset, align_corners, resize):
    torch.manual_seed(0)
    model = Up("bilinear", align_corners, **resize).double()
    data = export(model, (2, 5, 7), opset)
    assert "Resize" in ops(data)
    net = check(pl, model, data, (2, 5, 7))
    up = [layer for layer in net.layer_graph.layers if layer.kind == "interpolate"]
    assert len(up) == 1 and up[0].align_corners == align_corners
    assert list(up[0].scales) == []  # whole sizes: scale = out / in exactly


@pytest.mark.parametrize("align_corners", [False, True])
def test_linear_resize(pl, align_corners):
    torch.manual_seed(1)
    for resize in ({"scale_factor": 2}, {"size": 11}):
        model = Up("linear", align_corners, **resize).double()
        net = check(pl, model, export(model, (2, 7)), (2, 7))
        assert "interpolate" in kinds(net)


class MaxMin(nn.Module):
    """A Lipschitz MLP: Linear, MaxMin (torch.max / torch.min of two chunks), twice."""

    def __init__(self):
        super().__init__()
        self.fc1, self.fc2, self.fc3 = nn.Linear(8, 8), nn.Linear(8, 6), nn.Linear(6, 2)

    def forward(self, x):
        for fc in (self.fc1, self.fc2):
            a, b = fc(x).chunk(2, dim=1)
            x = torch.cat([torch.max(a, b), torch.min(a, b)], dim=1)
        return self.fc3(x)


def test_max_min(pl):
    torch.manual_seed(2)
    model = MaxMin().double()
    data = export(model, (8,))
    assert {"Max", "Min"} <= set(ops(data))
    net = check(pl, model, data, (8,))
    sorts = [layer for layer in net.layer_graph.layers if layer.kind == "group_sort"]
    # A Max and a Min of the same operands share one sort.
    assert [(s.group_size, s.descending) for s in sorts] == [(2, True), (2, True)]
    assert kinds(net) == kinds(pl.from_torch(model, input_shape=(8,)))


def linear_split_max(op, inputs=3, constant=False):
    """x (N, 6) -> MatMul by W (6 x 6) -> Split in `inputs` parts -> op of the parts (or of the
    first part and a constant)."""
    w = np.arange(36, dtype=np.float64).reshape(6, 6) / 10 - 1.5
    size = 6 // inputs
    parts = [f"p{k}" for k in range(inputs)]
    nodes = [helper.make_node("MatMul", ["x", "W"], ["h"]),
             helper.make_node("Split", ["h", "sizes"], parts, axis=1)]
    initializers = [numpy_helper.from_array(w, "W"),
                    numpy_helper.from_array(np.full(inputs, size, dtype=np.int64), "sizes")]
    if constant:
        initializers.append(numpy_helper.from_array(np.zeros(size), "zero"))
        nodes.append(helper.make_node(op, ["p0", "zero"], ["y"], name="the_op"))
    else:
        nodes.append(helper.make_node(op, parts, ["y"], name="the_op"))
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", onnx.TensorProto.DOUBLE, ["n", 6])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.DOUBLE, ["n", size])],
        initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    return model.SerializeToString(), w


@pytest.mark.parametrize("op", ["Max", "Min"])
def test_max_of_three(pl, op):
    data, w = linear_split_max(op)
    net = pl.from_onnx(data)
    X = np.random.default_rng(4).standard_normal((6, 6))
    h = X @ w
    parts = np.stack([h[:, 0:2], h[:, 2:4], h[:, 4:6]])
    want = parts.max(axis=0) if op == "Max" else parts.min(axis=0)
    np.testing.assert_allclose(pl.forward(net, None, X).outputs, want, rtol=1e-14, atol=1e-14)
    sort = next(layer for layer in net.layer_graph.layers if layer.kind == "group_sort")
    assert sort.group_size == 3


def resize_model(mode, transform, scales=None, sizes=None):
    """x (N, 1, 4, 4) -> Resize."""
    inputs = ["x", "", "scales" if scales is not None else "", "sizes" if sizes is not None else ""]
    initializers = []
    if scales is not None:
        initializers.append(numpy_helper.from_array(np.array(scales, np.float32), "scales"))
    if sizes is not None:
        initializers.append(numpy_helper.from_array(np.array(sizes, np.int64), "sizes"))
    node = helper.make_node("Resize", inputs, ["y"], name="resize", mode=mode,
                            coordinate_transformation_mode=transform)
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", onnx.TensorProto.DOUBLE, ["n", 1, 4, 4])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.DOUBLE, None)], initializers)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString()


@pytest.mark.parametrize("data, message", [
    (lambda: resize_model("cubic", "half_pixel", scales=[1, 1, 2, 2]),
     "Resize at 'resize' (mode cubic: pathlift reads mode nearest"),
    (lambda: resize_model("linear", "asymmetric", scales=[1, 1, 2, 2]),
     "coordinate_transformation_mode asymmetric in mode linear: pathlift reads half_pixel, "
     "pytorch_half_pixel and align_corners"),
    (lambda: resize_model("linear", "half_pixel", scales=[1, 1, 1.5, 1.3]),
     "on dimension 3 of size 4: an output of 5 entries, which is not scale x 4"),
    (lambda: resize_model("linear", "half_pixel", scales=[1, 2, 1, 1]),
     "mode linear along the channels"),
    (lambda: resize_model("linear", "pytorch_half_pixel", sizes=[1, 1, 1, 4]),
     "pytorch_half_pixel to one entry on dimension 2"),
    (lambda: linear_split_max("Max", inputs=1, constant=True)[0],
     "Max at 'the_op' (its input 'zero' is a constant, not computed from the data input)"),
    (lambda: export(KMaxPool(), (1, 6, 6)),
     "TopK (the k largest entries along an axis) is not a layer pathlift imports from ONNX"),
])
def test_refusals_name_the_node(pl, data, message):
    with pytest.raises(pl.UnsupportedModelError) as e:
        pl.from_onnx(data())
    assert message in str(e.value)


class KMaxPool(nn.Module):
    def forward(self, x):
        u = x.unfold(2, 2, 2).unfold(3, 2, 2)
        return u.reshape(u.shape[0], 1, 3, 3, 4).topk(2, dim=-1).values[..., 1]


# --- brute force on the unrolled network -------------------------------------------------------


def toolkit_graph(pl, kind):
    """conv (3 x 3, 4 channels) -> relu -> the kind -> conv (2 x 2, 2 channels) on 2 x 5 x 6."""
    layers = [pl.Layer("input", "x"),
              pl.Layer("conv", "c1", [0], out_channels=4, kernel=[3, 3], padding=[1, 1],
                       weight_offset=0, bias_offset=72),
              pl.Layer("activation", "r1", [1], activation="relu")]
    d = 76
    if kind == "k_max_pool":
        layers.append(pl.Layer("k_max_pool", "kmax", [2], kernel=[2, 3], stride=[1, 2], k=3))
    elif kind == "group_sort":
        layers.append(pl.Layer("group_sort", "sort", [2], group_size=2, descending=False))
    elif kind == "maxima":  # MaxMin's maxima: the minima are dead
        layers.append(pl.Layer("group_sort", "sort", [2], group_size=2, descending=True))
        layers.append(pl.Layer("gather", "maxima", [3], axis=0, indices=[0, 2]))
    else:
        layers.append(pl.Layer("interpolate", "up", [2], output_size=[7, 4],
                               align_corners=kind == "interpolate_corners"))
    last = len(layers) - 1
    probe = pl.LayerGraph(input_shape=[2, 5, 6], layers=layers, outputs=[last], num_params=d)
    channels = pl.layer_shapes(probe)[last][0]
    layers.append(pl.Layer("conv", "c2", [last], out_channels=2, kernel=[2, 2], weight_offset=d,
                           bias_offset=d + 8 * channels))
    d += 8 * channels + 2
    theta = np.random.default_rng(5).standard_normal(d)
    return pl.LayerNetwork(pl.LayerGraph(input_shape=[2, 5, 6], layers=layers,
                                         outputs=[len(layers) - 1], num_params=d, weights=theta))


def enumerated(pl, net, theta):
    """Phi and, per parameter, the sum over paths of (d Phi_p / d theta_k)^2 (the kernel
    diagonal), by enumerating the unrolled network's paths."""
    dag = pl.unroll(net.layer_graph)
    paths = pl.enumerate_paths(dag)
    params = np.asarray(dag.params)
    fixed = np.asarray(dag.fixed_weights)
    phi = np.empty(paths.num_paths)
    diag = np.zeros(len(theta))
    for p in range(paths.num_paths):
        edges = np.asarray(paths.path(p))
        k = params[edges]
        w = np.where(k >= 0, theta[np.maximum(k, 0)], fixed[edges])
        phi[p] = np.prod(w)
        for j in np.unique(k[k >= 0]):
            others = np.prod(w[k != j]) * np.count_nonzero(k == j) * theta[j] ** (
                np.count_nonzero(k == j) - 1)
            diag[j] += others ** 2
    return phi, diag


@pytest.mark.parametrize("kind", ["k_max_pool", "group_sort", "maxima", "interpolate",
                                  "interpolate_corners"])
def test_path_free_quantities_equal_enumeration(pl, kind):
    net = toolkit_graph(pl, kind)
    theta = np.asarray(net.weights)
    phi, diag = enumerated(pl, net, theta)
    assert len(phi) > 100
    for s in (1.0, 2.0):
        want = np.sum(np.abs(phi) ** s) ** (1 / s)
        assert pl.path_norm(net, theta, s=s).norm == pytest.approx(want, rel=1e-12)
    np.testing.assert_allclose(pl.kernel_diagonal(net, theta), diag, rtol=1e-11, atol=0)
    # The path-metric to a pruned theta (dominated: exact) and to an unrelated one (a bound).
    pruned = np.where(np.arange(len(theta)) % 3 == 0, 0.0, theta)
    phi2, _ = enumerated(pl, net, pruned)
    metric = pl.path_metric(net, theta, pruned)
    assert metric.exact
    assert metric.value == pytest.approx(np.abs(phi - phi2).sum(), rel=1e-12)
    other = np.random.default_rng(6).standard_normal(len(theta))
    phi3, _ = enumerated(pl, net, other)
    assert pl.path_metric(net, theta, other).value >= np.abs(phi - phi3).sum() * (1 - 1e-12)
    # The rank theorem: d - h_sym, certified.
    report = pl.rank(net, theta)
    assert report["status"] == "verified" and report["rank_B_certified"]
    assert report["rank_B"] == report["d"] - report["h_sym"]


@pytest.mark.parametrize("kind, P, K", [("k_max_pool", 1, 6), ("group_sort", 2, 2),
                                        ("maxima", 1, 2), ("interpolate", 0, 1)])
def test_generalization_constants(pl, kind, P, K):
    """P counts the distinct k of the k-max-pooling neurons that reach an output, K their most
    inputs; the unrolled DAG gives the same."""
    net = toolkit_graph(pl, kind)
    for model in (net, pl.unroll(net.layer_graph)):
        report = pl.generalization_bound(model, n=1000, input_bound=1.0)
        assert (report.P, report.K) == (P, K)


@pytest.mark.parametrize("kind", ["k_max_pool", "group_sort", "maxima", "interpolate"])
def test_the_linearization_picks_the_order_statistic(pl, kind):
    """f(X) = L(X) Phi on the unrolled network: each k-max node's active edge is its k-th
    largest input's, so the linearization reproduces the forward pass."""
    net = toolkit_graph(pl, kind)
    theta = np.asarray(net.weights)
    dag = pl.unroll(net.layer_graph)
    X = np.random.default_rng(7).standard_normal((20, 60))
    lin = pl.linearize(dag, theta, X)
    phi = np.asarray(pl.path_lifting(dag, theta))
    f = pl.forward(dag, theta, X).outputs
    np.testing.assert_allclose((lin.L @ phi).reshape(f.shape), f, rtol=1e-11, atol=1e-11)
