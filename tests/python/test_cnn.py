"""CNNs from PyTorch and ONNX (issue 16): LeNet-5, a VGG-like net with BatchNorm and average
pools, torchvision's resnet18 and a Conv1d net with groups and dilation, imported per layer and
unrolled in C++, each checked against independent references: the model's own forward pass and
torch autograd (float64, eval mode, random weights and BatchNorm statistics), a path-norm recipe
run by PyTorch on a transformed copy of the model, and a brute-force path enumeration written
here from the network's edges.

Run with PATHLIFT_BUILD_DIR=<build> /usr/bin/python3 -m pytest tests/python/test_cnn.py
"""
import copy
import io
import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")
nn = torch.nn
F = torch.nn.functional
BatchNorm = nn.modules.batchnorm._BatchNorm


# --- models ----------------------------------------------------------------------------------


class LeNet5(nn.Module):
    """LeNet-5: two conv + ReLU + max-pool blocks, three Linear layers (1 x size x size)."""

    def __init__(self, c1=6, c2=16, f1=120, f2=84, classes=10, size=28):
        super().__init__()
        self.conv1 = nn.Conv2d(1, c1, 5, padding=2)
        self.conv2 = nn.Conv2d(c1, c2, 5)
        self.pool = nn.MaxPool2d(2)
        self.relu = nn.ReLU()
        flat = c2 * ((size // 2 - 4) // 2) ** 2
        self.fc1 = nn.Linear(flat, f1)
        self.fc2 = nn.Linear(f1, f2)
        self.fc3 = nn.Linear(f2, classes)

    def forward(self, x):
        x = self.pool(self.relu(self.conv1(x)))
        x = self.pool(self.relu(self.conv2(x)))
        x = torch.flatten(x, 1)
        return self.fc3(self.relu(self.fc2(self.relu(self.fc1(x)))))


def vgg_like(w=8, classes=10, adaptive=3):
    """Conv-BN-ReLU blocks, max and average pools (one with padding excluded from the count),
    an adaptive average pool with overlapping windows (4 -> 3), Dropout, two Linear layers
    (3 x 16 x 16)."""
    return nn.Sequential(
        nn.Conv2d(3, w, 3, padding=1), nn.BatchNorm2d(w), nn.ReLU(),
        nn.Conv2d(w, w, 3, padding=1, bias=False), nn.BatchNorm2d(w), nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(w, 2 * w, 3, padding=1), nn.BatchNorm2d(2 * w), nn.ReLU(),
        nn.AvgPool2d(2),
        nn.Conv2d(2 * w, 2 * w, 3, padding=1), nn.ReLU(),
        nn.AvgPool2d(3, stride=1, padding=1, count_include_pad=False),
        nn.AdaptiveAvgPool2d(adaptive),
        nn.Flatten(),
        nn.Linear(2 * w * adaptive * adaptive, 4 * w), nn.ReLU(), nn.Dropout(0.5),
        nn.Linear(4 * w, classes))


def conv1d_net(c=8, out=5, adaptive=3):
    """Conv1d with groups, dilation, padding and stride, BatchNorm1d, a padded max pool, an
    adaptive pool with overlapping windows (4 -> 3) (4 x 32)."""
    return nn.Sequential(
        nn.Conv1d(4, c, 3, padding=2, dilation=2, groups=2), nn.ReLU(),
        nn.Conv1d(c, c, 5, stride=2, padding=1, groups=4, bias=False), nn.BatchNorm1d(c),
        nn.ReLU(),
        nn.MaxPool1d(3, stride=2, padding=1),
        nn.Conv1d(c, 6, 3, dilation=2), nn.ReLU(),
        nn.AdaptiveAvgPool1d(adaptive),
        nn.Flatten(),
        nn.Linear(6 * adaptive, out))


def resnet18():
    torchvision = pytest.importorskip("torchvision", reason="torchvision (Debian: "
                                      "python3-torchvision) is needed for the resnet18 tests")
    return torchvision.models.resnet18(num_classes=10)


def tiny_resnet():
    """torchvision's own BasicBlock (with a downsample branch) at a size whose paths can be
    enumerated: the residual structure of resnet18 for the checks that need P small."""
    pytest.importorskip("torchvision", reason="torchvision (Debian: python3-torchvision)")
    from torchvision.models.resnet import BasicBlock

    class TinyResNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 1, 3, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(1)
            self.relu = nn.ReLU(inplace=True)
            self.layer1 = BasicBlock(1, 1)
            self.layer2 = BasicBlock(1, 2, stride=2, downsample=nn.Sequential(
                nn.Conv2d(1, 2, 1, stride=2, bias=False), nn.BatchNorm2d(2)))
            self.avgpool = nn.AdaptiveAvgPool2d(1)
            self.fc = nn.Linear(2, 2)

        def forward(self, x):
            x = self.layer2(self.layer1(self.relu(self.bn1(self.conv1(x)))))
            return self.fc(torch.flatten(self.avgpool(x), 1))

    return TinyResNet()


def prepare(model, seed):
    """float64, eval mode, random weights and random BatchNorm running statistics."""
    g = torch.Generator().manual_seed(seed)
    model = model.double().eval()
    with torch.no_grad():
        for p in model.parameters():
            fan_in = max(1, p[0].numel()) if p.dim() > 1 else 4
            p.copy_(torch.randn(p.shape, generator=g, dtype=torch.float64) / math.sqrt(fan_in))
        for m in model.modules():
            if isinstance(m, BatchNorm):
                m.running_mean.copy_(0.3 * torch.randn(m.num_features, generator=g,
                                                       dtype=torch.float64))
                m.running_var.copy_(0.5 + torch.rand(m.num_features, generator=g,
                                                     dtype=torch.float64))
    return model


# name -> (factory, input shape); the full-size models and small ones of the same architecture
# for the checks that enumerate paths (f = L Phi, L dPhi = df/dtheta).
MODELS = {
    "lenet5": (lambda: LeNet5(), (1, 28, 28)),
    "vgg": (lambda: vgg_like(), (3, 16, 16)),
    "conv1d": (lambda: conv1d_net(), (4, 32)),
    "resnet18": (resnet18, (3, 32, 32)),
}
SMALL = {
    "lenet5-small": (lambda: LeNet5(c1=2, c2=2, f1=3, f2=3, classes=2, size=12), (1, 12, 12)),
    "vgg-small": (lambda: vgg_like(w=1, classes=2, adaptive=2), (3, 4, 4)),
    "conv1d-small": (lambda: conv1d_net(c=4, out=2), (4, 32)),
    "resnet-small": (tiny_resnet, (3, 4, 4)),
}
# torch.onnx.export refuses an adaptive pool whose output size does not divide its input's:
# the same architectures with such pools where the models above have overlapping windows.
ONNX = {
    "lenet5": MODELS["lenet5"],
    "vgg-onnx": (lambda: vgg_like(adaptive=2), (3, 16, 16)),
    "conv1d-onnx": (lambda: conv1d_net(adaptive=2), (4, 32)),
    "resnet18": MODELS["resnet18"],
}
ALL = {**MODELS, **SMALL, **ONNX}
SEEDS = {name: k for k, name in enumerate(ALL)}


def build(name):
    factory, shape = ALL[name]
    return prepare(factory(), SEEDS[name]), shape


@pytest.fixture(scope="module")
def imported(pl):
    """name -> (model, input shape, network), built once per module."""
    cache = {}

    def get(name):
        if name not in cache:
            model, shape = build(name)
            cache[name] = (model, shape, pl.from_torch(model, input_shape=shape))
        return cache[name]

    return get


def inputs(shape, n=16, seed=0):
    return torch.randn((n, *shape), dtype=torch.float64, generator=torch.Generator().manual_seed(
        seed))


def outputs(model, X):
    with torch.no_grad():
        return model(X).reshape(X.shape[0], -1).numpy()


def relative_error(got, expected):
    return np.max(np.abs(got - expected)) / max(np.max(np.abs(expected)), 1e-300)


# --- theta: the parameters, BatchNorm as a x + b ---------------------------------------------


class Affine(nn.Module):
    """An eval-mode BatchNorm as y = a x + b per channel, a and b leaf parameters."""

    def __init__(self, a, b):
        super().__init__()
        self.weight = nn.Parameter(a.detach().clone())
        self.bias = nn.Parameter(b.detach().clone())

    def forward(self, x):
        shape = (1, -1) + (1,) * (x.dim() - 2)
        return x * self.weight.view(shape) + self.bias.view(shape)


def bn_affine(bn):
    a = bn.weight / torch.sqrt(bn.running_var + bn.eps)
    return a, bn.bias - a * bn.running_mean


def replace_modules(model, replace):
    """A deep copy with each submodule m replaced by replace(m) when that is not None (the
    parameter order of the copy is the model's: a child keeps its place)."""
    model = copy.deepcopy(model)
    for name, mod in list(model.named_modules()):
        new = replace(mod)
        if new is not None and name:
            parent, _, child = name.rpartition(".")
            setattr(model.get_submodule(parent) if parent else model, child, new)
    return model


def affine_copy(model):
    """The model with every BatchNorm replaced by Affine(a, b): the reparametrisation whose
    parameters are theta."""
    return replace_modules(model, lambda m: Affine(*bn_affine(m)) if isinstance(m, BatchNorm)
                           else None)


def flat_parameters(model):
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()]).numpy()


