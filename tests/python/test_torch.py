"""The PyTorch bridge (issue 6, per layer since issue 16): from_torch / theta_from_torch /
to_torch, with torch's autograd as the independent reference for Phi and dPhi, and the model
itself for the mapping. theta is exactly the model's parameters: skips are fixed edges inside
the network, not entries of theta (CNNs: test_cnn.py).

Run with PATHLIFT_BUILD_DIR=<build> /usr/bin/python3 -m pytest tests/python/test_torch.py
"""
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")
functorch = pytest.importorskip("functorch")
nn = torch.nn
F = torch.nn.functional

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def pl(pathlift_module):
    global PL
    PL = pathlift_module
    return pathlift_module


PL = None  # the pathlift module, for the helpers below (set by the pl fixture)


# --- models ----------------------------------------------------------------------------------


def mlp(r, widths, q, bias=True):
    layers = []
    sizes = [r, *widths, q]
    for l in range(len(sizes) - 1):
        layers.append(nn.Linear(sizes[l], sizes[l + 1], bias=bias))
        if l < len(sizes) - 2:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


class Residual(nn.Module):
    """An identity skip: y = relu(fc2(h)) + h with h = relu(fc1(x)), then fc3(y)."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(3, 4)
        self.fc2 = nn.Linear(4, 4)
        self.fc3 = nn.Linear(4, 2)

    def forward(self, x):
        h = F.relu(self.fc1(x))
        y = torch.relu(self.fc2(h)) + h
        return self.fc3(y)


class DenseSkip(nn.Module):
    """A concatenation skip and a projection shortcut: fc2(cat([x, relu(fc1(x))])) + fc3(x)."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(3, 5)
        self.fc2 = nn.Linear(8, 2)
        self.fc3 = nn.Linear(3, 2, bias=False)

    def forward(self, x):
        h = self.fc1(x).relu()
        return self.fc2(torch.cat([x, h], dim=1)) + self.fc3(x)


