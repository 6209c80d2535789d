"""The Python bindings of the engine (issue 6): networks, counts, paths, Phi, B and dPhi against
independent pure-Python references (tests/python/conftest.py: `reference`), numpy/scipy interop
without copies, the exception mapping, threads, the GIL, the stub file and the install.

Run with PATHLIFT_BUILD_DIR=<build> /usr/bin/python3 -m pytest tests/python/test_bindings.py
"""
import ast
import math
import os
import pathlib
import pickle
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

scipy_sparse = pytest.importorskip("scipy.sparse")

ROOT = pathlib.Path(__file__).resolve().parents[2]


def small_networks(pl):
    """Networks covering the model: the paper's examples, feed-forward with and without bias,
    random DAGs with parallel edges, designated outputs and shuffled order."""
    nets = [pl.fig1(), pl.sketch_h0(), pl.sketch_h1(), pl.feed_forward(3, [4, 2], 2),
            pl.feed_forward(2, [3], 3, bias=False), pl.feed_forward(4, [], 1)]
    nets += [pl.random_dag(m, 0.45, seed, parallel_edge_probability=0.3,
                           designated_output_probability=0.3)
             for m, seed in [(6, 1), (8, 2), (9, 3), (10, 4), (7, 5), (11, 6)]]
    return nets


def dense_phi_reference(paths, theta, d):
    """Phi, B and dPhi from the reference paths: plain products (dPhi excludes edge k itself)."""
    P = len(paths)
    phi = np.array([np.prod([theta[k] for k in edges]) for edges, _, _ in paths])
    B = np.zeros((P, d))
    J = np.zeros((P, d))
    for p, (edges, _, _) in enumerate(paths):
        for i, k in enumerate(edges):
            B[p, k] = 1.0
            J[p, k] = np.prod([theta[e] for j, e in enumerate(edges) if j != i])
    return phi, B, J


def capsule_owned(a):
    """True when the array's memory is owned by a C++ buffer (its base chain ends in a
    PyCapsule), i.e. it was handed over without a copy."""
    assert not a.flags.owndata
    base = a
    while isinstance(base, np.ndarray):
        base = base.base
    return type(base).__name__ == "PyCapsule"


# --- networks --------------------------------------------------------------------------------


def test_network_from_edges_with_names_and_properties(pl):
    net = pl.Network([("a", "d"), ("a", "f"), ("c", "d"), ("c", "f"), ("d", "h"), ("f", "h"),
                      ("g", "h")], nodes=["a", "c", "g", "d", "f", "h"], bias=["g"],
                     outputs=["h"])
    assert net.nodes == ["a", "c", "g", "d", "f", "h"]
    assert (net.num_nodes, net.d, net.h) == (6, 7, 2)
    assert net.edges.tolist() == [[0, 3], [0, 4], [1, 3], [1, 4], [3, 5], [4, 5], [2, 5]]
    assert net.inputs.tolist() == [0, 1, 2]
    assert net.data_inputs.tolist() == [0, 1]
    assert net.bias.tolist() == [2]
    assert net.outputs.tolist() == [5]
    assert net.hidden.tolist() == [3, 4]
    assert net.roles == ["input", "input", "input", "hidden", "hidden", "output"]
    assert net.activations == ["identity"] * 3 + ["relu"] * 2 + ["identity"]
    assert sorted(net.topological_order.tolist()[:3]) == [0, 1, 2]
    assert net.node_index("f") == 4 and net.node_name(4) == "f"
    assert net.edge_label(6) == "g -> h"
    assert net.in_edges(5).tolist() == [4, 5, 6] and net.out_edges(0).tolist() == [0, 1]
    assert net.weights is None and not net.has_weights
    # the same network as the built-in Figure 1
    assert net.to_json() == pl.fig1().to_json()


def test_network_from_indices_count_array_and_inference(pl):
    edges = [(0, 2), (1, 2), (2, 3)]
    a = pl.Network(edges)  # 4 nodes named "0".."3"
    b = pl.Network(np.array(edges, dtype=np.int64), nodes=4)
    c = pl.Network(edges, nodes=["p", "q", "r", "s"], activations={"r": "leaky_relu:0.5"},
                   outputs=[2], weights=[1.0, 2.0, 3.0])
    assert a.nodes == ["0", "1", "2", "3"] and a.to_json() == b.to_json()
    assert c.activation(2) == "leaky_relu:0.5" and c.is_designated_output(2)
    assert c.roles == ["input", "input", "output", "output"]
    assert c.weights.tolist() == [1.0, 2.0, 3.0]
    assert pl.Network([("u", "v")]).nodes == ["u", "v"]