@pytest.mark.parametrize("name", list(MODELS))
def test_theta_is_the_parameters_with_batch_norm_affine(pl, imported, name):
    model, _, net = imported(name)
    theta = pl.theta_from_torch(model)
    n = sum(p.numel() for p in model.parameters())
    assert theta.dtype == np.float64 and theta.shape == (n,) and net.d == n
    # (atol: b = beta - a mean here, beta + gamma shift in pathlift: equal to rounding)
    np.testing.assert_allclose(theta, flat_parameters(affine_copy(model)), rtol=1e-15, atol=1e-15)
    np.testing.assert_array_equal(net.weights, theta)
    has_bn = any(isinstance(m, BatchNorm) for m in model.modules())
    assert has_bn == (not np.array_equal(theta, flat_parameters(model)))


# --- forward ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(MODELS))
def test_forward_equals_the_model(pl, imported, name):
    model, shape, net = imported(name)
    X = inputs(shape)
    got = pl.forward(net, pl.theta_from_torch(model), X.reshape(16, -1).numpy()).outputs
    assert relative_error(got, outputs(model, X)) <= 1e-12


# --- f = L Phi and the chain rule, on small models -------------------------------------------


def torch_jacobian(model, X):
    """d model(X) / d theta by torch autograd on the Affine reparametrisation, (n q) x d."""
    m = affine_copy(model)
    named = [(k, p.shape, p.numel()) for k, p in m.named_parameters()]
    theta = torch.tensor(flat_parameters(m))

    def f(flat):
        params, o = {}, 0
        for k, s, n in named:
            params[k] = flat[o:o + n].view(s)
            o += n
        return torch.nn.utils.stateless.functional_call(m, params, (X,)).reshape(-1)

    return torch.autograd.functional.jacobian(f, theta).numpy()


