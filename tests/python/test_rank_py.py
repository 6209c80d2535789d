"""Rank, the theorem check and the executed proof from Python (issues 4 and 6): pathlift.rank()
against the CLI's `rank --json` and against numpy's SVD ranks, Theorem 1 on the MLPs and the
fx-traced skip models of test_torch.py (PyTorch 1.13 as the independent source of the
networks), certificates that catch a corrupted B or proof step, and the exception types.

Run with PATHLIFT_BUILD_DIR=<build> /usr/bin/python3 -m pytest tests/python/test_rank_py.py
"""
import json
import time

import numpy as np
import pytest

scipy_sparse = pytest.importorskip("scipy.sparse")

# The keys of `rank --json` before the exact rank of dPhi was added stay first, in order; the
# later keys follow them.
CLI_RANK_KEYS = ["d", "h", "h_sym", "expected", "rank_B", "rank_B_lower", "rank_B_upper",
                 "rank_B_certified", "rank_J", "rank_J_tolerance", "rank_J_gap", "status",
                 "explanation", "rank_B_method", "prime", "rank_J_exact", "rank_J_exact_lower",
                 "rank_J_exact_upper", "rank_J_certified", "rank_J_exact_method", "zero_weights",
                 "rank_J_numerical_status", "rank_J_method", "rank_J_sigma_max",
                 "rank_J_sigma_expected", "rank_J_condition", "rank_J_non_finite", "rank_J_note"]


def engine_networks(pl):
    """The paper's examples, feed-forward with and without bias, random DAGs with parallel
    edges and designated outputs that feed other nodes."""
    nets = [pl.fig1(), pl.sketch_h0(), pl.sketch_h1(), pl.feed_forward(3, [4, 3], 2),
            pl.feed_forward(2, [3, 3], 2, bias=False)]
    nets += [pl.random_dag(m, 0.45, seed, parallel_edge_probability=0.3,
                           designated_output_probability=0.3)
             for m, seed in [(6, 21), (8, 22), (9, 23), (10, 24), (11, 25)]]
    return nets


def hidden_count(net, reference):
    """h from the edges alone (docs/conventions.md#roles): nodes with an incoming edge that are
    not outputs."""
    is_input, is_output = reference.roles(net)
    return sum(1 for v in range(net.num_nodes) if not is_input[v] and not is_output[v])


# --- the theorem on the PyTorch models ------------------------------------------------------


def torch_models():
    pytest.importorskip("torch")
    from test_torch import MLP_SHAPES, SKIP_MODELS, make, mlp

    models = [(f"mlp{r}-{w}-{q}-{'bias' if b else 'nobias'}", sum(w),
               (lambda r=r, w=w, q=q, b=b: mlp(r, w, q, b))) for r, w, q, b in MLP_SHAPES]
    models += [(cls.__name__, None, cls) for cls in SKIP_MODELS]
    return [(name, hidden, make(factory, seed=i)) for i, (name, hidden, factory) in
            enumerate(models)]


def test_theorem_on_torch_models(pl, reference):
    """MLPs: rank(B) = d - h certified and rank(dPhi) = d - h (h = the sum of the hidden
    widths), at a random theta and at the model's own weights. Skip models have fixed edges
    (the skips), so the bound is d - h_sym; the certified ranks equal numpy's ranks of the
    dense matrices either way."""
    rng = np.random.default_rng(0)
    for name, widths_sum, model in torch_models():
        net = pl.from_torch(model).unrolled()
        h = hidden_count(net, reference)
        assert net.h == h, name
        if widths_sum is not None:
            assert h == widths_sum, name
            assert net.one_parameter_per_edge, name
        B = pl.skeleton(net, dense=True)
        for theta in (rng.standard_normal(net.d), pl.theta_from_torch(model)):
            r = pl.rank(net, theta)
            assert list(r) == CLI_RANK_KEYS
            h_sym = r["h_sym"]
            if net.one_parameter_per_edge:
                assert h_sym == h, name
            else:
                assert h_sym == pl.rescaling_symmetry_dimension(net).h_sym, name
            assert r["rank_B_certified"] and r["rank_B"] == np.linalg.matrix_rank(B), (name, r)
            assert r["rank_J"] == np.linalg.matrix_rank(pl.jacobian(net, theta, dense=True))
            assert r["rank_B"] <= net.d - h_sym
            assert r["status"] in ("verified", "below_symmetry_bound"), (name, r)
            assert (r["status"] == "verified") == (r["rank_B"] == net.d - h_sym), (name, r)
            assert (r["d"], r["h"], r["expected"]) == (net.d, h, net.d - h_sym)


