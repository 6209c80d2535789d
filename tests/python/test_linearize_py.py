"""The forward pass and the linearization f = L Phi from Python (issues 5 and 6), with PyTorch 1.13
as the independent reference: L @ phi equals model(X) and L @ dPhi equals
torch.autograd.functional.jacobian of model(X) with respect to the parameters, for the MLPs
and the fx-traced skip models of test_torch.py; zero-copy L; the CLI's JSON; bad inputs.

Run with PATHLIFT_BUILD_DIR=<build> /usr/bin/python3 -m pytest tests/python/test_linearize_py.py
"""
import json

import numpy as np
import pytest

scipy_sparse = pytest.importorskip("scipy.sparse")
torch = pytest.importorskip("torch")

from test_torch import MODELS, input_width, make, mlp  # noqa: E402

CLI_LINEARIZE_KEYS = ["n", "q", "P", "nnz_L", "margin", "max_err_f", "max_err_grad", "status"]


@pytest.fixture(params=MODELS, ids=[name for name, _ in MODELS])
def model(request):
    return make(request.param[1], seed=3 + len(request.param[0]))


def capsule_owned(a):
    base = a
    while isinstance(base, np.ndarray):
        base = base.base
    return type(base).__name__ == "PyCapsule"


def torch_parameter_jacobian(model, X):
    """d model(X) / d parameters, (n q) x (number of parameter entries), by
    torch.autograd.functional.jacobian through functional_call (rows sample-major)."""
    from torch.nn.utils.stateless import functional_call

    names = [n for n, _ in model.named_parameters()]
    params = tuple(p.detach().clone() for _, p in model.named_parameters())

    def f(*ps):
        return functional_call(model, dict(zip(names, ps)), (X,))

    jac = torch.autograd.functional.jacobian(f, params)
    n, q = f(*params).shape
    return torch.cat([j.reshape(n * q, -1) for j in jac], dim=1).numpy()


# --- against PyTorch ------------------------------------------------------------------------


def test_l_phi_is_the_model_output(pl, model):
    net = pl.from_torch(model)
    theta = pl.theta_from_torch(model)
    X = torch.randn(24, input_width(model), dtype=torch.float64,
                    generator=torch.Generator().manual_seed(4))
    with torch.no_grad():
        expected = model(X).numpy()
    n, q = expected.shape
    lin = pl.linearize(net, theta, X.numpy())
    # (margin 0 happens without bias: a unit whose inputs are all inactive ReLUs; f = L Phi
    # holds there too, with ReLU'(0) = 0 as in PyTorch)
    P = pl.count_paths_total(net)
    assert lin.L.shape == lin.shape == (n * q, P)
    phi = pl.path_lifting(net, theta)
    f = (lin.L @ phi).reshape(n, q)
    np.testing.assert_allclose(f, expected, rtol=1e-10, atol=1e-12 * np.abs(expected).max())
    # the forward pass itself
    fw = pl.forward(net, theta, X.numpy())
    np.testing.assert_allclose(fw.outputs, expected, rtol=1e-12, atol=1e-13)
    np.testing.assert_array_equal(lin.forward.outputs, fw.outputs)
    assert fw.values.shape == fw.pre_activations.shape == (n, net.num_nodes)


def test_l_dphi_is_the_torch_parameter_jacobian(pl, model):
    """df/dtheta = L dPhi; its first n columns (the PyTorch parameter entries) equal torch's
    Jacobian of model(X) with respect to the parameters."""
    net = pl.from_torch(model)
    theta = pl.theta_from_torch(model)
    X = torch.randn(6, input_width(model), dtype=torch.float64,
                    generator=torch.Generator().manual_seed(5))
    lin = pl.linearize(net, theta, X.numpy())
    G = (lin.L @ pl.jacobian(net, theta)).toarray()
    ref = torch_parameter_jacobian(model, X)
    n_params = ref.shape[1]
    assert G.shape == (ref.shape[0], net.d) and n_params <= net.d
    np.testing.assert_allclose(G[:, :n_params], ref, rtol=1e-10,
                               atol=1e-12 * max(1.0, np.abs(ref).max()))