@pytest.mark.parametrize("name", list(SMALL))
def test_linearization_and_chain_rule(pl, imported, name):
    model, shape, net = imported(name)
    assert pl.count_paths_total(net) < 2_000_000, "keep the small models small"
    theta = pl.theta_from_torch(model)
    X = inputs(shape, n=6, seed=1)
    f = outputs(model, X)
    lin = pl.linearize(net, theta, X.reshape(6, -1).numpy())
    phi = pl.path_lifting(net, theta)
    np.testing.assert_allclose((lin.L @ phi).reshape(f.shape), f, rtol=1e-12,
                               atol=1e-12 * np.abs(f).max())
    J = pl.jacobian(net, theta)
    assert J.shape == (phi.size, theta.size)
    chain = (lin.L @ J).toarray()
    expected = torch_jacobian(model, X)
    np.testing.assert_allclose(chain, expected, rtol=1e-9, atol=1e-9 * np.abs(expected).max())


# --- path-norms against a PyTorch recipe -----------------------------------------------------


def window_sum(x, kernel, stride, padding, dilation=1):
    """Sum over each pooling window (padding contributes nothing), 1-D or 2-D."""
    one_d = x.dim() == 3
    k, s, p, d = (list(v) if isinstance(v, (tuple, list)) else [v] * (1 if one_d else 2)
                  for v in (kernel, stride if stride else kernel, padding, dilation))
    if one_d:
        x, k, s, p, d = x.unsqueeze(2), [1] + k, [1] + s, [0] + p, [1] + d
    n, c, h, w = x.shape
    cols = F.unfold(x, k, dilation=d, padding=p, stride=s)
    size = [(dim + 2 * pp - dd * (kk - 1) - 1) // ss + 1
            for dim, kk, ss, pp, dd in zip((h, w), k, s, p, d)]
    out = cols.view(n, c, k[0] * k[1], -1).sum(2).view(n, c, *size)
    return out.squeeze(2) if one_d else out


