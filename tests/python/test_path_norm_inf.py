"""s = inf: ||Phi||_inf = max_p |Phi_p| by the max-plus DP, against the enumerated path-lifting,
on DAGs, networks with shared parameters and layer networks; several exponents in one call."""

import json
import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")
nn = torch.nn


def test_inf_is_the_largest_path_product(pl):
    cases = []
    for widths in ([4], [5, 3], [2, 2, 2, 2]):
        net = pl.feed_forward(3, widths, 2)
        cases.append((net, net, pl.normal_weights(net.d, len(widths))))
    model = nn.Sequential(nn.Conv2d(1, 2, 3), nn.ReLU(), nn.MaxPool2d(2, ceil_mode=True),
                          nn.Flatten(), nn.Linear(4, 2)).double().eval()
    layer = pl.from_torch(model, input_shape=(1, 5, 4))
    cases.append((layer, layer.unrolled(), np.asarray(layer.weights)))
    for net, dag, theta in cases:
        phi = np.abs(np.asarray(pl.path_lifting(dag, theta)))
        n = pl.path_norm(net, theta, s=math.inf)
        assert n.norm == pytest.approx(phi.max(), rel=1e-15) and n.sum == n.norm
    # per output and per input: the maxima over the paths ending / starting there
    net = pl.feed_forward(3, [4, 3], 2)
    theta = pl.normal_weights(net.d, 9)
    n = pl.path_norm(net, theta, s=math.inf, per_input=True)
    phi = np.abs(np.asarray(pl.path_lifting(net, theta)))
    assert max(n.per_output) == pytest.approx(phi.max(), rel=1e-15)
    assert max(n.per_input) == pytest.approx(phi.max(), rel=1e-15)
    assert len(n.per_output) == 2 and len(n.per_input) == len(net.inputs)


def test_inf_far_beyond_double_range(pl):
    """Every path of a bias-free MLP has one edge per layer: scaling theta by c scales the
    largest path product by c^depth, far beyond double's range."""
    net = pl.feed_forward(3, [4, 4], 2, bias=False)
    theta = pl.normal_weights(net.d, 4)
    base = pl.path_norm(net, theta, s=math.inf)
    for c in (1e200, 1e-200):
        n = pl.path_norm(net, theta * c, s=math.inf)
        assert n.log10 == pytest.approx(base.log10 + 3 * math.log10(c), abs=1e-9)
        assert n.norm == (math.inf if c > 1 else 0.0)


def test_shared_parameters(pl):
    model = nn.Sequential(nn.Conv1d(1, 2, 2), nn.ReLU(), nn.Conv1d(2, 2, 2, bias=False),
                          nn.ReLU(), nn.Flatten(), nn.Linear(4, 1)).double().eval()
    net = pl.from_torch(model, input_shape=(1, 4))  # 2 channels x 2 positions
    theta = np.asarray(net.weights) * 3
    phi = np.abs(np.asarray(pl.path_lifting(net.unrolled(), theta)))
    assert pl.path_norm(net, theta, s=math.inf).norm == pytest.approx(phi.max(), rel=1e-15)
    assert pl.path_norm(net.unrolled(), theta, s=math.inf).norm == pytest.approx(phi.max(),
                                                                                 rel=1e-15)


def test_several_exponents_in_one_call(pl, run_cli):
    net = pl.feed_forward(3, [4, 4], 2)
    theta = pl.normal_weights(net.d, 2)
    norms = pl.path_norm(net, theta, s=[0, 1, 2.5, math.inf])
    assert isinstance(norms, list) and [n.s for n in norms] == [0, 1, 2.5, math.inf]
    for n in norms:
        assert n.norm == pl.path_norm(net, theta, s=n.s).norm
    with pytest.raises(ValueError, match="empty"):
        pl.path_norm(net, theta, s=[])
    with pytest.raises(ValueError, match="number or a list"):
        pl.path_norm(net, theta, s="two")
    with pytest.raises(ValueError, match=">= 0"):
        pl.path_norm(net, theta, s=-1.0)
    j = json.loads(run_cli("norm", "--ff", "3,4,4,2", "--seed", "2", "--s", "1,2,inf", "--json",
                           check=True).stdout)
    assert j["norms"]["inf"] == pytest.approx(
        pl.path_norm(net, pl.normal_weights(net.d, 2), s=math.inf).norm, rel=1e-15)
    assert "||Phi||_inf" in run_cli("norm", "--ff", "3,4,4,2", "--s", "inf", check=True).stdout


def test_a_layer_network_too_large_to_unroll_is_refused_for_inf(pl):
    model = nn.Sequential(nn.Conv2d(1, 4, 3), nn.ReLU(), nn.Flatten(),
                          nn.Linear(4 * 8 * 8, 3)).double().eval()
    net = pl.from_torch(model, input_shape=(1, 10, 10), max_memory=65536)
    assert pl.path_norm(net, s=2.0).norm > 0  # the layer DP, no unrolling
    with pytest.raises(pl.TooLarge, match="edges"):
        pl.path_norm(net, s=math.inf)


def test_exponent_messages_are_one_and_say_why(pl):
    """A negative exponent gets one message on a network and on a layer network (which takes
    inf too); the gradient's refusal of 0 and of inf each says why."""
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2)).double().eval()
    for net in (pl.from_torch(model, input_shape=(3,)), pl.feed_forward(3, [4], 2)):
        theta = pl.normal_weights(net.d, 0)
        for s in (-1.0, -math.inf, math.nan):
            with pytest.raises(ValueError, match=r"s must be >= 0 \(0 counts paths, inf gives "
                                                 r"max_p \|Phi_p\|\)"):
                pl.path_norm(net, theta, s)
        with pytest.raises(ValueError, match=r"at s = 0 the norm is the path count"):
            pl.path_norm_gradient(net, theta, 0.0)
        with pytest.raises(ValueError, match=r"s = inf must be finite and > 0 \(max_p \|Phi_p\| "
                                             r"is not differentiable where the largest paths tie"):
            pl.path_norm_gradient(net, theta, math.inf)