def test_pre_activations_of_an_mlp_are_the_linear_layers(pl):
    m = make(lambda: mlp(4, [5, 3], 2))
    net = pl.from_torch(m).unrolled()
    X = torch.randn(7, 4, dtype=torch.float64)
    fw = pl.forward(net, pl.theta_from_torch(m), X.numpy())
    pattern = pl.activation_pattern(net, fw)
    with torch.no_grad():
        z1 = m[0](X)
        z2 = m[2](torch.relu(z1))
    for l, z in ((1, z1), (2, z2)):
        # hidden unit j of layer l is node "<ReLU module>[j]", the ReLU at index 2 l - 1
        cols = [net.node_index(f"{2 * l - 1}[{j}]") for j in range(z.shape[1])]
        np.testing.assert_allclose(fw.pre_activations[:, cols], z.numpy(), rtol=1e-12,
                                   atol=1e-13)
        np.testing.assert_allclose(fw.values[:, cols], torch.relu(z).numpy(), rtol=1e-12,
                                   atol=1e-13)
        np.testing.assert_array_equal(pattern.slopes[:, cols], (z > 0).double().numpy())
    relu_nodes = [v for v, a in enumerate(net.activations) if a == "relu"]
    assert pattern.margin == pytest.approx(np.abs(fw.pre_activations[:, relu_nodes]).min())
    assert net.activation(pattern.margin_node) == "relu" and 0 <= pattern.margin_sample < 7


# --- the engine on DAGs ---------------------------------------------------------------------


def test_linearize_on_random_dags(pl, reference):
    for m, seed in [(7, 31), (9, 32), (10, 33), (12, 34)]:
        net = pl.random_dag(m, 0.45, seed, parallel_edge_probability=0.3,
                            designated_output_probability=0.3)
        theta = pl.normal_weights(net.d, seed)
        X = pl.random_data(net, 20, seed)
        assert X.shape == (20, len(net.data_inputs)) and capsule_owned(X)
        lin = pl.linearize(net, theta, X)
        q = len(net.outputs)
        f = (lin.L @ pl.path_lifting(net, theta)).reshape(20, q)
        ref = reference.forward(net, theta, X)
        np.testing.assert_allclose(f, ref, rtol=1e-10, atol=1e-12)
        check = pl.verify_linearization(net, theta, X, lin)
        # on_kink: a ReLU node whose inputs are all inactive ReLUs has pre-activation exactly 0
        assert check.status == ("on_kink" if lin.pattern.on_kink else "ok"), check.message
        assert check.max_err_f < 1e-10 and check.max_err_grad < 1e-6
        # phi and J passed in: the same verdict
        same = pl.verify_linearization(net, theta, X, lin, phi=pl.path_lifting(net, theta),
                                       J=pl.jacobian(net, theta))
        assert same.to_dict() == check.to_dict()
        # linear_map from the pattern = linearize's L
        L2 = pl.linear_map(net, X, lin.pattern)
        assert (L2 != lin.L).nnz == 0


def test_l_is_zero_copy_and_thread_independent(pl):
    net = pl.feed_forward(3, [6, 5], 2)
    theta = pl.normal_weights(net.d, 1)
    X = pl.random_data(net, 50, 2)
    lin = pl.linearize(net, theta, X, threads=1)
    L = lin.L
    assert capsule_owned(L.data) and capsule_owned(L.indices)
    assert not L.data.flags.writeable and not L.indices.flags.writeable  # shared with lin
    assert L.has_canonical_format and L.nnz == lin.nnz
    del lin
    assert np.isfinite(L.data).all()  # the buffers outlive the Linearization object
    for threads in (2, 0):
        L2 = pl.linearize(net, theta, X, threads=threads).L
        assert np.array_equal(L2.data, L.data) and np.array_equal(L2.indices, L.indices)
    free = pl.linear_map(net, X, pl.linearize(net, theta, X).pattern)
    assert capsule_owned(free.data) and free.data.flags.writeable
    fw = pl.forward(net, theta, X)
    assert fw.outputs.base is not None and not fw.outputs.flags.writeable
    # C-ordered data is converted once; results do not depend on the layout
    np.testing.assert_array_equal(pl.forward(net, theta, np.ascontiguousarray(X)).outputs,
                                  pl.forward(net, theta, np.asfortranarray(X)).outputs)


