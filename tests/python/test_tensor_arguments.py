"""Array arguments (issue 18): every function that takes theta or X takes a torch tensor --
requires_grad, float32, a non-contiguous view -- and returns exactly what it returns for the
same numbers in numpy; complex numbers are refused (a cast would drop the imaginary part), and
messages describe an array or a tensor by its type, shape and dtype, never by its entries.

Run with PATHLIFT_BUILD_DIR=<build> /usr/bin/python3 -m pytest tests/python/test_tensor_arguments.py
"""
import re

import numpy as np
import pytest

torch = pytest.importorskip("torch")
sp = pytest.importorskip("scipy.sparse")


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))


def comparable(x, depth=0):
    """x as nested tuples and dicts of plain values, for an exact comparison of results."""
    if isinstance(x, np.ndarray):
        return ("array", x.dtype.str, x.shape, x.tobytes())
    if sp.issparse(x):
        x = x.tocsr()
        return ("csr", x.shape, x.indptr.tobytes(), x.indices.tobytes(), x.data.tobytes())
    if isinstance(x, (list, tuple)):
        return tuple(comparable(y, depth) for y in x)
    if isinstance(x, dict):
        return {k: comparable(v, depth) for k, v in x.items()}
    if x is None or isinstance(x, (bool, int, float, str)):
        return x
    if hasattr(x, "to_dict"):
        return comparable(x.to_dict(), depth)
    assert depth < 4, type(x)
    return {a: comparable(getattr(x, a), depth + 1) for a in dir(x)
            if not a.startswith("_") and not callable(getattr(x, a))}


# Every public function of the engine whose signature has a theta or an X: a call of it given
# (pl, net, layer_net, theta, X). The table must name them all (test_the_table_is_complete).
CALLS = {
    "path_lifting": lambda pl, n, ln, t, X: pl.path_lifting(n, t),
    "path_lifting/paths": lambda pl, n, ln, t, X: pl.path_lifting(pl.enumerate_paths(n), t),
    "path_lifting/float32": lambda pl, n, ln, t, X: pl.path_lifting(n, t, dtype=np.float32),
    "jacobian": lambda pl, n, ln, t, X: pl.jacobian(n, t),
    "jacobian/paths": lambda pl, n, ln, t, X: pl.jacobian(pl.enumerate_paths(n), t),
    "jacobian/float32": lambda pl, n, ln, t, X: pl.jacobian(n, t, dtype=np.float32),
    "jacobian_paper_formula": lambda pl, n, ln, t, X: pl.jacobian_paper_formula(n, t),
    "jacobian_paper_formula/paths": lambda pl, n, ln, t, X: pl.jacobian_paper_formula(
        pl.enumerate_paths(n), pl.path_lifting(n, t), t),
    "check_identities": lambda pl, n, ln, t, X: pl.check_identities(n, t),
    "lifting_range": lambda pl, n, ln, t, X: pl.lifting_range(n, t),
    "log_path_lifting": lambda pl, n, ln, t, X: pl.log_path_lifting(n, t),
    "rank": lambda pl, n, ln, t, X: pl.rank(n, t),
    "check_rank_theorem": lambda pl, n, ln, t, X: pl.check_rank_theorem(n, t),
    "certify_jacobian_rank": lambda pl, n, ln, t, X: pl.certify_jacobian_rank(
        n, t, pl.certify_rank(n)),
    "forward": lambda pl, n, ln, t, X: pl.forward(n, t, X),
    "linear_map": lambda pl, n, ln, t, X: pl.linear_map(
        n, X, pl.activation_pattern(n, pl.forward(n, np.arange(n.d) / n.d - 0.4, X))),
    "linearize": lambda pl, n, ln, t, X: pl.linearize(n, t, X),
    "check_linearization": lambda pl, n, ln, t, X: pl.check_linearization(n, t, X),
    "verify_linearization": lambda pl, n, ln, t, X: pl.verify_linearization(
        n, t, X, pl.linearize(n, t, X)),
    "path_norm": lambda pl, n, ln, t, X: pl.path_norm(n, t, 2.0),
    "path_norm/layers": lambda pl, n, ln, t, X: pl.path_norm(ln, t, 2.0),
    "path_norm_gradient": lambda pl, n, ln, t, X: pl.path_norm_gradient(n, t, 1.5),
    "path_norm_gradient/layers": lambda pl, n, ln, t, X: pl.path_norm_gradient(ln, t, 1.5),
    "kernel_diagonal": lambda pl, n, ln, t, X: pl.kernel_diagonal(n, t),
    "kernel_diagonal/layers": lambda pl, n, ln, t, X: pl.kernel_diagonal(ln, t),
    "kernel_matvec": lambda pl, n, ln, t, X: pl.kernel_matvec(n, t, np.ones(n.d)),
    "kernel_matvec/layers": lambda pl, n, ln, t, X: pl.kernel_matvec(ln, t, np.ones(n.d)),
    "kernel": lambda pl, n, ln, t, X: pl.kernel(n, t),
    "kernel_operator": lambda pl, n, ln, t, X: pl.kernel_operator(n, t) @ np.ones(n.d),
    "kernel_operator/layers": lambda pl, n, ln, t, X: pl.kernel_operator(ln, t) @ np.ones(n.d),
    "kernel_trace": lambda pl, n, ln, t, X: pl.kernel_trace(n, t),
    "kernel_trace/layers": lambda pl, n, ln, t, X: pl.kernel_trace(ln, t),
    "kernel_top_eigenvalues": lambda pl, n, ln, t, X: pl.kernel_top_eigenvalues(n, t, 2),
    "kernel_top_eigenvalues/layers": lambda pl, n, ln, t, X: pl.kernel_top_eigenvalues(
        ln, t, 2),
    "path_metric": lambda pl, n, ln, t, X: pl.path_metric(n, t, t * 0.5),
    "path_metric/layers": lambda pl, n, ln, t, X: pl.path_metric(ln, t, t * 0.5),
    "lipschitz_bound": lambda pl, n, ln, t, X: pl.lipschitz_bound(n, t, -t),
    "generalization_bound": lambda pl, n, ln, t, X: pl.generalization_bound(
        n, t, n=100, input_bound=2).bound,
    "generalization_bound/layers": lambda pl, n, ln, t, X: pl.generalization_bound(
        ln, t, n=100, input_bound=2).bound,
    "path_cond": lambda pl, n, ln, t, X: pl.path_cond(n, t).theta,
    "enorm": lambda pl, n, ln, t, X: pl.enorm(ln, t).theta,
    "conservation_laws": lambda pl, n, ln, t, X: pl.conservation_laws(n, t).values,
    "conservation_laws/layers": lambda pl, n, ln, t, X: pl.conservation_laws(ln, t).values,
    "functional_dimension": lambda pl, n, ln, t, X: pl.functional_dimension(
        n, t, X).pivot_rows,
    "path_magnitude": lambda pl, n, ln, t, X: pl.path_magnitude(n, t),
    "top_paths": lambda pl, n, ln, t, X: [p["value"] for p in pl.top_paths(n, t, 3)],
    "top_paths/layers": lambda pl, n, ln, t, X: [p["value"] for p in pl.top_paths(ln, t, 3)],
    "sample_paths": lambda pl, n, ln, t, X: [p["value"] for p in pl.sample_paths(n, t, 3)],
    "path_norm_shares": lambda pl, n, ln, t, X: pl.path_norm_shares(n, t, by="node").shares,
    "path_norm_shares/layers": lambda pl, n, ln, t, X: pl.path_norm_shares(ln, t).shares,
    "path_magnitude/layers": lambda pl, n, ln, t, X: pl.path_magnitude(ln, t),
    "rescale": lambda pl, n, ln, t, X: pl.rescale(n, t, np.arange(1.0, n.h + 1)),
    "Network.with_weights": lambda pl, n, ln, t, X: n.with_weights(t).weights,
    "Network(weights=)": lambda pl, n, ln, t, X: pl.Network(
        **{**n.spec(), "weights": t}).weights,
    "LayerGraph(weights=)": lambda pl, n, ln, t, X: pl.LayerGraph(
        input_shape=[3], layers=ln.layer_graph.layers, outputs=ln.layer_graph.outputs,
        num_params=ln.d, weights=t).weights,
    "to_torch": lambda pl, n, ln, t, X: [p.detach().numpy() for p in
                                         pl.to_torch(n, t).parameters()],
}