def test_prove_rank_on_torch_models(pl):
    """The proof of Theorem 1 runs on the MLPs (one parameter per edge); a skip model's fixed
    edges are outside the theorem, and prove_rank says so."""
    for name, widths_sum, model in torch_models():
        net = pl.from_torch(model).unrolled()
        if not net.one_parameter_per_edge:
            with pytest.raises(ValueError, match="one parameter per edge"):
                pl.prove_rank(net)
            continue
        cert = pl.prove_rank(net)
        assert cert.proved and cert.failure is None, (name, cert.failure)
        assert cert.rank == net.d - net.h
        assert len(cert.steps) == net.h + 1
        assert pl.check_proof(cert).ok


# --- pathlift.rank() ------------------------------------------------------------------------


def without_header(cli_json):
    """A CLI JSON object without the header every command's JSON starts with (docs/cli.md)."""
    header = ("format", "version", "pathlift_version", "network", "theta")
    return {k: v for k, v in cli_json.items() if k not in header}


def test_rank_mirrors_the_cli(pl, run_cli, tmp_path):
    """rank(net) is `pathlift rank --json` key for key (same default theta: the stored
    weights, else normal_weights(d, 0)), and so is enumerate=False `--no-enumerate`."""
    for spec in ["fig1", "ff:4,6,5,2", "ff-nobias:3,5,5,2", "random-dag:10,0.4,3"]:
        net = pl.builtin_network(spec)
        cli = without_header(json.loads(run_cli("rank", "--example", spec, "--json",
                                                check=True).stdout))
        assert list(cli) == CLI_RANK_KEYS
        py = pl.rank(net)
        assert py.keys() == cli.keys()
        for k in CLI_RANK_KEYS:
            assert py[k] == pytest.approx(cli[k], rel=1e-9), (spec, k)
        assert py == pl.rank(net, pl.normal_weights(net.d, 0))
        dp = pl.rank(net, enumerate=False)
        cli_dp = without_header(json.loads(run_cli("rank", "--example", spec, "--json",
                                                   "--no-enumerate", check=True).stdout))
        assert dp == cli_dp
    # a network file with weights: both use them
    net = pl.feed_forward(3, [4], 2)
    net = net.with_weights(np.linspace(-1, 1, net.d))
    pl.write_network(net, tmp_path / "net.json")
    cli = json.loads(run_cli("rank", "--network", tmp_path / "net.json", "--json",
                             check=True).stdout)
    py = pl.rank(net)
    assert py["rank_J"] == cli["rank_J"] and py["rank_J_gap"] == pytest.approx(cli["rank_J_gap"])