class OutputSkip(nn.Module):
    """A skip into the output's pre-activation: fc2(relu(fc1(x))) + x."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(3, 4)
        self.fc2 = nn.Linear(4, 3)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x))) + x


MLP_SHAPES = [(3, [4], 2, True), (4, [5, 3], 3, True), (2, [3, 3, 3], 1, True),
              (5, [6], 2, False), (3, [4, 4], 2, False), (4, [], 3, True)]
SKIP_MODELS = [Residual, DenseSkip, OutputSkip]


def make(model_factory, seed=0):
    torch.manual_seed(seed)
    return model_factory().double().eval()


def all_models():
    models = [(f"mlp{r}-{w}-{q}-{'bias' if b else 'nobias'}",
               lambda r=r, w=w, q=q, b=b: mlp(r, w, q, b)) for r, w, q, b in MLP_SHAPES]
    models += [(cls.__name__, cls) for cls in SKIP_MODELS]
    return models


MODELS = all_models()


@pytest.fixture(params=MODELS, ids=[name for name, _ in MODELS])
def model(request):
    return make(request.param[1], seed=len(request.param[0]))


def input_width(m):
    return next(mod for mod in m.modules() if isinstance(mod, nn.Linear)).in_features


# --- theta and the mapping --------------------------------------------------------------------


def parameter_count(m):
    return sum(p.numel() for p in m.parameters())


def dag(net):
    """The DAG of a network: a LayerNetwork (what from_torch returns) unrolled, made once and
    kept by it (net.unrolled()); a Network as it is."""
    return net.unrolled() if isinstance(net, PL.LayerNetwork) else net


def edge_parameters(net):
    """(parameter of each edge, -1 for a fixed edge; weight of each fixed edge)."""
    net = dag(net)
    return np.asarray(net.params, dtype=np.int64), np.asarray(net.fixed_weights, dtype=np.float64)


def edge_weights(net, theta):
    """The weight of every edge at theta (theta[param], or the fixed weight): what the
    per-edge reference forward pass reads."""
    params, fixed = edge_parameters(net)
    theta = np.asarray(theta, dtype=np.float64)
    return np.where(params >= 0, theta[np.maximum(params, 0)], fixed)


def test_theta_is_the_parameters(pl, model):
    """theta_from_torch(m) is exactly the parameters in torch order (net.weights, net.d
    entries); identity skips are fixed edges of weight 1 inside the network."""
    theta = pl.theta_from_torch(model)
    expected = torch.cat([p.detach().flatten() for p in model.parameters()]).numpy()
    net = pl.from_torch(model)
    n = parameter_count(model)
    assert theta.dtype == np.float64 and theta.shape == (net.d,) and net.d == n
    assert np.array_equal(theta, expected)
    assert np.array_equal(theta, net.weights)
    assert theta.flags.writeable and not np.shares_memory(theta, net.weights)
    params, fixed = edge_parameters(net)
    assert set(fixed[params < 0].tolist()) <= {1.0}
    assert bool((params < 0).any()) == (type(model).__name__ in ("Residual", "OutputSkip"))
    # so the obvious call works for every supported model
    J = pl.jacobian(pl.from_torch(model), pl.theta_from_torch(model))
    assert J.shape[1] == net.d
    np.testing.assert_array_equal(J.toarray(), pl.jacobian(net).toarray())


def test_theta_from_torch_traces_what_it_must(pl):
    """Plain Sequentials skip the trace; anything else goes through from_torch (and raises
    what it raises)."""
    seq = make(lambda: nn.Sequential(nn.Flatten(), nn.Linear(3, 4), nn.ReLU(), nn.Dropout(0.2),
                                     nn.Linear(4, 2), nn.LeakyReLU(0.1)))
    assert np.array_equal(pl.theta_from_torch(seq), pl.from_torch(seq).weights)
    relu_first = make(lambda: nn.Sequential(nn.ReLU(), nn.Linear(3, 2)))
    net = pl.from_torch(relu_first, input_shape=3)
    theta = pl.theta_from_torch(relu_first, input_shape=3)
    assert theta.size == net.d == parameter_count(relu_first)  # ReLU of each input: fixed edges
    np.testing.assert_array_equal(theta, net.weights)
    np.testing.assert_array_equal(pl.theta_from_torch(relu_first), theta)  # shape inferred
    with pytest.raises(pl.UnsupportedModelError, match="Sigmoid"):
        pl.theta_from_torch(nn.Sequential(nn.Linear(3, 3), nn.Sigmoid()))
    with pytest.raises(pl.UnsupportedModelError, match="training mode"):
        pl.theta_from_torch(nn.Sequential(nn.Linear(3, 3), nn.Dropout(0.5)).train())


def test_from_torch_computes_what_the_model_computes(pl, model, reference):
    """The network's forward pass (an independent numpy evaluator of the DAG) equals the
    model's output: this checks the whole mapping, including which edge carries which
    parameter entry."""
    net = pl.from_torch(model)
    X = torch.randn(16, input_width(model), dtype=torch.float64,
                    generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        expected = model(X).numpy()
    got = reference.forward(dag(net), edge_weights(net, net.weights), X.numpy())
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)


def canonical(net):
    """The network up to node names and order, for layered networks: each node keyed by
    (role, depth, rank), depth its longest distance from an input (a bias node: one less than
    its targets'), rank its position among the nodes of equal role and depth; returns the
    sorted (parameter, source key, target key) of the edges and the activations by key."""
    net = dag(net)
    src = [int(s) for s in net.sources]
    dst = [int(t) for t in net.targets]
    depth = [0] * net.num_nodes
    for v in net.topological_order:
        for k in net.in_edges(int(v)):
            depth[int(v)] = max(depth[int(v)], depth[src[int(k)]] + 1)
    for v in net.bias:
        depth[int(v)] = min(depth[int(t)] for t in dst_of(net, int(v))) - 1
    role = ["bias" if net.is_bias(v) else net.role(v) for v in range(net.num_nodes)]
    groups = {}
    for v in range(net.num_nodes):
        groups.setdefault((role[v], depth[v]), []).append(v)
    key = {}
    for (r, dep), nodes in groups.items():
        for rank, v in enumerate(nodes):
            key[v] = (r, dep, rank)
    params, _ = edge_parameters(net)
    edges = sorted((int(params[k]), key[src[k]], key[dst[k]]) for k in range(net.num_edges))
    acts = {key[v]: net.activation(v) for v in range(net.num_nodes)}
    return edges, acts


def dst_of(net, v):
    return [int(net.targets[int(k)]) for k in net.out_edges(v)]


@pytest.mark.parametrize("r,widths,q,bias", MLP_SHAPES)
def test_sequential_is_feed_forward(pl, r, widths, q, bias):
    """The Sequential is feed_forward(r, widths, q, bias) up to node names: the same edges
    carrying the same parameters, the same activations, the same weights."""
    m = make(lambda: mlp(r, widths, q, bias))
    net = pl.from_torch(m)
    ff = pl.feed_forward(r, widths, q, bias=bias).with_weights(pl.theta_from_torch(m))
    assert (net.num_nodes, net.num_edges, net.d, dag(net).h) == (ff.num_nodes, ff.num_edges, ff.d,
                                                             ff.h)
    assert canonical(net) == canonical(ff)
    np.testing.assert_array_equal(net.weights, ff.weights)


def padded_path_index(paths, d):
    """(P, L) edge ids of the paths, padded with d (a slot holding 1 in the vectorized Phi)."""
    idx = torch.full((len(paths), max(len(p) for p in paths)), d, dtype=torch.long)
    for p, edges in enumerate(paths):
        idx[p, :len(edges)] = torch.tensor(edges)
    return idx


def jacobian_references(net, theta, reference):
    """Phi and dPhi/dtheta by torch autograd on the reference paths: a vectorized path-lifting
    (each edge weighs theta[its parameter] or its fixed weight) differentiated by
    functorch.jacrev, and each Phi_p differentiated by torch.autograd.grad."""
    ps = [list(e) for e, _, _ in reference.paths(dag(net))]
    P = len(ps)
    idx = padded_path_index(ps, net.num_edges)
    params, fixed = edge_parameters(net)
    param_of = torch.tensor(np.maximum(params, 0))
    is_param = torch.tensor(params >= 0)
    fixed_t = torch.tensor(fixed)

    def phi_of(t):
        w = torch.where(is_param, t[param_of], fixed_t)
        return torch.cat([w, torch.ones(1, dtype=t.dtype)])[idx].prod(dim=1)

    t = torch.tensor(theta, dtype=torch.float64)
    jac = functorch.jacrev(phi_of)(t).numpy()
    tg = t.clone().requires_grad_(True)
    phi = phi_of(tg)
    per_path = np.stack([torch.autograd.grad(phi[p], tg, retain_graph=True)[0].numpy()
                         for p in range(P)])
    return phi.detach().numpy(), jac, per_path, ps


def test_jacobian_equals_torch_autograd(pl, model, reference):
    net = pl.from_torch(model)
    theta = net.weights.copy()
    phi_ref, jac_ref, per_path_ref, _ = jacobian_references(net, theta, reference)
    J = pl.jacobian(net, theta)
    assert J.shape == (len(phi_ref), net.d)
    np.testing.assert_allclose(J.toarray(), jac_ref, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(J.toarray(), per_path_ref, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(pl.path_lifting(net, theta), phi_ref, rtol=1e-10, atol=1e-12)
    # theta omitted: the stored weights (the model's values)
    np.testing.assert_array_equal(pl.jacobian(net).toarray(), J.toarray())


def test_jacobian_columns_are_torch_parameter_entries(pl, reference):
    """For a model with skip edges (fixed at weight 1) the Jacobian has one column per model
    parameter entry: the derivative of Phi with respect to the parameters only."""
    m = make(Residual)
    net = pl.from_torch(m)
    theta = pl.theta_from_torch(m)
    n = parameter_count(m)
    params, fixed = edge_parameters(net)
    assert net.d == n and net.num_edges > n and (params < 0).sum() == net.num_edges - n
    idx = padded_path_index([list(e) for e, _, _ in reference.paths(dag(net))], net.num_edges)
    # edge weights written out from the edges' parameters and fixed weights
    gather = torch.tensor(np.maximum(params, 0))
    mask = torch.tensor(params >= 0)

    def phi_of_params(t):
        w = torch.where(mask, t[gather], torch.tensor(fixed))
        return torch.cat([w, torch.ones(1, dtype=t.dtype)])[idx].prod(dim=1)

    jac = functorch.jacrev(phi_of_params)(torch.tensor(theta)).numpy()
    J = pl.jacobian(net, theta)
    assert J.shape[1] == n
    np.testing.assert_allclose(J.toarray(), jac, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("r,widths,q,bias", MLP_SHAPES[:4])
def test_phi_is_the_product_of_the_model_weights(pl, r, widths, q, bias):
    """Phi_p read directly off the model's weight matrices, decoding each path by the node
    names x[i], <module>.bias, <module>[j], y<j> (the module: the l-th Linear or the
    activation after it): independent of the edge numbering."""
    m = make(lambda: mlp(r, widths, q, bias))
    linears = [mod for mod in m if isinstance(mod, nn.Linear)]
    net = pl.from_torch(m)
    phi = pl.path_lifting(net, pl.theta_from_torch(m))
    ps = pl.enumerate_paths(net)
    names = dag(net).nodes
    L = len(linears)
    layer_of, l = {}, 0  # Sequential index of a module -> l, the Linear it is or follows
    for i, mod in enumerate(m):
        l += isinstance(mod, nn.Linear)
        layer_of[str(i)] = l

    def unit(name):  # (layer, index): x[i] -> (0, i), <module>[j] -> (l, j), y<j> -> (L, j)
        if name.startswith("x["):
            return 0, int(name[2:-1])
        if name.startswith("y"):
            return L, int(name[1:])
        module, j = name[:-1].split("[")
        return layer_of[module], int(j)

    for p in range(len(ps)):
        edges = ps.path(p)
        nodes = [int(ps.start[p])] + [int(dag(net).targets[k]) for k in edges]
        start = names[nodes[0]]
        if start.endswith(".bias"):  # bias of layer l: b_l[j] then weights of later layers
            layer = layer_of[start[:-len(".bias")]]
            _, j = unit(names[nodes[1]])
            value = linears[layer - 1].bias[j].item()
            rest = nodes[1:]
        else:
            value = 1.0
            rest = nodes
        for a, b in zip(rest, rest[1:]):
            la, i = unit(names[a])
            lb, j = unit(names[b])
            assert lb == la + 1
            value *= linears[la].weight[j, i].item()
        assert phi[p] == pytest.approx(value, rel=1e-12)


def expected_rank(pl, net):
    """d - h_sym: Theorem 1's d - h where every edge carries its own parameter (MLPs); with
    fixed edges (skips) only the hidden nodes with a rescaling symmetry (h_sym) count."""
    net = dag(net)
    h_sym = pl.rank(net)["h_sym"]
    if net.one_parameter_per_edge or bool((np.asarray(net.params) >= 0).all()):
        assert h_sym == net.h
    return net.d - h_sym


def test_theorem_rank_b_is_d_minus_h(pl, model):
    net = pl.from_torch(model)
    B = pl.skeleton(net, dense=True)
    assert np.linalg.matrix_rank(B) == expected_rank(pl, net)
    J = pl.jacobian(net, dense=True)
    assert np.linalg.matrix_rank(J) == expected_rank(pl, net)


def test_float32(pl):
    m = make(Residual)
    net = pl.from_torch(m)
    J64 = pl.jacobian(net)
    J32 = pl.jacobian(net, dtype=np.float32)
    assert J32.dtype == np.float32
    np.testing.assert_allclose(J32.toarray(), J64.toarray(), rtol=1e-5, atol=1e-6)


# --- shapes, functional forms, round trip ---------------------------------------------------


def test_flatten_and_input_shape(pl, reference):
    torch.manual_seed(3)
    m = nn.Sequential(nn.Flatten(), nn.Linear(12, 4), nn.ReLU(), nn.Identity(), nn.Dropout(0.5),
                      nn.Linear(4, 2)).double().eval()
    X = torch.randn(5, 3, 4, dtype=torch.float64)
    for shape in [(3, 4), None]:
        net = pl.from_torch(m, input_shape=shape)
        assert len(dag(net).data_inputs) == 12
        got = reference.forward(dag(net), edge_weights(net, net.weights), X.reshape(5, -1).numpy())
        np.testing.assert_allclose(got, m(X).detach().numpy(), rtol=1e-12, atol=1e-12)
    with pytest.raises(pl.NetworkError, match=r"cannot import Sequential: 1 problem\n  - layer "
                       r"2 '1' \(linear\): weight '1.weight' of shape \{4, 12\} does not fit an "
                       r"input of shape \{15\}: the layer needs a weight of shape \{4, 15\}$"):
        pl.from_torch(m, input_shape=(3, 5))


def test_functional_linear_leaky_relu_subtraction_and_tuple_outputs(pl, reference):
    class Simple(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(torch.randn(4, 3))
            self.b = nn.Parameter(torch.randn(4))
            self.out = nn.Linear(4, 4)

        def forward(self, x):
            h = F.leaky_relu(F.linear(x, self.w, self.b), 0.1)
            return self.out(h) - h, h

    torch.manual_seed(4)
    m = Simple().double().eval()
    net = pl.from_torch(m)
    X = torch.randn(7, 3, dtype=torch.float64)
    with torch.no_grad():
        expected = torch.cat(list(m(X)), dim=1).numpy()
    got = reference.forward(dag(net), edge_weights(net, net.weights), X.numpy())
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
    assert "leaky_relu:0.1" in dag(net).activations


@pytest.mark.parametrize("r,widths,q,bias", MLP_SHAPES)
def test_to_torch_round_trip(pl, r, widths, q, bias):
    m = make(lambda: mlp(r, widths, q, bias))
    theta = pl.theta_from_torch(m)
    back = pl.to_torch(pl.from_torch(m), theta)
    X = torch.randn(9, r, dtype=torch.float64)
    with torch.no_grad():
        np.testing.assert_allclose(back(X).numpy(), m(X).numpy(), rtol=1e-13, atol=1e-13)
    assert np.array_equal(pl.theta_from_torch(back), theta)
    assert [type(x) for x in back] == [type(x) for x in m]


def test_to_torch_of_feed_forward(pl, reference):
    net = pl.feed_forward(3, [5, 4], 2)
    theta = pl.normal_weights(net.d, 7)
    model = pl.to_torch(net, theta)
    X = np.random.default_rng(8).standard_normal((6, 3))
    with torch.no_grad():
        got = model(torch.tensor(X)).numpy()
    np.testing.assert_allclose(got, reference.forward(net, theta, X), rtol=1e-12, atol=1e-12)
    back = pl.from_torch(model)
    assert canonical(back) == canonical(net)
    np.testing.assert_array_equal(back.weights, theta)
    assert model(torch.tensor(X)).dtype == torch.float64
    assert pl.to_torch(net, theta, dtype=torch.float32)[0].weight.dtype == torch.float32


def test_to_torch_refuses_other_networks(pl):
    with pytest.raises(ValueError, match="feed-forward"):
        pl.to_torch(pl.from_torch(make(Residual)))
    with pytest.raises(ValueError, match="feed-forward"):
        pl.to_torch(pl.fig1(), np.ones(7))  # bias enters the output layer only
    with pytest.raises(ValueError, match="theta has 3 entries"):
        pl.to_torch(pl.feed_forward(2, [2], 1), np.ones(3))
    with pytest.raises(ValueError, match="no stored weights"):
        pl.to_torch(pl.feed_forward(2, [2], 1))


# --- errors ----------------------------------------------------------------------------------


@pytest.mark.parametrize("layer,name", [
    (lambda: nn.LayerNorm(4), "LayerNorm"),
    (lambda: nn.Sigmoid(), "Sigmoid"),
    (lambda: nn.GELU(), "GELU"),
    (lambda: nn.Tanh(), "Tanh"),
])
def test_unsupported_layers_are_named(pl, layer, name):
    # (Conv2d and BatchNorm1d, named here before issue 16, are supported: test_cnn.py)
    m = nn.Sequential(nn.Linear(3, 4), layer(), nn.Linear(4, 2))
    with pytest.raises(pl.UnsupportedModelError, match=name) as info:
        pl.from_torch(m)
    assert isinstance(info.value, ValueError)
    assert "at '1'" in str(info.value) or "at '0'" in str(info.value)


def test_unrepresentable_models(pl):
    class Shared(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(3, 3)

        def forward(self, x):
            return self.fc(torch.relu(self.fc(x)))

    class Constant(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(3, 3)

        def forward(self, x):
            return self.fc(x) + 1.0

    class Product(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(3, 3)

        def forward(self, x):
            return self.fc(x) * x

    class Unused(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(3, 3)
            self.extra = nn.Linear(3, 3)

        def forward(self, x):
            return self.fc(x)

    class Branching(nn.Module):
        def forward(self, x):
            if x.sum() > 0:
                return x
            return -x

    # A module called twice is weight sharing since issue 16 (several edges, one parameter).
    shared = make(Shared)
    net = pl.from_torch(shared, input_shape=3)
    assert net.d == parameter_count(shared) < net.num_edges
    X = torch.randn(4, 3, dtype=torch.float64)
    np.testing.assert_allclose(pl.forward(net, net.weights, X.numpy()).outputs,
                               shared(X).detach().numpy(), rtol=1e-12, atol=1e-12)
    cases = [(Constant(), "constant"), (Product(), "mul"),
             (Unused(), "'extra.weight'"), (Branching(), "cannot trace"),
             (nn.Sequential(nn.Linear(3, 3), nn.Dropout(0.5)).train(), "training mode")]
    for m, match in cases:
        with pytest.raises(pl.UnsupportedModelError, match=match):
            pl.from_torch(m, input_shape=3)
    with pytest.raises(TypeError):
        pl.from_torch(np.ones(3))


def test_bad_theta_for_a_torch_network(pl):
    m = make(lambda: mlp(3, [4], 2))
    net = pl.from_torch(m)
    theta = pl.theta_from_torch(m)
    with pytest.raises(ValueError, match="entries but the network has"):
        pl.jacobian(net, theta[:-1])
    bad = theta.copy()
    bad[3] = np.nan
    with pytest.raises(ValueError, match=r"theta\[3\] is not finite: nan"):
        pl.jacobian(net, bad)  # checked on the layer graph, before unrolling
    with pytest.raises(ValueError, match=r"theta\[3\] \((parameter 3 \()?edge [^)]*\)+ is not "
                                         r"finite"):
        pl.jacobian(net.unrolled(), bad)  # the DAG names the edge
    with pytest.raises(ValueError, match="not finite"):
        pl.path_lifting(net, np.full(net.d, np.inf))


# --- the example -----------------------------------------------------------------------------


def test_example_script_runs(pl):
    script = ROOT / "examples" / "torch_to_pathlift.py"
    pkg_parent = str(pathlib.Path(pl.__file__).resolve().parents[1])
    env = dict(os.environ, PYTHONPATH=pkg_parent)
    out = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    assert "rank(B) = d - h holds (verified)" in out.stdout
    assert "FAILS" not in out.stdout
    errors = [float(line.rsplit("=", 1)[1]) for line in out.stdout.splitlines()
              if "max |L Phi - model(X)|" in line]
    assert len(errors) == 2 and max(errors) < 1e-12, out.stdout


# --- more shapes of graphs: each must compute what the model computes -----------------------


class LinearLinear(nn.Module):
    """Two Linears without activation between them: identity hidden nodes."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(3, 4)
        self.fc2 = nn.Linear(4, 2)

    def forward(self, x):
        return self.fc2(self.fc1(x))


class ReluFirstAndLast(nn.Module):
    """ReLU of the inputs (nodes fed by fixed edges) and a ReLU output."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 2)

    def forward(self, x):
        return torch.relu(self.fc(torch.relu(x)))


class MultiUse(nn.Module):
    """A pre-activation used twice: before and after its ReLU."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(3, 4)
        self.fc2 = nn.Linear(4, 2)
        self.fc3 = nn.Linear(4, 2, bias=False)

    def forward(self, x):
        z = self.fc1(x)
        return self.fc2(F.relu(z)) + self.fc3(z)


class ParallelSum(nn.Module):
    """Two Linears on the same hidden units summed: parallel edges; and cat([x, x])."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(6, 4)
        self.fc2 = nn.Linear(4, 2)
        self.fc3 = nn.Linear(4, 2)

    def forward(self, x):
        h = F.relu(self.fc1(torch.cat([x, x], dim=-1)))
        return self.fc2(h) + self.fc3(h)


class ReluOfSum(nn.Module):
    """relu(L1(x) + L2(x)) is one ReLU node per unit (the sum merges into the pre-activation),
    and relu(h + x) needs fixed edges into a ReLU node."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(3, 3)
        self.fc2 = nn.Linear(3, 3)
        self.fc3 = nn.Linear(3, 2)

    def forward(self, x):
        h = F.relu(self.fc1(x) + self.fc2(x))
        return self.fc3(F.relu(h + x))


@pytest.mark.parametrize("cls", [LinearLinear, ReluFirstAndLast, MultiUse, ParallelSum,
                                 ReluOfSum])
def test_more_graph_shapes(pl, reference, cls):
    m = make(cls)
    width = 3
    net = pl.from_torch(m, input_shape=width)
    X = torch.randn(11, width, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        expected = m(X).numpy()
    np.testing.assert_allclose(reference.forward(dag(net), edge_weights(net, net.weights),
                                                 X.numpy()),
                               expected, rtol=1e-12, atol=1e-12)
    assert np.linalg.matrix_rank(pl.skeleton(net, dense=True)) == expected_rank(pl, net)
    theta = pl.theta_from_torch(m, input_shape=width)
    assert np.array_equal(theta, net.weights)
    assert np.array_equal(theta, torch.cat([p.detach().flatten() for p in m.parameters()]))
