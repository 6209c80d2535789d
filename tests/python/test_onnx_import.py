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
import re

import numpy as np
import pytest

torch = pytest.importorskip("torch")
onnx = pytest.importorskip("onnx", reason="onnx (Debian: python3-onnx) is needed for the ONNX "
                                          "tests")
nn = torch.nn


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


WINDOW_ATTRIBUTE_CASES = [
    ("strides", [2], "strides [2] has 1 entries but the input of shape {3, 5, 5} has 2 spatial "
                     "dimensions"),
    ("dilations", [1, 0], "dilations [1, 0] must be in 1..2147483647"),
    ("kernel_shape", [2, 2, 2], "kernel_shape [2, 2, 2] has 3 entries but the input"),
]


@pytest.mark.parametrize("op,attr,value,message", [
    *(("Conv", *case) for case in WINDOW_ATTRIBUTE_CASES),
    *(("ConvTranspose", *case) for case in WINDOW_ATTRIBUTE_CASES),
    ("ConvTranspose", "output_padding", [0, -1], "output_padding [0, -1] must be in 0..2147483647"),
])
def test_a_window_attribute_that_does_not_fit_is_refused_alike_by_conv_and_its_transpose(
        pl, op, attr, value, message):
    """One check of kernel_shape, strides and dilations (and ConvTranspose's output_padding)
    against the input's spatial dimensions, with one message for both operators."""
    from onnx import TensorProto, helper
    w = helper.make_tensor("w", TensorProto.FLOAT, [3, 3, 2, 2], [0.5] * 36)
    node = helper.make_node(op, ["x", "w"], ["y"], name="c", **{attr: value})
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3, 5, 5])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [w])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    with pytest.raises(pl.NetworkError, match=re.escape(f"ONNX node 'c' ({op}): {message}")):
        pl.from_onnx(proto)


# --- the weights read in place (issue 32) ------------------------------------------------------


def float32_export(model, shape):
    """A float32 model as torch.onnx.export writes it: every initializer as FLOAT raw_data."""
    buffer = io.BytesIO()
    torch.onnx.export(model, torch.zeros((1, *shape)), buffer, input_names=["x"],
                      output_names=["y"], opset_version=13)
    return buffer.getvalue()


def forms_of(data):
    """The model of `data` with its initializers stored three ways: raw_data (as exported),
    float_data and double_data (the same values, as doubles)."""
    from onnx import TensorProto, helper, numpy_helper
    raw = onnx.load_from_string(data)
    out = {"raw_data": raw}
    for name, kind in [("float_data", TensorProto.FLOAT), ("double_data", TensorProto.DOUBLE)]:
        proto = onnx.ModelProto()
        proto.CopyFrom(raw)
        for init in proto.graph.initializer:
            values = numpy_helper.to_array(init)
            init.CopyFrom(helper.make_tensor(init.name, kind, values.shape,
                                             values.flatten().tolist(), raw=False))
            assert not init.HasField("raw_data")
        out[name] = proto
    return out


class ConvMlp(nn.Module):
    """Conv -> ReLU -> flatten -> Linear -> ReLU -> bias-free Linear (an (in, out) initializer
    that pathlift transposes)."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 3, 3)
        self.fc1 = nn.Linear(3 * 4 * 4, 7)
        self.fc2 = nn.Linear(7, 3, bias=False)

    def forward(self, x):
        x = torch.flatten(torch.relu(self.conv(x)), 1)
        return self.fc2(torch.relu(self.fc1(x)))


def test_weights_equal_the_initializers_from_a_file_and_from_bytes(pl, tmp_path):
    from onnx import numpy_helper
    torch.manual_seed(5)
    model = ConvMlp().eval()
    data = float32_export(model, (2, 6, 6))
    # theta is model.parameters() in order, each a float32 value as a double (exactly).
    want = np.concatenate([p.detach().numpy().astype(np.float64).ravel()
                           for p in model.parameters()])
    for form, proto in forms_of(data).items():
        blob = proto.SerializeToString()
        path = tmp_path / f"{form}.onnx"
        path.write_bytes(blob)
        # The initializers as onnx reads them, bias-free fc2 transposed to (out, in).
        inits = {t.name: numpy_helper.to_array(t).astype(np.float64)
                 for t in proto.graph.initializer}
        assert sum(v.size for v in inits.values()) == want.size, form
        for how, graph in [("bytes", pl.parse_onnx(blob)), ("file", pl.read_onnx(path)),
                           ("load_model", pl.from_onnx(path))]:
            np.testing.assert_array_equal(np.asarray(graph.weights), want, err_msg=f"{form} {how}")
        matmul = next(v for v in inits.values() if v.shape == (7, 3))
        np.testing.assert_array_equal(want[-21:], matmul.T.ravel())


def test_raw_data_of_the_wrong_length_is_refused_naming_the_tensor(pl, tmp_path):
    torch.manual_seed(5)
    proto = onnx.load_from_string(float32_export(ConvMlp().eval(), (2, 6, 6)))
    init = next(t for t in proto.graph.initializer if t.name == "fc1.weight")
    raw = init.raw_data
    for cut in [raw[:-4], raw[:-1], raw + b"\0" * 4]:
        init.raw_data = cut
        blob = proto.SerializeToString()
        (tmp_path / "bad.onnx").write_bytes(blob)
        message = (f"tensor 'fc1.weight' of dims {{7, 48}} (FLOAT) has {len(cut)} bytes of data, "
                   "not 336 x 4")
        for read in [lambda: pl.parse_onnx(blob), lambda: pl.read_onnx(tmp_path / "bad.onnx")]:
            with pytest.raises(pl.FormatError, match=re.escape(message)):
                read()


def test_a_truncated_model_is_refused_naming_the_initializer_it_cuts(pl, tmp_path):
    torch.manual_seed(5)
    proto = onnx.load_from_string(float32_export(ConvMlp().eval(), (2, 6, 6)))
    blob = proto.SerializeToString()
    init = next(t for t in proto.graph.initializer if t.name == "fc1.weight")
    at = blob.find(init.raw_data)
    assert at > 0
    (tmp_path / "cut.onnx").write_bytes(blob[:at + 100])
    index = [t.name for t in proto.graph.initializer].index("fc1.weight")
    for read in [lambda: pl.parse_onnx(blob[:at + 100]),
                 lambda: pl.read_onnx(tmp_path / "cut.onnx")]:
        with pytest.raises(pl.FormatError,
                           match=re.escape(f"initializer {index} 'fc1.weight': its raw data of "
                                           "1344 bytes")):
            read()


def test_weights_over_the_memory_limit_are_refused_before_they_are_read(pl):
    torch.manual_seed(5)
    data = float32_export(ConvMlp().eval(), (2, 6, 6))
    d = pl.parse_onnx(data).num_params
    with pytest.raises(MemoryError, match=re.escape(f"the ONNX model's weights (d = {d} in")):
        pl.from_onnx(data, max_memory=8 * d - 1)
    assert pl.from_onnx(data, max_memory=8 * d).d == d