def test_rank_routes(pl):
    net = pl.feed_forward(3, [5, 4], 2)
    theta = pl.normal_weights(net.d, 5)
    enumerated = pl.rank(net, theta, enumerate=True)
    dp = pl.rank(net, theta, enumerate=False)
    assert enumerated["rank_B"] == dp["rank_B"] == net.d - net.h
    assert dp["rank_J"] is None and dp["rank_J_tolerance"] is None and dp["rank_J_gap"] is None
    # no path enumerated, but no theta_k is 0: rank(dPhi) = rank(B) by the diagonal identity
    assert dp["status"] == "verified" and dp["rank_B_method"] == "path_basis"
    assert dp["rank_J_certified"] and dp["rank_J_exact"] == net.d - net.h
    assert dp["rank_J_exact_method"] == "identity" and "not enumerated" in dp["rank_J_note"]
    # with a zero weight and no enumeration, rank(dPhi) is certified by the zero pattern, and
    # equals the elimination of the enumerated dPhi
    zero = theta.copy()
    zero[0] = 0.0
    dz = pl.rank(net, zero, enumerate=False)
    ez = pl.rank(net, zero, enumerate=True)
    assert dz["rank_J_certified"] and dz["rank_J_exact_method"] == "zero_pattern"
    assert ez["rank_J_exact_method"] == "elimination"
    assert dz["rank_J_exact"] == ez["rank_J_exact"] and dz["status"] == ez["status"]
    # automatic: the DP route when B and dPhi do not fit in max_memory (but B^T B does)
    deep = pl.feed_forward(2, [4] * 6, 1)
    gram_bytes = pl.dense_bytes(deep.d, deep.d)
    jacobian_bytes = pl.estimate_bytes(deep, "jacobian")
    assert 2 * gram_bytes < jacobian_bytes
    limit = (gram_bytes + jacobian_bytes) // 2
    deep_theta = pl.normal_weights(deep.d, 5)
    tight = pl.rank(deep, deep_theta, max_memory=limit)
    path_free = pl.rank(deep, deep_theta, enumerate=False)
    assert "memory limit" in tight.pop("rank_J_note") and "asked for" in path_free.pop("rank_J_note")
    assert tight == path_free
    assert pl.rank(deep, deep_theta)["rank_J"] == deep.d - deep.h
    with pytest.raises(MemoryError):
        pl.rank(net, theta, enumerate=True, max_memory=1000)
    # the other elimination and SVD methods agree
    for method in ("skeleton", "gram"):
        for jm in ("svd", "eig"):
            r = pl.rank(net, theta, method=method, jacobian_method=jm)
            assert (r["rank_B"], r["rank_J"], r["status"]) == (net.d - net.h, net.d - net.h,
                                                             "verified")


def test_rank_without_enumeration_at_scale(pl):
    """ff:4,8x12,2: P = 706,828,903,570 paths; rank picks the path-free route by itself."""
    net = pl.builtin_network("ff:4,8,8,8,8,8,8,8,8,8,8,8,8,2")
    assert pl.count_paths_total(net) == 706_828_903_570
    t0 = time.perf_counter()
    r = pl.rank(net)
    elapsed = time.perf_counter() - t0
    assert r["rank_B_certified"] and r["rank_B"] == 850 - 96 == r["expected"]
    assert r["rank_J"] is None and r["status"] == "verified" and r["rank_J_certified"]
    assert r["rank_B_method"] == "path_basis"
    assert elapsed < 30, elapsed  # about 0.1 s here; generous for slow CI machines


def test_theta_in_the_null_set(pl):
    """Zero weights into a hidden node: rank(dPhi) < d - h, reported as theta_in_null_set (not
    a failure of the theorem)."""
    net = pl.feed_forward(3, [4], 2)
    theta = pl.normal_weights(net.d, 1)
    theta[0:3] = 0.0  # W1[0, :]: hidden node h1_0 gets no input ...
    theta[12] = 0.0   # ... and no bias
    r = pl.rank(net, theta)
    assert r["rank_B"] == net.d - net.h and r["rank_J"] < net.d - net.h
    assert r["status"] == "theta_in_null_set"
    rep = pl.check_rank_theorem(net, theta)
    assert rep.status == "theta_in_null_set" and not rep.failed
    assert rep.zero_weights.tolist() == [0, 1, 2, 12]
    assert rep.to_dict() == r


# --- certificates as data ---------------------------------------------------------------------