class SumPool(nn.Module):
    def __init__(self, pool, scale=None):
        super().__init__()
        self.pool = pool
        self.scale = scale

    def forward(self, x):
        p = self.pool
        out = window_sum(x, p.kernel_size, p.stride, p.padding, getattr(p, "dilation", 1))
        return out if self.scale is None else out * self.scale(x)


def adaptive_sizes(n_in, n_out):
    return torch.tensor([math.ceil((i + 1) * n_in / n_out) - (i * n_in) // n_out
                         for i in range(n_out)], dtype=torch.float64)


class PoweredAdaptive(nn.Module):
    """Adaptive average pool whose weights 1/|window| are raised to s."""

    def __init__(self, pool, s):
        super().__init__()
        self.pool = pool
        self.s = s

    def forward(self, x):
        out = self.pool(x)
        sizes = [adaptive_sizes(n_in, n_out) for n_in, n_out in zip(x.shape[2:], out.shape[2:])]
        size = sizes[0] if len(sizes) == 1 else sizes[0][:, None] * sizes[1][None, :]
        return out * size ** (1 - self.s)


def path_norm_recipe(model, shape, s):
    """||Phi||_s^s by PyTorch: a copy with every weight |w|^s, BatchNorm |a|^s x + |b|^s, ReLU
    removed, max-pool a sum-pool, average pools keeping their weights 1/k raised to s, on an
    all-ones input, summed over the outputs."""
    def powered_avg(pool):
        k = pool.kernel_size
        area = np.prod(k) if isinstance(k, (tuple, list)) else (k if isinstance(
            pool, nn.AvgPool1d) else k * k)
        if pool.count_include_pad:
            return SumPool(pool, lambda x: float(area) ** -s)
        return SumPool(pool, lambda x: window_sum(torch.ones_like(x), pool.kernel_size,
                                                  pool.stride, pool.padding) ** -s)

    def replace(m):
        if isinstance(m, BatchNorm):
            a, b = bn_affine(m)
            return Affine(a.abs() ** s, b.abs() ** s)
        if isinstance(m, (nn.ReLU, nn.Dropout)):
            return nn.Identity()
        if isinstance(m, (nn.MaxPool1d, nn.MaxPool2d)):
            return SumPool(m)
        if isinstance(m, (nn.AvgPool1d, nn.AvgPool2d)):
            return powered_avg(m)
        if isinstance(m, (nn.AdaptiveAvgPool1d, nn.AdaptiveAvgPool2d)):
            return PoweredAdaptive(m, s)
        return None

    copy_ = copy.deepcopy(model)
    with torch.no_grad():
        for m in copy_.modules():
            if not isinstance(m, BatchNorm):
                for p in m.parameters(recurse=False):
                    p.copy_(p.abs() ** s)
        copy_ = replace_modules(copy_, replace)
        return copy_(torch.ones((1, *shape), dtype=torch.float64)).sum().item()


@pytest.mark.parametrize("name", list(MODELS))
@pytest.mark.parametrize("s", [1.0, 2.0])
def test_path_norm_equals_the_recipe(pl, imported, name, s):
    model, shape, net = imported(name)
    expected = path_norm_recipe(model, shape, s) ** (1 / s)
    got = pl.path_norm(net, pl.theta_from_torch(model), s).norm
    assert float(got) == pytest.approx(expected, rel=1e-10)


# --- ONNX ------------------------------------------------------------------------------------


