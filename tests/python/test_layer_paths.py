"""top_paths and sample_paths on a LayerNetwork (docs/paths.md): the search runs on the layer
graph, never unrolled, and each path is the entries it crosses ("x[0,3,4]" -> "c1[1,2,3]" ->
... -> "fc[1]", a bias start "c1.bias[1]"), with per step the parameter it carries (None for a
fixed weight) and its multiplier. Checked against an independent reference: the unrolled DAG
(pathlift.unroll) enumerated, Phi_p recomputed here (test_heavy_paths.Brute). A layer path and
a DAG path are the same path when they carry the same parameters in the same order from the
same start (an input entry, or the layer's bias) to the same output entry: per such key the
values must agree (the DAG's fixed weights are composed otherwise, so the values, not the fixed
steps, are compared). Networks: those of test_heavy_paths (every layer kind) and two more here
(avg_pool with count_include_pad both ways and ceil_mode, adaptive_avg_pool, sub, leaky and
identity activations, max_pool with padding, a 1-D batch norm, two graph outputs the first of
which is the later layer, an output another layer reads; 1-D conv with dilation,
conv_transpose with output_padding, linear interpolation with align_corners, a descending
group_sort, concat along the length, relu of relu, a three-operand add), and a from_torch CNN
whose paths' "param_names" read the module's parameters back.

Run with PATHLIFT_BUILD_DIR=<build> /usr/bin/python3 -m pytest tests/python/test_layer_paths.py
"""
import json
import math
import subprocess
import sys
from collections import Counter, defaultdict

import numpy as np
import pytest

from test_heavy_paths import (Brute, assert_reproducible, assert_top_paths_errors, build_layers,
                              integer_theta, layer_networks, mlp_specs, theta_of)

stats = pytest.importorskip("scipy.stats")

REL = 1e-12
TIE = 1e-13  # |values| this close are one tie group here (rounding differences are ~1e-16)

# --- networks ----------------------------------------------------------------------------------

# 2-D: every pooling variant, sub, leaky relu, identity, a gather with repeats along the height,
# a batch norm on features, and two outputs: `out`, then `r2`, which `out` also reads.
CNN_C = [("conv", "c1", [0], dict(out_channels=1, kernel=[2, 2], padding=[1, 1])),
         ("activation", "lr", [1], dict(activation="leaky_relu:0.1")),
         ("avg_pool", "apx", [2], dict(kernel=[3, 3], stride=[2, 2], padding=[1, 1],
                                       ceil_mode=True, count_include_pad=False)),
         ("avg_pool", "api", [2], dict(kernel=[3, 3], stride=[2, 2], padding=[1, 1],
                                       ceil_mode=True, count_include_pad=True)),
         ("sub", "sb", [3, 4], {}),
         ("adaptive_avg_pool", "aap", [5], dict(output_size=[3, 3])),  # 4 -> 3: overlapping
         ("activation", "idn", [6], dict(activation="identity")),
         ("gather", "ga", [7], dict(axis=1, indices=[2, 0, 2])),
         ("max_pool", "mp", [8], dict(kernel=[2, 2], stride=[2, 2], padding=[1, 1],
                                      ceil_mode=True)),
         ("flatten", "fl", [9], {}),
         ("linear", "fc", [10], dict(out_features=2)),
         ("batch_norm", "bn1", [11], {}),
         ("activation", "r2", [12], dict(activation="relu")),
         ("linear", "out", [13], dict(out_features=2))]

# 1-D ({C, L}).
CNN_1D = [("conv", "c1", [0], dict(out_channels=2, kernel=[3], dilation=[2], padding=[2])),
          ("activation", "r1", [1], dict(activation="relu")),
          ("conv_transpose", "ct", [2], dict(out_channels=2, kernel=[2], stride=[2],
                                             padding=[1], output_padding=[1])),
          ("interpolate", "up", [3], dict(output_size=[7], align_corners=True)),
          ("k_max_pool", "kmax", [4], dict(kernel=[3], stride=[2], k=2)),
          ("group_sort", "gs", [5], dict(group_size=2, descending=True)),
          ("concat", "cat", [6, 2], dict(axis=1)),
          ("batch_norm", "bn", [7], {}),
          ("activation", "r2", [8], dict(activation="relu")),
          ("activation", "r3", [9], dict(activation="relu")),
          ("scale", "sc", [10], dict(factor=1.5)),
          ("add", "ad", [11, 9, 8], {}),
          ("flatten", "fl", [12], {}),
          ("linear", "fc", [13], dict(out_features=2))]

# A chain of convolutions (no padding, stride 1) for the order of ties within an output.
CONV_CHAIN = [("conv", "c1", [0], dict(out_channels=2, kernel=[2, 2])),
              ("activation", "r1", [1], dict(activation="relu")),
              ("conv", "c2", [2], dict(out_channels=2, kernel=[2, 2]))]


def with_outputs(pl, net, outputs):
    g = net.layer_graph
    return pl.LayerNetwork(pl.LayerGraph(input_shape=g.input_shape, layers=g.layers,
                                         outputs=outputs, num_params=g.num_params,
                                         weights=g.weights))


