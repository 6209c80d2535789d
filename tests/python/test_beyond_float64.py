"""No silent non-finite number from Python (issue 32): kernel_diagonal refuses, with
pathlift.RangeError (an ArithmeticError), a diagonal that overflows float64 or whose entries
underflow, on a DAG and on a layer graph; the trace (scaled) still answers at any magnitude, and
a diagonal with legitimate zeros is returned as it is."""
import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")
nn = torch.nn


def cnn():
    torch.manual_seed(0)
    return nn.Sequential(nn.Conv2d(1, 2, 3), nn.ReLU(), nn.Conv2d(2, 2, 3), nn.ReLU(),
                         nn.Flatten(), nn.Linear(8, 2)).double().eval()


def networks(pl):
    """A DAG (4 layers: every K[k, k] multiplies 3 other weights, squared) and a layer graph
    (3 parameter layers), with their weights."""
    dag = pl.feed_forward(3, [4, 4, 4], 2)
    theta = pl.normal_weights(dag.d, 3)
    net = pl.from_torch(cnn(), input_shape=(1, 6, 6))
    return [("dag", dag, theta), ("layers", net, np.asarray(pl.torch.theta_from_torch(cnn())))]


@pytest.mark.parametrize("which", ["dag", "layers"])
@pytest.mark.parametrize("scale", [1e100, 1e-100])
def test_kernel_diagonal_beyond_float64_raises(pl, which, scale):
    import pathlift.torch  # noqa: F401  (theta_from_torch)
    name, net, theta = next(n for n in networks(pl) if n[0] == which)
    plain = pl.kernel_diagonal(net, theta)
    assert np.all(np.isfinite(plain)) and plain.max() > 0
    with pytest.raises(pl.RangeError) as info:
        pl.kernel_diagonal(net, theta * scale)
    assert isinstance(info.value, ArithmeticError)
    message = str(info.value)
    assert "diag(K)" in message
    assert ("not finite" in message) if scale > 1 else ("underflow" in message)
    # The trace is scaled: it answers at any magnitude (up by scale^4 at least when the
    # weights grow; when they shrink, the last layer's biases keep it near 1).
    trace = pl.kernel_trace(net, theta * scale, scaled=True)
    assert math.isfinite(trace.log10)
    if scale > 1:
        assert trace.log10 - pl.kernel_trace(net, theta, scaled=True).log10 > 390


@pytest.mark.parametrize("which", ["dag", "layers"])
def test_float_results_beyond_float64_raise(pl, which):
    """trace(K) as a float, the path-norm gradient and K v: a RangeError naming the quantity,
    never an inf, a NaN or a subnormal."""
    name, net, theta = next(n for n in networks(pl) if n[0] == which)
    v = np.ones(len(theta))
    assert math.isfinite(pl.kernel_trace(net, theta))
    assert np.isfinite(pl.path_norm_gradient(net, theta, 1.0)).all()
    assert np.isfinite(pl.kernel_matvec(net, theta, v)).all()
    big = theta * 1e200  # products of two or more weights overflow
    with pytest.raises(pl.RangeError, match=r"trace\(K\) is 10\^.*scaled=True"):
        pl.kernel_trace(net, big)
    assert pl.kernel_trace(net, big, scaled=True).log10 > 400
    with pytest.raises(pl.RangeError, match="path-norm gradient"):
        pl.path_norm_gradient(net, big, 1.0)
    with pytest.raises(pl.RangeError, match="K v"):
        pl.kernel_matvec(net, big, v)
    # Shrunken weights: whatever is returned is a normal float64 or 0.
    tiny = theta * 1e-160
    for f in (lambda: pl.path_norm_gradient(net, tiny, 1.0),
              lambda: pl.kernel_matvec(net, tiny, v)):
        try:
            out = np.abs(np.asarray(f()))
        except pl.RangeError as e:
            assert "subnormal" in str(e) or "underflow" in str(e)
            continue
        assert np.isfinite(out).all() and not ((out > 0) & (out < np.finfo(float).tiny)).any()
    # Path magnitudes (theta_k times the gradient of ||Phi||_1) are refused the same way.
    with pytest.raises(pl.RangeError, match="path magnitudes"):
        pl.path_magnitude(net, big)
    with pytest.raises(pl.RangeError, match="path magnitudes"):
        pl.path_magnitude(net, theta * 1e-300)
    # The full kernel: K[k, k] of order 1e-400 would be 0s, told from true 0s as the diagonal's.
    with pytest.raises(pl.RangeError, match=r"diag\(K\) has entries 0 that may be underflows"):
        pl.kernel(net, theta * 1e-100)
    # K v and the eigenvalues: all 0s from such an underflow (no biases: every entry of K is
    # about 1e-400) are refused the same way, a K of true 0s is returned.
    no_bias = pl.feed_forward(3, [4, 4, 4], 2, bias=False)
    tiny, ones = np.full(no_bias.d, 1e-100), np.ones(no_bias.d)
    with pytest.raises(pl.RangeError, match=r"K v: all 0, and diag\(K\) has entries 0 that may "
                                            r"be underflows"):
        pl.kernel_matvec(no_bias, tiny, ones)
    with pytest.raises(pl.RangeError, match=r"K v: all 0, and diag\(K\)"):
        pl.kernel_operator(no_bias, tiny) @ ones
    with pytest.raises(pl.RangeError, match=r"the top eigenvalues of K: all 0, and diag\(K\)"):
        pl.kernel_top_eigenvalues(no_bias, tiny, 2)
    zero = np.zeros(no_bias.d)
    assert (pl.kernel_matvec(no_bias, zero, ones) == 0).all()
    assert (pl.kernel_top_eigenvalues(no_bias, zero, 2).values == 0).all()
    # Weights of 1e-300: a gradient entry whose paths carry two other weights is about 1e-600,
    # below the smallest normal double: refused, never returned as 0.
    with pytest.raises(pl.RangeError, match=rf"\d+ of {len(theta)} entries of the path-norm "
                                            r"gradient are non-zero but below"):
        pl.path_norm_gradient(net, theta * 1e-300, 1.0)


