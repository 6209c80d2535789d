"""pathlift.conservation_laws and pathlift.torch.conservation_laws (docs/dynamics.md): the
quantities gradient flow conserves, one per rescaling class, against

- the rank theorem: as many as d - rank(dPhi), the rank certified by elimination of the
  enumerated skeleton (not by the symmetries), on MLPs, CNNs (convolutions, batch norm, max and
  average pooling, a residual add) and random DAGs;
- their definition, computed in numpy from the model's own parameters: an MLP's unit j of
  layer l is sum W_l[j, :]^2 + b_l[j]^2 - sum W_{l+1}[:, j]^2, a CNN's channel alike, a DAG's
  hidden node its squared incoming weights minus its outgoing ones;
- their conservation: the gradient of a loss computed by torch's autograd (any loss of the
  function) is orthogonal to each law's gradient, so a gradient step of size eta changes each law
  by exactly eta^2 times the law of the gradient, and a few hundred steps drift about 4 times
  less when eta halves.

Run with PATHLIFT_BUILD_DIR=<build> /usr/bin/python3 -m pytest tests/python/test_conservation.py
"""
import re

import numpy as np
import pytest

torch = pytest.importorskip("torch")
nn = torch.nn


def certified_rank(pl, net, theta):
    """rank(dPhi(theta)), certified from the enumerated skeleton (B by elimination mod p; no
    zero in theta, so rank(dPhi) = rank(B))."""
    assert np.all(theta != 0)
    r = pl.rank(net, theta, enumerate=True, method="skeleton", numerical=False)
    assert r["rank_B_method"] == "skeleton" and r["rank_J_certified"], r["explanation"]
    return r["rank_J_exact"]


def mlp(widths, seed):
    torch.manual_seed(seed)
    layers = []
    for a, b in zip(widths, widths[1:]):
        layers += [nn.Linear(a, b), nn.ReLU()]
    return nn.Sequential(*layers[:-1]).double()


class Residual(nn.Module):
    """conv, batch norm, max pool, a residual block (conv, relu, conv + skip), average pool."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 3, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(3)
        self.pool = nn.MaxPool2d(2)
        self.conv2 = nn.Conv2d(3, 3, 3, padding=1)
        self.conv3 = nn.Conv2d(3, 3, 1, bias=False)
        self.avg = nn.AvgPool2d(2)
        self.fc = nn.Linear(3, 2)

    def forward(self, x):
        x = self.pool(torch.relu(self.bn1(self.conv1(x))))
        x = torch.relu(self.conv3(torch.relu(self.conv2(x))) + x)
        return self.fc(torch.flatten(self.avg(x), 1))


def cnn(seed):
    torch.manual_seed(seed)
    model = Residual().double()
    with torch.no_grad():
        model.bn1.running_mean.uniform_(-1, 1)
        model.bn1.running_var.uniform_(0.5, 2)
        model.bn1.weight.uniform_(0.5, 2)
        model.bn1.bias.uniform_(-1, 1)
    return model.eval()


class Plain(nn.Module):
    """conv, relu, max pool, conv, relu, flatten, linear: every parameter is theta's."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(2, 3, 3, padding=1)
        self.pool = nn.MaxPool2d(2)
        self.conv2 = nn.Conv2d(3, 4, 2)
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        x = torch.relu(self.conv2(self.pool(torch.relu(self.conv1(x)))))
        return self.fc(torch.flatten(x, 1))


def test_as_many_laws_as_d_minus_the_certified_rank(pl):
    cases = []
    for seed, widths in enumerate([(3, 4, 2), (4, 5, 3, 2), (2, 3, 3, 3, 1), (5, 2, 4)]):
        cases.append(pl.from_torch(mlp(widths, seed)))
    for seed in range(3):
        cases.append(pl.from_torch(cnn(seed), input_shape=(1, 4, 4)))
        torch.manual_seed(seed)
        cases.append(pl.from_torch(Plain().double(), input_shape=(2, 4, 4)))
    for seed in range(12):
        cases.append(pl.random_dag(4 + seed % 5, 0.5, seed))
    for net in cases:
        theta = net.weights if net.weights is not None else \
            np.random.default_rng(0).standard_normal(net.d)
        laws = pl.conservation_laws(net, theta)
        assert laws.independent == len(laws) == net.d - certified_rank(pl, net, theta), net
        assert laws.unused == 0 and laws.classes == laws.independent
        assert len(set(laws.descriptions)) == len(laws)


def numpy_params(model):
    return {name: p.detach().numpy() for name, p in model.named_parameters()}


