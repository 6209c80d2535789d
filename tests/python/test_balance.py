"""PathCond and ENorm (docs/balance.md): the function is unchanged, the optimum's stationarity
conditions hold (checked here from the kernel diagonal recomputed at the new theta and the
parameter classes), and PathCond's criterion equals an independent minimisation (scipy's
BFGS over the log-scales)."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
scipy_optimize = pytest.importorskip("scipy.optimize")
nn = torch.nn


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


def class_matrix(pc):
    """T (d x classes): c = T alpha is each parameter's log-scale, alpha[target] -
    alpha[source]."""
    target, source = np.asarray(pc.target), np.asarray(pc.source)
    T = np.zeros((len(target), pc.classes))
    for k in range(len(target)):
        if target[k] >= 0:
            T[k, target[k]] += 1
        if source[k] >= 0:
            T[k, source[k]] -= 1
    return T


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
    T = class_matrix(pc)
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


# --- issue 50: the edges of float64 ----------------------------------------------------------

def log_criterion_minimum(pl, net, theta):
    """PathCond's minimum by scipy's BFGS over the log-scales, the criterion in log form
    (log G_kk - 2 c_k, logsumexp): right whatever the diagonal's magnitude."""
    from scipy.special import logsumexp
    g0 = np.asarray(pl.kernel_diagonal(net, theta))
    keep = g0 > 0
    lg0 = np.log(g0[keep])
    pc = pl.parameter_classes(net)
    T = class_matrix(pc)[keep]
    n = int(keep.sum())

    def criterion(alpha):
        lg = lg0 - 2 * (T @ alpha)
        lt = logsumexp(lg)
        share = np.exp(lg - lt)
        return n * lt - lg.sum(), T.T @ (-2 * n * share + 2)

    best = scipy_optimize.minimize(criterion, np.zeros(pc.classes), jac=True, method="BFGS",
                                   options={"gtol": 1e-13, "maxiter": 100000})
    return best.fun


def outputs(pl, net, theta, X):
    return pl.forward(net, theta, X).outputs


def test_path_cond_where_the_class_quadratic_cancels(pl):
    """A 2-1-1 MLP with first-layer weights and bias 1e-10: the positive root of the class
    quadratic cancelled (4ac << b^2), the class did not move and the report said converged at
    stationarity 0.35. Now the root is taken in its rationalised form: the minimum (scipy), the
    stationarity within the tolerance, the function unchanged."""
    net = pl.feed_forward(2, [1], 1)
    theta = np.array([1e-10, 1e-10, 1e-10, 1.0, 1.0])
    p = pl.path_cond(net, theta)
    assert p.converged and p.stationarity <= 1e-10
    assert p.criterion_after == pytest.approx(log_criterion_minimum(pl, net, theta), rel=1e-9)
    assert p.criterion_before == pytest.approx(51.88456137681226, rel=1e-12)  # the figures
    assert p.criterion_after == pytest.approx(50.515372483595, rel=1e-10)
    for values in ([0.5, -0.3, 0.2, -0.8, 0.1], [1, -1, 0.5, 2, 0.3]):
        t = np.array(values)
        t[:3] *= 1e-10
        q = pl.path_cond(net, t)
        assert q.converged and q.stationarity <= 1e-10
        assert q.criterion_after == pytest.approx(log_criterion_minimum(pl, net, t), rel=1e-9)
    X = np.random.default_rng(0).standard_normal((10, 2))
    f = outputs(pl, net, theta, X)
    assert np.abs(outputs(pl, net, p.theta, X) - f).max() <= 1e-12 * np.abs(f).max()


def test_path_cond_with_a_diagonal_near_the_top_of_float64(pl):
    """theta x 1e40 on a 4-layer MLP: G_kk up to 1e240, finite, but the discriminant overflowed,
    every class was skipped, 1 sweep, converged. Now the same minimum as scipy's."""
    net = pl.feed_forward(3, [4, 4, 4], 2)
    theta = pl.normal_weights(net.d, 2) * 1e40
    g = np.asarray(pl.kernel_diagonal(net, theta))
    assert np.isfinite(g).all() and g.max() > 1e200
    p = pl.path_cond(net, theta)
    assert p.converged and p.stationarity <= 1e-10 and p.sweeps > 1
    assert p.criterion_after == pytest.approx(log_criterion_minimum(pl, net, theta), rel=1e-9)
    assert np.isfinite(p.theta).all()
    X = np.random.default_rng(1).standard_normal((10, 3))
    f = outputs(pl, net, theta, X)
    assert np.abs(outputs(pl, net, p.theta, X) - f).max() <= 1e-10 * np.abs(f).max()