def signature_names(fn, name):
    """The parameter names of each overload of an engine function, from its docstring."""
    sigs = [line for line in (fn.__doc__ or "").splitlines()
            if re.match(rf"^(\d+\. )?{name}\(", line)]
    return [set(re.findall(r"(\w+): ", s)) for s in sigs]


def test_the_table_is_complete(pl):
    engine = pl._pathlift
    takes = {name for name in dir(engine) if not name.startswith("_")
             and callable(getattr(engine, name)) and not isinstance(getattr(engine, name), type)
             and any({"theta", "X"} & names
                     for names in signature_names(getattr(engine, name), name))}
    assert takes, "no function found: the docstring signatures changed"
    missing = takes - {key.split("/")[0] for key in CALLS}
    assert not missing, f"add these functions to CALLS: {sorted(missing)}"


def tensors(theta):
    """theta as the tensors a training loop has: a float32 leaf requiring grad, and a
    non-contiguous view (every other entry of a longer tensor) requiring grad."""
    leaf = torch.tensor(theta, dtype=torch.float32, requires_grad=True)
    longer = torch.zeros(2 * theta.size, dtype=torch.float64)
    longer[::2] = torch.from_numpy(theta)
    view = longer.requires_grad_(True)[::2]
    assert not view.is_contiguous()
    return {"float32 leaf": (leaf, theta.astype(np.float32).astype(np.float64)),
            "float64 view": (view, theta)}


