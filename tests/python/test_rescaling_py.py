"""Rescaling and path magnitudes from Python (issue 18): rescaling_matrix against the rescaling
vectors and B Z = 0; rescale against the hand-written neuron rescaling of a PyTorch MLP, with
Phi and the model's outputs unchanged; path_magnitude against the enumerated Jacobian
(|dPhi_pk theta_k| summed over the paths); the same on a CNN's layer graph; a torch model
rescaled by pathlift.torch.rescale.

Run with PATHLIFT_BUILD_DIR=<build> /usr/bin/python3 -m pytest tests/python/test_rescaling_py.py
"""
import numpy as np
import pytest

torch = pytest.importorskip("torch")
scipy_sparse = pytest.importorskip("scipy.sparse")


def mlp(seed=0):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(5, 8), torch.nn.ReLU(), torch.nn.Linear(8, 6),
                               torch.nn.ReLU(), torch.nn.Linear(6, 2)).double()


def networks(pl):
    return [pl.fig1(), pl.sketch_h1(), pl.feed_forward(3, [4, 5], 2),
            pl.random_dag(9, 0.45, 3, parallel_edge_probability=0.3)]


def test_rescaling_matrix_is_the_rescaling_vectors_and_b_z_is_zero(pl):
    for net in networks(pl):
        Z = pl.rescaling_matrix(net)
        assert isinstance(Z, scipy_sparse.csr_matrix) and Z.shape == (net.d, net.h)
        dense = Z.toarray()
        for j, v in enumerate(net.hidden):
            np.testing.assert_array_equal(dense[:, j], pl.rescaling_vector(net, int(v)))
        B = pl.skeleton(net)
        assert abs(B @ Z).max() == 0
        assert np.linalg.matrix_rank(dense) == net.h


def test_rescale_is_the_neuron_rescaling_of_the_model(pl):
    model = mlp()
    net = pl.from_torch(model).unrolled()
    theta = pl.theta_from_torch(model)
    lambdas = np.random.default_rng(1).uniform(0.2, 5.0, net.h)
    got = pl.rescale(net, theta, lambdas)
    # By hand: hidden neurons layer by layer (net.hidden order); rows of W (and b) into a
    # neuron times its factor, the columns of the next W divided by it.
    l1, l2 = lambdas[:8], lambdas[8:]
    W1, b1, W2, b2, W3, b3 = [p.detach().numpy().copy() for p in model.parameters()]
    expected = np.concatenate([
        (W1 * l1[:, None]).ravel(), b1 * l1,
        (W2 * l2[:, None] / l1[None, :]).ravel(), b2 * l2,
        (W3 / l2[None, :]).ravel(), b3])
    np.testing.assert_allclose(got, expected, rtol=1e-14)
    np.testing.assert_allclose(pl.path_lifting(net, got), pl.path_lifting(net, theta),
                               rtol=1e-12)
    X = np.random.default_rng(2).standard_normal((7, 5))
    np.testing.assert_allclose(pl.forward(net, got, X).outputs, pl.forward(net, theta, X).outputs,
                               rtol=1e-12, atol=1e-14)
    assert not np.allclose(got, theta)


def test_rescale_refuses_what_is_not_a_symmetry(pl):
    net = pl.fig1()
    theta = np.ones(net.d)
    with pytest.raises(ValueError, match="lambdas has 1 entries but the network has"):
        pl.rescale(net, theta, [1.0])
    with pytest.raises(ValueError, match=r"lambdas\[0\] \(node .*\) must be finite and > 0"):
        pl.rescale(net, theta, np.r_[-1.0, np.ones(net.h - 1)])
    cnn = torch.nn.Sequential(torch.nn.Conv2d(1, 2, 2), torch.nn.ReLU(), torch.nn.Flatten(),
                              torch.nn.Linear(8, 2)).double()
    shared = pl.from_torch(cnn, input_shape=(1, 3, 3))
    with pytest.raises(ValueError, match="not a symmetry of the network: parameter"):
        pl.rescale(shared, pl.theta_from_torch(cnn), np.arange(1.0, shared.unrolled().h + 1))
    with pytest.raises(pl.NetworkError, match="one parameter per edge"):
        pl.rescaling_matrix(shared)


def magnitude_reference(pl, net, theta):
    """sum_p |Phi_p| (times the multiplicity of k in p) = sum_p |dPhi_pk theta_k|, from the
    enumerated Jacobian (no dynamic programming)."""
    J = pl.jacobian(net, theta)
    return np.asarray(abs(J.multiply(theta[None, :])).sum(axis=0)).ravel()


def test_path_magnitude_is_the_mass_of_phi_through_each_parameter(pl):
    for i, net in enumerate(networks(pl)):
        theta = np.random.default_rng(i).standard_normal(net.d)
        theta[i % net.d] = 0.0
        got = pl.path_magnitude(net, theta)
        np.testing.assert_allclose(got, magnitude_reference(pl, net, theta), rtol=1e-12,
                                   atol=1e-300)
        # sum_k magnitude_k = sum_p |Phi_p| times the path length
        B = pl.skeleton(net)
        lengths = np.asarray(B.sum(axis=1)).ravel()
        assert got.sum() == pytest.approx(np.abs(pl.path_lifting(net, theta)) @ lengths,
                                          rel=1e-12)
        lambdas = np.random.default_rng(9).uniform(0.1, 10, net.h)
        np.testing.assert_allclose(pl.path_magnitude(net, pl.rescale(net, theta, lambdas)), got,
                                   rtol=1e-12)


def test_path_magnitude_on_a_layer_graph_equals_the_unrolled_network(pl):
    torch.manual_seed(3)
    cnn = torch.nn.Sequential(torch.nn.Conv2d(2, 3, 3, padding=1), torch.nn.ReLU(),
                              torch.nn.MaxPool2d(2), torch.nn.Flatten(),
                              torch.nn.Linear(12, 2)).double()
    net = pl.from_torch(cnn, input_shape=(2, 4, 4))
    theta = pl.theta_from_torch(cnn)
    got = pl.path_magnitude(net, theta)
    assert not net.is_unrolled  # computed on the layers
    np.testing.assert_allclose(got, magnitude_reference(pl, net.unrolled(), theta), rtol=1e-12)
    np.testing.assert_allclose(pl.path_magnitude(net.unrolled(), theta), got, rtol=1e-12)


def test_torch_rescale_returns_an_equivalent_copy(pl):
    import pathlift.torch as pt

    model = mlp(4)
    before = [p.detach().clone() for p in model.parameters()]
    net = pl.from_torch(model).unrolled()
    lambdas = np.random.default_rng(5).uniform(0.3, 3.0, net.h)
    copy = pt.rescale(model, lambdas)
    for p, q in zip(model.parameters(), before):  # the model is left unchanged
        assert torch.equal(p, q)
    np.testing.assert_allclose(pl.theta_from_torch(copy),
                               pl.rescale(net, pl.theta_from_torch(model), lambdas), rtol=1e-15)
    x = torch.randn(6, 5, dtype=torch.float64)
    torch.testing.assert_close(copy(x), model(x), rtol=1e-12, atol=1e-13)
    bn = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4), torch.nn.ReLU(),
                             torch.nn.Linear(4, 1)).double().eval()
    with pytest.raises(ValueError, match="BatchNorm1d"):
        pt.rescale(bn, np.ones(pl.from_torch(bn).unrolled().h))
