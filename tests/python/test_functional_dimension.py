"""pathlift.functional_dimension and `pathlift rank --data` (docs/functional-dimension.md): the
faces agree with each other, a CNN's certified value agrees with PyTorch autograd's Jacobian
of the module itself, and bad input is refused. The exact rational reference is in
test_functional_dimension_exact.py."""

import json
import math

import numpy as np
import pytest
import torch


def cnn(seed):
    torch.manual_seed(seed)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(1, 3, 3, padding=1), torch.nn.ReLU(), torch.nn.AvgPool2d(2),
        torch.nn.Flatten(), torch.nn.Linear(3 * 2 * 2, 4), torch.nn.ReLU(),
        torch.nn.Linear(4, 2)).double().eval()
    return model


def autograd_jacobian(model, X):
    """J_X by torch.autograd on the module, rows sample-major, columns in parameters() order."""
    rows = []
    for x in X:
        out = model(x[None])[0]
        for j in range(out.shape[0]):
            grads = torch.autograd.grad(out[j], list(model.parameters()), retain_graph=True)
            rows.append(torch.cat([g.reshape(-1) for g in grads]).numpy())
    return np.array(rows)


@pytest.mark.parametrize("seed", range(4))
def test_a_cnn_agrees_with_autograd_on_the_module(pl, seed):
    model = cnn(seed)
    net = pl.from_torch(model, input_shape=(1, 4, 4))
    X = torch.randn(12, 1, 4, 4, dtype=torch.float64,
                    generator=torch.Generator().manual_seed(seed))
    fd = pl.functional_dimension(net, None, X.reshape(12, -1).numpy(), numerical=True)
    J = autograd_jacobian(model, X)
    assert J.shape == (fd.rows, fd.d)
    s = np.linalg.svd(J, compute_uv=False)
    assert fd.numerical is not None
    np.testing.assert_allclose(fd.numerical.singular_values, s, rtol=1e-9, atol=1e-12 * s[0])
    rank = int(np.linalg.matrix_rank(J))
    assert fd.lower <= rank <= fd.upper
    # The kernel bound counts each channel class's rescaling (shared parameters), and the
    # zero columns beside them.
    h_sym = pl.rank(net, enumerate=False)["h_sym"]
    zero = int((np.abs(J).sum(0) == 0).sum())
    assert fd.upper_kernel <= fd.d - h_sym
    assert fd.upper_kernel <= fd.d - zero
    if fd.status == "certified":
        assert fd.rank == rank
    # The first rows that reach the rank are independent, and a prefix already has it.
    assert np.linalg.matrix_rank(J[fd.pivot_rows]) == fd.lower
    assert np.linalg.matrix_rank(J[: fd.rows_to_rank]) == fd.lower


def test_the_cli_prints_the_librarys_json(pl, run_cli, tmp_path):
    net = pl.feed_forward(5, [8, 8], 3)
    theta = pl.normal_weights(net.d, 0)
    X = np.random.default_rng(0).standard_normal((40, 5))
    np.save(tmp_path / "X.npy", X)
    r = run_cli("rank", "--ff", "5,8,8,3", "--data", tmp_path / "X.npy", "--json", check=True)
    got = json.loads(r.stdout)
    assert got["format"] == "pathlift-functional-dimension"
    want = pl.functional_dimension(net, theta, X).to_dict()
    assert got["prime"] != want["prime"]  # each drew its own (equal with probability 4e-17)
    for key, value in want.items():
        if key == "prime":
            continue
        assert got[key] == pytest.approx(value) if isinstance(value, float) else got[key] == value
    text = run_cli("rank", "--ff", "5,8,8,3", "--data", tmp_path / "X.npy", check=True).stdout
    shown = want["lower"] if want["status"] == "certified" else "?"
    assert f"rank(J_X)    {shown}  " in text
    assert f"{want['lower']} <= rank(J_X) <= {want['upper']}" in text
    assert f"status       {want['status']}: " in text


