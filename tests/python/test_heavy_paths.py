"""The paths themselves (docs/paths.md): top_paths (the k heaviest), sample_paths (drawn with
probability |Phi_p|^s / ||Phi||_s^s) and path_norm_shares (by parameter, node, channel, layer),
each against brute force: the paths of networks small enough to enumerate (pathlift's
enumerate_paths on the DAG, or the unrolled DAG of a layer graph), Phi_p recomputed here as the
product of the weights read back from theta and the fixed weights. Networks: random DAGs with
parallel edges and designated outputs that feed others, MLPs with and without biases, shared
parameters (a Network with params / fixed edges, a layer graph applying a layer twice), small
CNNs covering conv, batch_norm, max / avg pools, add, scale, concat, gather, conv_transpose
(groups), group_sort, k_max_pool and interpolate, and a from_torch CNN. The path dicts are
checked here on DAGs (edges); on a LayerNetwork the paths are its entries, searched on the layer
graph without unrolling: tests/python/test_layer_paths.py checks them against the unrolled DAG
(test_top_paths_layer_network_is_its_unrolled_dag here: the same values and parameters). Then
the CLI: `pathlift paths --top / --sample` and `pathlift norm --shares`.

Run with PATHLIFT_BUILD_DIR=<build> /usr/bin/python3 -m pytest tests/python/test_heavy_paths.py
"""
import json
import math

import numpy as np
import pytest

stats = pytest.importorskip("scipy.stats")

REL = 1e-12


# --- networks ----------------------------------------------------------------------------------


def random_dag(pl, m, seed):
    return pl.random_dag(m, 0.45, seed, parallel_edge_probability=0.3,
                         designated_output_probability=0.3)


def shared_version(pl, net, seed):
    """net rebuilt with shared parameters: edge k carries parameter k % (d // 2 + 1), except
    every fifth edge, fixed at a weight from {-1.5, 0.5, 2}."""
    src = [int(s) for s in net.sources]
    dst = [int(t) for t in net.targets]
    names = [net.node_name(v) for v in range(net.num_nodes)]
    q = net.num_edges // 2 + 1
    params = [-1 if k % 5 == 4 else k % q for k in range(net.num_edges)]
    fixed = [[-1.5, 0.5, 2.0][k % 3] if params[k] < 0 else 1.0 for k in range(net.num_edges)]
    outputs = [names[v] for v in range(net.num_nodes) if net.is_designated_output(v)]
    shared = pl.Network([(names[s], names[t]) for s, t in zip(src, dst)], nodes=names,
                        outputs=outputs, bias=[names[int(b)] for b in net.bias], params=params,
                        fixed_weights=fixed, num_params=q)
    assert len(set(p for p in params if p >= 0)) < sum(p >= 0 for p in params)  # shared
    return shared


def dag_networks(pl):
    """(name, Network): the DAGs of the brute-force checks."""
    nets = [("fig1", pl.fig1()), ("ff_bias", pl.feed_forward(3, [4, 3], 2)),
            ("ff_nobias", pl.feed_forward(2, [3, 3, 2], 2, bias=False)),
            ("ff_linear", pl.feed_forward(4, [], 3))]
    nets += [(f"random_dag_{m}_{seed}", random_dag(pl, m, seed))
             for m, seed in [(10, 8), (11, 4), (12, 5), (13, 1)]]
    nets += [("shared_dag", shared_version(pl, random_dag(pl, 11, 4), 0)),
             ("shared_diamond", pl.Network([("x", "h0"), ("x", "h1"), ("h0", "y"), ("h1", "y"),
                                            ("h0", "h1")], params=[0, 1, 2, 0, -1],
                                           fixed_weights=[1, 1, 1, 1, -0.75]))]
    return nets


NPARAM = {"linear", "conv", "conv_transpose", "batch_norm"}


def build_layers(pl, input_shape, specs, seed, bias=True):
    """A LayerNetwork of specs [(kind, name, inputs, fields)], parameter blocks laid out in
    order (weights then bias per layer; a batch norm always has both), theta standard normal."""
    layers = [pl.Layer("input", "x")]
    d = 0
    for kind, name, inputs, fields in specs:
        fields = dict(fields)
        if kind in NPARAM:
            probe = pl.LayerGraph(input_shape=input_shape, layers=layers,
                                  outputs=[len(layers) - 1], num_params=d)
            cin = pl.layer_shapes(probe)[inputs[0]][0]
            groups = fields.get("groups", 1)
            if kind == "linear":
                nw, nb = fields["out_features"] * cin, fields["out_features"]
            elif kind == "conv":
                nw = fields["out_channels"] * cin // groups * int(np.prod(fields["kernel"]))
                nb = fields["out_channels"]
            elif kind == "conv_transpose":
                nw = cin * fields["out_channels"] // groups * int(np.prod(fields["kernel"]))
                nb = fields["out_channels"]
            else:
                nw, nb = cin, cin
            fields["weight_offset"] = d
            d += nw
            if bias or kind == "batch_norm":
                fields["bias_offset"] = d
                d += nb
        layers.append(pl.Layer(kind, name, inputs, **fields))
    theta = np.random.default_rng(seed).standard_normal(d)
    return pl.LayerNetwork(pl.LayerGraph(input_shape=input_shape, layers=layers,
                                         outputs=[len(layers) - 1], num_params=d, weights=theta))


def mlp_specs(widths):
    specs = []
    for i, w in enumerate(widths):
        if i:
            specs.append(("activation", f"r{i}", [len(specs)], {"activation": "relu"}))
        specs.append(("linear", f"fc{i}", [len(specs)], {"out_features": w}))
    return specs


CNN_A = [("conv", "c1", [0], dict(out_channels=2, kernel=[2, 2], padding=[1, 1])),
         ("batch_norm", "bn", [1], {}),
         ("activation", "r1", [2], dict(activation="relu")),
         ("max_pool", "mp", [3], dict(kernel=[2, 2], stride=[2, 2])),
         ("conv", "c2", [4], dict(out_channels=2, kernel=[1, 1])),
         ("add", "skip", [4, 5], {}),
         ("avg_pool", "ap", [6], dict(kernel=[2, 2], stride=[1, 1])),
         ("scale", "neg", [7], dict(factor=-0.5)),
         ("flatten", "fl", [8], {}),
         ("linear", "fc", [9], dict(out_features=2))]