def test_zeros_that_are_zeros_are_returned(pl):
    """A zero weight makes entries of diag(K) exactly 0: no error, on either representation."""
    import pathlift.torch  # noqa: F401
    model = cnn()
    with torch.no_grad():
        model[2].weight[0].zero_()  # the first channel of the second conv carries nothing:
        model[2].bias[0].zero_()  # the linear weights reading it get K[k, k] = 0
    theta = np.asarray(pl.torch.theta_from_torch(model))
    net = pl.from_torch(model, input_shape=(1, 6, 6))
    diag = pl.kernel_diagonal(net, theta)
    assert (diag == 0).any() and np.isfinite(diag).all()
    np.testing.assert_allclose(diag, pl.kernel_diagonal(net.unrolled(), theta), rtol=1e-12)


class Scaled(nn.Module):
    """Linear -> ReLU -> x f -> x 1/f -> Linear: two scale layers (fixed weights f and 1/f) that
    leave the function, the path-lifting and the kernel those of the plain network."""

    def __init__(self, f):
        super().__init__()
        self.a, self.b, self.f = nn.Linear(3, 4), nn.Linear(4, 2), f

    def forward(self, x):
        h = torch.relu(self.a(x))
        if self.f:
            h = (h * self.f) * (1 / self.f)
        return self.b(h)


def quantities(pl, net, theta):
    return [pl.path_norm(net, theta, 1).norm, pl.path_norm(net, theta, 2).norm,
            float(pl.kernel_trace(net, theta)), *np.asarray(pl.kernel_diagonal(net, theta)),
            *pl.kernel_top_eigenvalues(net, theta, 2, method="lanczos").values,
            pl.path_cond(net, theta).criterion_after, *pl.path_cond(net, theta).theta]


@pytest.mark.parametrize("f", [1e200, 1e300, 1e-300])
def test_scale_factors_of_any_finite_size(pl, f, run_cli, tmp_path):
    """Issue 50: a scale factor above about 1.34e154 made norm, kernel and PathCond on the layer
    graph an internal error (its square overflowed), while the unrolled network computed them.
    The fixed weights now enter the passes scaled: the same numbers as the plain network, on the
    layer graph and on the DAG."""
    torch.manual_seed(0)
    plain_model = Scaled(0).double()
    want = quantities(pl, pl.from_torch(plain_model), pl.theta_from_torch(plain_model))
    torch.manual_seed(0)
    model = Scaled(f).double()
    net = pl.from_torch(model)
    theta = pl.theta_from_torch(model)
    for which in (net, net.unrolled()):
        np.testing.assert_allclose(quantities(pl, which, theta), want, rtol=1e-12)
    # The CLI on the layer graph's file: the same path-norm, exit 0.
    path = tmp_path / "scaled.json"
    path.write_text(net.layer_graph.to_json())
    np.save(tmp_path / "theta.npy", theta)
    import json
    j = json.loads(run_cli("norm", "--network", path, "--theta", tmp_path / "theta.npy", "--s",
                           "1,2", "--json", check=True).stdout)
    np.testing.assert_allclose([j["norms"]["1"], j["norms"]["2"]], want[:2], rtol=1e-12)
    for mode in ("--trace", "--diag"):
        args = ["kernel", "--network", path, "--theta", tmp_path / "theta.npy", mode]
        r = run_cli(*args, *(["-o", tmp_path / "d.npy"] if mode == "--diag" else []))
        assert r.returncode == 0, r
    r = run_cli("rescale", "--network", path, "--theta", tmp_path / "theta.npy", "--path-cond",
                "-o", tmp_path / "r.npy", check=True)
    np.testing.assert_allclose(np.load(tmp_path / "r.npy"), want[-net.d:], rtol=1e-12)