def test_the_pattern_within_rounding_is_not_certified(pl):
    net = pl.Network([("a", "h"), ("b", "h"), ("c", "h"), ("h", "y")],
                     nodes=["a", "b", "c", "h", "y"])
    fd = pl.functional_dimension(net, [0.1, 0.2, -0.3, 1.0], np.ones((1, 3)))
    assert fd.status == "pattern_uncertain" and not fd.pattern_certified
    assert "node h" in fd.pattern_note
    exact = pl.functional_dimension(net, [1.0, 2.0, -3.0, 1.0], np.ones((1, 3)))
    assert exact.status == "certified" and exact.on_kink and exact.rank == 0


def test_refusals(pl, run_cli, tmp_path):
    net = pl.feed_forward(3, [4], 2)
    theta = pl.normal_weights(net.d, 0)
    with pytest.raises(ValueError, match="odd"):
        pl.functional_dimension(net, theta, np.ones((2, 3)), prime=2)
    with pytest.raises(ValueError, match="prime"):
        pl.functional_dimension(net, theta, np.ones((2, 3)), prime=15)
    with pytest.raises(pl.FormatError, match="4 columns"):
        pl.functional_dimension(net, theta, np.ones((2, 4)))
    with pytest.raises(ValueError, match="not finite"):
        pl.functional_dimension(net, theta, np.full((2, 3), np.nan))
    with pytest.raises(MemoryError):
        big = pl.feed_forward(30, [30, 30], 10)
        pl.functional_dimension(big, pl.normal_weights(big.d, 0), np.ones((200, 30)),
                                max_memory=100_000)
    np.save(tmp_path / "X.npy", np.ones((2, 3)))
    r = run_cli("rank", "--ff", "3,4,2", "--data", tmp_path / "X.npy", "--enumerate")
    assert r.returncode == 2 and "excludes" in r.stderr


def test_the_torch_face_flattens_the_batch(pl):
    import pathlift.torch as pt
    model = cnn(7)
    X = torch.randn(10, 1, 4, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(7))
    fd = pt.functional_dimension(model, X)
    net = pl.from_torch(model, input_shape=(1, 4, 4))
    want = pl.functional_dimension(net, None, X.reshape(10, -1).numpy())
    assert (fd.lower, fd.upper, fd.pivot_rows) == (want.lower, want.upper, want.pivot_rows)
    rank = int(np.linalg.matrix_rank(autograd_jacobian(model, X)))
    assert fd.lower <= rank <= fd.upper
    with pytest.raises(ValueError, match="batch"):
        pt.functional_dimension(model, np.ones(16))


def test_an_onnx_cnn_on_a_few_samples(pl, run_cli, tmp_path):
    """lenet5 (d = 61,706) on 3 samples: 30 rows, certified by q x distinct samples; the SVD of
    the wide J_X is cheap (its small side is 30) and runs by default."""
    import pathlib
    model = pathlib.Path(__file__).resolve().parents[1] / "data" / "lenet5.onnx"
    X = np.random.default_rng(0).standard_normal((3, 784))
    np.save(tmp_path / "X.npy", X)
    got = json.loads(run_cli("rank", "--onnx", model, "--data", tmp_path / "X.npy", "--json",
                             check=True).stdout)
    assert got["d"] == 61706 and got["rows"] == 30
    assert got["status"] == "certified" and got["functional_dimension"] == 30
    assert got["numerical_rank"] == 30
    assert got["pattern_certified"]


