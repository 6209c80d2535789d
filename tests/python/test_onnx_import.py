"""ONNX import of real torch.onnx.export models (issue 28): every way PyTorch writes a flatten
(torch.flatten, nn.Flatten, x.view(x.size(0), -1), x.reshape(x.shape[0], -1), products of the
sizes), at opset 13 and the default, with and without constant folding, with a fixed and a
symbolic batch; bias-free Linear layers (Transpose + MatMul, or a pre-transposed initializer);
AvgPool2d with padding (Pad + AveragePool); the warning for a BatchNorm the exporter folded
into a convolution; the refusals, each a pathlift error naming the node.

Each imported model is run by pathlift (float64) and compared with the PyTorch model itself.

Run with PATHLIFT_BUILD_DIR=<build> /usr/bin/python3 -m pytest tests/python/test_onnx_import.py
"""
import io

import numpy as np
import pytest

torch = pytest.importorskip("torch")
onnx = pytest.importorskip("onnx", reason="onnx (Debian: python3-onnx) is needed for the ONNX "
                                          "tests")
nn = torch.nn


@pytest.fixture(scope="module")
def pl(pathlift_module):
    return pathlift_module


def export(model, shape, opset=None, fold=True, dynamic=True, **kwargs):
    """The model (float64, eval mode) as ONNX bytes, as torch.onnx.export writes it."""
    buffer = io.BytesIO()
    args = {} if opset is None else {"opset_version": opset}
    torch.onnx.export(model, torch.zeros((1, *shape), dtype=torch.float64), buffer,
                      input_names=["x"], output_names=["y"], do_constant_folding=fold,
                      dynamic_axes={"x": {0: "batch"}} if dynamic else None, **args, **kwargs)
    return buffer.getvalue()


def check_outputs(pl, model, data, shape, samples=5):
    """pathlift's forward pass of the imported model equals the model's own."""
    net = pl.from_onnx(data)
    X = torch.randn((samples, *shape), dtype=torch.float64,
                    generator=torch.Generator().manual_seed(3))
    got = pl.forward(net, net.weights, X.reshape(samples, -1).numpy()).outputs
    with torch.no_grad():
        want = model(X).reshape(samples, -1).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    return net


# --- flatten, every way PyTorch writes it ------------------------------------------------------


class Flattened(nn.Module):
    """Conv -> ReLU -> a flatten written as `mode` -> Linear, on 2 x 6 x 6."""

    def __init__(self, mode):
        super().__init__()
        self.mode = mode
        self.conv = nn.Conv2d(2, 3, 3)
        self.fc = nn.Linear(3 * 4 * 4, 2)

    def forward(self, x):
        x = torch.relu(self.conv(x))
        if self.mode == "torch.flatten":
            x = torch.flatten(x, 1)
        elif self.mode == "nn.Flatten":
            x = nn.Flatten()(x)
        elif self.mode == "view":
            x = x.view(x.size(0), -1)
        elif self.mode == "reshape":
            x = x.reshape(x.shape[0], -1)
        elif self.mode == "sizes":
            x = x.view(x.size(0), x.size(1) * x.size(2) * x.size(3))
        elif self.mode == "inferred batch":
            x = x.reshape(-1, x.shape[1] * x.shape[2] * x.shape[3])
        return self.fc(x)


FLATTENS = ["torch.flatten", "nn.Flatten", "view", "reshape", "sizes", "inferred batch"]


@pytest.mark.parametrize("mode", FLATTENS)
@pytest.mark.parametrize("opset", [13, None])
@pytest.mark.parametrize("fold", [True, False])
@pytest.mark.parametrize("dynamic", [True, False])
def test_every_flatten_export_imports(pl, mode, opset, fold, dynamic):
    torch.manual_seed(1)
    model = Flattened(mode).double().eval()
    data = export(model, (2, 6, 6), opset=opset, fold=fold, dynamic=dynamic)
    kinds = [layer.kind for layer in pl.parse_onnx(data).layers]
    assert kinds == ["input", "conv", "activation", "flatten", "linear"]
    check_outputs(pl, model, data, (2, 6, 6))


