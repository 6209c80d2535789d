"""PathCond and ENorm (docs/balance.md): the function is unchanged, the optimum's stationarity
conditions hold (checked here from the kernel diagonal recomputed at the new theta and the
parameter classes), and PathCond's criterion equals an independent minimisation (scipy's
BFGS over the log-scales)."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
scipy_optimize = pytest.importorskip("scipy.optimize")
nn = torch.nn


@pytest.fixture(scope="module")
def pl(pathlift_module):
    return pathlift_module


def cnn(seed):
    torch.manual_seed(seed)
    m = nn.Sequential(nn.Conv2d(1, 3, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                      nn.Conv2d(3, 4, 3, padding=1, bias=False), nn.BatchNorm2d(4), nn.ReLU(),
                      nn.Flatten(), nn.Linear(4 * 3 * 3, 3)).double().eval()
    with torch.no_grad():
        m[4].running_mean.uniform_(-1, 1)
        m[4].running_var.uniform_(0.5, 2.0)
    return m


def incidence(pc):
    """Per class: the parameters into it and out of it (a parameter within one class moves
    with neither)."""
    target, source = np.asarray(pc.target), np.asarray(pc.source)
    moves = target != source
    into = [np.flatnonzero(moves & (target == h)) for h in range(pc.classes)]
    out = [np.flatnonzero(moves & (source == h)) for h in range(pc.classes)]
    return into, out


def cases(pl):
    net = pl.feed_forward(4, [6, 5], 3)
    yield "mlp", net, pl.normal_weights(net.d, 1), np.random.default_rng(0).standard_normal(
        (20, 4))
    layer = pl.from_torch(cnn(0), input_shape=(1, 6, 6))
    yield "cnn", layer, np.asarray(layer.weights).copy(), np.random.default_rng(1).standard_normal(
        (20, 36))


def test_function_unchanged_and_stationary(pl):
    for name, net, theta, X in cases(pl):
        dag = net.unrolled() if hasattr(net, "unrolled") else net
        f = pl.forward(dag, theta, X).outputs
        pc = pl.parameter_classes(net)
        assert pc.constraints == 0 and pc.classes > 0
        into, out = incidence(pc)
        # ENorm: every class's in and out squared norms equal (1e-8)
        e = pl.enorm(net, theta)
        assert e.converged and e.criterion_after < e.criterion_before
        assert np.abs(pl.forward(dag, e.theta, X).outputs - f).max() <= 1e-10 * np.abs(f).max()
        w = e.theta ** 2
        for h in range(pc.classes):
            if len(into[h]) and len(out[h]):
                a, b = w[into[h]].sum(), w[out[h]].sum()
                assert abs(a - b) <= 1e-8 * (a + b), (name, h)
        assert e.criterion_after == pytest.approx(w.sum(), rel=1e-12)
        # PathCond: n (sum_out G - sum_in G) / sum G = |out| - |in| (1e-6), G recomputed
        p = pl.path_cond(net, theta)
        assert p.converged and p.criterion_after <= p.criterion_before
        assert np.abs(pl.forward(dag, p.theta, X).outputs - f).max() <= 1e-10 * np.abs(f).max()
        g = np.asarray(pl.kernel_diagonal(net, p.theta))
        n = np.count_nonzero(g > 0)
        total = g.sum()
        for h in range(pc.classes):
            if len(into[h]) and len(out[h]):
                left = n * (g[out[h]].sum() - g[into[h]].sum()) / total
                assert left == pytest.approx(len(out[h]) - len(into[h]), rel=1e-6, abs=1e-6), h
        assert p.criterion_after == pytest.approx(n * np.log(total) - np.log(g[g > 0]).sum(),
                                                  rel=1e-10)


def test_path_cond_reaches_the_minimum(pl):
    """The criterion as a function of the log-scales, minimised by scipy (BFGS with the exact
    gradient), from the kernel diagonal at theta: K_kk scales by exp(-2 c_k)."""
    net = pl.feed_forward(4, [6, 5], 3)
    theta = pl.normal_weights(net.d, 3)
    g0 = np.asarray(pl.kernel_diagonal(net, theta))
    pc = pl.parameter_classes(net)
    T = np.zeros((net.d, pc.classes))
    target, source = np.asarray(pc.target), np.asarray(pc.source)
    for k in range(net.d):
        if target[k] >= 0:
            T[k, target[k]] += 1
        if source[k] >= 0:
            T[k, source[k]] -= 1
    n = net.d

    def criterion(alpha):
        c = T @ alpha
        g = g0 * np.exp(-2 * c)
        value = n * np.log(g.sum()) - np.log(g).sum()
        grad = T.T @ (n * (-2 * g) / g.sum() + 2)
        return value, grad

    best = scipy_optimize.minimize(criterion, np.zeros(pc.classes), jac=True, method="BFGS",
                                   options={"gtol": 1e-12, "maxiter": 10000})
    p = pl.path_cond(net, theta)
    assert p.criterion_after == pytest.approx(best.fun, rel=1e-8)
    assert p.criterion_after <= best.fun + 1e-9 * abs(best.fun)


def test_torch_rescales_in_place(pl):
    model = cnn(2)
    x = torch.randn(9, 1, 6, 6, dtype=torch.float64)
    with torch.no_grad():
        y = model(x)
    for how in (pl.torch.path_cond, pl.torch.enorm):
        before = [p.detach().clone() for p in model.parameters()]
        report = how(model, input_shape=(1, 6, 6))
        assert report.converged and report.criterion_after < report.criterion_before
        assert any((a != b.detach()).any() for a, b in zip(before, model.parameters()))
        with torch.no_grad():
            assert (model(x) - y).abs().max().item() <= 1e-10 * y.abs().max().item()


def test_cli_rescale(pl, run_cli, tmp_path):
    net = pl.feed_forward(4, [6, 5], 3)
    theta = pl.normal_weights(net.d, 0)  # the CLI's default theta: --seed 0
    for flag, how in (("--path-cond", pl.path_cond), ("--enorm", pl.enorm)):
        out = tmp_path / f"{flag[2:]}.npy"
        import json
        j = json.loads(run_cli("rescale", "--ff", "4,6,5,3", flag, "-o", out, "--json",
                               check=True).stdout)
        report = how(net, theta)
        assert j["format"] == "pathlift-rescale" and j["converged"]
        assert j["criterion_after"] == pytest.approx(report.criterion_after, rel=1e-12)
        assert np.allclose(np.load(out), report.theta, rtol=1e-13, atol=0)
    bad = run_cli("rescale", "--ff", "4,6,5,3", "-o", tmp_path / "x.npy")
    assert bad.returncode == 2 and "--path-cond" in bad.stderr
    both = run_cli("rescale", "--ff", "4,6,5,3", "--enorm", "--path-cond", "-o", tmp_path / "x.npy")
    assert both.returncode == 2