def skip_network(pl):
    """x (1x3x3) -> conv c -> add(c, x) -> relu -> max_pool: the paths x -> add -> ... carry no
    parameter (they survive theta = 0)."""
    return build_layers(pl, [1, 3, 3],
                        [("conv", "c", [0], dict(out_channels=1, kernel=[3, 3], padding=[1, 1])),
                         ("add", "ad", [1, 0], {}),
                         ("activation", "r", [2], dict(activation="relu")),
                         ("max_pool", "mp", [3], dict(kernel=[2, 2], stride=[1, 1]))], 9)


def all_layer_networks(pl):
    nets = layer_networks(pl)
    nets += [("cnn_c", with_outputs(pl, build_layers(pl, [1, 5, 5], CNN_C, 6), [14, 12])),
             ("cnn_1d", build_layers(pl, [2, 5], CNN_1D, 7)),
             ("conv_chain", build_layers(pl, [1, 4, 4], CONV_CHAIN, 8)),
             ("skip", skip_network(pl))]
    return nets


NAMES = ["mlp_bias", "mlp_nobias", "cnn_a", "cnn_b", "cnn_chain", "shared_layer", "cnn_c",
         "cnn_1d", "conv_chain", "skip"]


@pytest.fixture(scope="module")
def nets(pl):
    nets = dict(all_layer_networks(pl))
    assert list(nets) == NAMES
    return nets


def test_the_networks_cover_every_layer_kind(pl, nets):
    layers = [layer for net in nets.values() for layer in net.layer_graph.layers]
    kinds = {layer.kind for layer in layers}
    assert {"conv", "conv_transpose", "linear", "max_pool", "k_max_pool", "avg_pool",
            "adaptive_avg_pool", "batch_norm", "scale", "add", "sub", "concat", "flatten",
            "gather", "group_sort", "interpolate", "activation"} <= kinds
    assert {layer.activation for layer in layers if layer.kind == "activation"} == {
        "relu", "leaky_relu:0.1", "identity"}
    avg = [layer for layer in layers if layer.kind == "avg_pool"]
    assert {layer.count_include_pad for layer in avg} == {True, False}
    # ceil_mode adds a window (clipped at the end) to both of cnn_c's average pools
    graph = nets["cnn_c"].layer_graph
    shapes = pl.layer_shapes(graph)
    for i, layer in enumerate(graph.layers):
        if layer.kind == "avg_pool":
            size, k, st, pad = shapes[layer.inputs[0]][1], layer.kernel[0], layer.stride[0], \
                layer.padding[0]
            assert layer.ceil_mode and shapes[i][1] == (size + 2 * pad - k) // st + 2
    assert any(layer.kind == "max_pool" and list(layer.padding) != [0, 0] for layer in layers)
    assert any(layer.kind == "gather" and len(set(layer.indices)) < len(layer.indices)
               for layer in layers)
    assert any(len(net.layer_graph.outputs) > 1 for net in nets.values())
    assert pl.unroll(nets["cnn_c"].layer_graph).num_nodes > 0


# --- the reference: the unrolled DAG, enumerated -----------------------------------------------

VIEW_KINDS = {"flatten", "concat", "gather"}
PARAM_KINDS = {"linear", "conv", "conv_transpose", "batch_norm"}