def test_enorm_where_the_squares_leave_float64(pl):
    """Layer 1 x 1e-180, layer 2 x 1e180 (no biases): the squares (1e-360, 1e360) and their
    ratio left float64 and 40 of 130 entries came out inf or NaN, 'converged'. The balanced theta
    is of order 1, and the function is the same."""
    net = pl.feed_forward(4, [10, 10], 2, bias=False)
    theta = pl.normal_weights(net.d, 3)
    theta[:40] *= 1e-180
    theta[40:140] *= 1e180
    e = pl.enorm(net, theta)
    assert e.converged and e.stationarity <= 1e-10
    assert np.isfinite(e.theta).all() and np.abs(e.theta).max() < 1e3
    assert np.abs(e.theta).min() > 1e-6
    X = np.random.default_rng(2).standard_normal((10, 4))
    f = outputs(pl, net, theta, X)
    assert np.abs(outputs(pl, net, e.theta, X) - f).max() <= 1e-10 * np.abs(f).max()
    # The same balance as from the unscaled theta (ENorm's optimum does not see a rescaling).
    plain = pl.normal_weights(net.d, 3)
    np.testing.assert_allclose(e.theta, pl.enorm(net, plain).theta, rtol=1e-9)


def test_converged_only_when_stationary(pl):
    """converged is never reported beside a stationarity above the tolerance."""
    for name, net, theta, _ in cases(pl):
        for how in (pl.path_cond, pl.enorm):
            with pytest.warns(RuntimeWarning, match="did not converge"):
                one = how(net, theta, max_sweeps=1)
            assert not one.converged and one.stationarity > 1e-10, (name, how)
            loose = how(net, theta, tolerance=1e-3)
            assert loose.converged and loose.stationarity <= 1e-3
            full = how(net, theta)
            assert full.converged and full.stationarity <= 1e-10
            again = how(net, full.theta)  # already balanced: no sweep
            assert again.converged and again.sweeps == 0


def test_zero_jacobian(pl):
    """a -> h -> y at theta = (0, 0): dPhi = 0, so K's diagonal is 0 exactly (it raised a
    spurious RangeError, 'reaches 10^inf'), and PathCond has nothing to balance (criterion 0,
    not NaN)."""
    net = pl.Network([("a", "h"), ("h", "y")])
    assert list(pl.kernel_diagonal(net, [0.0, 0.0])) == [0.0, 0.0]
    p = pl.path_cond(net, [0.0, 0.0])
    assert p.criterion_before == 0 and p.criterion_after == 0 and p.converged
    assert list(p.theta) == [0.0, 0.0]


def test_bad_options_are_refused(pl):
    net = pl.feed_forward(2, [2], 1)
    for how in (pl.path_cond, pl.enorm):
        for bad in (float("nan"), -1.0, float("inf")):
            with pytest.raises(ValueError, match="tolerance"):
                how(net, None if False else pl.normal_weights(net.d, 0), tolerance=bad)
        with pytest.raises(ValueError, match="max_sweeps"):
            how(net, pl.normal_weights(net.d, 0), max_sweeps=-1)


def test_cli_rescale_contracts(run_cli, tmp_path):
    """Issue 50: --json with -o - printed theta and JSON together; --tolerance nan was accepted
    and -1 printed a 309-digit range. Each is now one short line, exit 2, before any work."""
    r = run_cli("rescale", "--ff", "4,6,5,3", "--enorm", "-o", "-", "--json")
    assert r.returncode == 2 and r.stdout == "" and "stdout" in r.stderr
    for bad in ("nan", "-1", "inf", "-inf"):
        r = run_cli("rescale", "--ff", "4,6,5,3", "--enorm", "-o", tmp_path / "t.npy",
                    "--tolerance", bad)
        assert r.returncode == 2 and "tolerance" in r.stderr and len(r.stderr) < 200, (bad, r)
        assert not (tmp_path / "t.npy").exists()
    r = run_cli("rescale", "--ff", "4,6,5,3", "--enorm", "-o", tmp_path / "t.npy",
                "--max-sweeps", "-3")
    assert r.returncode == 2 and "max_sweeps" in r.stderr and len(r.stderr) < 200
    # Text with -o -: theta on stdout, the report on stderr.
    r = run_cli("rescale", "--ff", "4,6,5,3", "--enorm", "-o", "-", check=True)
    assert len(r.stdout.split()) == 4 * 6 + 6 + 6 * 5 + 5 + 5 * 3 + 3 and "enorm:" in r.stderr


