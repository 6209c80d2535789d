"""The path kernel's block product, eigenpairs and operators (issue 33): pathlift.kernel_operator
(a scipy LinearOperator) under scipy's eigsh, pathlift.torch.kernel_operator on torch tensors,
kernel_top_eigenvalues(vectors=True) and `pathlift kernel --top-eig N --vectors FILE`, each
against K = J^T J from the enumerated Jacobian (an independent code path: no dynamic
programme) and its dense eigendecomposition."""

import json

import numpy as np
import pytest
import scipy.sparse.linalg as spla

torch = pytest.importorskip("torch")
nn = torch.nn

from test_cnn import prepare  # noqa: E402  (float64, eval mode, random weights and statistics)


def small_cnn():
    """Weights scaled by 2: K's top eigenvalues then lie above the eigenvalue 1 of each output
    bias (a path of one edge), whose multiplicity single-vector Lanczos (eigsh) cannot see."""
    model = prepare(nn.Sequential(nn.Conv2d(1, 3, 3), nn.BatchNorm2d(3), nn.ReLU(), nn.Flatten(),
                                  nn.Linear(3 * 4 * 4, 4), nn.ReLU(), nn.Linear(4, 2)), 3)
    with torch.no_grad():
        for p in model.parameters():
            p.mul_(2)
    return model


def explicit_kernel(pl, net, theta):
    J = pl.jacobian(net, theta)
    return (J.T @ J).toarray()


def cases(pl):
    """(name, network, theta): a DAG and a LayerNetwork (never unrolled by the operator)."""
    rng = np.random.default_rng(5)
    dag = pl.feed_forward(4, [12, 12], 3)
    yield "dag", dag, rng.standard_normal(dag.d)
    model = small_cnn()
    net = pl.from_torch(model, input_shape=(1, 6, 6))
    yield "cnn", net, pl.theta_from_torch(model)


def test_eigsh_on_the_operator_agrees_with_the_explicit_kernel(pl):
    for name, net, theta in cases(pl):
        K = explicit_kernel(pl, net, theta)
        want = np.linalg.eigvalsh(K)[::-1][:3]
        op = pl.kernel_operator(net, theta)
        assert isinstance(op, spla.LinearOperator) and isinstance(op, pl.KernelOperator)
        assert op.shape == (net.d, net.d) and op.dtype == np.float64
        values, vectors = spla.eigsh(op, k=3, which="LA", tol=1e-12)
        order = np.argsort(values)[::-1]
        np.testing.assert_allclose(values[order], want, rtol=1e-10, err_msg=name)
        for j in range(3):
            v = vectors[:, j]
            assert np.linalg.norm(K @ v - values[j] * v) <= 1e-8 * values[j], name
        # pathlift's own LOBPCG, with vectors and residuals, agrees with both.
        top = pl.kernel_top_eigenvalues(net, theta, 3, method="lobpcg", vectors=True)
        assert top.status == "converged" and top.method == "lobpcg"
        np.testing.assert_allclose(top.values, want, rtol=1e-10, err_msg=name)
        assert top.vectors.shape == (net.d, 3) and not top.vectors.flags.writeable
        assert np.all(top.residuals <= 2e-10), (name, top.residuals)
        for j in range(3):
            v = top.vectors[:, j]
            assert np.linalg.norm(K @ v - top.values[j] * v) <= 1e-9 * top.values[j], name
            assert v[np.argmax(np.abs(v))] > 0  # signs fixed: largest entry positive
        # The same eigenspaces as eigsh's (equal eigenvalues may have other bases).
        assert np.allclose(top.vectors.T @ top.vectors, np.eye(3), atol=1e-10)
        q = vectors[:, order]
        np.testing.assert_allclose(np.linalg.svd(q.T @ top.vectors, compute_uv=False), 1,
                                   atol=1e-6, err_msg=name)


def test_operator_products_equal_the_explicit_kernel(pl):
    rng = np.random.default_rng(1)
    for name, net, theta in cases(pl):
        K = explicit_kernel(pl, net, theta)
        op = pl.kernel_operator(net, theta)
        v = rng.standard_normal(net.d)
        V = rng.standard_normal((net.d, 4))
        scale = np.abs(K).max()
        np.testing.assert_allclose(op @ v, K @ v, rtol=1e-10, atol=1e-12 * scale * net.d)
        np.testing.assert_allclose(op.matmat(V), K @ V, rtol=1e-10, atol=1e-12 * scale * net.d)
        np.testing.assert_allclose(op.rmatvec(v), K @ v, rtol=1e-10, atol=1e-12 * scale * net.d)
        assert op.H is op
        # kernel_matvec on a block: the same block product.
        np.testing.assert_array_equal(pl.kernel_matvec(net, theta, V), op.matmat(V))
        # the stored weights when theta is None
        if name == "cnn":
            np.testing.assert_array_equal(pl.kernel_operator(net) @ v, op @ v)
        with pytest.raises(ValueError):  # scipy checks the shape first
            op.matmat(np.ones((net.d + 1, 2)))
        with pytest.raises(ValueError, match="rows but the network"):
            pl.kernel_matvec(net, theta, np.ones((net.d + 1, 2)))
        with pytest.raises(ValueError, match="non-finite"):
            op @ np.full(net.d, np.nan)
        with pytest.raises(ValueError, match="K is real"):
            op @ (v + 1j * v)