def onnx_export(model, shape):
    """The model as ONNX bytes with BatchNormalization kept (not folded into the convolutions):
    TrainingMode.PRESERVE skips the eval-mode peephole that fuses Conv + BN, and constant
    folding stays off."""
    pytest.importorskip("onnx", reason="onnx (Debian: python3-onnx) is needed for the ONNX "
                                       "tests")
    buffer = io.BytesIO()
    torch.onnx.export(model, torch.zeros((1, *shape), dtype=torch.float64), buffer,
                      training=torch.onnx.TrainingMode.PRESERVE, do_constant_folding=False,
                      input_names=["x"], output_names=["y"], opset_version=13)
    return buffer.getvalue()


@pytest.mark.parametrize("name", list(ONNX))
def test_onnx_export_gives_the_same_network(pl, imported, name, tmp_path):
    import onnx

    model, shape, net = imported(name)
    data = onnx_export(model, shape)
    proto = onnx.load_from_string(data)
    assert any(n.op_type == "BatchNormalization" for n in proto.graph.node) == \
        any(isinstance(m, BatchNorm) for m in model.modules())
    path = tmp_path / f"{name}.onnx"
    path.write_bytes(data)
    from_path = pl.from_onnx(path)
    if name != "resnet18":  # (a second unroll of resnet18 adds nothing but time)
        assert identical(from_path, pl.from_onnx(proto, input_shape=shape))
        assert identical(from_path, pl.from_onnx(data))
    assert (from_path.num_nodes, from_path.num_edges, from_path.d) == \
        (net.num_nodes, net.num_edges, net.d)
    X = inputs(shape, seed=2)
    got = pl.forward(from_path, from_path.weights, X.reshape(16, -1).numpy()).outputs
    assert relative_error(got, outputs(model, X)) <= 1e-12
    # ONNX stores BatchNormalization's epsilon as a float32 attribute: a = scale /
    # sqrt(var + eps) moves by ~1e-13 relatively, which resnet18's 20 BatchNorms compound.
    for s in (1.0, 2.0):
        assert float(pl.path_norm(from_path, from_path.weights, s).norm) == pytest.approx(
            float(pl.path_norm(net, net.weights, s).norm), rel=1e-9)


def identical(a, b):
    """The same network: nodes, edges, parameters, fixed weights, activations, weights (without
    to_json, slow on tens of millions of edges) of the unrolled DAGs."""
    a, b = a.unrolled(), b.unrolled()
    return (a.nodes == b.nodes and np.array_equal(a.edges, b.edges) and
            np.array_equal(a.params, b.params) and
            np.array_equal(a.fixed_weights, b.fixed_weights) and
            a.activations == b.activations and np.array_equal(a.weights, b.weights))


# --- brute force on a tiny CNN ---------------------------------------------------------------


class TinyCNN(nn.Module):
    """d < 300 and every layer kind: conv, BatchNorm, max and average pools, a skip (add), a
    subtraction, a concatenation, a module applied on two parallel branches (weight sharing
    that no path uses twice), Linear."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 2, 2)
        self.conv_b = nn.Conv2d(1, 2, 2, bias=False)
        self.bn = nn.BatchNorm2d(2)
        self.shared = nn.Conv2d(2, 2, 1)
        self.pool = nn.MaxPool2d(2, stride=1)
        self.avg = nn.AvgPool2d(2)
        self.fc = nn.Linear(4, 2)
        self.relu = nn.ReLU()

    def forward(self, x):
        h = self.relu(self.bn(self.conv(x)))                 # 2 x 3 x 3
        a = self.relu(self.shared(h) + h)                     # skip
        b = self.relu(self.shared(self.relu(self.conv_b(x))) - h)  # shared weights, subtraction
        p = self.avg(torch.cat([self.pool(a), self.pool(b)], 1))  # 4 x 1 x 1
        return self.fc(torch.flatten(p, 1))


class SharedChain(nn.Module):
    """A module applied twice in a row: every path through both uses its parameters twice."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 2, 2)
        self.shared = nn.Conv2d(2, 2, 1)
        self.relu = nn.ReLU()

    def forward(self, x):
        h = self.relu(self.conv(x))
        return torch.flatten(self.shared(self.relu(self.shared(h))), 1)


def edge_parameters(net):
    """(parameter of each edge, -1 for a fixed edge; weight of each fixed edge)."""
    return np.asarray(net.params, dtype=np.int64), np.asarray(net.fixed_weights, dtype=np.float64)


