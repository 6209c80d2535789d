"""The l1 path-metric and its Lipschitz bound (docs/path_metric.md) against brute force: the
enumerated path-lifting (sum_p |Phi_p(theta) - Phi_p(theta2)|) and the networks' own outputs
on random inputs (||f_theta(x) - f_theta2(x)||_1 <= max(||x||_inf, 1) C)."""

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")
nn = torch.nn


def small_cnn(seed):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Conv2d(1, 3, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(3, 4, 3, bias=False), nn.BatchNorm2d(4), nn.ReLU(),
                         nn.Flatten(), nn.Linear(4, 3)).double().eval()


def networks(pl):
    """(name, network, theta): MLPs (DAGs) and small CNNs (layer networks), P enumerable."""
    out = []
    for seed, widths in enumerate([[4], [5, 4], [3, 3, 3]]):
        net = pl.feed_forward(3, widths, 2)
        out.append((f"mlp{widths}", net, pl.normal_weights(net.d, seed), 3))
    for seed in range(2):
        model = small_cnn(seed)
        with torch.no_grad():
            for m in model.modules():
                if isinstance(m, nn.BatchNorm2d):
                    m.running_mean.uniform_(-0.5, 0.5)
                    m.running_var.uniform_(0.5, 2.0)
        net = pl.from_torch(model, input_shape=(1, 6, 6))
        out.append((f"cnn{seed}", net, np.asarray(net.weights).copy(), 36))
    return out


def pairs(theta, rng):
    """(kind, theta2): pruned (magnitude), shrunk, pruned and shrunk, quantized, perturbed,
    with signs flipped."""
    small = np.abs(theta) < np.quantile(np.abs(theta), 0.4)
    pruned = np.where(small, 0.0, theta)
    shrunk = theta * rng.uniform(0.3, 1.0, theta.size)
    quantized = np.round(theta * 4) / 4
    perturbed = theta + 0.05 * rng.standard_normal(theta.size)
    flipped = theta.copy()
    flipped[rng.choice(theta.size, 3, replace=False)] *= -1
    return [("pruned", pruned), ("shrunk", shrunk), ("both", np.where(small, 0.0, shrunk)),
            ("quantized", quantized), ("perturbed", perturbed), ("flipped", flipped)]


def test_metric_against_the_enumerated_lifting_and_the_outputs(pl):
    rng = np.random.default_rng(0)
    seen = set()
    for name, net, theta, n_in in networks(pl):
        dag = net.unrolled() if hasattr(net, "unrolled") else net
        phi = np.asarray(pl.path_lifting(dag, theta))
        X = rng.uniform(-2, 2, (200, n_in))
        f = pl.forward(dag, theta, X).outputs
        for kind, theta2 in pairs(theta, rng):
            truth = np.abs(phi - np.asarray(pl.path_lifting(dag, theta2))).sum()
            m = pl.path_metric(net, theta, theta2)
            dominated = kind in ("pruned", "shrunk", "both")
            assert m.exact == dominated, (name, kind)
            if m.exact:
                assert m.value == pytest.approx(truth, rel=1e-12), (name, kind)
            else:
                assert m.value >= truth * (1 - 1e-12), (name, kind)
            # the same, whichever comes first
            assert pl.path_metric(net, theta2, theta).value == pytest.approx(m.value, rel=1e-12)
            c = pl.lipschitz_bound(net, theta, theta2)
            if dominated:
                assert c.sign_changes == 0 and c.exact and c.constant == m.value
            if kind == "flipped":
                assert c.sign_changes == 3 and not c.exact
            change = np.abs(f - pl.forward(dag, theta2, X).outputs).sum(axis=1)
            bound = np.maximum(np.abs(X).max(axis=1), 1.0) * c.constant
            assert (change <= bound * (1 + 1e-12) + 1e-300).all(), (name, kind)
            assert c.bound(2.0) == pytest.approx(2.0 * c.constant)
            seen.add((kind, c.sign_changes > 0))
    assert ("flipped", True) in seen and ("pruned", False) in seen


def test_layer_network_equals_its_unrolled_dag(pl):
    rng = np.random.default_rng(1)
    model = small_cnn(3)
    net = pl.from_torch(model, input_shape=(1, 6, 6))
    theta = np.asarray(net.weights).copy()
    for kind, theta2 in pairs(theta, rng):
        a = pl.path_metric(net, theta, theta2)
        b = pl.path_metric(net.unrolled(), theta, theta2)
        assert a.exact == b.exact and a.value == pytest.approx(b.value, rel=1e-12), kind
        ca, cb = pl.lipschitz_bound(net, theta, theta2), pl.lipschitz_bound(net.unrolled(), theta,
                                                                          theta2)
        assert ca.constant == pytest.approx(cb.constant, rel=1e-12)
        assert ca.sign_changes == cb.sign_changes