CNN_B = [("conv", "c1", [0], dict(out_channels=4, kernel=[2, 2])),
         ("activation", "r1", [1], dict(activation="relu")),
         ("group_sort", "sort", [2], dict(group_size=2)),
         ("k_max_pool", "kmax", [3], dict(kernel=[2, 2], stride=[1, 1], k=2)),
         ("conv_transpose", "ct", [4], dict(out_channels=4, groups=2, kernel=[2, 2])),
         ("gather", "ga", [5], dict(axis=0, indices=[0, 3])),
         ("concat", "cat", [6, 3], dict(axis=0)),
         ("interpolate", "up", [7], dict(output_size=[4, 4])),
         ("conv", "c2", [8], dict(out_channels=2, kernel=[3, 3], stride=[2, 2]))]

# A chain: every path from a data input crosses every layer once (no bias, no skip).
CNN_CHAIN = [("conv", "c1", [0], dict(out_channels=3, kernel=[2, 2])),
             ("activation", "r1", [1], dict(activation="relu")),
             ("conv_transpose", "ct", [2], dict(out_channels=2, kernel=[2, 2], stride=[2, 2])),
             ("max_pool", "mp", [3], dict(kernel=[2, 2], stride=[2, 2])),
             ("batch_norm", "bn", [4], {}),
             ("flatten", "fl", [5], {}),
             ("linear", "fc", [6], dict(out_features=2))]


def shared_layer_network(pl):
    """x (3) -> fc (3 x 3) -> relu -> the same fc again -> relu -> out (2 x 3): fc's
    parameters on two layers, so paths carry them twice."""
    layers = [pl.Layer("input", "x"),
              pl.Layer("linear", "fc", [0], out_features=3, weight_offset=0, bias_offset=9),
              pl.Layer("activation", "r1", [1], activation="relu"),
              pl.Layer("linear", "fc_again", [2], out_features=3, weight_offset=0,
                       bias_offset=9),
              pl.Layer("activation", "r2", [3], activation="relu"),
              pl.Layer("linear", "out", [4], out_features=2, weight_offset=12, bias_offset=18)]
    theta = np.random.default_rng(11).standard_normal(20)
    return pl.LayerNetwork(pl.LayerGraph(input_shape=[3], layers=layers, outputs=[5],
                                         num_params=20, weights=theta))


def layer_networks(pl):
    """(name, LayerNetwork)."""
    return [("mlp_bias", build_layers(pl, [3], mlp_specs([4, 3, 2]), 1)),
            ("mlp_nobias", build_layers(pl, [3], mlp_specs([4, 3, 2]), 2, bias=False)),
            ("cnn_a", build_layers(pl, [1, 4, 4], CNN_A, 3)),
            ("cnn_b", build_layers(pl, [2, 4, 4], CNN_B, 4)),
            ("cnn_chain", build_layers(pl, [1, 3, 3], CNN_CHAIN, 5, bias=False)),
            ("shared_layer", shared_layer_network(pl))]


def all_networks(pl):
    return dag_networks(pl) + layer_networks(pl)


def net_ids():
    return ["fig1", "ff_bias", "ff_nobias", "ff_linear", "random_dag_10_8", "random_dag_11_4",
            "random_dag_12_5", "random_dag_13_1", "shared_dag", "shared_diamond", "mlp_bias",
            "mlp_nobias", "cnn_a", "cnn_b", "cnn_chain", "shared_layer"]


def dag_ids():
    """The DAGs: their path dicts name edges (a LayerNetwork's: test_layer_paths.py)."""
    return net_ids()[:10]


@pytest.fixture(scope="module")
def networks(pl):
    nets = dict(all_networks(pl))
    assert list(nets) == net_ids()
    return nets


def test_the_networks_cover_the_cases(pl, networks):
    """Parallel edges, designated outputs that feed others, biases, shared parameters, fixed
    edges, and the layer kinds of the brief."""
    def features(net):
        src, dst = list(net.sources), list(net.targets)
        params = [int(k) for k in net.params]
        return {"parallel": len(set(zip(src, dst))) < len(src),
                "inner_output": any(net.is_designated_output(v) and v in src
                                    for v in range(net.num_nodes)),
                "bias": len(net.bias) > 0,
                "shared": len(set(k for k in params if k >= 0)) < sum(k >= 0 for k in params),
                "fixed": any(k < 0 for k in params)}

    dags = [features(networks[n]) for n in net_ids()[:10]]
    for key in ("parallel", "inner_output", "bias", "shared", "fixed"):
        assert any(f[key] for f in dags), key
    assert features(networks["random_dag_11_4"])["parallel"]
    assert features(networks["random_dag_11_4"])["inner_output"]
    assert features(pl.unroll(networks["shared_layer"].layer_graph))["shared"]
    kinds = {layer.kind for n in ("cnn_a", "cnn_b", "cnn_chain")
             for layer in networks[n].layer_graph.layers}
    assert {"conv", "max_pool", "avg_pool", "batch_norm", "add", "concat", "gather",
            "conv_transpose", "group_sort", "k_max_pool", "interpolate", "scale",
            "linear"} <= kinds