def test_network_spec_json_pickle_and_file_round_trip(pl, tmp_path):
    for net in small_networks(pl):
        theta = np.linspace(-1.0, 2.0, net.d)
        w = net.with_weights(theta)
        for other in (pl.Network(**w.spec()), pl.parse_network(w.to_json()),
                      pl.parse_network(pl.network_to_json(w, 2)), pickle.loads(pickle.dumps(w))):
            assert other.to_json() == w.to_json()
        path = tmp_path / "net.json"
        pl.write_network(w, path)
        assert pl.read_network(path).to_json() == w.to_json()
        assert pl.read_network(str(path)).weights.tolist() == theta.tolist()
        assert w.with_weights(None).weights is None


def test_builtins(pl):
    names = pl.builtin_network_names()
    assert "fig1" in names
    assert pl.builtin_network("ff:3,4,2").to_json() == pl.feed_forward(3, [4], 2).to_json()
    assert pl.builtin_network("ff-nobias:3,4,2").to_json() == \
        pl.feed_forward(3, [4], 2, bias=False).to_json()
    assert pl.parse_layer_sizes("3,4,5,2") == [3, 4, 5, 2]
    a = pl.random_dag(12, 0.3, 7)
    assert a.to_json() == pl.random_dag(12, 0.3, 7).to_json()
    w = pl.normal_weights(1000, 3)
    assert w.dtype == np.float64 and w.shape == (1000,)
    assert np.array_equal(w, pl.normal_weights(1000, 3))
    assert abs(w.mean()) < 0.15 and 0.85 < w.std() < 1.15


def test_network_views_are_read_only_and_keep_the_network_alive(pl):
    net = pl.fig1()
    inputs = net.inputs
    assert inputs.base is net and not inputs.flags.writeable
    with pytest.raises(ValueError):
        inputs[0] = 3
    sources = pl.feed_forward(2, [3], 1).sources  # the network is only referenced by the view
    assert sources.tolist() == [0, 1, 0, 1, 0, 1, 2, 2, 2, 3, 4, 5, 6]


# --- counts ----------------------------------------------------------------------------------


@pytest.mark.parametrize("r,widths,q,bias", [(3, [4, 5], 2, True), (2, [3, 3, 3], 4, True),
                                             (5, [2], 1, False), (3, [], 2, True)])
def test_feed_forward_counts_match_the_formula(pl, r, widths, q, bias):
    net = pl.feed_forward(r, widths, q, bias=bias)
    sizes = [r, *widths, q]
    prod = math.prod
    if bias:
        P = q * (r * prod(widths) + sum(prod(widths[l:]) for l in range(len(widths))) + 1)
    else:
        P = q * r * prod(widths)
    d = sum((sizes[l] + bias) * sizes[l + 1] for l in range(len(sizes) - 1))
    c = pl.count_paths(net)
    assert c.paths == P and isinstance(c.paths, int)
    assert pl.count_paths_total(net) == P
    assert (net.d, net.h) == (d, sum(widths))
    assert c.log10_paths == pytest.approx(math.log10(P))


def test_counts_match_the_reference_paths(pl, reference):
    for net in small_networks(pl):
        paths = reference.paths(net)
        c = pl.count_paths(net)
        assert c.paths == len(paths)
        assert c.nnz == sum(len(e) for e, _, _ in paths)
        assert c.max_path_length == max(len(e) for e, _, _ in paths)
        outputs = net.outputs.tolist()
        assert c.per_output == [sum(1 for _, _, t in paths if t == o) for o in outputs]
        assert c.per_input == [sum(1 for _, s, _ in paths if s == i) for i in net.inputs.tolist()]
        assert c.per_edge == [sum(1 for e, _, _ in paths if k in e) for k in range(net.d)]
        hist = [0] * (c.max_path_length + 1)
        for e, _, _ in paths:
            hist[len(e)] += 1
        assert c.length_histogram == hist