def test_a_reshape_that_is_not_a_flatten_is_refused_naming_the_node(pl):
    class Unflatten(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(8, 8)

        def forward(self, x):
            return torch.relu(self.fc(x)).view(x.size(0), 2, 4)

    data = export(Unflatten().double().eval(), (8,), opset=13, fold=False)
    with pytest.raises(pl.UnsupportedModelError, match=r"Reshape at '/Reshape' \(not a flatten"):
        pl.from_onnx(data)


# --- linear layers without bias ----------------------------------------------------------------


@pytest.mark.parametrize("fold", [True, False])
@pytest.mark.parametrize("opset", [13, None])
def test_bias_free_linear_layers(pl, fold, opset):
    torch.manual_seed(2)
    model = nn.Sequential(nn.Linear(4, 5, bias=False), nn.ReLU(), nn.Linear(5, 3, bias=False),
                          nn.ReLU(), nn.Linear(3, 2)).double().eval()
    data = export(model, (4,), opset=opset, fold=fold)
    ops = [n.op_type for n in onnx.load_from_string(data).graph.node]
    assert ("Transpose" in ops) == (not fold)  # without folding: MatMul(x, Transpose(W))
    net = check_outputs(pl, model, data, (4,))
    theta = np.concatenate([p.detach().numpy().ravel() for p in model.parameters()])
    if fold:
        # theta follows the initializers, and the exporter appends the pre-transposed weights
        # it made ("onnx::MatMul_<n>") after the last layer's: the same blocks, (out, in) each.
        blocks = [p.detach().numpy().ravel() for p in model.parameters()]
        theta = np.concatenate(blocks[-2:] + blocks[:-2])
    np.testing.assert_array_equal(net.weights, theta)


# --- AvgPool2d with padding: Pad + AveragePool -------------------------------------------------


@pytest.mark.parametrize("padding", [1, 2])
@pytest.mark.parametrize("count_include_pad", [True, False])
@pytest.mark.parametrize("opset", [13, None])
def test_average_pools_with_padding(pl, padding, count_include_pad, opset):
    torch.manual_seed(3)
    model = nn.Sequential(nn.Conv2d(1, 2, 3), nn.ReLU(),
                          nn.AvgPool2d(2 * padding + 1, stride=2, padding=padding,
                                       count_include_pad=count_include_pad),
                          nn.Flatten(), nn.LazyLinear(2))
    model(torch.zeros(1, 1, 9, 9))
    model = model.double().eval()
    data = export(model, (1, 9, 9), opset=opset)
    check_outputs(pl, model, data, (1, 9, 9))
    # The same bytes, the same graph, whatever was imported in between.
    first = pl.parse_onnx(data)
    for _ in range(3):
        pl.parse_onnx(export(Flattened("view").double().eval(), (2, 6, 6)))
        assert pl.parse_onnx(data) == first


# --- a BatchNorm folded by the exporter --------------------------------------------------------


def conv_bn():
    torch.manual_seed(4)
    model = nn.Sequential(nn.Conv2d(2, 3, 3, padding=1), nn.BatchNorm2d(3), nn.ReLU(),
                          nn.Flatten(), nn.Linear(3 * 5 * 5, 2))
    bn = model[1]
    bn.running_mean.copy_(torch.randn(3) * 0.5)
    bn.running_var.copy_(torch.rand(3) + 0.5)
    return model.double().eval()


def test_a_batch_norm_folded_by_the_exporter_is_warned_about(pl):
    model = conv_bn()
    folded = export(model, (2, 5, 5))  # eval mode, the default: folded into the Conv
    names = [t.name for t in onnx.load_from_string(folded).graph.initializer]
    assert any(n.startswith("onnx::Conv_") for n in names)
    with pytest.warns(UserWarning, match="BatchNorm folded into the convolution"):
        check_outputs(pl, model, folded, (2, 5, 5))  # the same function, other parameters
    kept = export(model, (2, 5, 5), fold=False, training=torch.onnx.TrainingMode.PRESERVE)
    assert [layer.kind for layer in pl.parse_onnx(kept).layers].count("batch_norm") == 1
    graph = pl.parse_onnx(folded)
    assert len(graph.warnings) == 1 and "onnx::Conv_" in graph.warnings[0]
    assert "BatchNorm folded into the convolution" in graph.warnings[0]
    assert pl.parse_onnx(kept).warnings == []
    # from_onnx and load_model say it as a Python warning, and the network keeps it
    with pytest.warns(UserWarning, match="BatchNorm folded into the convolution"):
        net = pl.from_onnx(folded)
    assert net.warnings == graph.warnings
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert pl.load_model(kept).warnings == []


# --- refusals ----------------------------------------------------------------------------------


def test_refusals_are_pathlift_errors_naming_the_node(pl):
    from onnx import TensorProto, helper

    def model(nodes, inits, opset=13):
        graph = helper.make_graph(
            nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])

    w = helper.make_tensor("w", TensorProto.FLOAT, [4, 3], [0.5] * 12)
    wi = helper.make_tensor("w", TensorProto.INT64, [4, 3], [1] * 12)
    matmul = helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")
    assert pl.parse_onnx(model([matmul], [w]).SerializeToString()).num_params == 12
    cases = [
        (model([matmul], [w], opset=99), pl.UnsupportedModelError,
         "opset 99 of domain ai.onnx is newer than pathlift reads"),
        (model([matmul], [wi]), pl.NetworkError, "weights must be floating point"),
        (model([matmul], [w, w]), pl.FormatError, "two initializers are named 'w'"),
        (model([helper.make_node("MatMul", ["x", "w", "w"], ["y"], name="mm")], [w]),
         pl.FormatError, "ONNX node 'mm' (MatMul) has 3 inputs: MatMul takes 2"),
        (model([helper.make_node("Relu", ["x"], ["y"], name="a"),
                helper.make_node("Relu", ["x"], ["y"], name="b")], []),
         pl.FormatError, "tensor 'y' is written by two nodes"),
    ]
    for proto, error, message in cases:
        with pytest.raises(error, match=message.replace("(", r"\(").replace(")", r"\)")):
            pl.from_onnx(proto)