def theta_of(net, seed, zeros=False):
    rng = np.random.default_rng(seed)
    theta = rng.standard_normal(net.d)
    if zeros:
        theta[rng.choice(net.d, size=max(1, net.d // 5), replace=False)] = 0.0
    return theta


# --- brute force -------------------------------------------------------------------------------


class Brute:
    """The enumerated paths of net's DAG (a LayerNetwork: pl.unroll of its graph) and Phi
    recomputed here from theta and the fixed weights."""

    def __init__(self, pl, net, theta):
        self.dag = pl.unroll(net.layer_graph) if isinstance(net, pl.LayerNetwork) else net
        dag = self.dag
        ps = pl.enumerate_paths(dag)
        self.P = ps.num_paths
        self.edges = np.asarray(ps.edges, dtype=np.int64)
        self.offsets = np.asarray(ps.offsets, dtype=np.int64)
        self.lengths = np.diff(self.offsets)
        assert (self.lengths > 0).all()
        self.owner = np.repeat(np.arange(self.P), self.lengths)  # the path of each entry
        self.params = np.asarray(dag.params, dtype=np.int64)
        self.fixed = np.asarray(dag.fixed_weights, dtype=np.float64)
        self.src = np.asarray(dag.sources, dtype=np.int64)
        self.dst = np.asarray(dag.targets, dtype=np.int64)
        self.theta = np.asarray(theta, dtype=np.float64)
        self.w = np.where(self.params >= 0, self.theta[np.maximum(self.params, 0)], self.fixed)
        self.phi = np.multiply.reduceat(self.w[self.edges], self.offsets[:-1])
        np.testing.assert_allclose(self.phi, pl.path_lifting(ps, theta), rtol=1e-12, atol=0)
        self.paths = [tuple(int(e) for e in self.edges[a:b])
                      for a, b in zip(self.offsets[:-1], self.offsets[1:])]
        self.index = {p: i for i, p in enumerate(self.paths)}
        assert len(self.index) == self.P

    def power(self, s):
        a = np.abs(self.phi)
        return np.ones(self.P) if s == 0 else a ** s

    def top_order(self):
        """Decreasing |Phi_p|, ties in canonical order (a stable sort)."""
        return np.argsort(-np.abs(self.phi), kind="stable")

    def parameter_shares(self, s):
        ws = self.power(s)
        carried = self.params[self.edges]
        keep = carried >= 0
        sums = np.bincount(carried[keep], weights=ws[self.owner][keep], minlength=self.dag.d)
        return sums / ws.sum()

    def node_shares(self, s):
        ws = self.power(s)
        starts = self.src[self.edges[self.offsets[:-1]]]
        nodes = np.concatenate([starts, self.dst[self.edges]])
        weights = np.concatenate([ws, ws[self.owner]])
        return np.bincount(nodes, weights=weights, minlength=self.dag.num_nodes) / ws.sum()

    def share_of(self, indices, s):
        """sum_p (edges of p carrying one of the parameters) |Phi_p|^s / total, and the largest
        such count over the paths."""
        ws = self.power(s)
        inside = np.isin(self.params[self.edges], np.asarray(sorted(indices), dtype=np.int64))
        mult = np.bincount(self.owner[inside], minlength=self.P)
        return float((mult * ws).sum() / ws.sum()), int(mult.max())

    def check_dict(self, path, tol=REL):
        """A top_paths / sample_paths dict agrees with the enumerated path it names."""
        edges = tuple(path["edges"])
        assert edges in self.index, f"not a path of the network: {edges}"
        i = self.index[edges]
        want = self.phi[i]
        assert path["value"] == pytest.approx(want, rel=tol, abs=0)
        nodes = [self.dag.node_name(int(self.src[edges[0]]))] + [
            self.dag.node_name(int(self.dst[e])) for e in edges]
        assert path["nodes"] == nodes
        assert path["params"] == [None if self.params[e] < 0 else int(self.params[e])
                                  for e in edges]
        assert path["weights"] == [float(self.w[e]) for e in edges]
        if want != 0:
            assert path["sign"] == (1 if want > 0 else -1)
            assert path["log10_abs"] == pytest.approx(math.log10(abs(want)), rel=1e-12,
                                                       abs=1e-13)
        else:
            assert path["value"] == 0 and path["log10_abs"] is None
        return i


def brutes(pl, net, seed):
    """(zeros, theta, Brute) for theta_of(net, seed) without, then with, zero weights."""
    for zeros in (False, True):
        theta = theta_of(net, seed, zeros)
        yield zeros, theta, Brute(pl, net, theta)


# --- top_paths ---------------------------------------------------------------------------------


def check_top(brute, top, k, tol=REL, exact_ties=True):
    """top = the min(k, P) heaviest, in decreasing |Phi|; two paths out of the brute-force
    order only where their |Phi| agree within tol (products rounded in another order); with
    exact_ties, paths of exactly equal |Phi| (as computed here) in canonical order."""
    assert len(top) == min(k, brute.P)
    order = brute.top_order()
    got = [brute.check_dict(p) for p in top]
    mags = np.abs(brute.phi)
    np.testing.assert_allclose(np.abs([p["value"] for p in top]), mags[order[:len(top)]],
                               rtol=tol, atol=0)
    for pos, (g, want) in enumerate(zip(got, order)):
        if g != want:  # only a near-tie may be ordered otherwise
            assert mags[g] == pytest.approx(mags[want], rel=tol, abs=0), (pos, g, want)
    for a, b in zip(got, got[1:]):
        assert mags[a] >= mags[b] * (1 - tol)
        if exact_ties and mags[a] == mags[b]:
            assert a < b, ("exact tie out of canonical order", brute.paths[a], brute.paths[b])
    assert len(set(got)) == len(got)


def top_ks(P):
    """The k to check: k = 0, 1, a few, P and beyond P (a few hundred on the large DAGs)."""
    return sorted({0, 1, 5, min(40, P), P, P + 3}) if P <= 5000 else [0, 1, 5, 40, 400]


@pytest.mark.parametrize("name", dag_ids())
def test_top_paths_against_enumeration(pl, networks, name):
    net = networks[name]
    for zeros, theta, brute in brutes(pl, net, 7):
        for k in top_ks(brute.P):
            # exact ties of rounded products: test_top_paths_exact_ties_of_random_weights
            check_top(brute, pl.top_paths(net, theta, k=k), k, exact_ties=False)
        if zeros:  # the zero paths last, in canonical order
            full = pl.top_paths(net, theta, k=brute.P + 1)
            assert len(full) == brute.P
            idx = [brute.index[tuple(p["edges"])] for p in full]
            nz = int(np.count_nonzero(brute.phi))
            assert all(p["value"] != 0 for p in full[:nz])
            assert all(p["value"] == 0 for p in full[nz:])
            assert idx[nz:] == sorted(idx[nz:])
            assert sorted(idx[:nz]) == sorted(np.flatnonzero(brute.phi).tolist())
            assert nz < brute.P or name == "ff_linear"


@pytest.mark.parametrize("name", dag_ids())
def test_top_paths_exact_ties_of_random_weights(pl, networks, name):
    """Random weights: paths whose |Phi| computed here are exactly equal (e.g. the same
    parameters through mirror-image interpolation weights) come in canonical order."""
    net = networks[name]
    for _, theta, brute in brutes(pl, net, 7):
        check_top(brute, pl.top_paths(net, theta, k=brute.P), brute.P, exact_ties=True)


def test_top_paths_exact_tie_minimal(pl):
    """Two paths with the same parameters (w1, w2, w3) in the same order: an exact tie, so
    the canonical order (edges 0, 2, 5 before 1, 3, 6) must hold whatever the rounding."""
    net = pl.Network([("a", "h1"), ("a", "h2"), ("h1", "g1"), ("h2", "g2"), ("h2", "z"),
                      ("g1", "y"), ("g2", "y")], params=[0, 0, 1, 1, 2, 3, 3])
    rng = np.random.default_rng(0)
    for _ in range(1000):
        w1, w2, w3 = rng.uniform(0.5, 2, 3)
        if w1 * (w2 * w3) < (w1 * w2) * w3:  # the rounding that exposes it
            break
    top = pl.top_paths(net, np.array([w1, w2, 10.0, w3]), k=3)
    assert top[1]["value"] == top[2]["value"]
    assert [p["edges"] for p in top] == [[1, 4], [0, 2, 5], [1, 3, 6]]


def test_top_paths_layer_network_is_its_unrolled_dag(pl, networks):
    """All the paths of a LayerNetwork (searched on its layer graph) against all those of its
    unrolled DAG: the same values in the same order of |value|, and the same multiset of
    (value, parameters carried) -- the fixed weights are composed otherwise in the DAG (and a
    layer path has a step per layer), so they are left out of the comparison."""
    def keyed(paths):
        groups = {}
        for p in paths:
            key = tuple(k for k in p["params"] if k is not None)
            groups.setdefault(key, []).append(p["value"])
        return {key: sorted(values) for key, values in groups.items()}

    for name in ("cnn_a", "cnn_b", "cnn_chain", "shared_layer"):
        net = networks[name]
        theta = theta_of(net, 3)
        dag = pl.unroll(net.layer_graph)
        P = pl.count_paths(dag).paths
        layer_top, dag_top = pl.top_paths(net, theta, k=P), pl.top_paths(dag, theta, k=P)
        assert len(layer_top) == len(dag_top) == P
        assert all(p["edges"] is None for p in layer_top)
        np.testing.assert_allclose(np.abs([p["value"] for p in layer_top]),
                                   np.abs([p["value"] for p in dag_top]), rtol=REL, atol=0)
        got, want = keyed(layer_top), keyed(dag_top)
        assert set(got) == set(want)
        for key in want:
            np.testing.assert_allclose(got[key], want[key], rtol=REL, atol=0, err_msg=str(key))
        assert pl.top_paths(net, theta, k=25, threads=1) == layer_top[:25]
        # theta omitted: the graph's stored weights
        stored = np.asarray(net.layer_graph.weights)
        assert pl.top_paths(net, k=12) == pl.top_paths(net, stored, k=12)


def integer_theta(net, seed, values=(1.0, -1.0)):
    return np.random.default_rng(seed).choice(values, size=net.d)


@pytest.mark.parametrize("name", dag_ids())
def test_top_paths_ties_in_canonical_order(pl, networks, name):
    """Weights +-1 (and +-1, +-2): products exact, many exact ties, broken in canonical order;
    s = 0 ranks every path alike: the first k of enumerate_paths."""
    net = networks[name]
    for values in ((1.0,), (1.0, -1.0), (1.0, -1.0, 2.0, -2.0)):
        theta = integer_theta(net, 5, values)
        brute = Brute(pl, net, theta)
        order = brute.top_order()
        for k in (1, 7, brute.P if brute.P <= 5000 else 1500):
            top = pl.top_paths(net, theta, k=k)
            assert [brute.index[tuple(p["edges"])] for p in top] == list(order[:k])
            assert [p["value"] for p in top] == list(brute.phi[order[:k]])
    for _, theta, brute in brutes(pl, net, 9):
        for k in (1, 6, brute.P + 1):
            top = pl.top_paths(net, theta, k=k, s=0)
            assert [tuple(p["edges"]) for p in top] == brute.paths[:k]
        # s > 0 does not change the ranking
        assert pl.top_paths(net, theta, k=9, s=2.5) == pl.top_paths(net, theta, k=9)


def test_top_paths_ties_designated_output_before_going_on(pl):
    """A path that stops at a designated output comes before the ones that go on from it."""
    net = pl.Network([("x", "o"), ("o", "y"), ("x", "y")], outputs=["o"])
    top = pl.top_paths(net, np.ones(3), k=3)
    assert [p["edges"] for p in top] == [[0], [0, 1], [2]]
    assert [p["nodes"] for p in top] == [["x", "o"], ["x", "o", "y"], ["x", "y"]]


def test_top_paths_beyond_double_range(pl):
    net = pl.feed_forward(1, [1, 1], 1, bias=False)
    top = pl.top_paths(net, np.array([1e200, -1e200, 1e200]), k=1)
    assert top[0]["value"] is None and top[0]["sign"] == -1
    assert top[0]["log10_abs"] == pytest.approx(600.0, rel=1e-14)
    top = pl.top_paths(net, np.array([1e-200, 1e-200, 1e-200]), k=1)
    assert top[0]["sign"] == 1 and top[0]["log10_abs"] == pytest.approx(-600.0, rel=1e-14)
    assert top[0]["value"] in (None, 0.0)


def test_path_list_arrays_are_its_dicts(pl, networks):
    """values, signs and log10_abs of a PathList, made without its dicts, are the dicts' on a
    layer graph and on a DAG; values refuses a path beyond float64, log10_abs keeps it."""
    for net in (networks["cnn_a"], pl.fig1()):
        theta = theta_of(net, 5)
        for paths in (pl.top_paths(net, theta, k=20), pl.sample_paths(net, theta, n=50)):
            dicts = list(paths)
            assert paths.values.dtype == np.float64 and paths.signs.dtype == np.int8
            assert paths.values.tolist() == [p["value"] for p in dicts]
            assert paths.signs.tolist() == [p["sign"] for p in dicts]
            assert paths.log10_abs.tolist() == [p["log10_abs"] for p in dicts]
    net = pl.feed_forward(1, [1, 1], 1, bias=False)
    big = pl.top_paths(net, np.array([1e200, -1e200, 1e200]), k=1)
    with pytest.raises(pl.RangeError, match=r"path 0 has \|Phi_p\| = 10\^600\.0, beyond float64"):
        big.values
    assert big.signs.tolist() == [-1] and big.log10_abs[0] == pytest.approx(600.0, rel=1e-14)


def test_zero_path_has_sign_zero(pl):
    theta = np.array([1.0, 0.0, 2.0, 3.0, 0.0, 5.0, 7.0])
    signs, _ = pl.log_path_lifting(pl.fig1(), theta)
    assert list(signs) == [0, 0, 0, 1, 1]
    top = pl.top_paths(pl.fig1(), theta, k=5)
    assert [p["sign"] for p in top if p["value"] == 0] == [0, 0, 0]


def assert_top_paths_errors(pl, net, theta):
    """A negative k and a negative or NaN s are refused; k = 0 gives no path; a theta of the
    wrong length is refused."""
    with pytest.raises(ValueError, match="negative"):
        pl.top_paths(net, theta, k=-1)
    for s in (-1.0, -1e-300, float("nan")):
        with pytest.raises(ValueError):
            pl.top_paths(net, theta, s=s)
    assert pl.top_paths(net, theta, k=0) == []
    with pytest.raises(ValueError):
        pl.top_paths(net, np.ones(len(theta) + 1))


def test_top_paths_errors(pl):
    assert_top_paths_errors(pl, pl.fig1(), np.ones(7))


# --- sample_paths ------------------------------------------------------------------------------


def chi_square_p(brute, samples, s):
    """The p-value of the counts of the sampled paths against |Phi_p|^s / sum (bins of
    expectation < 5 pooled); also asserts no path of probability 0 was drawn."""
    ws = brute.power(s)
    prob = ws / ws.sum()
    counts = np.bincount([brute.index[tuple(p["edges"])] for p in samples], minlength=brute.P)
    assert counts[prob == 0].sum() == 0, "a path of weight 0 was drawn"
    n = len(samples)
    expected = n * prob[prob > 0]
    observed = counts[prob > 0]
    small = expected < 5
    exp_bins = list(expected[~small])
    obs_bins = list(observed[~small])
    if small.any():
        exp_bins.append(expected[small].sum())
        obs_bins.append(observed[small].sum())
    exp_bins, obs_bins = np.array(exp_bins), np.array(obs_bins)
    stat = ((obs_bins - exp_bins) ** 2 / exp_bins).sum()
    return stats.chi2.sf(stat, len(exp_bins) - 1)


@pytest.fixture(scope="module")
def sampled_net(pl):
    """A DAG of 125 paths: parallel edges, 3 designated outputs that feed others, 3 biases,
    shared parameters and fixed edges; theta with zeros (so some paths weigh 0)."""
    base = random_dag(pl, 11, 4)
    net = shared_version(pl, base, 0)
    theta = np.random.default_rng(2).standard_normal(net.d)
    theta[[1, 6]] = 0.0
    brute = Brute(pl, net, theta)
    assert brute.P < 200 and 0 < np.count_nonzero(brute.phi == 0) < brute.P
    return net, theta, brute


@pytest.mark.parametrize("s", [0.0, 1.0, 2.0])
def test_sample_paths_chi_square(pl, sampled_net, s):
    net, theta, brute = sampled_net
    for seed in range(5):
        samples = pl.sample_paths(net, theta, n=20000, s=s, seed=seed)
        assert len(samples) == 20000
        p = chi_square_p(brute, samples, s)
        assert p > 1e-3, (s, seed, p)
    if s == 0:  # uniform: the zero paths too
        counts = np.bincount([brute.index[tuple(q["edges"])] for q in samples],
                             minlength=brute.P)
        assert counts[brute.phi == 0].sum() > 0


def test_sample_paths_chi_square_twenty_seeds(pl, sampled_net):
    """The acceptance's test as stated: 100,000 samples for each of 20 seeds, p > 1e-3 (the
    seeds are fixed, so the test is deterministic)."""
    net, theta, brute = sampled_net
    for seed in range(100, 120):
        p = chi_square_p(brute, pl.sample_paths(net, theta, n=100_000, seed=seed), 1.0)
        assert p > 1e-3, (seed, p)


# On a LayerNetwork: test_layer_paths.py::test_sample_paths_chi_square (paths keyed by their
# parameters, start and output entry against the unrolled DAG's).


@pytest.mark.parametrize("name", dag_ids())
def test_sampled_paths_are_paths_of_their_weight(pl, networks, name):
    """Each sampled dict names a path, its value the product of its edges' weights read back
    from theta and the fixed weights; never a zero-weight path for s > 0."""
    net = networks[name]
    for seed in range(12, 40):  # zeros that leave some paths of weight != 0
        theta = theta_of(net, seed, zeros=True)
        brute = Brute(pl, net, theta)
        if 0 < np.count_nonzero(brute.phi) < brute.P:
            break
    else:
        pytest.fail("no theta with both zero and nonzero paths")
    for s in (1.0, 2.0, 0.5):
        samples = pl.sample_paths(net, theta, n=300, s=s, seed=4)
        assert len(samples) == 300
        for p in samples:
            brute.check_dict(p)
            w = [theta[k] if k is not None else brute.fixed[e]
                 for e, k in zip(p["edges"], p["params"])]
            assert p["value"] == pytest.approx(np.prod(w), rel=REL, abs=0)
            assert p["value"] != 0
    assert pl.sample_paths(net, theta, n=0) == []


def assert_reproducible(pl, net, theta, n):
    """sample_paths gives the same paths for a seed at 1 and 2 threads, others for another seed,
    and a prefix of a longer draw for fewer samples (sample i has its own generator)."""
    for s in (1.0, 0.0):
        one = pl.sample_paths(net, theta, n=n, s=s, seed=21, threads=1)
        two = pl.sample_paths(net, theta, n=n, s=s, seed=21, threads=2)
        assert one == two
        assert one == pl.sample_paths(net, theta, n=n, s=s, seed=21)
        other = pl.sample_paths(net, theta, n=n, s=s, seed=22, threads=2)
        assert [p["nodes"] for p in other] != [p["nodes"] for p in one]
        assert pl.sample_paths(net, theta, n=100, s=s, seed=21) == one[:100]


def test_sample_paths_reproducible(pl, networks, sampled_net):
    for net, theta in [(sampled_net[0], sampled_net[1]),
                       (networks["random_dag_13_1"], theta_of(networks["random_dag_13_1"], 1))]:
        assert_reproducible(pl, net, theta, 3000)


def test_sample_paths_errors(pl, networks):
    for name in ("fig1", "cnn_a", "ff_bias", "shared_layer"):
        net = networks[name]
        for s in (1.0, 2.0):
            with pytest.raises(ArithmeticError):
                pl.sample_paths(net, np.zeros(net.d), n=3, s=s)
            with pytest.raises(pl.RangeError):
                pl.sample_paths(net, np.zeros(net.d), n=3, s=s)
    # theta = 0 leaves the paths of fixed edges only: those alone are drawn
    net = networks["shared_dag"]
    brute = Brute(pl, net, np.zeros(net.d))
    assert 0 < np.count_nonzero(brute.phi) < brute.P
    for p in pl.sample_paths(net, np.zeros(net.d), n=200, s=1.0, seed=3):
        assert brute.phi[brute.check_dict(p)] != 0 and p["params"] == [None] * len(p["edges"])
    # s = 0: every path weighs 1, zero or not
    assert len(pl.sample_paths(networks["fig1"], np.zeros(7), n=5, s=0.0)) == 5
    net = pl.fig1()
    for s in (-1.0, float("inf"), float("nan")):
        with pytest.raises(ValueError):
            pl.sample_paths(net, np.ones(7), s=s)
    with pytest.raises(ValueError):
        pl.sample_paths(net, np.ones(7), n=-1)


# --- shares ------------------------------------------------------------------------------------


def check_share_object(sh, by, s, brute, names):
    total = float(brute.power(s).sum())
    assert sh.by == by and sh.s == s
    assert sh.total == pytest.approx(total, rel=REL)
    assert sh.log10_total == pytest.approx(math.log10(total), rel=1e-12, abs=1e-13)
    assert list(sh.names) == names
    shares = np.asarray(sh.shares)
    assert shares.shape == (len(names),)
    assert sh.as_dict() == dict(zip(names, shares.tolist()))
    j = sh.to_dict()
    assert j["by"] == by and j["s"] == s and j["shares"] == sh.as_dict()
    assert j["total"] == sh.total and j["log10_total"] == sh.log10_total
    json.dumps(j)
    return shares


@pytest.mark.parametrize("name", net_ids())
def test_parameter_and_node_shares_against_enumeration(pl, networks, name):
    net = networks[name]
    for zeros, theta, brute in brutes(pl, net, 13):
        dag = brute.dag
        # s < 1 with zero weights: test_shares_below_one_with_zero_weights
        for s in (1.0, 2.0) + (() if zeros else (0.5,)):
            sh = pl.path_norm_shares(net, theta, s=s, by="parameter")
            got = check_share_object(sh, "parameter", s, brute,
                                     [f"theta[{k}]" for k in range(net.d)])
            np.testing.assert_allclose(got, brute.parameter_shares(s), rtol=REL, atol=1e-15)
            sh = pl.path_norm_shares(net, theta, s=s, by="node")
            got = check_share_object(sh, "node", s, brute,
                                     [dag.node_name(v) for v in range(dag.num_nodes)])
            np.testing.assert_allclose(got, brute.node_shares(s), rtol=REL, atol=1e-15)
            # every path starts at one input (data or bias)
            assert got[[int(v) for v in dag.inputs]].sum() == pytest.approx(1.0, rel=1e-12)


def test_shares_below_one_with_zero_weights(pl, networks):
    """Below s = 1 a parameter's share comes from the gradient of the norm, which a zero weight
    makes infinite: refused, naming the zero. The shares by node, channel and layer are sums of
    F(v) G(v), defined there: equal to the enumerated sums."""
    net = networks["mlp_bias"]
    theta = theta_of(net, 13, zeros=True)
    zero = int(np.flatnonzero(theta == 0)[0])
    with pytest.raises(ValueError, match=rf"s = 0.5 < 1: theta\[{zero}\] = 0"):
        pl.path_norm_shares(net, theta, s=0.5, by="parameter")
    brute = Brute(pl, net, theta)
    node = pl.path_norm_shares(net, theta, s=0.5, by="node")
    np.testing.assert_allclose(node.shares, brute.node_shares(0.5), rtol=REL, atol=1e-15)
    channels, layers = channel_blocks(pl, net)
    for by, blocks in (("channel", channels), ("layer", layers)):
        got = pl.path_norm_shares(net, theta, s=0.5, by=by).as_dict()
        assert list(got) == list(blocks)
        for block, idx in blocks.items():
            assert got[block] == pytest.approx(brute.share_of(idx, 0.5)[0], rel=REL, abs=1e-15)


def channel_blocks(pl, net):
    """{channel name: theta indices}, {layer name: theta indices} of a layer graph, from the
    layouts of layers.md (conv_transpose: weight (in, out / groups, *kernel))."""
    graph = net.layer_graph
    shapes = pl.layer_shapes(graph)
    channels, layers = {}, {}
    for layer in graph.layers:
        if layer.kind not in NPARAM or (layer.weight_offset < 0 and layer.bias_offset < 0):
            continue
        cin = shapes[layer.inputs[0]][0]
        kernel = int(np.prod(layer.kernel)) if layer.kind in ("conv", "conv_transpose") else 1
        if layer.kind == "linear":
            cout = layer.out_features
            rows = np.arange(cout * cin).reshape(cout, cin)
            weight = [rows[c] for c in range(cout)]
        elif layer.kind == "conv":
            cout = layer.out_channels
            rows = np.arange(cout * cin // layer.groups * kernel).reshape(cout, -1)
            weight = [rows[c] for c in range(cout)]
        elif layer.kind == "conv_transpose":
            cout, g = layer.out_channels, layer.groups
            block = np.arange(cin * cout // g * kernel).reshape(cin, cout // g, kernel)
            weight = [block[(c // (cout // g)) * (cin // g):(c // (cout // g) + 1) * (cin // g),
                            c % (cout // g)].ravel() for c in range(cout)]
        else:  # batch_norm
            cout = cin
            weight = [np.array([c]) for c in range(cout)]
        for c in range(cout):
            idx = set()
            if layer.weight_offset >= 0:
                idx |= {layer.weight_offset + int(i) for i in weight[c]}
            if layer.bias_offset >= 0:
                idx.add(layer.bias_offset + c)
            channels[f"{layer.name}[{c}]"] = idx
            layers.setdefault(layer.name, set()).update(idx)
    return channels, layers


LAYER_NETS = ["mlp_bias", "mlp_nobias", "cnn_a", "cnn_b", "cnn_chain", "shared_layer"]


@pytest.mark.parametrize("name", LAYER_NETS)
def test_channel_and_layer_shares_against_enumeration(pl, networks, name):
    net = networks[name]
    channels, layers = channel_blocks(pl, net)
    for _, theta, brute in brutes(pl, net, 17):
        for s in (1.0, 2.0):
            params = pl.path_norm_shares(net, theta, s=s, by="parameter").shares
            for by, blocks in (("channel", channels), ("layer", layers)):
                sh = pl.path_norm_shares(net, theta, s=s, by=by)
                got = check_share_object(sh, by, s, brute, list(blocks))
                for (block, idx), share in zip(blocks.items(), got):
                    want, mult = brute.share_of(idx, s)
                    # without shared parameters a path crosses a channel / layer at most once
                    shared = name == "shared_layer" and not block.startswith("out")
                    assert (mult <= 1) == (not shared), (block, mult)
                    if shared:
                        # a layer's share is the paths through its own edges (into the relu
                        # after it), not those through the other layer that shares its theta
                        relu = "r1" if block.startswith("fc[") or block == "fc" else "r2"
                        nodes = [v for v in range(brute.dag.num_nodes)
                                 if brute.dag.node_name(v).startswith(relu + "[") and
                                 (by == "layer" or brute.dag.node_name(v) ==
                                  relu + block[block.index("["):])]
                        want = brute.node_shares(s)[nodes].sum()
                    assert share == pytest.approx(want, rel=REL, abs=1e-15), (by, block)
                    if not shared:
                        assert share == pytest.approx(sum(params[k] for k in idx), rel=1e-12,
                                                      abs=1e-15)
            # a layer's share is the sum of its channels'
            ch = pl.path_norm_shares(net, theta, s=s, by="channel").as_dict()
            for layer, share in pl.path_norm_shares(net, theta, s=s, by="layer").as_dict().items():
                parts = [v for key, v in ch.items() if key.startswith(layer + "[")]
                assert share == pytest.approx(sum(parts), rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("name", ["mlp_nobias", "cnn_chain"])
def test_layer_shares_of_a_chain_are_one(pl, networks, name):
    """No bias, no skip: every path crosses every parameter layer once (cnn_chain's batch
    norm has its b, zeroed here; with b != 0 the layers before it lose the paths from b)."""
    net = networks[name]
    theta = np.array(net.layer_graph.weights)
    if name == "cnn_chain":
        bn = next(layer for layer in net.layer_graph.layers if layer.kind == "batch_norm")
        channels = pl.layer_shapes(net.layer_graph)[bn.inputs[0]][0]
        sh = pl.path_norm_shares(net, theta, by="layer").as_dict()
        brute = Brute(pl, net, theta)
        assert sh["bn"] == pytest.approx(1.0, rel=1e-12)
        assert sh["fc"] == pytest.approx(1.0, rel=1e-12)
        assert sh["c1"] < 1 - 1e-6
        starts = brute.src[brute.edges[brute.offsets[:-1]]]
        bias_node = brute.dag.node_index("bn.bias")
        assert sh["c1"] == pytest.approx(1 - np.abs(brute.phi[starts == bias_node]).sum()
                                         / np.abs(brute.phi).sum(), rel=1e-12)
        theta[bn.bias_offset:bn.bias_offset + channels] = 0.0
    for s in (1.0, 2.0):
        sh = pl.path_norm_shares(net, theta, s=s, by="layer")
        assert len(sh.names) >= 3
        np.testing.assert_allclose(sh.shares, 1.0, rtol=1e-12)
        # and the channels of each layer split it
        ch = pl.path_norm_shares(net, theta, s=s, by="channel").as_dict()
        for layer in sh.names:
            assert sum(v for k, v in ch.items() if k.startswith(layer + "[")) == pytest.approx(
                1.0, rel=1e-12)


def test_from_torch_channel_shares_follow_torch_layouts(pl):
    """A from_torch CNN (Conv2d, BatchNorm2d with running statistics, MaxPool2d,
    ConvTranspose2d with groups, AvgPool2d, Linear): each module's channel c is its torch
    weight's output-channel slice and bias[c], checked against enumeration."""
    torch = pytest.importorskip("torch")
    nn = torch.nn
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(2, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                          nn.MaxPool2d(2), nn.ConvTranspose2d(4, 4, 2, stride=2, groups=2),
                          nn.ReLU(), nn.AvgPool2d(2), nn.Flatten(), nn.Linear(16, 2)).double()
    with torch.no_grad():
        model[1].running_mean.uniform_(-1, 1)
        model[1].running_var.uniform_(0.5, 2)
        model[1].weight.uniform_(-2, 2)
        model[1].bias.uniform_(-1, 1)
    model.eval()
    net = pl.from_torch(model, input_shape=(2, 4, 4))
    theta = pl.theta_from_torch(model)
    blocks, offset = {}, 0
    for name, p in model.named_parameters():
        idx = np.arange(offset, offset + p.numel()).reshape(p.shape)
        offset += p.numel()
        module, kind = name.split(".")
        blocks.setdefault(module, {})[kind] = idx
    channels = {}
    for module, b in blocks.items():
        m = model[int(module)]
        if isinstance(m, nn.ConvTranspose2d):
            per = m.out_channels // m.groups
            inper = m.in_channels // m.groups
            w = [b["weight"][(c // per) * inper:(c // per + 1) * inper, c % per]
                 for c in range(m.out_channels)]
        else:
            w = [b["weight"][c] for c in range(b["bias"].shape[0])]
        for c in range(b["bias"].shape[0]):
            channels[f"{module}[{c}]"] = set(np.ravel(w[c]).tolist()) | {int(b["bias"][c])}
    brute = Brute(pl, net, theta)
    for s in (1.0, 2.0):
        sh = pl.path_norm_shares(net, theta, s=s, by="channel").as_dict()
        assert set(sh) == set(channels)
        for key, idx in channels.items():
            assert sh[key] == pytest.approx(brute.share_of(idx, s)[0], rel=REL), key
        layers = pl.path_norm_shares(net, theta, s=s, by="layer").as_dict()
        assert list(layers) == ["0", "1", "4", "8"]
        for module in layers:
            idx = set().union(*[channels[k] for k in channels if k.startswith(module + "[")])
            assert layers[module] == pytest.approx(brute.share_of(idx, s)[0], rel=REL)
    # the heaviest paths (on the layer graph): the enumerated ones' values
    top = pl.top_paths(net, theta, k=30)
    np.testing.assert_allclose(np.abs([p["value"] for p in top]),
                               np.abs(brute.phi)[brute.top_order()[:30]], rtol=REL, atol=0)


def test_shares_errors(pl, networks):
    net = pl.fig1()
    theta = np.arange(1.0, 8.0)
    for s in (0.0, float("inf"), -1.0, float("nan")):
        with pytest.raises(ValueError):
            pl.path_norm_shares(net, theta, s=s, by="parameter")
    with pytest.raises(ValueError, match="bogus"):
        pl.path_norm_shares(net, theta, by="bogus")
    with pytest.raises(ValueError, match="bogus"):
        pl.path_norm_shares(networks["cnn_a"], by="bogus")
    for by in ("channel", "layer"):
        for name in ("fig1", "shared_dag", "ff_bias"):
            with pytest.raises(ValueError):
                pl.path_norm_shares(networks[name], theta_of(networks[name], 0), by=by)
    for by in ("parameter", "node"):
        with pytest.raises(ArithmeticError):
            pl.path_norm_shares(net, np.zeros(7), by=by)


# --- CLI ---------------------------------------------------------------------------------------


def save_theta(tmp_path, theta, name="theta.npy"):
    path = tmp_path / name
    np.save(path, np.asarray(theta, dtype=np.float64))
    return path


def test_cli_paths_top_text_and_json(pl, run_cli, tmp_path):
    theta = np.random.default_rng(5).standard_normal(7)
    tf = save_theta(tmp_path, theta)
    top = pl.top_paths(pl.fig1(), theta, k=3)
    res = run_cli("paths", "--example", "fig1", "--theta", tf, "--top", "3", check=True)
    lines = res.stdout.strip().splitlines()
    assert len(lines) == 3
    for line, p in zip(lines, top):
        assert float(line.split()[0]) == pytest.approx(p["value"], rel=1e-10)
        assert " -> ".join(p["nodes"]) in line
    j = json.loads(run_cli("paths", "--example", "fig1", "--theta", tf, "--top", "3", "--json",
                           check=True).stdout)
    assert j["format"] == "pathlift-paths" and j["mode"] == "top"
    assert len(j["paths"]) == 3
    for got, p in zip(j["paths"], top):
        assert set(got) == {"value", "sign", "log10_abs", "nodes", "edges", "params", "weights"}
        assert got["value"] == pytest.approx(p["value"], rel=1e-15)
        assert (got["sign"], got["nodes"], got["edges"], got["params"]) == (
            p["sign"], p["nodes"], p["edges"], p["params"])
        np.testing.assert_allclose(got["weights"], p["weights"], rtol=1e-15)
        assert got["log10_abs"] == pytest.approx(p["log10_abs"], rel=1e-15)
    # default theta: --seed 0 (the network has no weights)
    a = json.loads(run_cli("paths", "--top", "2", "--json", check=True).stdout)
    b = json.loads(run_cli("paths", "--example", "fig1", "--seed", "0", "--top", "2", "--json",
                           check=True).stdout)
    assert a["paths"] == b["paths"]


def test_cli_paths_sample(pl, run_cli, tmp_path):
    theta = np.random.default_rng(6).standard_normal(pl.feed_forward(2, [3], 2).d)
    tf = save_theta(tmp_path, theta)
    args = ("paths", "--ff", "2,3,2", "--theta", tf, "--sample", "5", "--sample-seed", "1",
            "--json")
    one = json.loads(run_cli(*args, check=True).stdout)
    two = json.loads(run_cli(*args, check=True).stdout)
    assert one == two
    assert one["mode"] == "sample" and one["s"] == 1.0 and len(one["paths"]) == 5
    brute = Brute(pl, pl.feed_forward(2, [3], 2), theta)
    for p in one["paths"]:
        brute.check_dict(p)
    # the CLI draws what sample_paths draws
    want = pl.sample_paths(pl.feed_forward(2, [3], 2), theta, n=5, s=1.0, seed=1)
    assert [p["edges"] for p in one["paths"]] == [p["edges"] for p in want]
    s2 = json.loads(run_cli(*args[:-1], "--s", "2", "--json", check=True).stdout)
    want = pl.sample_paths(pl.feed_forward(2, [3], 2), theta, n=5, s=2.0, seed=1)
    assert s2["s"] == 2.0 and [p["edges"] for p in s2["paths"]] == [p["edges"] for p in want]


def test_cli_paths_requires_output(run_cli):
    res = run_cli("paths", "--example", "fig1")
    assert res.returncode != 0
    assert "-o is required" in res.stderr + res.stdout


def test_cli_norm_shares_layer_graph_file(pl, run_cli, networks, tmp_path):
    for name in ("cnn_a", "cnn_b"):
        net = networks[name]
        path = tmp_path / f"{name}.json"
        path.write_text(pl.layer_graph_to_json(net.layer_graph))
        for by in ("layer", "channel"):
            res = run_cli("norm", "--network", path, "--shares", by, "--json", check=True)
            j = json.loads(res.stdout)["shares"]
            want = pl.path_norm_shares(net, s=1.0, by=by)
            assert j["by"] == by and j["s"] == 1.0
            assert j["total"] == pytest.approx(want.total, rel=1e-12)
            assert j["log10_total"] == pytest.approx(want.log10_total, rel=1e-12)
            assert list(j["shares"]) == list(want.names)
            for key, value in want.as_dict().items():
                assert j["shares"][key] == pytest.approx(value, rel=1e-12, abs=1e-15)


def test_cli_norm_shares_parameter_and_node(pl, run_cli, tmp_path):
    net = pl.feed_forward(2, [3], 2)
    theta = np.random.default_rng(8).standard_normal(net.d)
    tf = save_theta(tmp_path, theta)
    for by in ("parameter", "node"):
        j = json.loads(run_cli("norm", "--ff", "2,3,2", "--theta", tf, "--s", "2", "--shares",
                               by, "--json", check=True).stdout)["shares"]
        want = pl.path_norm_shares(net, theta, s=2.0, by=by)
        assert j["s"] == 2.0 and list(j["shares"]) == list(want.names)
        np.testing.assert_allclose(list(j["shares"].values()), want.shares, rtol=1e-12)
    res = run_cli("norm", "--ff", "2,3,2", "--shares", "layer")
    assert res.returncode != 0 and "layers" in res.stderr