def test_counts_beyond_64_bits_are_count_objects(pl):
    r, widths, q = 100, [100] * 20, 10
    net = pl.feed_forward(r, widths, q)
    exact = q * (r * math.prod(widths) + sum(math.prod(widths[l:]) for l in range(20)) + 1)
    c = pl.count_paths(net).paths
    assert isinstance(c, pl.Count) and not c.exact
    assert c.log10 == pytest.approx(math.log10(exact), rel=1e-12)
    assert float(c) == pytest.approx(float(exact), rel=1e-9)
    with pytest.raises(OverflowError):
        int(c)
    with pytest.raises(pl.CountOverflow):
        c.value
    with pytest.raises(MemoryError, match="does not fit in 64 bits"):
        pl.enumerate_paths(net)


# --- paths, Phi, B, dPhi against the references -----------------------------------------------


def test_paths_match_the_reference_in_canonical_order(pl, reference):
    for net in small_networks(pl):
        ref = reference.paths(net)
        ps = pl.enumerate_paths(net)
        assert len(ps) == ps.num_paths == len(ref) and ps.num_edges == net.d
        assert ps.offsets.dtype == np.int64 and ps.edges.dtype == np.int32
        assert ps.start.dtype == np.int32 and ps.end.dtype == np.int32
        assert ps.offsets[0] == 0 and ps.offsets[-1] == ps.nnz
        got = [(tuple(ps.edges[ps.offsets[p]:ps.offsets[p + 1]].tolist()), int(ps.start[p]),
                int(ps.end[p])) for p in range(len(ps))]
        assert got == ref
        assert ps.path(-1).tolist() == list(ref[-1][0])


def test_fig1_golden_phi_and_skeleton(pl):
    # The paper's printed example: Phi = (t1 t5, t2 t6, t3 t5, t4 t6, t7) (1-based).
    t = np.array([2.0, 3.0, 5.0, 7.0, 11.0, 13.0, 17.0])
    phi = pl.path_lifting(pl.fig1(), t)
    assert phi.tolist() == [t[0] * t[4], t[1] * t[5], t[2] * t[4], t[3] * t[5], t[6]]
    B = pl.skeleton(pl.fig1(), dense=True)
    assert B.tolist() == [[1, 0, 0, 0, 1, 0, 0], [0, 1, 0, 0, 0, 1, 0], [0, 0, 1, 0, 1, 0, 0],
                          [0, 0, 0, 1, 0, 1, 0], [0, 0, 0, 0, 0, 0, 1]]


def test_phi_skeleton_jacobian_match_the_reference(pl, reference):
    rng = np.random.default_rng(0)
    for net in small_networks(pl):
        theta = rng.standard_normal(net.d)
        theta[rng.integers(net.d)] = 0.0  # exact at zero weights (no division)
        ref = reference.paths(net)
        phi_ref, B_ref, J_ref = dense_phi_reference(ref, theta, net.d)
        ps = pl.enumerate_paths(net)
        for phi in (pl.path_lifting(net, theta), pl.path_lifting(ps, theta)):
            np.testing.assert_allclose(phi, phi_ref, rtol=1e-13, atol=1e-15)
        for B in (pl.skeleton(net), pl.skeleton(ps)):
            assert isinstance(B, scipy_sparse.csr_matrix) and B.shape == (len(ref), net.d)
            assert np.array_equal(B.toarray(), B_ref)
            assert B.has_sorted_indices
        for J in (pl.jacobian(net, theta), pl.jacobian(ps, theta)):
            assert isinstance(J, scipy_sparse.csr_matrix) and J.dtype == np.float64
            np.testing.assert_allclose(J.toarray(), J_ref, rtol=1e-13, atol=1e-15)
            # same sparsity as B, sorted columns
            assert np.array_equal(J.indptr, B.indptr) and np.array_equal(J.indices, B.indices)
        np.testing.assert_allclose(pl.jacobian(net, theta, dense=True), J_ref, rtol=1e-13,
                                   atol=1e-15)