def test_a_subset_of_columns_bounds_the_rank_from_below(pl):
    """columns=: the lower bound is the rank of J_X's columns asked for (autograd's J_X on the
    module), a lower bound of the whole rank; the upper bound is the whole J_X's."""
    model = cnn(3)
    net = pl.from_torch(model, input_shape=(1, 4, 4))
    X = torch.randn(12, 1, 4, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    J = autograd_jacobian(model, X)
    whole = pl.functional_dimension(net, None, X.reshape(12, -1).numpy(), numerical=False)
    last = np.arange(net.d - 40, net.d)  # the two Linear layers' last parameters
    part = pl.functional_dimension(net, None, X.reshape(12, -1).numpy(), numerical=False,
                                   columns=last)
    assert part.lower == np.linalg.matrix_rank(J[:, last]) <= whole.lower
    assert part.upper == whole.upper
    assert part.columns_used == int((np.abs(J[:, last]).sum(0) > 0).sum())
    assert part.to_dict()["columns_used"] == part.columns_used
    with pytest.raises(ValueError, match="column -1 is not a parameter"):
        pl.functional_dimension(net, None, X.reshape(12, -1).numpy(), columns=[-1])


def monte_carlo_bound(pl, net, upper):
    """The bound of docs/functional-dimension.md#monte-carlo, from pathlift's path count: the
    entries of 2^(1074 F) J_X are below P L 2^(2098 F) with F = 1 + 2 L factors a term, an
    upper x upper minor below 2^B by Hadamard, at most B / 60 of the 2.7e16 primes divide it."""
    counts = pl.count_paths(net)
    L = max(counts.max_path_length, 1)
    F = 1 + 2 * L
    B = upper * (math.log2(counts.paths) + math.log2(L) + 2098 * F + 0.5 * math.log2(upper))
    return min(1.0, math.floor(B / 60) / 2.7e16)


def test_the_default_prime_is_drawn_at_random(pl, run_cli, tmp_path):
    """prime=None draws a prime uniformly among those in [2^60, 2^61): two calls draw two, with
    the same bounds and pivots; lower is then a Monte Carlo rank with the documented error bound
    (0 when certified). A prime given, or a subset of the columns, gives none. The rank itself
    is checked against exact rationals in test_functional_dimension_exact.py."""
    net = pl.feed_forward(2, [3, 3], 1)
    theta = pl.normal_weights(net.d, 0)
    X = pl.random_data(net, 10, 0)
    a, b = (pl.functional_dimension(net, theta, X, numerical=False) for _ in range(2))
    for fd in (a, b):
        assert fd.prime_random and 2**60 <= fd.prime < 2**61 and pl.is_prime(fd.prime)
        assert fd.status == "bounds" and fd.monte_carlo_rank == fd.lower < fd.upper
        # the same bound, up to the rounding of log2 P (which floor(B / 60) may round across)
        assert fd.monte_carlo_error == pytest.approx(monte_carlo_bound(pl, net, fd.upper),
                                                     rel=1e-5)
        assert fd.monte_carlo_error < 1e-12
        assert f"rank J_X = {fd.lower} except with probability at most" in fd.explanation
        assert fd.to_dict()["monte_carlo_rank"] == fd.lower
    assert a.prime != b.prime
    assert (a.lower, a.upper, list(a.pivot_rows)) == (b.lower, b.upper, list(b.pivot_rows))
    certified = pl.functional_dimension(net, theta, X[:2], numerical=False)
    assert certified.status == "certified" and certified.monte_carlo_error == 0
    assert certified.monte_carlo_rank == certified.rank
    given = pl.functional_dimension(net, theta, X, prime=2**61 - 1, numerical=False)
    assert not given.prime_random and given.prime == 2**61 - 1 and given.lower == a.lower
    with pytest.raises(ValueError, match="prime=None draws one at random"):
        pl.functional_dimension(net, theta, X, prime=0)
    assert given.monte_carlo_rank is None and given.monte_carlo_error is None
    assert "Monte Carlo" not in given.explanation
    part = pl.functional_dimension(net, theta, X, columns=[0, 1, 2], numerical=False)
    assert part.prime_random and part.monte_carlo_rank is None
    np.save(tmp_path / "X.npy", X)
    cli = json.loads(run_cli("rank", "--ff", "2,3,3,1", "--data", tmp_path / "X.npy", "--json",
                             check=True).stdout)
    assert cli["prime_random"] and cli["monte_carlo_rank"] == a.lower
    assert cli["monte_carlo_error"] == pytest.approx(a.monte_carlo_error)
    text = run_cli("rank", "--ff", "2,3,3,1", "--data", tmp_path / "X.npy", check=True).stdout
    assert "(drawn at random)" in text
    assert f"Monte Carlo: rank(J_X) = {a.lower} except with probability <= " in text
    fixed = json.loads(run_cli("rank", "--ff", "2,3,3,1", "--data", tmp_path / "X.npy", "--json",
                               "--prime", "1000000007", check=True).stdout)
    assert fixed["prime"] == 1000000007 and not fixed["prime_random"]
    assert fixed["monte_carlo_rank"] is None and fixed["monte_carlo_error"] is None