class Geometry:
    """What a path dict of a layer graph may name: its layers, shapes, parameter blocks, the
    entry-owning layers each layer reads (through views), its outputs' ranks."""

    def __init__(self, pl, graph):
        self.layers = list(graph.layers)
        self.shapes = [tuple(int(n) for n in s) for s in pl.layer_shapes(graph)]
        self.index = {layer.name: i for i, layer in enumerate(self.layers)}
        assert len(self.index) == len(self.layers)
        self.outputs = [int(o) for o in graph.outputs]
        self.out_offset, offset = {}, 0
        for o in self.outputs:
            self.out_offset[o] = offset
            offset += int(np.prod(self.shapes[o]))
        self.weight_block, self.bias_block = {}, {}
        for i, layer in enumerate(self.layers):
            if layer.kind not in PARAM_KINDS:
                continue
            cin = self.shapes[layer.inputs[0]][0]
            kernel = int(np.prod(layer.kernel)) if layer.kind.startswith("conv") else 1
            cout = self.shapes[i][0]
            nw = {"linear": cout * cin, "batch_norm": cin}.get(
                layer.kind, cout * cin // max(1, layer.groups) * kernel)
            if layer.weight_offset >= 0:
                self.weight_block[i] = range(layer.weight_offset, layer.weight_offset + nw)
            if layer.bias_offset >= 0:
                self.bias_block[i] = range(layer.bias_offset, layer.bias_offset + cout)
        self.views = {i for i, layer in enumerate(self.layers) if layer.kind in VIEW_KINDS or (
            layer.kind == "activation" and layer.activation == "identity")}
        self.ranks = {}
        # the layers whose entries a layer reads: its inputs, through views
        self.reads = []
        for layer in self.layers:
            seen, todo = set(), list(layer.inputs)
            while todo:
                j = int(todo.pop())
                if self.is_view(j):
                    todo.extend(self.layers[j].inputs)
                else:
                    seen.add(j)
            self.reads.append(seen)

    def is_view(self, i):
        return i in self.views

    def output_rank(self, entry):
        """The rank of an output entry over the concatenated outputs."""
        name, idx = entry
        key = (name, tuple(idx))
        if key not in self.ranks:
            i = self.index[name]
            self.ranks[key] = self.out_offset[i] + int(np.ravel_multi_index(idx, self.shapes[i]))
        return self.ranks[key]


def node_name(entry):
    name, idx = entry
    return f"{name}[{','.join(str(i) for i in idx)}]"


def start_name(path):
    """The DAG's name of a layer path's start: the input entry, or the bias node."""
    name, idx = path["entries"][0]
    return name if name.endswith(".bias") else node_name((name, idx))


class Reference:
    """The unrolled DAG's paths enumerated (Brute), each keyed by (its parameters, its start,
    the rank of its output entry); the values of each key sorted."""

    def __init__(self, pl, net, theta):
        self.brute = b = Brute(pl, net, theta)
        rank = {int(v): r for r, v in enumerate(b.dag.outputs)}
        starts = b.src[b.edges[b.offsets[:-1]]]
        ends = b.dst[b.edges[b.offsets[1:] - 1]]
        params = b.params[b.edges]
        self.P = b.P
        self.phi = b.phi
        self.keys = []
        self.groups = defaultdict(list)
        for i in range(b.P):
            carried = params[b.offsets[i]:b.offsets[i + 1]]
            key = (tuple(int(k) for k in carried if k >= 0), b.dag.node_name(int(starts[i])),
                   rank[int(ends[i])])
            self.keys.append(key)
            self.groups[key].append(float(b.phi[i]))
        for values in self.groups.values():
            values.sort()

    def key(self, path, geo):
        return (tuple(k for k in path["params"] if k is not None), start_name(path),
                geo.output_rank(path["entries"][-1]))


def check_path(path, geo, theta, torch_names=False):
    """One layer path dict: its keys, its entries (input or bias first, an output entry last,
    each an entry of a layer that owns entries, each read by the next), its steps' parameters
    and weights, its value their product."""
    want = {"value", "sign", "log10_abs", "nodes", "entries", "edges", "params", "weights"}
    assert set(path) == want | ({"param_names"} if torch_names else set()), sorted(path)
    assert path["edges"] is None
    assert all(isinstance(e, tuple) and isinstance(e[0], str) and isinstance(e[1], tuple)
               for e in path["entries"])  # (layer, (i, j, k))
    entries = [(name, list(idx)) for name, idx in path["entries"]]
    n = len(entries)
    assert n >= 2
    assert path["nodes"] == [node_name(e) for e in entries]
    assert len(path["params"]) == len(path["weights"]) == n - 1
    first, bias = entries[0], entries[0][0].endswith(".bias")
    if bias:
        owner = geo.index[first[0][:-len(".bias")]]
        assert owner in geo.bias_block and len(first[1]) == 1
        assert entries[1][0] == geo.layers[owner].name
        assert entries[1][1][0] == first[1][0]  # its channel
        assert path["params"][0] == geo.bias_block[owner][first[1][0]]
    else:
        assert first[0] == "x"  # the input layer's entries, whatever its name
        assert len(first[1]) == len(geo.shapes[0]) and all(
            0 <= a < m for a, m in zip(first[1], geo.shapes[0])), first
    layer_ids = [geo.index[name] for name, _ in entries[1:]]
    assert layer_ids[-1] in geo.outputs
    assert all(not geo.is_view(i) for i in layer_ids)
    for i, idx in zip(layer_ids, (e[1] for e in entries[1:])):
        assert len(idx) == len(geo.shapes[i]) and all(0 <= a < m for a, m in
                                                      zip(idx, geo.shapes[i])), (i, idx)
    prev = [None if bias else 0] + layer_ids[:-1]
    for step, (src, dst) in enumerate(zip(prev, layer_ids)):
        layer = geo.layers[dst]
        k, w = path["params"][step], path["weights"][step]
        if step == 0 and bias:
            assert k is not None  # checked above
        else:
            assert src in geo.reads[dst], (step, geo.layers[src].name, layer.name)
            if layer.kind in PARAM_KINDS:
                assert k is not None and k in geo.weight_block[dst], (step, layer.name, k)
            else:
                assert k is None, (step, layer.name, k)
        if k is not None:
            assert w == theta[k]
        elif layer.kind in ("activation", "max_pool", "k_max_pool", "group_sort", "add"):
            assert w == 1.0, (layer.name, w)
        elif layer.kind == "sub":
            assert w in (1.0, -1.0)
        elif layer.kind == "scale":
            assert w == layer.factor
        elif layer.kind in ("avg_pool", "adaptive_avg_pool"):
            assert math.isclose(1 / w, round(1 / w), rel_tol=1e-12) and round(1 / w) >= 1, w
        else:
            assert layer.kind == "interpolate" and 0 < w <= 1, (layer.name, w)
    product = math.prod(path["weights"])
    value = path["value"]
    assert math.isclose(value, product, rel_tol=REL), (value, product)
    if value != 0:
        assert path["sign"] == (1 if value > 0 else -1)
        assert math.isclose(path["log10_abs"], math.log10(abs(value)), rel_tol=1e-12,
                            abs_tol=1e-13)
    else:
        assert path["sign"] == 0 and path["log10_abs"] is None
    return layer_ids


def check_same_paths(ref, geo, paths):
    """The paths are the DAG's, each once: the same keys, as many of each, the same values."""
    assert len(paths) == ref.P
    got = defaultdict(list)
    for p in paths:
        got[ref.key(p, geo)].append(p["value"])
    assert set(got) == set(ref.groups), (sorted(set(got) ^ set(ref.groups))[:5])
    for key, values in got.items():
        want = ref.groups[key]
        assert len(values) == len(want), (key, len(values), len(want))
        np.testing.assert_allclose(sorted(values), want, rtol=REL, atol=0, err_msg=str(key))


def tie_groups(mags):
    """Index ranges of equal |value| (within TIE relative) in a sequence sorted by |value|."""
    groups, start = [], 0
    for i in range(1, len(mags) + 1):
        if i == len(mags) or mags[i] < mags[i - 1] * (1 - TIE) or (mags[i - 1] == 0) != (
                mags[i] == 0):
            groups.append((start, i))
            start = i
    return groups


def check_order(top, geo):
    """Decreasing |value|; within a tie the output entries in rank order."""
    mags = np.abs([p["value"] for p in top])
    assert all(a >= b * (1 - REL) for a, b in zip(mags, mags[1:]))
    ranks = [geo.output_rank(p["entries"][-1]) for p in top]
    for a, b in tie_groups(mags):
        assert ranks[a:b] == sorted(ranks[a:b]), ("tie not in output order", a, b, ranks[a:b])
    return ranks


# --- top_paths ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_top_paths_are_the_unrolled_dags_heaviest(pl, nets, name):
    net = nets[name]
    geo = Geometry(pl, net.layer_graph)
    # with zeros in theta (the zero paths last): the networks of up to 10,000 paths
    for zeros in (False, True) if pl.count_paths(net).paths <= 10_000 else (False,):
        theta = theta_of(net, 7, zeros)
        ref = Reference(pl, net, theta)
        P = ref.P
        full = pl.top_paths(net, theta, k=P + 3, threads=2)  # all of them, no more
        assert len(full) == P
        for p in (full if not zeros else full[:300] + full[-300:]):
            check_path(p, geo, theta)
        check_same_paths(ref, geo, full)
        mags = np.abs([p["value"] for p in full])
        np.testing.assert_allclose(mags, np.sort(np.abs(ref.phi))[::-1], rtol=REL, atol=0)
        check_order(full, geo)
        # a prefix for every k, whatever the thread count
        for k in sorted({0, 1, 5, min(40, P)}):
            top = pl.top_paths(net, theta, k=k)
            assert top == full[:k], k
        if not zeros:
            k = P if P <= 10_000 else 3000
            assert pl.top_paths(net, theta, k=k, threads=1) == full[:k]
        else:  # the zero paths last
            nz = int(np.count_nonzero(ref.phi))
            assert 0 < nz < P
            assert all(p["value"] != 0 for p in full[:nz])
            assert all(p["value"] == 0 and p["sign"] == 0 for p in full[nz:])
            assert pl.top_paths(net, theta, k=nz, threads=1) == full[:nz]


def test_top_paths_theta_omitted_is_the_stored_weights(pl, nets):
    net = nets["cnn_a"]
    theta = np.asarray(net.layer_graph.weights)
    assert pl.top_paths(net, k=12) == pl.top_paths(net, theta, k=12)
    geo = Geometry(pl, net.layer_graph)
    ref = Reference(pl, net, theta)
    mags = np.abs([p["value"] for p in pl.top_paths(net, k=12)])
    np.testing.assert_allclose(mags, np.sort(np.abs(ref.phi))[::-1][:12], rtol=REL, atol=0)
    for p in pl.top_paths(net, k=12):
        check_path(p, geo, theta)


@pytest.mark.parametrize("name", NAMES)
def test_top_paths_ties_by_output_entry(pl, nets, name):
    """Weights +-1 (and +-2): many exact ties, each in the order of its output entries; s = 0
    (every path weighs 1): every path, by output entry; s > 0 ranks alike."""
    net = nets[name]
    geo = Geometry(pl, net.layer_graph)
    for values in ((1.0, -1.0), (1.0, -1.0, 2.0, -2.0)):
        theta = integer_theta(net, 5, values)
        ref = Reference(pl, net, theta)
        k = min(ref.P, 4000)  # the large networks: a prefix
        top = pl.top_paths(net, theta, k=k)
        assert len(top) == k
        if k == ref.P:
            check_same_paths(ref, geo, top)
        assert all(ref.key(p, geo) in ref.groups for p in top)
        ranks = check_order(top, geo)
        # the values sorted, and each tie the output ranks of the DAG's paths of that value,
        # in order (the prefix: the smallest of its last tie)
        order = np.argsort(-np.abs(ref.phi), kind="stable")
        mags = np.abs(ref.phi)[order]
        np.testing.assert_allclose(np.abs([p["value"] for p in top]), mags[:k], rtol=REL)
        groups = tie_groups(mags)
        assert len(groups) < ref.P // 2  # ties indeed
        for a, b in groups:
            if a >= k:
                break
            want = sorted(ref.keys[i][2] for i in order[a:b])
            assert ranks[a:min(b, k)] == want[:min(b, k) - a], (a, b)
        assert pl.top_paths(net, theta, k=7, threads=2) == top[:7]
    theta = theta_of(net, 9, zeros=True)
    ref = Reference(pl, net, theta)
    k = min(ref.P, 4000)
    uniform = pl.top_paths(net, theta, k=k, s=0)
    if k == ref.P:
        check_same_paths(ref, geo, uniform)
    ranks = [geo.output_rank(p["entries"][-1]) for p in uniform]
    assert ranks == sorted(key[2] for key in ref.keys)[:k]
    assert pl.top_paths(net, theta, k=9, s=2.5) == pl.top_paths(net, theta, k=9)


def term_key(path, geo):
    """The order of a tie within an output entry on a network of linear, conv (no padding,
    stride 1, dilation 1) and relu layers: backwards from the output, each step's term in its
    entry's sum (a linear unit's weights by input feature, a convolution's by input channel
    and kernel tap, then the bias)."""
    entries = path["entries"]
    key = [geo.output_rank(entries[-1])]
    for step in range(len(entries) - 2, -1, -1):
        (src, sidx), (dst, didx) = entries[step], entries[step + 1]
        layer = geo.layers[geo.index[dst]]
        if layer.kind == "activation":
            continue
        cin = geo.shapes[layer.inputs[0]][0]
        taps = int(np.prod(layer.kernel)) if layer.kind == "conv" else 1
        if src.endswith(".bias"):
            key.append(cin * taps)
        elif layer.kind == "linear":
            key.append(sidx[0])
        else:
            kh, kw = sidx[1] - didx[1], sidx[2] - didx[2]
            key.append((sidx[0] * layer.kernel[0] + kh) * layer.kernel[1] + kw)
    return tuple(key)


@pytest.mark.parametrize("name", ["mlp_bias", "mlp_nobias", "shared_layer", "conv_chain"])
def test_top_paths_ties_backwards_by_term_order(pl, nets, name):
    """theta = 1 (every path weighs 1) and s = 0: within an output entry, backwards from it by
    each entry's term order."""
    net = nets[name]
    geo = Geometry(pl, net.layer_graph)
    ref = Reference(pl, net, np.ones(net.d))
    for theta, s in ((np.ones(net.d), 1.0), (theta_of(net, 3), 0.0)):
        full = pl.top_paths(net, theta, k=ref.P, s=s)
        assert len(full) == ref.P
        keys = [term_key(p, geo) for p in full]
        assert len(set(keys)) == len(keys)
        assert keys == sorted(keys)


def test_top_paths_beyond_double_range(pl):
    """A layer path's value beyond float64: None, its sign and log10 kept."""
    net = build_layers(pl, [1], mlp_specs([1, 1, 1]), 0, bias=False)
    top = pl.top_paths(net, np.array([1e200, -1e200, 1e200]), k=1)
    assert top[0]["value"] is None and top[0]["sign"] == -1
    assert top[0]["log10_abs"] == pytest.approx(600.0, rel=1e-14)
    assert top[0]["weights"] == [1e200, 1.0, -1e200, 1.0, 1e200]
    assert top[0]["nodes"] == ["x[0]", "fc0[0]", "r1[0]", "fc1[0]", "r2[0]", "fc2[0]"]


def test_top_paths_errors(pl, nets):
    net = nets["cnn_a"]
    assert_top_paths_errors(pl, net, theta_of(net, 0))


# --- sample_paths ------------------------------------------------------------------------------


def chi_square_p(ref, geo, samples, s):
    """The p-value of the sampled keys' counts against sum over the key's paths of
    |Phi_p|^s / ||Phi||_s^s (bins of expectation < 5 pooled); no key of probability 0 drawn."""
    weight = np.abs(ref.phi) ** s if s else np.ones(ref.P)
    keys = sorted(ref.groups)
    where = {key: i for i, key in enumerate(keys)}
    prob = np.zeros(len(keys))
    np.add.at(prob, [where[k] for k in ref.keys], weight)
    prob /= prob.sum()
    counts = np.bincount([where[ref.key(p, geo)] for p in samples], minlength=len(keys))
    assert counts[prob == 0].sum() == 0, "a path of weight 0 was drawn"
    expected, observed = len(samples) * prob[prob > 0], counts[prob > 0]
    small = expected < 5
    exp_bins = np.append(expected[~small], expected[small].sum())
    obs_bins = np.append(observed[~small], observed[small].sum())
    if not small.any():
        exp_bins, obs_bins = exp_bins[:-1], obs_bins[:-1]
    stat = ((obs_bins - exp_bins) ** 2 / exp_bins).sum()
    assert len(exp_bins) > 20
    return stats.chi2.sf(stat, len(exp_bins) - 1)


@pytest.mark.parametrize("name,s,seed,n", [("cnn_a", 1.0, 1, 100_000), ("cnn_c", 2.0, 2, 30_000),
                                           ("cnn_1d", 0.5, 3, 30_000), ("cnn_c", 0.0, 6, 20_000)])
def test_sample_paths_chi_square(pl, nets, name, s, seed, n):
    """The sampled paths' counts per key against the enumerated probabilities (n samples,
    about 40 microseconds each); s = 0: uniform over the paths, the zero ones included."""
    net = nets[name]
    geo = Geometry(pl, net.layer_graph)
    theta = theta_of(net, 4, zeros=True)
    ref = Reference(pl, net, theta)
    assert 0 < np.count_nonzero(ref.phi) < ref.P
    samples = pl.sample_paths(net, theta, n=n, s=s, seed=seed)
    assert len(samples) == n
    p = chi_square_p(ref, geo, samples, s)
    assert p > 1e-3, (name, s, seed, p)
    for path in samples[:300]:
        check_path(path, geo, theta)
        assert s == 0 or path["value"] != 0


def test_sample_paths_chi_square_twenty_seeds(pl, nets):
    """The acceptance's test as stated, on a layer graph never unrolled: 100,000 samples for each
    of 20 seeds of an MLP with biases and zero weights, p > 1e-3 (fixed seeds: deterministic)."""
    net = nets["mlp_bias"]
    geo = Geometry(pl, net.layer_graph)
    theta = theta_of(net, 4, zeros=True)
    ref = Reference(pl, net, theta)
    for seed in range(100, 120):
        p = chi_square_p(ref, geo, pl.sample_paths(net, theta, n=100_000, seed=seed), 1.0)
        assert p > 1e-3, (seed, p)


@pytest.mark.parametrize("name", NAMES)
def test_sampled_paths_are_paths(pl, nets, name):
    """Each sampled dict is a path of the DAG of its value; never a zero path for s > 0; s = 0
    draws the zero paths too (uniform)."""
    net = nets[name]
    geo = Geometry(pl, net.layer_graph)
    theta = theta_of(net, 13, zeros=True)
    ref = Reference(pl, net, theta)
    for s in (1.0, 2.0, 0.5, 0.0):
        samples = pl.sample_paths(net, theta, n=400, s=s, seed=4)
        assert len(samples) == 400
        for p in samples:
            check_path(p, geo, theta)
            want = ref.groups.get(ref.key(p, geo))
            assert want is not None and min(abs(v - p["value"]) for v in want) <= REL * abs(
                p["value"]), p
            assert s == 0 or p["value"] != 0
        if s == 0 and np.count_nonzero(ref.phi == 0) > ref.P // 4:
            assert any(p["value"] == 0 for p in samples)
    assert pl.sample_paths(net, theta, n=0) == []


@pytest.mark.parametrize("name", ["cnn_b", "cnn_c", "shared_layer"])
def test_sample_paths_reproducible(pl, nets, name):
    net = nets[name]
    assert_reproducible(pl, net, theta_of(net, 1), 600)


def test_sample_paths_errors(pl, nets):
    for name in ("cnn_a", "cnn_c", "cnn_1d", "shared_layer"):
        net = nets[name]
        for s in (1.0, 2.0, 0.5):
            with pytest.raises(ArithmeticError):
                pl.sample_paths(net, np.zeros(net.d), n=3, s=s)
            with pytest.raises(pl.RangeError):
                pl.sample_paths(net, np.zeros(net.d), n=3, s=s)
        # s = 0: every path weighs 1, zero or not
        assert len(pl.sample_paths(net, np.zeros(net.d), n=5, s=0.0)) == 5
    net = nets["cnn_a"]
    theta = theta_of(net, 0)
    for s in (-1.0, float("inf"), float("nan")):
        with pytest.raises(ValueError):
            pl.sample_paths(net, theta, s=s)
    with pytest.raises(ValueError):
        pl.sample_paths(net, theta, n=-1)


def test_theta_zero_leaves_the_fixed_paths(pl, nets):
    """theta = 0 on the skip network: only the paths through the identity skip weigh; those
    alone are drawn and lead the top paths."""
    net = nets["skip"]
    geo = Geometry(pl, net.layer_graph)
    theta = np.zeros(net.d)
    ref = Reference(pl, net, theta)
    nz = int(np.count_nonzero(ref.phi))
    assert 0 < nz < ref.P
    for p in pl.sample_paths(net, theta, n=200, s=1.0, seed=3):
        check_path(p, geo, theta)
        assert p["value"] != 0 and p["params"] == [None] * (len(p["nodes"]) - 1)
    top = pl.top_paths(net, theta, k=nz + 2)
    assert [p["value"] != 0 for p in top] == [True] * nz + [False, False]


# --- from_torch: param_names -------------------------------------------------------------------


@pytest.fixture(scope="module")
def torch_cnn(pl):
    torch = pytest.importorskip("torch")
    nn = torch.nn

    class Residual(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 2, 3, padding=1)
            self.bn1 = nn.BatchNorm2d(2)
            self.conv2 = nn.Conv2d(2, 2, 3, padding=1)
            self.pool = nn.MaxPool2d(2)
            self.avg = nn.AvgPool2d(2)
            self.fc = nn.Linear(2, 2)

        def forward(self, x):
            y = torch.relu(self.bn1(self.conv1(x)))
            y = torch.relu(self.conv2(y) + y)
            y = self.avg(self.pool(y))
            return self.fc(torch.flatten(y, 1))

    torch.manual_seed(0)
    model = Residual().double()
    with torch.no_grad():
        model.bn1.running_mean.uniform_(-1, 1)
        model.bn1.running_var.uniform_(0.5, 2)
        model.bn1.weight.uniform_(-2, 2)
        model.bn1.bias.uniform_(-1, 1)
    model.eval()
    return torch, model, pl.from_torch(model, input_shape=(1, 4, 4))


def module_value(torch, model, name):
    """The value a "module.param[i, j]" name reads from the model: the parameter's entry, a
    BatchNorm's a = gamma / sqrt(var + eps) for weight and b = beta - a mean for bias."""
    full, idx = name.split("[")
    index = tuple(int(i) for i in idx.rstrip("]").split(","))
    module_name, kind = full.rsplit(".", 1)
    module = model.get_submodule(module_name)
    value = float(getattr(module, kind).detach()[index])
    if isinstance(module, torch.nn.BatchNorm2d):
        c = index[0]
        a = float(module.weight[c]) / math.sqrt(float(module.running_var[c]) + module.eps)
        value = a if kind == "weight" else float(module.bias[c]) - a * float(
            module.running_mean[c])
    return value


def test_from_torch_param_names_read_the_module(pl, torch_cnn):
    torch, model, net = torch_cnn
    theta = pl.theta_from_torch(model)
    geo = Geometry(pl, net.layer_graph)
    ref = Reference(pl, net, theta)
    offsets, start = {}, 0
    for pname, p in model.named_parameters():
        offsets[pname] = (start, tuple(p.shape))
        start += p.numel()
    top = pl.top_paths(net, k=ref.P)
    check_same_paths(ref, geo, top)
    fixed = Counter()
    for path in top + pl.sample_paths(net, n=300, seed=2):
        check_path(path, geo, theta, torch_names=True)
        names = path["param_names"]
        assert len(names) == len(path["params"])
        product = 1.0
        for k, pname, w in zip(path["params"], names, path["weights"]):
            assert (k is None) == (pname is None)
            if k is None:
                fixed[w] += 1
                product *= w
                continue
            full, idx = pname.split("[")
            base, shape = offsets[full]
            index = tuple(int(i) for i in idx.rstrip("]").split(", "))
            assert pname == f"{full}[{', '.join(map(str, index))}]"
            assert k == base + int(np.ravel_multi_index(index, shape)), (k, pname)
            value = module_value(torch, model, pname)
            assert w == pytest.approx(value, rel=1e-14, abs=0)
            product *= value
        assert path["value"] == pytest.approx(product, rel=REL, abs=0), path
    assert set(fixed) == {1.0, 0.25}  # relu, max pool, add; the 2x2 average pool
    assert any(n.startswith("bn1.bias[") for p in top for n in p["param_names"] if n)
    assert any(p["nodes"][0].startswith("conv1.bias[") for p in top)
    assert {name.split("[")[0] for p in top for name in p["param_names"] if name} == {
        "conv1.weight", "conv1.bias", "bn1.weight", "bn1.bias", "conv2.weight", "conv2.bias",
        "fc.weight", "fc.bias"}


def test_param_names_only_on_from_torch_networks(pl, nets, torch_cnn):
    torch, model, net = torch_cnn
    # the same graph, not tied to the module: no names
    plain = pl.LayerNetwork(net.layer_graph)
    assert all("param_names" not in p for p in pl.top_paths(plain, k=5))
    assert all("param_names" not in p for p in pl.sample_paths(plain, n=5))
    assert all("param_names" not in p for p in pl.top_paths(nets["cnn_a"], k=5))
    fig1 = pl.top_paths(pl.fig1(), np.arange(1.0, 8.0), k=3)
    assert all("param_names" not in p for p in fig1)
    # the names follow theta's values as the module holds them
    named = pl.top_paths(net, k=5)
    assert [{k: v for k, v in p.items() if k != "param_names"} for p in named] == \
        pl.top_paths(plain, k=5)


def test_paths_do_not_import_torch(build_dir):
    code = ("import sys, numpy, pathlift\n"
            "p = pathlift.top_paths(pathlift.fig1(), numpy.arange(1.0, 8.0), k=2)\n"
            "q = pathlift.sample_paths(pathlift.fig1(), numpy.arange(1.0, 8.0), n=2)\n"
            "assert len(p) == len(q) == 2 and 'param_names' not in p[0]\n"
            "assert 'torch' not in sys.modules, 'torch imported'\n")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120,
                   env={"PYTHONPATH": str(build_dir / "python"), "PATH": "/usr/bin:/bin"})