def brute_force(net, theta, reference):
    """Phi, B, dPhi from the paths of the DAG enumerated here (canonical order): Phi_p = prod of
    the edge weights (theta[param] or the fixed weight), B[p, k] = 1 when p uses parameter k,
    dPhi[p, k] = sum over the edges e of p carrying k of prod_{e' != e} w_e'."""
    net = net.unrolled()
    params, fixed = edge_parameters(net)
    w = np.where(params >= 0, theta[np.maximum(params, 0)], fixed)
    paths = [edges for edges, _, _ in reference.paths(net)]
    d = theta.size
    phi = np.array([np.prod(w[list(p)]) for p in paths])
    B = np.zeros((len(paths), d))
    J = np.zeros((len(paths), d))
    for r, p in enumerate(paths):
        for i, e in enumerate(p):
            k = params[e]
            if k >= 0:
                B[r, k] = 1
                J[r, k] += np.prod(np.delete(w[list(p)], i))
    return phi, B, J


def test_tiny_cnn_skeleton_and_jacobian_brute_force(pl, reference):
    model = prepare(TinyCNN(), 11)
    net = pl.from_torch(model, input_shape=(1, 4, 4))
    theta = pl.theta_from_torch(model)
    assert net.d == theta.size <= 300
    X = inputs((1, 4, 4), seed=3)
    assert relative_error(pl.forward(net, theta, X.reshape(16, -1).numpy()).outputs,
                          outputs(model, X)) <= 1e-12
    phi, B, J = brute_force(net, theta, reference)
    np.testing.assert_allclose(pl.path_lifting(net, theta), phi, rtol=1e-13, atol=1e-15)
    np.testing.assert_array_equal(pl.skeleton(net, dense=True), B)
    np.testing.assert_allclose(pl.jacobian(net, theta, dense=True), J, rtol=1e-12, atol=1e-14)
    lin = pl.linearize(net, theta, X.reshape(16, -1).numpy())
    np.testing.assert_allclose((lin.L @ J), torch_jacobian(model, X), rtol=1e-9, atol=1e-12)
    report = pl.rank(net, theta)
    assert report["rank_B_certified"] and report["rank_B"] == np.linalg.matrix_rank(B)
    assert report["rank_J"] == np.linalg.matrix_rank(J)
    # h_sym against an independent count: the dimension of the solutions (alpha, c) of
    # alpha(dst) - alpha(src) = c_k on the edges of parameter k, = 0 on fixed edges, alpha = 0 on
    # inputs and outputs (c = 0 forces alpha = 0, so it is the dimension of the c's).
    net = net.unrolled()
    params, _ = edge_parameters(net)
    m = net.num_nodes
    src, dst = np.asarray(net.sources), np.asarray(net.targets)
    rows = []
    for e in range(net.num_edges):
        r = np.zeros(m + net.d)
        r[dst[e]] += 1
        r[src[e]] -= 1
        if params[e] >= 0:
            r[m + params[e]] -= 1
        rows.append(r)
    for v in range(m):
        if net.role(v) != "hidden":
            r = np.zeros(m + net.d)
            r[v] = 1
            rows.append(r)
    h_sym = m + net.d - np.linalg.matrix_rank(np.array(rows))
    assert report["h_sym"] == h_sym == pl.rescaling_symmetry_dimension(net).h_sym
    assert report["expected"] == net.d - h_sym >= report["rank_B"]
    assert (report["status"] == "verified") == (report["rank_B"] == net.d - h_sym)