def test_paper_identities(pl):
    rng = np.random.default_rng(1)
    for net in small_networks(pl):
        theta = rng.standard_normal(net.d)
        phi = pl.path_lifting(net, theta)
        B = pl.skeleton(net)
        # B = dPhi(1_d)
        assert np.array_equal(pl.jacobian(net, np.ones(net.d)).toarray(), B.toarray())
        # Phi = S exp(B log|theta|)
        np.testing.assert_allclose(np.sign(phi) * np.exp(B @ np.log(np.abs(theta))), phi,
                                   rtol=1e-12)
        # dPhi = diag(Phi) B diag(1/theta) when no theta_k is 0
        ps = pl.enumerate_paths(net)
        J = pl.jacobian(net, theta).toarray()
        for formula in (pl.jacobian_paper_formula(ps, phi, theta),
                        pl.jacobian_paper_formula(net, theta)):
            np.testing.assert_allclose(formula.toarray(), J, rtol=1e-12, atol=1e-14)


def test_theorem_rank_b_is_d_minus_h(pl):
    rng = np.random.default_rng(2)
    nets = small_networks(pl) + [pl.random_dag(m, 0.4, s) for m, s in [(12, 11), (9, 12)]]
    for net in nets:
        B = pl.skeleton(net, dense=True)
        rank_b = np.linalg.matrix_rank(B)
        assert rank_b == net.d - net.h, net
        J = pl.jacobian(net, rng.standard_normal(net.d), dense=True)
        assert np.linalg.matrix_rank(J) == rank_b


def test_stored_weights_are_the_default_theta(pl):
    net = pl.fig1()
    theta = np.arange(1.0, 8.0)
    w = net.with_weights(theta)
    assert np.array_equal(pl.path_lifting(w), pl.path_lifting(net, theta))
    assert np.array_equal(pl.jacobian(w).toarray(), pl.jacobian(net, theta).toarray())
    with pytest.raises(ValueError, match="theta is required"):
        pl.path_lifting(net)