def test_wrappers_keep_the_engine_signature_and_doc(pl):
    import inspect

    def params(fn):
        return [(p.name, p.default, p.kind == p.KEYWORD_ONLY)
                for p in inspect.signature(fn).parameters.values()]

    empty = inspect.Parameter.empty
    tail = [("threads", 0, True), ("progress", None, True), ("max_memory", 0, True)]
    assert params(pl.top_paths) == [("net", empty, False), ("theta", None, False),
                                    ("k", 10, False), ("s", 1.0, False)] + tail
    assert params(pl.sample_paths) == [("net", empty, False), ("theta", None, False),
                                       ("n", 10, False), ("s", 1.0, False),
                                       ("seed", 0, False)] + tail
    for name in ("top_paths", "sample_paths"):
        engine = getattr(pl._pathlift, name).__doc__.partition("\n\n")[2].strip()
        assert engine and engine in getattr(pl, name).__doc__
        assert "param_names" in getattr(pl, name).__doc__


# --- CLI ---------------------------------------------------------------------------------------


def test_cli_paths_on_a_layer_graph_file(pl, nets, run_cli, tmp_path):
    for name in ("cnn_c", "cnn_1d"):
        net = nets[name]
        path = tmp_path / f"{name}.json"
        path.write_text(pl.layer_graph_to_json(net.layer_graph))
        want = pl.top_paths(net, k=6)
        j = json.loads(run_cli("paths", "--network", path, "--top", "6", "--json",
                               check=True).stdout)
        assert j["format"] == "pathlift-paths" and j["mode"] == "top"
        assert len(j["paths"]) == 6
        for got, p in zip(j["paths"], want):
            assert set(got) == set(p)
            for key in ("sign", "nodes", "edges", "params"):
                assert got[key] == p[key], key
            # JSON has lists where Python has (layer, (i, j, k)) tuples
            assert got["entries"] == [[name, list(index)] for name, index in p["entries"]]
            assert got["value"] == pytest.approx(p["value"], rel=1e-15)
            np.testing.assert_allclose(got["weights"], p["weights"], rtol=1e-15)
        lines = run_cli("paths", "--network", path, "--top", "6",
                        check=True).stdout.strip().splitlines()
        assert len(lines) == 6
        for line, p in zip(lines, want):
            value, nodes = line.split(None, 1)
            assert float(value) == pytest.approx(p["value"], rel=1e-10)
            assert nodes.strip() == " -> ".join(p["nodes"])
        j = json.loads(run_cli("paths", "--network", path, "--sample", "5", "--sample-seed", "3",
                               "--json", check=True).stdout)
        want = pl.sample_paths(net, n=5, seed=3)
        assert j["mode"] == "sample" and [p["entries"] for p in j["paths"]] == [
            [[name, list(index)] for name, index in p["entries"]] for p in want]