def test_cli_enorm_at_the_edges_of_float64(pl, run_cli, tmp_path):
    """The CLI on the layers x 1e-180 / x 1e180 MLP writes the same finite theta as Python."""
    net = pl.feed_forward(4, [10, 10], 2, bias=False)
    theta = pl.normal_weights(net.d, 3)
    theta[:40] *= 1e-180
    theta[40:140] *= 1e180
    np.save(tmp_path / "theta.npy", theta)
    import json
    j = json.loads(run_cli("rescale", "--ff", "4,10,10,2", "--no-bias",
                           "--theta", tmp_path / "theta.npy", "--enorm", "-o",
                           tmp_path / "out.npy", "--json", check=True).stdout)
    assert j["converged"] and j["stationarity"] <= 1e-10
    out = np.load(tmp_path / "out.npy")
    assert np.isfinite(out).all()
    np.testing.assert_allclose(out, pl.enorm(net, theta).theta, rtol=1e-13)


class SpatialConcat(nn.Module):
    """Two convolutions concatenated along the height and read by one convolution without a
    bias: no weight is shared between layers, but the layer graph's classes keep
    alpha(a_c) = alpha(b_c) as constraints (its unrolled network merges them)."""

    def __init__(self):
        super().__init__()
        self.a = nn.Conv2d(1, 2, 3, padding=1)
        self.b = nn.Conv2d(1, 2, 3, padding=1)
        self.c = nn.Conv2d(2, 3, 3, bias=False)

    def forward(self, x):
        return self.c(torch.cat([torch.relu(self.a(x)), torch.relu(self.b(x))], dim=2)).flatten(1)


def test_a_spatial_concat_is_balanced(pl):
    """Issue 50: PathCond and ENorm refused this network, blaming 'weights shared between
    layers'. They balance it now, as on its unrolled network, the function unchanged."""
    torch.manual_seed(0)
    model = SpatialConcat().double()
    net = pl.from_torch(model, input_shape=(1, 5, 5))
    assert pl.parameter_classes(net).constraints > 0
    theta = pl.theta_from_torch(model)
    X = np.random.default_rng(4).standard_normal((10, 25))
    dag = net.unrolled()
    f = pl.forward(dag, theta, X).outputs
    for how in (pl.path_cond, pl.enorm):
        r = how(net, theta)
        assert r.converged and r.stationarity <= 1e-10 and r.classes == 2
        np.testing.assert_allclose(r.theta, how(dag, theta).theta, rtol=1e-12)
        assert np.abs(pl.forward(dag, r.theta, X).outputs - f).max() <= 1e-10 * np.abs(f).max()


def test_truly_coupled_classes_are_refused_saying_why(pl):
    """theta_0 on x -> h0 and on h1 -> y: alpha(h0) = -alpha(h1), a constraint no merge removes."""
    net = pl.Network([("x", "h0"), ("x", "h1"), ("h0", "y"), ("h1", "y")], params=[0, 1, 2, 0])
    assert pl.parameter_classes(net).constraints == 1
    for how in (pl.path_cond, pl.enorm):
        with pytest.raises(ValueError, match="1 constraints couple the rescaling classes .a "
                                             "parameter whose edges join different pairs"):
            how(net, [1.0, 2.0, 3.0])


def with_bn_statistics(m):
    """m with random running statistics in each BatchNorm (mean in [-0.5, 0.5], variance in
    [0.5, 2]), drawn in module order from torch's generator."""
    with torch.no_grad():
        for mod in m:
            if isinstance(mod, (nn.BatchNorm1d, nn.BatchNorm2d)):
                mod.running_mean.uniform_(-0.5, 0.5)
                mod.running_var.uniform_(0.5, 2.0)
    return m


def bn_mlp(seed):
    torch.manual_seed(seed)
    return with_bn_statistics(
        nn.Sequential(nn.Linear(64, 128), nn.BatchNorm1d(128), nn.ReLU(), nn.Linear(128, 128),
                      nn.BatchNorm1d(128), nn.ReLU(), nn.Linear(128, 10)).double().eval())