def test_an_mlps_laws_are_each_units_squares_in_minus_out(pl):
    model = mlp((6, 5, 4, 3), 11)
    laws = pl.conservation_laws(pl.from_torch(model)).as_dict()
    p = numpy_params(model)
    expected = {}
    for l, nxt in (("0", "2"), ("2", "4")):
        w, b, w_next = p[f"{l}.weight"], p[f"{l}.bias"], p[f"{nxt}.weight"]
        for j in range(w.shape[0]):
            expected[f"unit {j} of '{l}' (out: '{nxt}')"] = \
                (w[j] ** 2).sum() + b[j] ** 2 - (w_next[:, j] ** 2).sum()
    assert laws.keys() == expected.keys()
    for name, value in expected.items():
        assert laws[name] == pytest.approx(value, rel=1e-13, abs=1e-14), name


def test_a_cnns_laws_are_each_channels_squares_in_minus_out(pl):
    torch.manual_seed(5)
    model = Plain().double()
    laws = pl.conservation_laws(pl.from_torch(model, input_shape=(2, 4, 4))).as_dict()
    p = numpy_params(model)
    expected = {}
    for l, nxt, noun in (("conv1", "conv2", "channel"), ("conv2", "fc", "channel")):
        w, b, w_next = p[f"{l}.weight"], p[f"{l}.bias"], p[f"{nxt}.weight"]
        for c in range(w.shape[0]):
            expected[f"{noun} {c} of '{l}' (out: '{nxt}')"] = \
                (w[c] ** 2).sum() + b[c] ** 2 - (w_next[:, c] ** 2).sum()
    assert laws.keys() == expected.keys()
    for name, value in expected.items():
        assert laws[name] == pytest.approx(value, rel=1e-13, abs=1e-14), name


def test_a_dags_laws_are_each_hidden_nodes_squares_in_minus_out(pl):
    for seed in range(10):
        net = pl.random_dag(6 + seed % 4, 0.6, seed)
        theta = np.random.default_rng(seed).standard_normal(net.d)
        laws = pl.conservation_laws(net, theta).as_dict()
        expected = {}
        sources, targets = net.sources, net.targets
        for v in net.hidden:
            expected[f"node {net.node_name(v)}"] = \
                (theta[targets == v] ** 2).sum() - (theta[sources == v] ** 2).sum()
        assert laws.keys() == expected.keys()
        for name, value in expected.items():
            assert laws[name] == pytest.approx(value, rel=1e-13, abs=1e-13), (seed, name)


def loss_gradient(model, theta, X, y):
    """theta's gradient of a loss (cross-entropy of the model on X, y), by autograd."""
    import pathlift.torch
    pathlift.torch.load_theta(model, theta)
    model.zero_grad()
    nn.functional.cross_entropy(model(X), y).backward()
    return torch.cat([p.grad.flatten() for p in model.parameters()]).numpy().copy()


def test_each_law_is_orthogonal_to_the_gradient_of_a_loss(pl):
    """Noether: a rescaling leaves the loss unchanged, so <grad Q_h, grad L> = 0. Each law is
    quadratic, so its change along g is exactly (Q(theta + t g) - Q(theta - t g)) / 2t."""
    rng = np.random.default_rng(0)
    for i in range(100):
        model = mlp((4, 6, 5, 3), i) if i % 2 else Plain().double()
        shape = (4,) if i % 2 else (2, 4, 4)
        net = pl.from_torch(model, input_shape=shape)
        theta = rng.standard_normal(net.d) * rng.uniform(0.1, 3)
        X = torch.from_numpy(rng.standard_normal((8, *shape)))
        g = loss_gradient(model, theta, X, torch.from_numpy(rng.integers(0, 2, 8)))
        t = np.abs(theta).max() / np.abs(g).max()
        plus = pl.conservation_laws(net, theta + t * g).values
        minus = pl.conservation_laws(net, theta - t * g).values
        derivative = (plus - minus) / (2 * t)
        scale = np.linalg.norm(theta) * np.linalg.norm(g)  # bounds |<c theta, g>|, c in {0, +-1}
        assert np.abs(derivative).max() <= 1e-10 * scale, (i, np.abs(derivative).max() / scale)
        # ... whereas the squared norm of the parameters is not conserved
        assert abs(theta @ g) > 1e-6 * scale