def test_a_path_using_a_parameter_twice(pl, reference):
    """Sequential weight sharing: B would hold 2s, so skeleton() refuses naming the two edges;
    dPhi sums the derivatives of both factors (the brute force's chain rule)."""
    model = prepare(SharedChain(), 13)
    net = pl.from_torch(model, input_shape=(1, 3, 3))
    theta = pl.theta_from_torch(model)
    with pytest.raises(pl.NetworkError, match="twice"):
        pl.skeleton(net)
    phi, _, J = brute_force(net, theta, reference)
    np.testing.assert_allclose(pl.path_lifting(net, theta), phi, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(pl.jacobian(net, theta, dense=True), J, rtol=1e-12, atol=1e-14)
    X = inputs((1, 3, 3), seed=4)
    lin = pl.linearize(net, theta, X.reshape(16, -1).numpy())
    np.testing.assert_allclose(lin.L @ J, torch_jacobian(model, X), rtol=1e-9, atol=1e-12)


# --- what is refused -------------------------------------------------------------------------


def test_sigmoid_and_tanh_are_refused_together(pl):
    model = nn.Sequential(nn.Linear(3, 4), nn.Sigmoid(), nn.Linear(4, 4), nn.Tanh(),
                          nn.Linear(4, 2)).double().eval()
    with pytest.raises(pl.UnsupportedModelError) as info:
        pl.from_torch(model)
    message = str(info.value)
    assert "Sigmoid at '1'" in message and "Tanh at '3'" in message
    assert isinstance(info.value, ValueError)
    ok, problems = pl.supports(model)
    assert not ok and len(problems) == 2
    assert "Sigmoid" in problems[0] and "Tanh" in problems[1]
    assert not pl.supports(model)
    assert pl.supports(nn.Sequential(nn.Linear(3, 2))) == (True, [])


def test_training_mode_is_refused_with_the_way_out(pl):
    model = vgg_like(w=2).double()
    with pytest.raises(pl.UnsupportedModelError, match=r"model\.eval\(\) first$") as info:
        pl.from_torch(model, input_shape=(3, 16, 16))
    # every BatchNorm and the Dropout, at once, in one message (refuse_training_mode)
    assert "where module '1' (BatchNorm2d), module '4' (BatchNorm2d), module '8' (BatchNorm2d) " \
        "normalize by the batch; module '18' (Dropout) is random." in str(info.value)
    assert pl.supports(model.eval(), input_shape=(3, 16, 16)).ok


# --- per layer, weight sharing, ResNet import ------------------------------------------------


def test_layer_graph_is_per_layer(pl):
    model = prepare(vgg_like(), 5)
    graph = pl.layer_graph_from_torch(model, input_shape=(3, 16, 16))
    kinds = [layer.kind for layer in graph.layers]
    assert kinds[0] == "input" and len(kinds) == len(model)  # + input, - Dropout
    offsets = {}
    o = 0
    for name, p in model.named_parameters():
        offsets[name] = o
        o += p.numel()
    for layer in graph.layers:
        mod = model.get_submodule(layer.name) if layer.kind != "input" else None
        if isinstance(mod, (nn.Conv2d, nn.Linear, nn.BatchNorm2d)):
            assert layer.weight_offset == offsets[f"{layer.name}.weight"]
            assert layer.bias_offset == offsets.get(f"{layer.name}.bias", -1)
    assert graph.num_params == o
    np.testing.assert_array_equal(graph.weights, pl.theta_from_torch(model))
    size = pl.unrolled_size(graph)
    net = pl.unroll(graph)
    assert (size.nodes, size.edges) == (net.num_nodes, net.num_edges)


def test_a_module_called_twice_is_two_layers_sharing_offsets(pl):
    model = prepare(TinyCNN(), 12)
    graph = pl.layer_graph_from_torch(model, input_shape=(1, 4, 4))
    shared = [layer for layer in graph.layers if layer.kind == "conv" and
              layer.name.startswith("shared")]
    assert len(shared) == 2 and shared[0].name != shared[1].name
    assert shared[0].weight_offset == shared[1].weight_offset >= 0


def test_resnet18_imports(pl, imported):
    model, shape, net = imported("resnet18")
    assert net.d == sum(p.numel() for p in model.parameters())
    graph = pl.layer_graph_from_torch(model, input_shape=shape)
    assert len(graph.layers) < 100  # per layer, not per entry
    assert net.num_edges == pl.unrolled_size(graph).edges


def test_onnx_refusals_list_every_operator(pl):
    """C++'s UnsupportedModel arrives as pathlift.UnsupportedModelError (a ValueError), every
    unsupported operator named at once."""
    model = nn.Sequential(nn.Linear(3, 4), nn.Sigmoid(), nn.Linear(4, 4), nn.Tanh()).double()
    data = onnx_export(model.eval(), (3,))
    with pytest.raises(pl.UnsupportedModelError) as info:
        pl.from_onnx(data)
    assert "Sigmoid" in str(info.value) and "Tanh" in str(info.value)
    assert isinstance(info.value, ValueError)
    with pytest.raises(pl.FormatError):
        pl.from_onnx(b"not an onnx model")
    with pytest.raises(TypeError, match="path, bytes or an onnx.ModelProto"):
        pl.from_onnx(3.5)


def test_layer_graph_bindings(pl):
    """Layer and LayerGraph from Python: keyword construction, kinds by name, numpy weights,
    JSON and pickle round trips, validation naming the layer."""
    import pickle

    assert pl.layer_kinds()[:3] == ["input", "linear", "conv"] and len(pl.layer_kinds()) == 18
    conv = pl.Layer("conv", "c", [0], out_channels=2, kernel=[2, 2], weight_offset=0,
                    bias_offset=8)
    assert conv.kind == "conv" and conv.stride == [] and conv.activation == "identity"
    assert "out_channels=2" in repr(conv) and "groups" not in repr(conv)
    relu = pl.Layer("activation", "r", [1], activation="leaky_relu:0.5")
    g = pl.LayerGraph(input_shape=[1, 3, 3], layers=[pl.Layer("input", "in"), conv, relu],
                      outputs=[2], num_params=10, weights=np.arange(10.0))
    assert pl.layer_shapes(g) == [(1, 3, 3), (2, 2, 2), (2, 2, 2)]
    assert g.weights.dtype == np.float64 and np.array_equal(g.weights, np.arange(10.0))
    assert pl.parse_layer_graph(pl.layer_graph_to_json(g)) == g == pickle.loads(pickle.dumps(g))
    net = pl.unroll(g)
    assert net.d == 10 and len(net.data_inputs) == 9
    x = np.random.default_rng(0).standard_normal((4, 9))
    w = np.arange(10.0)
    ref = F.leaky_relu(F.conv2d(torch.tensor(x).view(4, 1, 3, 3), torch.tensor(w[:8]).view(
        2, 1, 2, 2), torch.tensor(w[8:])), 0.5).reshape(4, -1).numpy()
    np.testing.assert_allclose(pl.forward(net, w, x).outputs, ref, rtol=1e-13)
    with pytest.raises(pl.FormatError, match="unknown layer kind"):
        pl.Layer("softmax", "s")
    g.layers = [pl.Layer("input", "in"), pl.Layer("linear", "fc", [0], out_features=2,
                                                  weight_offset=0)]
    g.outputs = [1]
    with pytest.raises(pl.NetworkError, match="fc"):
        pl.layer_shapes(g)  # a linear layer on a (1, 3, 3) input: flatten first


class Functional(nn.Module):
    """The functional forms: F.max_pool2d, F.avg_pool2d, F.adaptive_avg_pool2d, in-place +=,
    torch.add, x.view(x.size(0), -1), x.reshape(x.shape[0], -1), F.linear of parameters,
    F.leaky_relu, torch.relu, a LeakyReLU module, padding='same'."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 3, 3, padding="same")
        self.conv2 = nn.Conv2d(3, 3, 1)
        self.act = nn.LeakyReLU(0.2)
        self.w = nn.Parameter(torch.randn(4, 12))
        self.b = nn.Parameter(torch.randn(4))

    def forward(self, x):
        h = self.act(self.conv(x))                                  # 3 x 6 x 6
        h = F.max_pool2d(h, 2)                                      # 3 x 3 x 3
        g = torch.relu(self.conv2(h))
        g += h
        g = torch.add(F.avg_pool2d(g, 3, stride=1, padding=1, count_include_pad=False), h)
        a = F.adaptive_avg_pool2d(g, (2, 2)).view(x.size(0), -1)   # 12
        b = F.leaky_relu(F.linear(a, self.w, self.b), 0.1)
        return b.reshape(b.shape[0], -1)


def test_functional_forms(pl):
    model = prepare(Functional(), 14)
    net = pl.from_torch(model, input_shape=(2, 6, 6))
    X = inputs((2, 6, 6), seed=5)
    got = pl.forward(net, pl.theta_from_torch(model), X.reshape(16, -1).numpy()).outputs
    assert relative_error(got, outputs(model, X)) <= 1e-12
    kinds = [layer.kind for layer in pl.layer_graph_from_torch(model, (2, 6, 6)).layers]
    assert kinds.count("flatten") == 1  # the view; the reshape of a flat tensor is nothing