def test_torch_lipschitz_bound_certifies_pruning(pl):
    model = small_cnn(4)
    pruned = small_cnn(4)
    with torch.no_grad():
        for p in pruned.parameters():
            p[p.abs() < p.abs().flatten().quantile(0.5)] = 0.0
    c = pl.torch.lipschitz_bound(model, pruned, input_shape=(1, 6, 6))
    assert c.exact and c.sign_changes == 0
    x = torch.rand(300, 1, 6, 6, dtype=torch.float64) * 2 - 1
    with torch.no_grad():
        change = (model(x) - pruned(x)).abs().sum(dim=1).max().item()
    assert 0 < change <= c.constant
    with pytest.raises(ValueError, match="same architecture"):
        pl.torch.lipschitz_bound(model, nn.Sequential(nn.Flatten(), nn.Linear(36, 3)).double(),
                                 input_shape=(1, 6, 6))


@pytest.mark.parametrize("function", ["path_metric", "lipschitz_bound"])
def test_a_wrong_theta2_is_named_theta2(pl, function):
    """Each vector is named in its own errors: theta2's length, entries and type say theta2,
    theta's say theta (a DAG and a from_torch layer network)."""
    mlp = pl.feed_forward(3, [4], 2)
    cnn = pl.from_torch(small_cnn(0), input_shape=(1, 6, 6))
    f = getattr(pl, function)
    for net, theta, unit in ((mlp, pl.normal_weights(mlp.d, 1), "edges"),
                             (cnn, np.asarray(cnn.weights), "parameters")):
        d = theta.size
        bad = theta.copy()
        bad[2] = np.nan
        for name, first, second in (("theta2", theta, theta[:-1]), ("theta", theta[:-1], theta)):
            with pytest.raises(ValueError, match=rf"^{name} has {d - 1} entries but the network "
                               rf"has {d} {unit}$"):
                f(net, first, second)
        with pytest.raises(ValueError, match=r"^theta2\[2\] .*is not finite: nan$"):
            f(net, theta, bad)
        with pytest.raises(ValueError, match=r"^theta\[2\] .*is not finite: nan$"):
            f(net, bad, theta)
        with pytest.raises(ValueError, match="^theta2 must be numbers"):
            f(net, theta, ["x"] * d)


def test_cli_metric(pl, run_cli, tmp_path):
    net = pl.feed_forward(3, [4, 4], 2)
    theta = pl.normal_weights(net.d, 7)
    theta2 = np.where(np.abs(theta) < 0.5, 0.0, theta)
    np.save(tmp_path / "a.npy", theta)
    np.save(tmp_path / "b.npy", theta2)
    j = json.loads(run_cli("metric", "--ff", "3,4,4,2", "--theta", tmp_path / "a.npy", "--theta2",
                           tmp_path / "b.npy", "--json", check=True).stdout)
    assert j["format"] == "pathlift-metric" and j["exact"] and j["d"] == net.d
    assert j["metric"] == pytest.approx(pl.path_metric(net, theta, theta2).value, rel=1e-15)
    assert j["lipschitz_constant"] == pytest.approx(j["metric"]) and j["sign_changes"] == 0
    text = run_cli("metric", "--ff", "3,4,4,2", "--theta", tmp_path / "a.npy", "--theta2",
                   tmp_path / "b.npy", check=True).stdout
    assert "exact" in text and "lipschitz" in text
    bad = run_cli("metric", "--ff", "3,4,4,2", "--theta2", tmp_path / "nope.npy")
    assert bad.returncode == 2 and "--theta2" in bad.stderr
    missing = run_cli("metric", "--ff", "3,4,4,2")
    assert missing.returncode != 0 and "--theta2" in missing.stderr
    np.save(tmp_path / "short.npy", theta2[:2])
    short = run_cli("metric", "--ff", "3,4,4,2", "--theta2", tmp_path / "short.npy")
    assert short.returncode == 2 and f"--theta2 {tmp_path / 'short.npy'}: theta2 has 2 entries" \
        in short.stderr, short.stderr


