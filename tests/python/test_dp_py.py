"""Path-free computations from Python (issues 6 and 8): path-norms against the PyTorch recipe
(weights replaced by |w|^s, an all-ones input, the sum of the outputs) on torch MLPs, and the
path kernel and B^T B against the enumerated Jacobian and skeleton; numbers beyond double's
range as ScaledReal; bad inputs.

Run with PATHLIFT_BUILD_DIR=<build> /usr/bin/python3 -m pytest tests/python/test_dp_py.py
"""
import math

import numpy as np
import pytest

scipy_sparse = pytest.importorskip("scipy.sparse")


def dp_networks(pl):
    nets = [pl.fig1(), pl.sketch_h0(), pl.sketch_h1(), pl.feed_forward(3, [5, 4], 2),
            pl.feed_forward(2, [3, 3, 3], 3, bias=False), pl.feed_forward(4, [], 2)]
    nets += [pl.random_dag(m, 0.45, seed, parallel_edge_probability=0.3,
                           designated_output_probability=0.3)
             for m, seed in [(6, 41), (8, 42), (9, 43), (10, 44), (12, 45), (13, 46)]]
    return nets


def thetas(net, seed):
    """A random theta and one with zero weights (the DP is exact there: no division)."""
    rng = np.random.default_rng(seed)
    theta = rng.standard_normal(net.d)
    zeros = theta.copy()
    zeros[rng.choice(net.d, size=max(1, net.d // 4), replace=False)] = 0.0
    return [theta, zeros]


# --- path-norms against the PyTorch recipe ------------------------------------------------


TORCH_MLPS = [(3, [4], 2, True), (4, [5, 3], 3, True), (2, [3, 3, 3], 1, True),
              (5, [6], 2, False), (3, [4, 4], 2, False)]


@pytest.mark.parametrize("r,widths,q,bias", TORCH_MLPS)
def test_path_norms_equal_the_torch_recipe(pl, r, widths, q, bias):
    """||Phi||_s^s = sum of the outputs of the model with every parameter w replaced by |w|^s,
    on an all-ones input (bias inputs are 1 anyway): all pre-activations are >= 0 there, so
    the ReLUs pass everything and each path contributes prod |w|^s."""
    torch = pytest.importorskip("torch")
    from test_torch import make, mlp

    m = make(lambda: mlp(r, widths, q, bias), seed=r + q)
    net = pl.from_torch(m).unrolled()
    theta = pl.theta_from_torch(m)
    for s in (0.5, 1.0, 2.0, 3.0):
        powered = make(lambda: mlp(r, widths, q, bias))
        with torch.no_grad():
            for p, p0 in zip(powered.parameters(), m.parameters()):
                p.copy_(p0.abs() ** s)
            out = powered(torch.ones(1, r, dtype=torch.float64))[0]
        recipe = out.sum().item()
        n = pl.path_norm(net, theta, s, per_input=True)
        assert isinstance(n.norm, float) and isinstance(n.sum, float)
        assert n.sum == pytest.approx(recipe, rel=1e-10)
        assert n.norm == pytest.approx(recipe ** (1 / s), rel=1e-10)
        assert n.value == n.norm and float(n) == n.norm and n.s == s
        assert n.log10 == pytest.approx(math.log10(recipe) / s, rel=1e-10)
        # per output: the norm of the paths ending there
        np.testing.assert_allclose(n.per_output, out.numpy() ** (1 / s), rtol=1e-10)
        assert len(n.per_input) == len(net.inputs)
    # s = 0 counts the paths (0^0 = 1)
    assert pl.path_norm(net, theta, 0).norm == pl.count_paths_total(net)


def test_path_norms_against_enumeration(pl):
    for net in dp_networks(pl):
        ps = pl.enumerate_paths(net)
        for theta in thetas(net, 1):
            phi = np.abs(pl.path_lifting(ps, theta))
            for s in (0.5, 1.0, 2.0, 3.0):
                n = pl.path_norm(net, theta, s, per_input=True)
                total = (phi ** s).sum()
                assert n.sum == pytest.approx(total, rel=1e-10, abs=1e-300)
                per_input = [(phi[ps.start == i] ** s).sum() ** (1 / s) for i in net.inputs]
                per_output = [(phi[ps.end == o] ** s).sum() ** (1 / s) for o in net.outputs]
                np.testing.assert_allclose(n.per_input, per_input, rtol=1e-10, atol=1e-300)
                np.testing.assert_allclose(n.per_output, per_output, rtol=1e-10, atol=1e-300)
            assert pl.path_norm(net, theta, 1).per_input is None


def test_norm_beyond_double_range(pl):
    """A constant-weight network without bias: every path has length L + 1, so
    ||Phi||_1 = P c^(L+1) with P = r w^L q; log10 ~ 500 here."""
    r, w, L, q, c = 3, 2, 150, 2, 1e3
    net = pl.feed_forward(r, [w] * L, q, bias=False)
    theta = np.full(net.d, c)
    expected_log10 = math.log10(r * q) + L * math.log10(w) + (L + 1) * math.log10(c)
    assert expected_log10 > 400
    n = pl.path_norm(net, theta, 1)
    # norm is always a float (inf beyond double's range), its log10 beside it, exact
    assert isinstance(n.norm, float) and n.norm == math.inf
    assert n.log10 == pytest.approx(expected_log10, rel=1e-12)
    assert isinstance(n.scaled, pl.ScaledReal) and not n.scaled.fits_double
    assert n.scaled.log10 == n.log10 and float(n.scaled) == math.inf
    assert "10^" in str(n.scaled) and "10^" in repr(n)
    two = pl.path_norm(net, theta, 2)  # (sum c^(2(L+1)))^(1/2)
    assert two.log10 == pytest.approx(0.5 * (math.log10(r * q) + L * math.log10(w))
                                      + (L + 1) * math.log10(c), rel=1e-12)
    assert isinstance(two.sum, float) and two.sum == math.inf
    assert two.log10_sum == pytest.approx(2 * two.log10, rel=1e-12)
    assert all(isinstance(x, float) and x == math.inf for x in n.per_output)
    np.testing.assert_allclose(n.log10_per_output, [expected_log10 - math.log10(q)] * q,
                               rtol=1e-12)
    # the count itself is beyond 64 bits but a double
    count = pl.path_norm(net, theta, 0)
    assert count.norm == pytest.approx(r * q * w ** L, rel=1e-12)
    with pytest.raises(pl.RangeError, match=r"trace\(K\) is 10\^.*pass scaled=True"):
        pl.kernel_trace(net, theta)  # a float by default: never a silent inf
    tr = pl.kernel_trace(net, theta, scaled=True)
    assert isinstance(tr, pl.ScaledReal) and tr.log10 > 300
    # within range: the float is the value, scaled=True the same number as a ScaledReal
    small = pl.kernel_trace(pl.fig1(), np.full(7, 2.0))
    assert isinstance(small, float)
    assert float(pl.kernel_trace(pl.fig1(), np.full(7, 2.0), scaled=True)) == small
    assert pl.path_norm(pl.fig1(), np.ones(7), 1).scaled.value == pl.path_norm(
        pl.fig1(), np.ones(7), 1).norm
    x = pl.ScaledReal(1.5, 2000)
    assert x.log10 == pytest.approx(math.log10(1.5) + 2000 * math.log10(2))
    assert x.exponent + math.log2(abs(x.mantissa)) == pytest.approx(2000 + math.log2(1.5))
    assert pl.ScaledReal().is_zero and float(pl.ScaledReal(3.0)) == 3.0


# --- the path kernel and B^T B ----------------------------------------------------------------


def test_kernel_against_the_jacobian(pl):
    rng = np.random.default_rng(7)
    for net in dp_networks(pl):
        for theta in thetas(net, 2):
            J = pl.jacobian(net, theta)
            K = (J.T @ J).toarray()
            scale = max(1.0, np.abs(K).max())
            np.testing.assert_allclose(pl.kernel_diagonal(net, theta), np.diag(K), rtol=1e-10,
                                       atol=1e-12 * scale)
            np.testing.assert_allclose(pl.kernel(net, theta), K, rtol=1e-10, atol=1e-12 * scale)
            assert pl.kernel_trace(net, theta) == pytest.approx(np.trace(K), rel=1e-10)
            v = rng.standard_normal(net.d)
            np.testing.assert_allclose(pl.kernel_matvec(net, theta, v), J.T @ (J @ v),
                                       rtol=1e-10, atol=1e-12 * scale * np.abs(v).sum())
            V = rng.standard_normal((net.d, 3))
            np.testing.assert_allclose(pl.kernel_matvec(net, theta, V), K @ V, rtol=1e-9,
                                       atol=1e-12 * scale * np.abs(V).sum())
            k = min(3, net.d)
            top = pl.kernel_top_eigenvalues(net, theta, k)
            assert top.status == "converged"
            np.testing.assert_allclose(top.values, np.linalg.eigvalsh(K)[::-1][:k], rtol=1e-8,
                                       atol=1e-10 * scale)


def test_kernel_on_torch_models(pl):
    """diag K and K v on the fx-traced skip models and MLPs at the model's own weights."""
    pytest.importorskip("torch")
    from test_torch import MODELS, make

    for m in (make(factory) for _, factory in MODELS):
        net = pl.from_torch(m)
        theta = pl.theta_from_torch(m)
        J = pl.jacobian(net, theta)
        K = (J.T @ J).toarray()
        np.testing.assert_allclose(pl.kernel_diagonal(net, theta), np.diag(K), rtol=1e-10,
                                   atol=1e-14)
        np.testing.assert_allclose(pl.kernel_diagonal(net), np.diag(K), rtol=1e-10, atol=1e-14)
        v = np.linspace(-1, 1, net.d)
        np.testing.assert_allclose(pl.kernel_matvec(net, theta, v), K @ v, rtol=1e-10,
                                   atol=1e-12)


def test_skeleton_gram_is_b_transpose_b(pl):
    for net in dp_networks(pl):
        B = pl.skeleton(net, dtype=np.int64)
        BtB = (B.T @ B).toarray()
        G = pl.skeleton_gram(net)
        assert G.dtype == np.uint64 and G.shape == (net.d, net.d)
        np.testing.assert_array_equal(G.astype(np.int64), BtB)
        assert G.flags.c_contiguous and G.base is not None
        for prime in (2, 101, 1_000_003):
            Gm = pl.skeleton_gram_mod(net, prime)
            np.testing.assert_array_equal(Gm.astype(np.int64), BtB % prime)
        np.testing.assert_array_equal(pl.skeleton_gram_mod(net).astype(np.int64), BtB)
        # K at theta = 1
        np.testing.assert_array_equal(pl.kernel(net, np.ones(net.d)), BtB.astype(float))
    # exact counts beyond 64 bits: an OverflowError naming the entry; mod p still works
    deep = pl.feed_forward(2, [8] * 24, 1, bias=False)
    with pytest.raises(pl.CountOverflow, match="entry"):
        pl.skeleton_gram(deep)
    assert pl.skeleton_gram_mod(deep).shape == (deep.d, deep.d)
    assert pl.certify_rank_from_gram(deep, pl.skeleton_gram_mod(deep)).rank == deep.d - deep.h


# --- dense Jacobian without a sparse intermediate --------------------------------------------


def test_dense_jacobian(pl):
    for net in dp_networks(pl)[:8]:
        ps = pl.enumerate_paths(net)
        for theta in thetas(net, 3):
            J = pl.jacobian(net, theta).toarray()
            for target in (net, ps):
                D = pl.jacobian(target, theta, dense=True)
                assert D.flags.c_contiguous and D.dtype == np.float64
                # the same products, possibly associated differently: equal to rounding, and
                # exactly 0 off the paths and wherever another weight on the path is 0
                np.testing.assert_allclose(D, J, rtol=1e-14, atol=0)
                np.testing.assert_array_equal(D == 0, J == 0)
                D32 = pl.jacobian(target, theta, dense=True, dtype=np.float32)
                np.testing.assert_allclose(D32, pl.jacobian(net, theta,
                                                            dtype=np.float32).toarray(),
                                           rtol=1e-6, atol=0)
    net = pl.feed_forward(10, [20, 20], 5)
    need = pl.dense_bytes(pl.count_paths_total(net), net.d)
    for target in (net, pl.enumerate_paths(net)):
        with pytest.raises(MemoryError, match="dense"):
            pl.jacobian(target, np.ones(net.d), dense=True, max_memory=need // 2)
    with pytest.raises(ValueError, match="entries but the network has"):
        pl.jacobian(net, np.ones(net.d - 1), dense=True)


# --- errors ---------------------------------------------------------------------------------


def test_bad_inputs(pl):
    net = pl.fig1()
    theta = np.arange(1.0, 8.0)
    for f in (lambda t: pl.path_norm(net, t, 1), lambda t: pl.kernel_diagonal(net, t),
              lambda t: pl.kernel(net, t), lambda t: pl.kernel_trace(net, t),
              lambda t: pl.kernel_matvec(net, t, np.ones(7)),
              lambda t: pl.kernel_top_eigenvalues(net, t, 2)):
        with pytest.raises(ValueError, match="theta has 6 entries but the network has 7"):
            f(theta[:6])
        with pytest.raises(ValueError, match=r"theta\[3\] \(edge c -> f\) is not finite"):
            f(np.where(np.arange(7) == 3, np.nan, theta))
    with pytest.raises(ValueError, match="theta is required"):
        pl.kernel_diagonal(net)
    with pytest.raises(ValueError):
        pl.path_norm(net, theta, -1.0)
    with pytest.raises(ValueError):
        pl.path_norm(net, theta, math.nan)
    with pytest.raises(ValueError, match="v has 6 rows but the network has 7"):
        pl.kernel_matvec(net, theta, np.ones(6))
    with pytest.raises(ValueError, match="non-finite"):
        pl.kernel_matvec(net, theta, np.full(7, np.inf))
    with pytest.raises(ValueError):
        pl.kernel_top_eigenvalues(net, theta, 0)
    with pytest.raises(ValueError, match="method"):
        pl.kernel_top_eigenvalues(net, theta, 1, method="power")
    big = pl.feed_forward(20, [50], 5)
    for f in (lambda: pl.kernel(big, np.ones(big.d), max_memory=1 << 16),
              lambda: pl.skeleton_gram(big, max_memory=1 << 16),
              lambda: pl.skeleton_gram_mod(big, max_memory=1 << 16)):
        with pytest.raises(MemoryError, match="memory limit"):
            f()
    with pytest.raises(ValueError):
        pl.skeleton_gram_mod(net, 1)