def test_torch_operator(pl):
    import pathlift.torch as plt

    model = small_cnn()
    net = pl.from_torch(model, input_shape=(1, 6, 6))
    K = explicit_kernel(pl, net, pl.theta_from_torch(model))
    op = plt.kernel_operator(model, input_shape=(1, 6, 6))
    assert op.shape == (net.d, net.d)
    v = torch.linspace(-1, 1, net.d, dtype=torch.float32)
    kv = op @ v
    assert isinstance(kv, torch.Tensor) and kv.dtype == torch.float32 and kv.shape == (net.d,)
    np.testing.assert_allclose(kv.numpy(), K @ v.double().numpy(), rtol=1e-5, atol=1e-6)
    V = torch.randn(net.d, 3, dtype=torch.float64)
    np.testing.assert_allclose(op.matmat(V).numpy(), K @ V.numpy(), rtol=1e-10,
                               atol=1e-12 * np.abs(K).max() * net.d)
    ki = op @ torch.arange(net.d)  # an integer vector: K v in float64, not truncated
    assert ki.dtype == torch.float64
    np.testing.assert_allclose(ki.numpy(), K @ np.arange(net.d), rtol=1e-10,
                               atol=1e-12 * np.abs(K).max() * net.d ** 2)
    blocks = op.split(op @ V[:, 0])
    assert [tuple(b.shape) for b in blocks] == [tuple(p.shape) for p in model.parameters()]
    with pytest.raises(TypeError, match="torch.Tensor"):
        op @ np.ones(net.d)


def test_cli_writes_the_eigenvectors(pl, run_cli, tmp_path):
    net = pl.feed_forward(4, [12, 12], 3)
    theta = np.random.default_rng(2).standard_normal(net.d)
    np.save(tmp_path / "theta.npy", theta)
    out = tmp_path / "vectors.npy"
    r = run_cli("kernel", "--ff", "4,12,12,3", "--theta", tmp_path / "theta.npy", "--top-eig", 3, "--method", "lobpcg", "--vectors", out, "--json", check=True)
    j = json.loads(r.stdout)
    K = explicit_kernel(pl, net, theta)
    want = np.linalg.eigvalsh(K)[::-1][:3]
    assert j["method"] == "lobpcg" and j["status"] == "converged"
    np.testing.assert_allclose(j["eigenvalues"], want, rtol=1e-10)
    assert len(j["residuals"]) == 3 and max(j["residuals"]) <= 2e-10
    vectors = np.load(out)
    assert vectors.shape == (net.d, 3)
    for k in range(3):
        v = vectors[:, k]
        assert np.linalg.norm(K @ v - want[k] * v) <= 1e-9 * want[k]
    text = run_cli("kernel", "--ff", "4,12,12,3", "--theta", tmp_path / "theta.npy",
                   "--top-eig", 2, "--method", "lobpcg", "--vectors", out, check=True).stdout
    assert "LOBPCG" in text and "||K v - lambda v|| / lambda" in text and str(out) in text
    bad = run_cli("kernel", "--ff", "4,12,12,3", "--trace", "--vectors", out)
    assert bad.returncode != 0 and "--vectors writes the eigenvectors of --top-eig N" in bad.stderr


def test_products_where_the_diagonal_overflows(pl):
    """K[k, k] beyond float64 while (K v)_k fits: the kept diagonal is scaled, not inf."""
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 4), nn.ReLU(),
                      nn.Linear(4, 2)).double()
    net = pl.from_torch(m)
    dag = net.unrolled()
    sizes = np.cumsum([0] + [p.numel() for p in m.parameters()])
    theta = pl.theta_from_torch(m)
    theta[sizes[0]:sizes[2]] *= 1e80  # the first and the last layer
    theta[sizes[4]:sizes[6]] *= 1e80
    with pytest.raises(pl.RangeError):
        pl.kernel_diagonal(dag, theta)  # the middle layer's K[k, k] overflow
    v = np.zeros(net.d)
    v[sizes[2]] = 1e-30
    got = pl.kernel_matvec(net, theta, v)
    want = pl.kernel_matvec(dag, theta, v)  # the DAG's products are scaled throughout
    assert np.all(np.isfinite(got)) and abs(got[sizes[2]]) > 1e280
    np.testing.assert_allclose(got, want, rtol=1e-12)
    np.testing.assert_allclose(pl.kernel_operator(net, theta) @ v, want, rtol=1e-12)


def test_repeated_eigenvalues_come_out_as_often_as_they_repeat(pl, run_cli, tmp_path):
    """Issue 50: AvgPool1d(2) -> Linear(100, 3) has a diagonal K, 1 for each bias and 1/2 for
    each weight (every path holds one parameter), whatever the weights: the top three are
    (1, 1, 1), and the default method (block Lanczos, d = 303 > 256) gave (1, 0.5, 0.5),
    'converged'. The same from Python and the CLI, against the explicit K."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.AvgPool1d(2), nn.Flatten(), nn.Linear(100, 3)).double()
    net = pl.from_torch(model, input_shape=(1, 200))
    theta = pl.theta_from_torch(model)
    want = np.linalg.eigvalsh(explicit_kernel(pl, net, theta))[::-1]
    np.testing.assert_allclose(want[:5], [1, 1, 1, 0.5, 0.5], rtol=1e-12)
    for count in (3, 5):
        r = pl.kernel_top_eigenvalues(net, theta, count)
        assert r.method == "lanczos" and r.status == "converged"
        np.testing.assert_allclose(r.values, want[:count], rtol=1e-10)
    path = tmp_path / "pool.json"
    path.write_text(net.layer_graph.to_json())
    np.save(tmp_path / "theta.npy", theta)
    j = json.loads(run_cli("kernel", "--network", path, "--theta", tmp_path / "theta.npy",
                           "--top-eig", 3, "--json", check=True).stdout)
    assert j["method"] == "lanczos" and j["status"] == "converged"
    np.testing.assert_allclose(j["eigenvalues"], want[:3], rtol=1e-10)
