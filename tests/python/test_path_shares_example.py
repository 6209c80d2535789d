"""examples/path_shares_pruning.py (docs/paths.md): the 10 heaviest paths of a trained digits
CNN, its layer and channel shares of the L1 path-norm, and the test accuracy after zeroing the
channels of smallest share beside those of smallest weight norm.

The example runs as a script (a few epochs, with --plot); and in-process, on an untrained
instance of its CNN, each top path's param_names are the names the example gives theta's
entries, and its value the product of the parameters they name, read back from the model (the
fixed steps, ReLU and max pooling, weigh 1).

Run with PATHLIFT_BUILD_DIR=<build> /usr/bin/python3 -m pytest tests/python/test_path_shares_example.py
"""
import importlib.util
import math
import re
import sys

import numpy as np
import pytest

from conftest import ROOT

EXAMPLE = ROOT / "examples" / "path_shares_pruning.py"


@pytest.fixture(scope="module")
def example():
    pytest.importorskip("torch")
    sys.path.insert(0, str(EXAMPLE.parent))  # its sibling pruning_certificate.py, as a script
    spec = importlib.util.spec_from_file_location("path_shares_pruning", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # main() runs only as a script
    return module


def test_the_example_runs(run_example, tmp_path):
    plot = tmp_path / "shares.png"
    out = run_example(EXAMPLE.name, "--epochs", "2", "--plot", plot)

    paths = re.findall(r"^\s*(\d+)\.\s+(\S+)\s+(\S.* -> .*\S)\s*$", out, re.M)
    assert [int(i) for i, _, _ in paths] == list(range(1, 11)), out
    values = [abs(float(v)) for _, v, _ in paths]
    assert all(a >= b for a, b in zip(values, values[1:])) and values[-1] > 0, values
    for _, _, nodes in paths:
        nodes = nodes.split(" -> ")
        assert re.fullmatch(r"fc\[\d\]", nodes[-1]) and len(nodes) >= 2, nodes

    block = out.split("share of each layer", 1)[1].split("conv1's channels", 1)[0]
    layers = dict(re.findall(r"^\s+(\w+)\s+([0-9.]+)\s*$", block, re.M))
    assert set(layers) == {"conv1", "conv2", "fc"}, block
    assert all(0 <= float(s) <= 1 for s in layers.values()), layers

    assert "| by path-norm share | by weight norm |" in out
    rows = re.findall(r"^\| (0\.\d\d) \| (\d+) \+ (\d+) \| ([0-9.]+) \| ([0-9.]+) \|$", out, re.M)
    assert [r[:3] for r in rows] == [("0.00", "0", "0"), ("0.25", "2", "4"), ("0.50", "4", "8"),
                                     ("0.75", "6", "12")], out
    assert all(0 <= float(a) <= 1 for r in rows for a in r[3:])
    assert rows[0][3] == rows[0][4]  # nothing zeroed: the trained model under both criteria
    assert plot.is_file() and plot.stat().st_size > 1000


def parameter_names(model):
    """{theta index: "conv1.weight[2, 0, 1, 1]"}, independently of pathlift: theta is the
    model's parameters flattened in model.parameters() order, row-major within each tensor."""
    names, offset = {}, 0
    for name, p in model.named_parameters():
        for i in range(p.numel()):
            idx = np.unravel_index(i, tuple(p.shape))
            names[offset + i] = f"{name}[{', '.join(str(int(j)) for j in idx)}]"
        offset += p.numel()
    return names


def parameter_value(model, name):
    """The model's parameter entry named as parameter_names names it."""
    tensor, _, index = name.partition("[")
    idx = tuple(int(j) for j in index.rstrip("]").split(","))
    return dict(model.named_parameters())[tensor].detach()[idx].item()


def test_each_path_is_the_product_of_its_weights_read_back(example, pl):
    import torch
    torch.manual_seed(3)
    model = example.cnn().eval()  # untrained
    net = pl.from_torch(model, input_shape=(1, 8, 8))
    names = parameter_names(model)
    theta = pl.theta_from_torch(model)
    assert len(names) == net.d == len(theta)
    # the names read back the model's parameters at the positions of theta
    assert all(parameter_value(model, names[k]) == theta[k] for k in range(net.d))

    top = pl.top_paths(net, k=300)
    assert len(top) == 300
    assert any(p["nodes"][0].startswith("x[") for p in top)  # paths from the pixels ...
    assert any(re.fullmatch(r"\w+\.bias\[\d+\]", p["nodes"][0]) for p in top)  # ... biases
    for p in top:
        assert p["param_names"] == [None if k is None else names[k] for k in p["params"]]
        product = 1.0
        for name, w in zip(p["param_names"], p["weights"]):
            if name is None:
                assert w == 1.0  # ReLU and max pooling
            else:
                product *= parameter_value(model, name)
        assert math.isclose(p["value"], product, rel_tol=1e-12, abs_tol=0), (p, product)
    values = [abs(p["value"]) for p in top]
    assert all(a >= b * (1 - 1e-12) for a, b in zip(values, values[1:]))


def test_channel_shares_sum_to_the_layer_shares(example, pl):
    import torch
    torch.manual_seed(4)
    model = example.cnn().eval()
    net = pl.from_torch(model, input_shape=(1, 8, 8))
    layers = pl.path_norm_shares(net, s=1.0, by="layer").as_dict()
    channels = pl.path_norm_shares(net, s=1.0, by="channel").as_dict()
    for layer in ("conv1", "conv2", "fc"):
        mine = [v for n, v in channels.items() if n.startswith(layer + "[")]
        assert len(mine) == getattr(model, layer).weight.shape[0]
        assert math.isclose(sum(mine), layers[layer], rel_tol=1e-9)
    chosen = example.smallest(np.array([3.0, 1.0, 2.0, 0.5]), 0.5)
    assert chosen == [3, 1]
    pruned = example.without_channels(model, {"conv1": [0, 5]})
    assert (pruned.conv1.weight[[0, 5]] == 0).all() and (pruned.conv1.bias[[0, 5]] == 0).all()
    assert (model.conv1.weight[[0, 5]] != 0).any()  # the model itself is untouched