def test_the_pruning_example_runs(build_dir):
    import importlib.util
    import os
    import pathlib
    import subprocess
    import sys
    if importlib.util.find_spec("sklearn") is None:
        pytest.skip("scikit-learn is not installed (Debian: python3-sklearn)")
    root = pathlib.Path(__file__).resolve().parents[2]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(build_dir / "python"), *filter(None, [os.environ.get("PYTHONPATH")])]))
    proc = subprocess.run([sys.executable, str(root / "examples" / "pruning_certificate.py"),
                           "--epochs", "3"], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr  # the example asserts the bound on every image
    assert proc.stdout.count("(exact)") == 4 and "rounded to" in proc.stdout


def test_an_exact_metric_that_the_norms_cancel(pl, run_cli, tmp_path):
    """Issue 50: pruning one weight of 1e-18 beside norms of order 1 gave ||Phi(theta)||_1 -
    ||Phi(theta2)||_1 = 0, 'exact', while the metric is about 1e-18 and the outputs move by as
    much (above the certified bound 0). The telescoping sum, which equals the metric under
    dominance, is summed from terms >= 0: right to rounding relative to the metric itself."""
    for name, net, theta, n_in in networks(pl):
        dag = net.unrolled() if hasattr(net, "unrolled") else net
        theta = theta.copy()
        k = int(np.argmax(np.abs(theta) > 0.3))
        theta[k] = 1e-18
        theta2 = theta.copy()
        theta2[k] = 0.0
        phi, phi2 = np.asarray(pl.path_lifting(dag, theta)), np.asarray(pl.path_lifting(dag, theta2))
        truth = np.abs(phi - phi2).sum()  # the paths through k: exact, the others cancel to 0
        assert 0 < truth < 1e-15
        for a, b in ((theta, theta2), (theta2, theta)):
            m = pl.path_metric(net, a, b)
            assert m.exact and m.value == pytest.approx(truth, rel=1e-12), name
        X = np.random.default_rng(3).uniform(-2, 2, (50, n_in))
        change = np.abs(pl.forward(dag, theta, X).outputs - pl.forward(dag, theta2, X).outputs)
        c = pl.lipschitz_bound(net, theta, theta2)
        assert (change.sum(axis=1) <= np.maximum(np.abs(X).max(axis=1), 1) * c.constant
                * (1 + 1e-12)).all(), name
    net = pl.feed_forward(3, [4, 4], 2)
    theta = pl.normal_weights(net.d, 7)
    theta[5] = 1e-18
    theta2 = theta.copy()
    theta2[5] = 0
    np.save(tmp_path / "a.npy", theta)
    np.save(tmp_path / "b.npy", theta2)
    j = json.loads(run_cli("metric", "--ff", "3,4,4,2", "--theta", tmp_path / "a.npy", "--theta2",
                           tmp_path / "b.npy", "--json", check=True).stdout)
    assert j["exact"] and j["metric"] == pytest.approx(pl.path_metric(net, theta, theta2).value,
                                                       rel=1e-15)
    assert 0 < j["metric"] < 1e-15


def test_a_difference_beyond_float64(pl, run_cli, tmp_path):
    """theta_0 = 1.5e308 against -1.5e308 (all else 1): |theta_0 - theta2_0| = 3e308 overflowed
    and the metric printed 10^inf (JSON null, exit 0). Each of the two paths through edge 0
    differs by 3e308 and by nothing else: the metric is 6e308 exactly, a bound that is tight."""
    for net in (pl.feed_forward(4, [10], 2),
                pl.from_torch(nn.Sequential(nn.Linear(4, 10), nn.ReLU(), nn.Linear(10, 2)))):
        a = np.ones(net.d)
        b = a.copy()
        a[0], b[0] = 1.5e308, -1.5e308
        m = pl.path_metric(net, a, b)
        assert not m.exact and m.log10 == pytest.approx(np.log10(6) + 308, abs=1e-12)
        c = pl.lipschitz_bound(net, a, b)
        assert np.isfinite(c.log10) and c.log10 >= m.log10 - 1e-12
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    r = run_cli("metric", "--ff", "4,10,2", "--theta", tmp_path / "a.npy", "--theta2",
                tmp_path / "b.npy", "--json", check=True)
    j = json.loads(r.stdout)
    assert j["log10_metric"] == pytest.approx(np.log10(6) + 308, abs=1e-12)
    assert j["metric"] is None  # beyond float64: the log10 carries it (docs/cli.md#magnitudes)