def test_a_kernel_beyond_float64_is_a_range_error(pl, run_cli, tmp_path):
    """One scale layer of 1e200: K's entries are 1e400. Every kernel quantity refuses with
    RangeError (exit 4), the eigenvalues included (they said numerical_issue), and the trace
    gives its magnitude when asked for it scaled, on the layer graph as on the DAG."""
    class One(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = nn.Linear(3, 4), nn.Linear(4, 2)

        def forward(self, x):
            return self.b(torch.relu(self.a(x)) * 1e200)

    torch.manual_seed(0)
    model = One().double()
    net = pl.from_torch(model)
    theta = pl.theta_from_torch(model)
    logs = []
    for which in (net, net.unrolled()):
        for call in (lambda: pl.kernel_diagonal(which, theta),
                     lambda: pl.kernel_trace(which, theta),
                     lambda: pl.kernel_top_eigenvalues(which, theta, 2, method="lanczos"),
                     lambda: pl.kernel_top_eigenvalues(which, theta, 2, method="lobpcg"),
                     lambda: pl.kernel_top_eigenvalues(which, theta, 2, method="dense"),
                     lambda: pl.kernel_top_eigenvalues(which, theta, 2),
                     lambda: pl.path_cond(which, theta)):
            with pytest.raises(pl.RangeError):
                call()
        logs.append(pl.kernel_trace(which, theta, scaled=True).log10)
    for which in (net, net.unrolled()):  # the full d x d kernel (once it returned inf)
        with pytest.raises(pl.RangeError, match=r"\d+ of 676 values of K are not finite"):
            pl.kernel(which, theta)
    assert logs[0] == pytest.approx(logs[1], abs=1e-12) and 400 < logs[0] < 402
    path = tmp_path / "one.json"
    path.write_text(net.layer_graph.to_json())
    np.save(tmp_path / "theta.npy", theta)
    r = run_cli("kernel", "--network", path, "--theta", tmp_path / "theta.npy", "--top-eig", 2)
    assert r.returncode == 4 and "float64" in r.stderr, r


def test_products_with_true_zeros_are_returned(pl):
    """A dead hidden unit gives K v true 0s: returned beside a diagonal that overflows (a layer
    graph's range is tested at its low end only) or a weight whose dPhi^2 underflows elsewhere
    (a DAG's diagonal test is conservative: it is not applied to a K v that is not all 0)."""
    L = pl.Layer
    graph = pl.LayerNetwork(pl.LayerGraph(
        input_shape=[2], layers=[
            L("input", "in"),
            L("linear", "fc1", [0], out_features=2, weight_offset=0, bias_offset=4),
            L("activation", "r", [1], activation="relu"),
            L("linear", "fc2", [2], out_features=1, weight_offset=6, bias_offset=8)],
        outputs=[3], num_params=9, weights=np.zeros(9)))
    dag = pl.feed_forward(2, [2], 1)
    theta = np.array([1e160, 2.0, 0, 0, 1.0, 0, 1e160, 0, 1.0])  # hidden unit 1 is dead
    v = np.full(9, 1e-20)
    for net in (graph, dag):
        kv = pl.kernel_matvec(net, theta, v)
        assert np.isfinite(kv).all() and (kv == 0).any() and np.abs(kv).max() > 1e290
        np.testing.assert_allclose(pl.kernel_operator(net, theta) @ v, kv, rtol=1e-12)
    np.testing.assert_allclose(pl.kernel_matvec(graph, theta, v), pl.kernel_matvec(dag, theta, v),
                               rtol=1e-12)
    net = pl.feed_forward(2, [2, 2], 1)
    theta = np.zeros(net.d)
    theta[[0, 1, 4, 6, 8, 10, 11, 12, 13, 14]] = 1.0  # hidden unit 1 of layer 1 is dead
    theta[0] = 1e-160  # a dPhi[p, k]^2 of 1e-320 on the DAG
    kv = pl.kernel_matvec(net, theta, np.ones(net.d))
    assert (kv == 0).any() and np.abs(kv).max() > 1