def test_batch_sizes_and_kinks(pl):
    net = pl.feed_forward(3, [4], 2, bias=False)
    theta = pl.normal_weights(net.d, 3)
    one = pl.linearize(net, theta, np.ones((1, 3)))
    assert one.L.shape == (2, pl.count_paths_total(net))
    empty = pl.forward(net, theta, np.zeros((0, 3)))
    assert empty.outputs.shape == (0, 2)
    # a zero sample: every pre-activation is exactly 0 (no bias), margin 0 and the warning
    X = np.vstack([np.ones(3), np.zeros(3)])
    lin = pl.linearize(net, theta, X)
    assert lin.pattern.margin == 0 and lin.pattern.on_kink and lin.pattern.margin_sample == 1
    check = pl.check_linearization(net, theta, X)
    assert check.status == "on_kink" and check.message
    assert check.to_dict()["margin"] == 0.0


def test_check_linearization_mirrors_the_cli(pl, run_cli, tmp_path):
    net = pl.feed_forward(3, [8, 8], 2)
    X = pl.random_data(net, 10, 7)
    np.save(tmp_path / "X.npy", X)
    cli = json.loads(run_cli("linearize", "--ff", "3,8,8,2", "--data", tmp_path / "X.npy",
                             "--json", check=True).stdout)
    header = ("format", "version", "pathlift_version", "network", "theta")
    assert list(cli)[:len(header)] == list(header)  # docs/cli.md's header, then the check
    cli = {k: v for k, v in cli.items() if k not in header}
    py = pl.check_linearization(net, pl.normal_weights(net.d, 0), X).to_dict()
    assert list(py) == list(cli) == CLI_LINEARIZE_KEYS
    for k in CLI_LINEARIZE_KEYS:
        assert py[k] == pytest.approx(cli[k], rel=1e-9, abs=1e-300), k


# --- errors ---------------------------------------------------------------------------------


def test_bad_inputs(pl):
    net = pl.feed_forward(3, [4], 2)
    theta = pl.normal_weights(net.d, 0)
    X = pl.random_data(net, 5, 0)
    for f in (pl.forward, pl.linearize, pl.check_linearization):
        with pytest.raises(pl.FormatError, match="4.*3|3.*4") as info:
            f(net, theta, np.ones((5, 4)))  # wrong width: both numbers named
        assert isinstance(info.value, ValueError)
        bad = X.copy()
        bad[2, 1] = np.nan
        with pytest.raises(ValueError, match="not finite|NaN|nan"):
            f(net, theta, bad)
        with pytest.raises(ValueError, match="2-D"):
            f(net, theta, np.ones(3))
        with pytest.raises(ValueError, match="entries but the network has"):
            f(net, theta[:-1], X)
        with pytest.raises(ValueError, match=r"theta\[0\] \(edge x0 -> h1_0\) is not finite"):
            f(net, np.full(net.d, np.nan), X)
        with pytest.raises(ValueError, match="X must be numbers, got .* dtype <U1"):
            f(net, theta, [["a", "b", "c"]])
    with pytest.raises(ValueError, match="theta is required"):
        pl.forward(net, None, X)
    with pytest.raises(MemoryError):
        pl.linearize(net, theta, pl.random_data(net, 2000, 1), max_memory=10_000)
    with pytest.raises(pl.TooLarge):
        pl.forward(net, theta, pl.random_data(net, 2000, 1), max_memory=10_000)
    lin = pl.linearize(net, theta, X)
    with pytest.raises(ValueError):
        pl.verify_linearization(net, theta, X, lin, phi=np.ones(3))
    with pytest.raises(ValueError):
        pl.activation_pattern(pl.fig1(), lin.forward)