@pytest.mark.parametrize("kind", ["float32 leaf", "float64 view"])
@pytest.mark.parametrize("call", sorted(CALLS))
def test_a_tensor_gives_what_numpy_gives(pl, model, call, kind):
    net = pl.from_torch(model)
    dag = net.unrolled()
    theta = pl.theta_from_torch(model) + 0.05  # no zero weight
    X = np.random.default_rng(1).standard_normal((6, 3))
    t, same = tensors(theta)[kind]
    Xt = torch.tensor(X, dtype=torch.float32, requires_grad=True).T.contiguous().T  # F-order
    X_same = X.astype(np.float32).astype(np.float64)
    expected = CALLS[call](pl, dag, net, same, X_same)
    got = CALLS[call](pl, dag, net, t, Xt)
    assert comparable(got) == comparable(expected)


def test_half_and_bfloat16_go_through_float64(pl, model):
    net = pl.from_torch(model)
    theta = torch.from_numpy(pl.theta_from_torch(model))
    for dtype in (torch.float16, torch.bfloat16):
        t = theta.to(dtype)
        assert np.array_equal(pl.path_lifting(net, t), pl.path_lifting(net, t.double().numpy()))


def test_a_wrong_length_tensor_gets_a_short_message_naming_the_length(pl, model):
    net = pl.from_torch(model)
    t = torch.randn(net.d + 1000, requires_grad=True)
    for f in (lambda: pl.path_lifting(net, t), lambda: pl.path_norm(net, t),
              lambda: pl.kernel_diagonal(net, t)):
        with pytest.raises(ValueError) as e:
            f()
        assert str(net.d + 1000) in str(e.value) and len(str(e.value)) < 120, str(e.value)


def test_messages_describe_arrays_and_tensors_without_their_entries(pl, model):
    net = pl.from_torch(model)
    with pytest.raises(ValueError, match=re.escape(
            "theta must be a 1-D vector (got a torch.Tensor of shape (2, 13) and dtype "
            "torch.float32)")):
        pl.path_lifting(net, torch.randn(2, 13, requires_grad=True))
    with pytest.raises(ValueError, match=re.escape(
            "X must be 2-D (n samples x r inputs), got a numpy.ndarray of shape (2, 3, 4) and "
            "dtype float64")):
        pl.forward(net, None, np.zeros((2, 3, 4)))
    with pytest.raises(ValueError) as e:  # a long list: its start, type and length
        pl.path_lifting(net, [[0.5] * 3] * 1000)
    assert "(a list of length 1000)" in str(e.value) and len(str(e.value)) < 200
    with pytest.raises(ValueError, match=r"\(a list of length 1\)"):  # cut between characters
        pl.path_lifting(net, ["\u00e9" * 200])


@pytest.mark.parametrize("complex_theta", [
    lambda d: torch.ones(d, dtype=torch.complex64, requires_grad=True),
    lambda d: np.ones(d, dtype=np.complex128),
    lambda d: [1 + 0j] * d,  # zero imaginary parts are refused too: the type is the error
])
def test_complex_numbers_are_refused(pl, model, complex_theta):
    net = pl.from_torch(model)
    with pytest.raises(ValueError, match="theta must be real numbers, got .*complex"):
        pl.path_lifting(net, complex_theta(net.d))
    with pytest.raises(ValueError, match="X must be real numbers"):
        pl.forward(net, None, np.ones((2, 3), dtype=np.complex64))


def test_complex_sparse_matrices_are_refused(pl, model):
    J = pl.jacobian(pl.from_torch(model))
    with pytest.raises(ValueError, match="J must be real numbers"):
        pl.numerical_rank(J.astype(np.complex128))
    with pytest.raises(ValueError, match="J must be real numbers"):
        pl.numerical_rank(torch.ones(3, 3, dtype=torch.complex128).to_sparse())


def test_matrix_arguments_take_dense_and_sparse_tensors(pl, model):
    J = pl.jacobian(pl.from_torch(model))
    expected = comparable(pl.numerical_rank(J))
    dense = torch.tensor(J.toarray(), requires_grad=True)
    coo = torch.sparse_coo_tensor(np.vstack(J.nonzero()), J.data, J.shape)
    assert comparable(pl.numerical_rank(dense)) == expected
    assert comparable(pl.numerical_rank(coo)) == expected
    assert comparable(pl.numerical_rank(pl.to_torch_sparse(J))) == expected
    B = pl.skeleton(pl.from_torch(model))
    assert comparable(pl.certify_rank(pl.from_torch(model), pl.to_torch_sparse(B))) == \
        comparable(pl.certify_rank(pl.from_torch(model), B))


def test_a_sparse_tensor_for_a_vector_is_refused_with_the_cure(pl, model):
    net = pl.from_torch(model)
    with pytest.raises(ValueError, match=r"theta must be a dense tensor.*to_dense"):
        pl.path_lifting(net, torch.ones(net.d).to_sparse())


def test_to_torch_refuses_complex_theta(pl, model):
    net = pl.from_torch(model)
    for theta in (torch.ones(net.d, dtype=torch.complex64), np.ones(net.d, dtype=complex)):
        with pytest.raises(ValueError, match="theta must be real numbers"):
            pl.to_torch(net, theta)