def test_group_by_output(pl):
    net = pl.feed_forward(3, [4], 2)
    ps = pl.enumerate_paths(net)
    g = pl.group_by_output(net, ps)
    assert sorted(g.order.tolist()) == list(range(len(ps)))
    ends = ps.end[g.order]
    assert (np.diff(ends) >= 0).all()  # grouped by output, outputs in node order
    assert g.counts.tolist() == [len(ps) // 2] * 2 and g.uniform and g.P1 == len(ps) // 2
    phi = pl.path_lifting(net, np.arange(1.0, net.d + 1))
    lay = g.layout(phi)
    assert lay.shape == (2, g.P1)
    assert np.array_equal(lay.reshape(-1), phi[g.order])
    for j, o in enumerate(net.outputs):
        assert (ps.end[g.order[j * g.P1:(j + 1) * g.P1]] == o).all()
    assert pl.group_by_output(net).order.tolist() == g.order.tolist()
    # sketch_h0: 2 paths end at c, 4 at d
    uneven = pl.group_by_output(pl.sketch_h0())
    assert uneven.counts.tolist() == [2, 4] and not uneven.uniform and uneven.P1 is None
    with pytest.raises(ValueError, match="different path counts"):
        uneven.layout(np.zeros(6))
    with pytest.raises(ValueError, match="another network"):
        pl.group_by_output(pl.fig1(), ps)


# --- dtype, threads, zero-copy, memory limit -----------------------------------------------


def test_float32(pl):
    net = pl.feed_forward(4, [5, 3], 2)
    theta = np.random.default_rng(3).standard_normal(net.d)
    phi32 = pl.path_lifting(net, theta, dtype=np.float32)
    J32 = pl.jacobian(net, theta, dtype=np.float32)
    J32d = pl.jacobian(net, theta, dtype="float32", dense=True)
    assert phi32.dtype == np.float32 and J32.dtype == np.float32 and J32d.dtype == np.float32
    np.testing.assert_allclose(phi32, pl.path_lifting(net, theta), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(J32.toarray(), pl.jacobian(net, theta).toarray(), rtol=1e-5,
                               atol=1e-6)
    assert np.array_equal(J32.toarray(), J32d)
    # float32 computes in float32: the same as the float64 engine run on the rounded theta,
    # rounded, up to float32 rounding of each product
    t32 = theta.astype(np.float32)
    np.testing.assert_allclose(J32.toarray(), pl.jacobian(net, t32.astype(np.float64)).toarray(),
                               rtol=5e-7 * 4, atol=1e-7)
    with pytest.raises(ValueError, match="float64 or float32"):
        pl.jacobian(net, theta, dtype=np.int32)


def test_threads_give_identical_results(pl):
    net = pl.feed_forward(6, [12, 10], 3)
    theta = np.random.default_rng(4).standard_normal(net.d)
    results = [(pl.path_lifting(net, theta, threads=t), pl.jacobian(net, theta, threads=t),
                pl.enumerate_paths(net, threads=t)) for t in (1, 2, 3, 0)]
    phi1, J1, ps1 = results[0]
    for phi, J, ps in results[1:]:
        assert np.array_equal(phi, phi1)
        assert np.array_equal(J.data, J1.data) and np.array_equal(J.indices, J1.indices)
        assert np.array_equal(J.indptr, J1.indptr)
        assert np.array_equal(ps.edges, ps1.edges) and np.array_equal(ps.offsets, ps1.offsets)
    with pytest.raises(ValueError, match="threads"):
        pl.jacobian(net, theta, threads=-1)


def test_zero_copy_results(pl):
    net = pl.feed_forward(3, [4, 5], 2)
    theta = np.random.default_rng(5).standard_normal(net.d)
    phi = pl.path_lifting(net, theta)
    assert capsule_owned(phi) and phi.flags.writeable
    J = pl.jacobian(net, theta)
    # values and column indices are the C++ buffers; indptr is the one int32 copy
    assert capsule_owned(J.data) and capsule_owned(J.indices)
    assert J.indices.dtype == np.int32 and J.indptr.dtype == np.int32 and J.indptr.flags.owndata
    # fresh buffers owned by nothing else: scipy may modify them in place
    assert J.indices.flags.writeable
    J.eliminate_zeros()
    ps = pl.enumerate_paths(net)
    assert capsule_owned(ps.edges) and capsule_owned(ps.offsets)
    assert not ps.edges.flags.writeable and not ps.offsets.flags.writeable
    assert ps.start.base is not None and not ps.start.flags.writeable
    # B and dPhi from a path set share its arrays (feed-forward: walk order is sorted)
    assert ps.walk_order_sorted
    B = pl.skeleton(ps)
    Jp = pl.jacobian(ps, theta)
    assert np.shares_memory(B.indices, ps.edges) and np.shares_memory(Jp.indices, ps.edges)
    assert not B.indices.flags.writeable  # shared: writing through one would change the others
    # the int32 indptr of a path set is converted once, shared read-only by its matrices
    assert Jp.indptr is B.indptr and not B.indptr.flags.writeable
    assert np.array_equal(B.indptr, ps.offsets) and B.indptr.dtype == np.int32
    Jp32 = pl.jacobian(ps, theta, dtype=np.float32)
    assert Jp32.indptr is B.indptr
    ps2 = pl.enumerate_paths(net)  # same paths, another path set: its own conversion
    assert pl.skeleton(ps2).indptr is not B.indptr
    assert np.array_equal(pl.skeleton(ps2).indptr, B.indptr)
    # a path set that is gone takes its conversion with it: a new one is made correctly
    del ps, ps2, B, Jp, Jp32
    for widths in ([4, 5], [3], [5, 2, 2]):
        n2 = pl.feed_forward(3, widths, 2)
        p2 = pl.enumerate_paths(n2)
        assert np.array_equal(pl.skeleton(p2).indptr, p2.offsets)
    J.eliminate_zeros()  # J was computed from the network: its indptr is its own, writable
    assert J.indptr.flags.writeable
    dense = pl.jacobian(net, theta, dense=True)
    assert capsule_owned(dense) and dense.flags.c_contiguous and dense.shape == J.shape
    # arrays stay valid after their producers are gone
    edges = pl.enumerate_paths(pl.feed_forward(2, [2], 1)).edges
    assert edges.tolist() == pl.enumerate_paths(pl.feed_forward(2, [2], 1)).edges.tolist()


def test_memory_limit(pl):
    net = pl.feed_forward(10, [20, 20], 5)
    theta = np.ones(net.d)
    need = pl.estimate_bytes(net, "jacobian")
    assert need > 1000
    with pytest.raises(MemoryError, match="over the memory limit"):
        pl.jacobian(net, theta, max_memory=need // 2)
    with pytest.raises(pl.TooLarge):
        pl.enumerate_paths(net, max_memory=1000)
    assert pl.jacobian(net, theta, max_memory=2 * need).nnz > 0
    dense = pl.dense_bytes(pl.count_paths_total(net), net.d)
    with pytest.raises(MemoryError, match="dense"):
        pl.jacobian(net, theta, dense=True, max_memory=dense // 2)
    with pytest.raises(MemoryError):
        pl.skeleton(net, dense=True, max_memory=dense // 2)
    assert pl.default_max_memory() > 0
    assert pl.effective_max_memory(0) == pl.default_max_memory()
    assert pl.format_bytes(1536) == "1.50 KiB"


# --- errors ----------------------------------------------------------------------------------


def test_bad_theta(pl):
    net = pl.fig1()
    ps = pl.enumerate_paths(net)
    for f in (pl.path_lifting, pl.jacobian):
        for target in (net, ps):
            with pytest.raises(ValueError, match="theta has 6 entries but the network has 7"):
                f(target, np.ones(6))
            with pytest.raises(ValueError, match=r"theta\[2\] (\(edge c -> d\) )?is not finite: nan"):
                f(target, [1, 1, np.nan, 1, 1, 1, 1])
            with pytest.raises(ValueError, match="not finite"):
                f(target, [1, 1, 1, 1, 1, np.inf, 1])
            with pytest.raises(ValueError, match="1-D"):
                f(target, np.ones((7, 1)))
            with pytest.raises(ValueError, match="theta must be numbers, got .* dtype <U1"):
                f(target, ["a"] * 7)
    with pytest.raises(ValueError, match="not finite"), np.errstate(over="ignore"):
        pl.path_lifting(net, [1e300] + [1.0] * 6, dtype=np.float32)  # inf in float32


@pytest.mark.parametrize("kwargs,exc,match", [
    (dict(edges=[("a", "b"), ("b", "a")]), ValueError, "cycle"),
    (dict(edges=[("a", "b")], nodes=["a", "b", "c"]), ValueError, "c"),  # isolated node
    (dict(edges=[("a", "zz")], nodes=["a", "b"]), ValueError, "unknown node 'zz'"),
    (dict(edges=[("a", 1)]), ValueError, "mix names and indices"),
    (dict(edges=[("a", "b", "c")]), ValueError, "pair"),
    (dict(edges=[("a", "b")], activations={"b": "tanh"}), ValueError, "tanh"),
    (dict(edges=[("a", "b")], weights=[1.0, 2.0]), ValueError, "weight"),
    (dict(edges=[("a", "b")], weights=[np.nan]), ValueError, "not finite"),
    (dict(edges=[(0, 5)], nodes=2), ValueError, "5"),
    (dict(edges=5), ValueError, "sequence"),
])
def test_bad_network_spec(pl, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        pl.Network(**kwargs)


def test_exception_types(pl):
    with pytest.raises(pl.NetworkError):
        pl.Network([("a", "b"), ("b", "a")])
    assert issubclass(pl.NetworkError, ValueError) and issubclass(pl.FormatError, ValueError)
    assert issubclass(pl.CountOverflow, OverflowError) and issubclass(pl.TooLarge, MemoryError)
    with pytest.raises(pl.FormatError, match="invalid JSON"):
        pl.parse_network("{not json")
    with pytest.raises(pl.FormatError):
        pl.read_network("/nonexistent/net.json")
    with pytest.raises(ValueError):
        pl.builtin_network("no-such-network")
    with pytest.raises(ValueError):
        pl.feed_forward(0, [3], 1)
    net = pl.fig1()
    with pytest.raises(IndexError, match="node 99 does not exist"):
        net.node_name(99)
    with pytest.raises(IndexError):
        net.edge_label(7)
    with pytest.raises(KeyError):
        net.node_index("zz")
    with pytest.raises(IndexError):
        pl.enumerate_paths(net).path(5)
    assert pl.NetworkError.__module__ == "pathlift" and pl.Network.__module__ == "pathlift"


# --- the GIL ---------------------------------------------------------------------------------


def test_gil_is_released_during_long_computations(pl):
    """While one thread is inside jacobian(), another runs Python code. A loop in the main
    thread timestamps its iterations; without the GIL released none could fall in the middle
    of the call (the worker would hold the GIL throughout)."""
    net = pl.feed_forward(32, [64, 64], 8)
    theta = np.full(net.d, 0.5)
    pl.jacobian(net, theta, threads=1)  # warm up (page faults, thread pool)
    window = {}

    def work():
        t0 = time.perf_counter()
        pl.jacobian(net, theta, threads=1)
        pl.jacobian(net, theta, threads=1)
        window["t"] = (t0, time.perf_counter())

    worker = threading.Thread(target=work)
    ticks = []
    worker.start()
    while worker.is_alive():
        ticks.append(time.perf_counter())
    worker.join()
    t0, t1 = window["t"]
    if t1 - t0 < 0.02:
        pytest.skip("the computation is too fast on this machine to observe")
    lo, hi = t0 + 0.25 * (t1 - t0), t1 - 0.25 * (t1 - t0)
    inside = sum(1 for t in ticks if lo < t < hi)
    assert inside > 10, (inside, t1 - t0)


# --- docstrings, the stub file, the package layout --------------------------------------------


def public_members(obj):
    return {n for n in dir(obj) if not n.startswith("_")}


def test_every_function_and_class_has_a_docstring(pl):
    ext = pl._pathlift
    for name in public_members(ext):
        obj = getattr(ext, name)
        if callable(obj):
            assert obj.__doc__ and obj.__doc__.strip(), name
        if isinstance(obj, type) and not issubclass(obj, BaseException):
            for member in public_members(obj):
                attr = obj.__dict__.get(member)
                if attr is None:
                    continue
                assert attr.__doc__ and attr.__doc__.strip(), f"{name}.{member}"


def test_stub_file_matches_the_module(pl):
    pkg_dir = pathlib.Path(pl.__file__).parent
    tree = ast.parse((pkg_dir / "_pathlift.pyi").read_text())
    ext = pl._pathlift
    top = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            top[node.name] = node
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            top[node.target.id] = node
    aliases = {"NodeRef", "DTypeLike", "Theta", "CountLike"}
    assert public_members(ext) == {n for n in top if not n.startswith("_")} - aliases
    for name, node in top.items():
        if isinstance(node, ast.ClassDef) and not issubclass(getattr(ext, name), BaseException):
            stub_members = {n.name for n in node.body if isinstance(n, ast.FunctionDef)
                            and not n.name.startswith("_")}
            assert stub_members == public_members(getattr(ext, name)), name
    # every parameter of every stubbed overload is in the function's pybind11 signature
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            doc = getattr(ext, node.name).__doc__
            for a in node.args.args + node.args.kwonlyargs:
                assert f"{a.arg}:" in doc, (node.name, a.arg)


# Engine functions pathlift wraps in Python (pathlift/_paths.py: the same arguments and
# results, plus "param_names" on a from_torch network).
WRAPPED = {"top_paths", "sample_paths"}


def test_package_reexports_the_engine(pl):
    for name in public_members(pl._pathlift) - WRAPPED:
        assert getattr(pl, name) is getattr(pl._pathlift, name)
    for name in WRAPPED:
        wrapper, engine = getattr(pl, name), getattr(pl._pathlift, name)
        assert wrapper is not engine and wrapper.__module__ == "pathlift._paths"
        assert engine.__doc__.partition("\n\n")[2].strip() in wrapper.__doc__
    assert set(pl.__all__) >= public_members(pl._pathlift) | {"from_torch", "theta_from_torch",
                                                              "to_torch"}
    assert pl.__version__.count(".") == 2


def test_cmake_install_into_a_temporary_root(build_dir, tmp_path):
    """`cmake --install` (component python, into DESTDIR) gives a package that /usr/bin/python3
    imports from there."""
    cache = build_dir / "CMakeCache.txt"
    if not cache.exists():
        pytest.skip("no CMake build directory")
    entries = dict(line.split("=", 1) for line in cache.read_text().splitlines()
                   if "=" in line and not line.startswith(("#", "//")))
    install_dir = next((v for k, v in entries.items()
                        if k.startswith("PATHLIFT_PYTHON_INSTALL_DIR:")), None)
    if not install_dir:
        pytest.skip("the build has no Python package")
    env = dict(os.environ, DESTDIR=str(tmp_path))
    subprocess.run(["cmake", "--install", str(build_dir), "--component", "python"], env=env,
                   check=True, capture_output=True, timeout=120)
    prefix = next((v for k, v in entries.items() if k.startswith("CMAKE_INSTALL_PREFIX:")), "")
    site = pathlib.Path(install_dir if os.path.isabs(install_dir)
                        else os.path.join(prefix, install_dir))
    root = tmp_path / site.relative_to(site.anchor)
    assert (root / "pathlift" / "__init__.py").exists()
    assert (root / "pathlift" / "_pathlift.pyi").exists()
    code = ("import pathlift, numpy; print(pathlift.__file__); "
            "print(pathlift.path_lifting(pathlift.fig1(), numpy.arange(1.0, 8.0)).tolist())")
    out = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, PYTHONPATH=str(root)),
                         cwd=tmp_path, check=True, capture_output=True, text=True, timeout=120)
    file_line, phi_line = out.stdout.splitlines()
    assert file_line.startswith(str(root))
    assert phi_line == "[5.0, 12.0, 15.0, 24.0, 7.0]"


def test_csr_results_are_valid_scipy_matrices(pathlift_module):
    """Sparse results are assembled without scipy's validating constructor when this scipy
    allows it: the matrices must still pass scipy's full check, have one index dtype, be
    canonical, and behave like constructed ones in arithmetic."""
    import numpy as np
    import scipy.sparse as sp

    pl = pathlift_module
    assert pl._pathlift._csr_fast_path()  # Debian 12's scipy 1.10: the fast path is taken
    net = pl.random_dag(12, 0.5, 3, shuffle=True)  # unsorted walk order: rows get sorted
    theta = pl.normal_weights(net.d, 1)
    for m in (pl.jacobian(net, theta), pl.skeleton(net), pl.jacobian(pl.enumerate_paths(net),
                                                                      theta)):
        assert type(m) is sp.csr_matrix
        m.check_format(full_check=True)
        assert m.indices.dtype == m.indptr.dtype == np.int32
        assert m.has_canonical_format and m.has_sorted_indices
        ref = sp.csr_matrix((m.data.copy(), m.indices.copy(), m.indptr.copy()), shape=m.shape)
        ref.has_canonical_format = True
        assert sorted(vars(m)) == sorted(vars(ref))
        v = np.arange(m.shape[1], dtype=float)
        assert np.array_equal(m @ v, ref @ v)
        assert np.array_equal((m.T @ m).toarray(), (ref.T @ ref).toarray())
        assert np.array_equal(m.toarray(), ref.toarray())


def test_release_cached_buffers(pathlift_module):
    """A large result, once freed, is kept for reuse; release_cached_buffers hands it back."""
    import numpy as np

    pl = pathlift_module
    pl.release_cached_buffers()
    net = pl.feed_forward(5, [32, 32, 32], 2)  # P = 395,330: Phi is 3.2 MB
    phi = pl.path_lifting(net, pl.normal_weights(net.d, 0))
    nbytes = phi.nbytes
    again = pl.path_lifting(net, pl.normal_weights(net.d, 0))
    assert np.array_equal(phi, again)  # two live results: two blocks
    del phi, again
    assert pl.release_cached_buffers() >= 2 * nbytes
    assert pl.release_cached_buffers() == 0


def test_submodules_load_on_first_use(pathlift_module):
    """`import pathlift` alone reaches pathlift.torch and pathlift.plot (PEP 562), in a fresh
    interpreter where no other test has imported them."""
    pytest.importorskip("torch")
    pytest.importorskip("matplotlib")
    code = ("import sys, pathlift; assert 'pathlift.torch' not in sys.modules; "
            "print(pathlift.torch.path_cond.__module__, pathlift.plot.__name__)")
    root = pathlib.Path(pathlift_module.__file__).parents[1]
    out = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, PYTHONPATH=str(root)),
                         check=True, capture_output=True, text=True, timeout=120)
    assert out.stdout.split() == ["pathlift._torch_rescale", "pathlift.plot"]