def test_a_gradient_step_moves_each_law_by_eta_squared_times_the_gradients_law(pl):
    """theta - eta g: Q(theta - eta g) - Q(theta) = -2 eta <c theta, g> + eta^2 Q(g), and the
    first term is 0 (the law above): the change is eta^2 Q(g), however large eta."""
    rng = np.random.default_rng(1)
    model = mlp((5, 8, 6, 3), 3)
    net = pl.from_torch(model)
    theta = rng.standard_normal(net.d)
    X, y = torch.from_numpy(rng.standard_normal((16, 5))), torch.from_numpy(rng.integers(0, 3, 16))
    g = loss_gradient(model, theta, X, y)
    before = pl.conservation_laws(net, theta)
    law_of_g = pl.conservation_laws(net, g)
    for eta in (1e-3, 0.1, 1.0):
        after = pl.conservation_laws(net, theta - eta * g)
        change = after.values - before.values
        tolerance = 1e-12 * (before.squares + after.squares) + 1e-12 * eta ** 2 * law_of_g.squares
        assert np.all(np.abs(change - eta ** 2 * law_of_g.values) <= tolerance), eta


def drift(pl, net, model, theta0, X, y, eta, steps):
    """The largest change of a law over `steps` gradient-descent steps, relative to its
    squares at the start, and how far theta moved (relative)."""
    start = pl.conservation_laws(net, theta0)
    theta = theta0.copy()
    for _ in range(steps):
        theta -= eta * loss_gradient(model, theta, X, y)
    end = pl.conservation_laws(net, theta)
    return (np.abs(end.values - start.values) / start.squares).max(), \
        np.linalg.norm(theta - theta0) / np.linalg.norm(theta0)


def test_gradient_descent_drifts_as_eta_squared(pl):
    """300 steps: halving eta divides the drift by about 4 (O(eta^2) a step), while theta
    moves about half as far (O(eta) a step); the drift is far below the move."""
    rng = np.random.default_rng(2)
    model = mlp((6, 10, 8, 3), 4)
    net = pl.from_torch(model)
    theta0 = pl.theta_from_torch(model)
    X, y = torch.from_numpy(rng.standard_normal((32, 6))), torch.from_numpy(rng.integers(0, 3, 32))
    d1, move1 = drift(pl, net, model, theta0, X, y, 0.02, 300)
    d2, move2 = drift(pl, net, model, theta0, X, y, 0.01, 300)
    assert 3.0 < d1 / d2 < 5.0, (d1, d2)
    assert 1.5 < move1 / move2 < 2.5, (move1, move2)
    assert d1 < 0.05 * move1, (d1, move1)


def test_the_torch_face_names_the_modules(pl):
    import pathlift.torch as pt
    model = cnn(7)
    laws = pt.conservation_laws(model, input_shape=(1, 4, 4))
    same = pl.conservation_laws(pl.from_torch(model, input_shape=(1, 4, 4)))
    assert laws.descriptions == same.descriptions
    assert np.array_equal(laws.values, same.values)
    d = laws.as_dict()
    for c in range(3):
        assert f"channel {c} of 'conv1' (out: 'bn1')" in d
    # the residual stream: the batch norm's channel joined by the block's add
    assert any(re.fullmatch(rf"channel {c} of 'bn1' and 'conv3' \(out: .*'conv2'.*\)", k)
               for k in d for c in range(3)), list(d)
    assert laws.to_dict()["independent"] == len(laws) == len(d)
    assert [law["description"] for law in laws.to_dict()["laws"]] == laws.descriptions
    assert repr(laws).startswith(f"<pathlift.ConservationLaws: {len(laws)} independent laws")
    model.train()
    with pytest.raises(ValueError, match="training mode"):
        pt.conservation_laws(model, input_shape=(1, 4, 4))


def test_refusals(pl):
    net = pl.feed_forward(2, [3], 1)
    theta = np.random.default_rng(0).standard_normal(net.d)
    with pytest.raises(ValueError, match="theta has 4 entries"):
        pl.conservation_laws(net, theta[:4])
    bad = theta.copy()
    bad[5] = np.nan
    with pytest.raises(ValueError, match=r"theta\[5\]"):
        pl.conservation_laws(net, bad)
    bad[5] = 1e160
    with pytest.raises(pl.RangeError, match=r"beyond double's range: its largest, theta\[5\] = "
                                            r"1e\+160"):
        pl.conservation_laws(net, bad)
    # squares that underflow: 0 or subnormal, never returned as a law's value
    with pytest.raises(pl.RangeError, match=r"below double's range: its largest, theta\[\d+\] = "
                                            r".*squared is 10\^-3\d\d"):
        pl.conservation_laws(net, theta * 1e-160)
    assert (pl.conservation_laws(net, theta * 1e-100).squares > 1e-250).all()
    # one parameter on x -> a and on a -> y: alpha(a) = -alpha(a), a constraint left
    shared = pl.Network([("x", "a"), ("a", "y")], params=[0, 0], num_params=1)
    with pytest.raises(ValueError, match="constraints couple the rescaling classes"):
        pl.conservation_laws(shared, [1.5])