def test_certify_rank_and_its_parts(pl, reference):
    for net in engine_networks(pl):
        expected = net.d - net.h
        ps = pl.enumerate_paths(net)
        B = pl.skeleton(net)
        for cert in (pl.certify_rank(net), pl.certify_rank(net, ps), pl.certify_rank(net, B),
                     pl.certify_rank(net, B.toarray()), pl.certify_rank(net, method="gram"),
                     pl.certify_rank_from_gram(net, pl.skeleton_gram(net)),
                     pl.certify_rank_from_gram(net, pl.skeleton_gram_mod(net, 1_000_003),
                                               1_000_003)):
            assert cert.certified and cert.rank == expected == cert.lower == cert.upper
            assert (cert.d, cert.h, cert.expected) == (net.d, net.h, expected)
            assert cert.kernel_failures.size == 0 and cert.kernel_failure_row is None
        assert pl.certify_rank(net, method="gram").method == "gram"
        # B z_v = 0 for every hidden node, and the anchors index an independent block
        Bd = B.toarray()
        Z = np.stack([pl.rescaling_vector(net, int(v)) for v in net.hidden], axis=1) \
            if net.h else np.zeros((net.d, 0))
        assert not (Bd @ Z).any()
        anchors = pl.rank_anchor_edges(net)
        assert anchors.size == net.h
        if net.h:
            assert np.linalg.matrix_rank(Z[anchors]) == net.h
        order = pl.rank_column_order(net)
        assert sorted(order.tolist()) == list(range(net.d))
        assert sorted(order[net.d - net.h:].tolist()) == sorted(anchors.tolist())
        # modular ranks of B (sparse, with and without the pivot order) and B^T B (dense)
        assert pl.modular_rank(B) == expected
        assert pl.modular_rank(B, column_order=order) == expected
        assert pl.modular_rank(pl.skeleton_gram(net)) == expected
        assert pl.modular_rank(B, prime=7, stop_at=1) == min(1, expected)
        assert pl.modular_rank(B.toarray()) == expected  # dense float 0/1: integers


def test_a_corrupted_skeleton_is_caught(pl):
    """An extra 1 in B (edge a -> d put on the path g -> h) breaks B z_d = 0 for the hidden
    node d: the certificate names the node and the row, and the bounds no longer meet at
    d - h."""
    net = pl.fig1()
    B = pl.skeleton(net).toarray()
    p = 4  # the bias path g -> h
    k = 0  # edge a -> d, into hidden node d
    assert B[p, k] == 0
    B[p, k] = 1
    cert = pl.certify_rank(net, scipy_sparse.csr_matrix(B))
    assert net.node_name(int(cert.kernel_failures[0])) == "d"
    assert cert.kernel_failure_row == p
    assert cert.upper > net.d - net.h
    with pytest.raises(ValueError, match="0/1"):
        pl.certify_rank(net, 2 * B)
    with pytest.raises(ValueError, match="columns"):
        pl.certify_rank(net, B[:, :-1])


def test_numerical_rank(pl):
    net = pl.feed_forward(3, [4, 3], 2)
    J = pl.jacobian(net, pl.normal_weights(net.d, 2))
    Jd = J.toarray()
    sv = np.linalg.svd(Jd, compute_uv=False)
    for method in ("svd", "eig", "auto"):
        nr = pl.numerical_rank(J, method=method)
        assert nr.rank == np.linalg.matrix_rank(Jd) == net.d - net.h
        assert nr.status == "conclusive" and nr.gap > 1e3
        assert nr.singular_values.shape == (min(Jd.shape),)
        k = nr.rank
        np.testing.assert_allclose(nr.singular_values[:k], sv[:k], rtol=1e-6)
    assert pl.numerical_rank(Jd).rank == net.d - net.h  # dense input
    assert pl.numerical_rank(J, method="svd").method == "svd"
    assert pl.numerical_rank(J, method="eig").method == "gram_eigenvalues"
    # a tolerance inside the cluster of small singular values: inconclusive, not a throw
    tiny = pl.numerical_rank(scipy_sparse.csr_matrix(np.diag([1.0, 1.0 + 1e-9, 1e-3])),
                             tolerance=1.0)
    assert tiny.status == "inconclusive"
    with pytest.raises(ValueError, match="jacobian_method|method"):
        pl.numerical_rank(J, method="qr")
    with pytest.raises(ValueError, match="non-finite"):
        pl.numerical_rank(scipy_sparse.csr_matrix(np.array([[np.nan, 1.0]])))


def test_check_identities(pl):
    for net in engine_networks(pl)[:6]:
        theta = pl.normal_weights(net.d, 3)
        results = pl.check_identities(net, theta, fd_samples=200)
        assert [r.name for r in results] == ["lemma1", "proposition2", "corollary1",
                                             "finite_differences"]
        assert all(r.passed and r.applicable for r in results), results
        assert pl.all_passed(results)
    theta = np.arange(1.0, 8.0)
    theta[2] = 0.0
    results = pl.check_identities(pl.fig1(), theta)
    prop2 = next(r for r in results if r.name == "proposition2")
    assert not prop2.applicable and prop2.passed and prop2.note
    assert pl.all_passed(results)