def test_path_list_is_a_sequence_of_dicts(pl):
    """top_paths and sample_paths return a PathList: a read-only sequence whose dicts are made
    when read; indexing, negative indices, slices (lists), iteration, ==, + and len."""
    net = pl.feed_forward(3, [4, 5], 2, True)
    theta = np.random.default_rng(0).standard_normal(net.num_params)
    top = pl.top_paths(net, theta, k=7)
    assert isinstance(top, pl.PathList) and len(top) == 7
    as_list = list(top)
    assert all(isinstance(p, dict) for p in as_list)
    assert top[-1] == as_list[6] and top[2:5] == as_list[2:5] and top[::3] == as_list[::3]
    assert top == as_list and top == pl.top_paths(net, theta, k=7)
    assert top != pl.top_paths(net, theta, k=6) and top != as_list[::-1]
    assert top + as_list[:1] == as_list + as_list[:1] and as_list[:1] + top == as_list[:1] + as_list
    with pytest.raises(IndexError, match="path 7: there are 7 paths"):
        top[7]
    with pytest.raises(IndexError):
        top[-8]
    with pytest.raises(TypeError):
        hash(top)
    assert "7 paths" in repr(top)
    # each read makes a new dict: changing one does not change the list
    top[0]["value"] = None
    assert top[0]["value"] == as_list[0]["value"] is not None
    assert len(pl.sample_paths(net, theta, n=0)) == 0


def test_memory_limits_name_the_sizes(pl, nets):
    """No O(edges) array: the per-entry maxima or sums, the search's suffixes and the sampled
    paths are checked against max_memory before they are allocated, the sizes in the refusal."""
    net = nets["cnn_b"]
    theta = theta_of(net, 2)
    with pytest.raises(MemoryError, match=r"heaviest prefixes of the layer entries \(\d+ entries"):
        pl.top_paths(net, theta, k=10, max_memory=2000)
    with pytest.raises(MemoryError, match=r"1000000 sampled paths needs"):
        pl.sample_paths(net, theta, n=1_000_000, max_memory=1_000_000)
    with pytest.raises(MemoryError, match=r"search for the heaviest paths \(\d+ path suffixes"):
        pl.top_paths(net, theta, k=30_000, max_memory=3_000_000)
    # within the limit the same call runs
    assert len(pl.top_paths(net, theta, k=10, max_memory=10_000_000)) == 10