def bn_cnn(seed):
    """A CIFAR-style CNN with a BatchNorm after each convolution (3x16x16 input)."""
    torch.manual_seed(seed)
    m = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                      nn.Conv2d(8, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
                      nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
                      nn.AdaptiveAvgPool2d(2), nn.Flatten(), nn.Linear(16 * 2 * 2, 10))
    return with_bn_statistics(m.double().eval())


@pytest.mark.parametrize("which", ["mlp", "cnn"])
def test_newton_converges_where_coordinate_descent_crawled(pl, which):
    """Issue 51: on an MLP with BatchNorm (each channel's conv/linear and BatchNorm classes joined
    by one parameter, a chain) coordinate descent took 2,221 sweeps to 1e-10 and stopped at its
    1,000-sweep cap by default; on the CIFAR-style CNN with BatchNorm below its PathCond stopped
    at the cap too (stationarity 3.6e-8). Newton's steps take about ten: an iteration count, not
    a time. The optimum's condition holds on the kernel
    diagonal recomputed at the new theta, and the function is the same."""
    model = bn_mlp(0) if which == "mlp" else bn_cnn(0)
    shape = (64,) if which == "mlp" else (3, 16, 16)
    net = pl.from_torch(model, input_shape=shape)
    theta = pl.theta_from_torch(model)
    X = np.random.default_rng(5).standard_normal((10, int(np.prod(shape))))
    dag = net.unrolled()
    f = pl.forward(dag, theta, X).outputs
    for how in (pl.path_cond, pl.enorm):
        r = how(net, theta)
        assert r.converged and r.stationarity <= 1e-10 and r.sweeps <= 30, (how, r)
        assert np.abs(pl.forward(dag, r.theta, X).outputs - f).max() <= 1e-9 * np.abs(f).max()
    p = pl.path_cond(net, theta)
    into, out = incidence(pl.parameter_classes(net))
    g = np.asarray(pl.kernel_diagonal(net, p.theta))
    n, total = np.count_nonzero(g > 0), g.sum()
    for h in range(len(into)):
        if len(into[h]) and len(out[h]):
            left = n * (g[out[h]].sum() - g[into[h]].sum()) / total
            assert left == pytest.approx(len(out[h]) - len(into[h]), abs=1e-7), h


@pytest.mark.parametrize("which", ["path_cond", "enorm"])
def test_the_same_rescaling_on_any_thread_count(pl, which):
    """The Newton step's passes over the parameters (the line search's totals, the move) and
    over M's rows (its update, the conjugate gradients' products) run in blocks on the engine's
    threads, each sum in block order: the rescaled theta is the same to the bit for any thread
    count. 36,004 classes and 288,012 parameters: several blocks of each."""
    net = pl.feed_forward(4, [36000, 4], 3)
    theta = pl.normal_weights(net.d, 3)
    theta[: 4 * 36000] *= 50.0  # far from balanced: several Newton steps, M updated between
    reports = [getattr(pl, which)(net, theta, threads=t) for t in (1, 2, 3)]
    assert reports[0].converged and reports[0].sweeps >= 3
    for r in reports[1:]:
        assert r.sweeps == reports[0].sweeps
        assert np.array_equal(r.theta, reports[0].theta)
        assert r.criterion_after == reports[0].criterion_after


def test_every_term_of_a_wide_class_is_counted(pl):
    """A hidden unit with 2^20 inputs: one incoming weight 1, the others and the bias 1e-9,
    whose squares (1e-18) are below half an ulp of 1; its outgoing weight 1. A plain running
    sum drops the small squares that come after the 1 (about 2.5e-13 of the 1e-12 they add up
    to), and ENorm then stops at a point whose true stationarity is about 1e-13 (regnet_x_8gf,
    4e7 parameters over many binades, sat at 3e-10 that way and crawled). The stationarity is
    recomputed here from the returned theta with math.fsum (exactly rounded sums)."""
    import math

    net = pl.feed_forward(1 << 20, [1], 1)
    into, out = incidence(pl.parameter_classes(net))
    assert len(into) == 1 and len(into[0]) == (1 << 20) + 1 and len(out[0]) == 1
    theta = np.full(net.d, 1e-9)
    theta[into[0][0]] = 1.0
    theta[out[0]] = 1.0
    r = pl.enorm(net, theta, tolerance=1e-14)
    t = np.asarray(r.theta)
    a = math.fsum(float(x) ** 2 for x in t[into[0]])
    b = math.fsum(float(x) ** 2 for x in t[out[0]])
    assert r.converged and abs(a - b) / (a + b) <= 2e-14, (r, a, b)