def test_prove_rank_steps_as_data(pl):
    net = pl.sketch_h1()
    cert = pl.prove_rank(net, keep_matrices=True)
    assert cert.proved and cert.rank == 5 and (cert.d, cert.h) == (6, 1)
    step, base = cert.steps
    assert step.kind == "induction" and base.kind == "base"
    n = step.network
    assert n.node_name(step.u) == "u" and n.node_name(step.k) == "k"
    assert n.edge_label(step.e) == "u -> k"
    assert [n.edge_label(e) for e in step.e_minus_u] == ["b -> u"]
    assert [n.edge_label(e) for e in step.e_plus_u] == ["u -> f"]
    assert step.rank == 5 == len(step.e_end) + step.reduced_rank
    assert step.row_operations.shape == (len(step.row_operations), 2)
    assert base.u is None and base.e is None and base.rank == base.d
    assert [m.name for m in step.matrices] == ["B", "B'", "B''", "B~", "B~'", "B~''"]
    # B is the step's skeleton; dense() is the matrix in the printed order
    Bm = step.matrix("B")
    np.testing.assert_array_equal(Bm.matrix.toarray(), pl.skeleton(n, dense=True))
    for m in step.matrices:
        np.testing.assert_array_equal(
            m.dense(), m.matrix.toarray()[np.ix_(m.row_order, m.col_order)])
    # B~: column e vanishes (e - sum E-u + sum E+u)
    assert not step.matrix("B~").matrix.toarray()[:, step.e].any()
    assert set(pl.proof_claims()) >= {"choice", "lemma2", "rank_equality"}
    with pytest.raises(KeyError):
        step.matrix("C")
    # without keep_matrices the steps are there, the matrices are not
    light = pl.prove_rank(net)
    assert light.proved and light.steps[0].matrices == []


def test_a_corrupted_proof_step_is_caught(pl):
    """Flip one entry of a step's matrix through the API: check_proof names the step, the
    claim that broke and the path or column."""
    cert = pl.prove_rank(pl.sketch_h1(), keep_matrices=True)
    assert pl.check_proof(cert).ok
    m = cert.steps[0].matrix("B~'")
    r, c = 0, int(m.col_order[-1])
    m.set(r, c, 1 - m.at(r, c))
    check = pl.check_proof(cert)
    assert not check.ok and not check
    f = check.failure
    assert f.step == 0 and f.claim in pl.proof_claims()
    assert f.path is not None or f.edge is not None
    assert f.message and f.statement == pl.proof_claims()[f.claim]
    with pytest.raises(IndexError):
        m.set(99, 0, 1)


# --- errors ---------------------------------------------------------------------------------


def test_rank_bad_inputs(pl):
    net = pl.fig1()
    with pytest.raises(ValueError, match="theta has 6 entries but the network has 7"):
        pl.rank(net, np.ones(6))
    with pytest.raises(ValueError, match=r"theta\[1\] \(edge a -> f\) is not finite"):
        pl.rank(net, [1, np.nan, 1, 1, 1, 1, 1])
    with pytest.raises(ValueError, match=r"theta\[1\] \(edge a -> f\) is not finite"):
        pl.check_rank_theorem(net, [1, np.inf, 1, 1, 1, 1, 1])
    with pytest.raises(ValueError, match="not a prime|prime"):
        pl.certify_rank(net, prime=15)
    with pytest.raises(ValueError, match="prime"):
        pl.modular_rank(pl.skeleton(net), prime=1 << 63)
    with pytest.raises(ValueError, match="method"):
        pl.rank(net, method="qr")
    with pytest.raises(ValueError, match="hidden"):
        pl.rescaling_vector(net, 0)  # node a is an input
    with pytest.raises(ValueError):
        pl.certify_rank_from_gram(net, np.zeros((3, 3), dtype=np.int64))
    with pytest.raises(ValueError, match="integer"):
        pl.certify_rank_from_gram(net, np.full((7, 7), 0.5))
    with pytest.raises(MemoryError):
        pl.certify_rank(pl.feed_forward(10, [20, 20], 5), max_memory=1000)
    assert pl.is_prime(pl.default_prime) and not pl.is_prime(2 ** 61 + 1)
