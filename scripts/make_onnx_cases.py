#!/usr/bin/python3
"""Writes the ONNX import cases of tests/onnx_test.cpp (issue 28) into tests/data/onnx_*.onnx.

Run with Debian's Python (torch 1.13, onnx 1.12): /usr/bin/python3 scripts/make_onnx_cases.py

Each model carries its own reference in its metadata (metadata_props key
"pathlift_reference", JSON): the per-sample input shape, a few inputs (flattened, the data
columns of pathlift), the outputs computed in float64 from the float32 weights, and theta in
pathlift's order where it is the model's parameters, and a relative tolerance where it is not
1e-9.

Models (fixed seeds, batch dimension first and symbolic):
  onnx_flatten_view.onnx   x.view(x.size(0), -1) after a Conv, exported at opset 13 without
                           constant folding: Shape, Gather, Unsqueeze, Concat and Constant nodes
                           compute the Reshape's target (batch, -1)
  onnx_flatten_mul.onnx    x.view(x.size(0), x.size(1) * x.size(2) * x.size(3)) at the default
                           opset with constant folding: Mul of Gathers of Shapes; a plain Conv
                           export (no warning expected)
  onnx_linear_nobias.onnx  bias-free nn.Linear layers exported without constant folding:
                           MatMul of a Transpose of the (out, in) weight; the same layers with
                           constant folding write the weight pre-transposed (in, out) as
                           "onnx::MatMul_<n>"; both are in this one model (two branches summed)
  onnx_bn_folded.onnx      Conv + BatchNorm2d + ReLU exported in eval mode (the default): the
                           exporter folds the BatchNorm into the Conv, whose initializers are
                           named "onnx::Conv_<n>" (pathlift warns); theta is not the model's
  onnx_avgpool_pad.onnx    AvgPool2d(2, padding=1) (exported as Pad + AveragePool) and
                           AvgPool2d(3, stride=1, padding=1, count_include_pad=False)
  onnx_auto_pad.onnx       made with onnx.helper: a Conv with auto_pad SAME_UPPER (3x3, stride
                           1), a MaxPool with auto_pad VALID, a Conv with auto_pad SAME_LOWER
                           (stride 2 on an odd size: even total padding), Flatten, Gemm
"""

import io
import json
import os

import numpy as np
import onnx
import torch
from onnx import TensorProto, helper, numpy_helper
from torch import nn

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data")


class FlattenView(nn.Module):
    def __init__(self, mul=False):
        super().__init__()
        self.mul = mul
        self.conv = nn.Conv2d(2, 3, 3)
        self.fc = nn.Linear(3 * 4 * 4, 2)

    def forward(self, x):
        x = torch.relu(self.conv(x))
        if self.mul:
            x = x.view(x.size(0), x.size(1) * x.size(2) * x.size(3))
        else:
            x = x.view(x.size(0), -1)
        return self.fc(x)


class LinearNoBias(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 5, bias=False)
        self.fc2 = nn.Linear(5, 3, bias=False)
        self.fc3 = nn.Linear(4, 3, bias=False)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x))) + torch.relu(self.fc3(x))


class ConvBn(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 3, 3, padding=1)
        self.bn = nn.BatchNorm2d(3)
        self.fc = nn.Linear(3 * 5 * 5, 2)

    def forward(self, x):
        return self.fc(torch.flatten(torch.relu(self.bn(self.conv(x))), 1))


class AvgPad(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 2, 3)
        self.pool1 = nn.AvgPool2d(2, padding=1)
        self.pool2 = nn.AvgPool2d(3, stride=1, padding=1, count_include_pad=False)
        self.fc = nn.Linear(2 * 4 * 4, 2)

    def forward(self, x):
        x = self.pool2(self.pool1(torch.relu(self.conv(x))))
        return self.fc(torch.flatten(x, 1))


def theta(model, transposed=()):
    out = []
    for name, p in model.named_parameters():
        value = p.detach().double()
        out += (value.t() if name in transposed else value).flatten().tolist()
    return out


def save(name, proto, reference):
    helper.set_model_props(proto, {"pathlift_reference": json.dumps(reference)})
    path = os.path.join(OUT, name)
    onnx.save(proto, path)
    print(f"{name}: {os.path.getsize(path)} bytes")


def export(name, model, shape, with_theta=True, tolerance=None, **kwargs):
    model.eval()
    x = torch.randn(4, *shape)
    buffer = io.BytesIO()
    torch.onnx.export(model, x[:1], buffer, input_names=["input"], output_names=["output"],
                      dynamic_axes={"input": {0: "batch"}}, **kwargs)
    with torch.no_grad():
        y = model.double()(x.double())
    reference = {"input_shape": list(shape), "inputs": x.flatten(1).double().tolist(),
                 "outputs": y.flatten(1).tolist()}
    if with_theta:
        reference["theta"] = theta(model)
    if tolerance is not None:
        reference["tolerance"] = tolerance
    save(name, onnx.load_from_string(buffer.getvalue()), reference)


def merged_linear_branches():
    """LinearNoBias's two export forms in one graph: fc1 and fc2 as Transpose + MatMul (no
    constant folding), fc3 as MatMul by the pre-transposed "onnx::MatMul_<n>" initializer."""
    torch.manual_seed(11)
    model = LinearNoBias().eval()
    x = torch.randn(4, 4)
    plain = io.BytesIO()
    torch.onnx.export(model, x[:1], plain, input_names=["input"], output_names=["output"],
                      dynamic_axes={"input": {0: "batch"}}, do_constant_folding=False,
                      opset_version=13)
    folded = io.BytesIO()
    torch.onnx.export(model, x[:1], folded, input_names=["input"], output_names=["output"],
                      dynamic_axes={"input": {0: "batch"}}, opset_version=13)
    proto = onnx.load_from_string(plain.getvalue())
    folded_proto = onnx.load_from_string(folded.getvalue())
    # fc3's MatMul in the folded export reads an (in, out) initializer: put it in place of the
    # Transpose of fc3.weight.
    fc3 = next(n for n in folded_proto.graph.node if n.name == "/fc3/MatMul")
    weight = next(t for t in folded_proto.graph.initializer if t.name == fc3.input[1])
    assert weight.name.startswith("onnx::MatMul_") and list(weight.dims) == [4, 3]
    nodes = [n for n in proto.graph.node if n.name != "/fc3/Transpose"]
    for n in nodes:
        if n.name == "/fc3/MatMul":
            n.input[1] = weight.name
    del proto.graph.node[:]
    proto.graph.node.extend(nodes)
    inits = [t for t in proto.graph.initializer if t.name != "fc3.weight"] + [weight]
    del proto.graph.initializer[:]
    proto.graph.initializer.extend(inits)
    onnx.checker.check_model(proto)
    with torch.no_grad():
        y = model.double()(x.double())
    reference = {"input_shape": [4], "inputs": x.double().tolist(), "outputs": y.tolist(),
                 "theta": theta(model)}
    save("onnx_linear_nobias.onnx", proto, reference)


def auto_pad():
    """Conv (SAME_UPPER, 3x3) -> Relu -> MaxPool (VALID, 2x2, stride 2) -> Conv (SAME_LOWER,
    3x3, stride 2 on 3x3: total padding 2) -> Flatten -> Gemm, on 2x7x7 (after the pool 3x3)."""
    rng = np.random.default_rng(7)
    w1 = rng.standard_normal((3, 2, 3, 3)).astype(np.float32)
    b1 = rng.standard_normal(3).astype(np.float32)
    w2 = rng.standard_normal((2, 3, 3, 3)).astype(np.float32)
    b2 = rng.standard_normal(2).astype(np.float32)
    w3 = rng.standard_normal((2, 2 * 2 * 2)).astype(np.float32)
    b3 = rng.standard_normal(2).astype(np.float32)
    inits = [numpy_helper.from_array(a, n) for a, n in
             [(w1, "w1"), (b1, "b1"), (w2, "w2"), (b2, "b2"), (w3, "w3"), (b3, "b3")]]
    nodes = [
        helper.make_node("Conv", ["input", "w1", "b1"], ["c1"], name="same_upper",
                         auto_pad="SAME_UPPER", kernel_shape=[3, 3]),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu"),
        helper.make_node("MaxPool", ["r1"], ["p1"], name="valid", auto_pad="VALID",
                         kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["p1", "w2", "b2"], ["c2"], name="same_lower",
                         auto_pad="SAME_LOWER", kernel_shape=[3, 3], strides=[2, 2]),
        helper.make_node("Flatten", ["c2"], ["f"], name="flatten", axis=1),
        helper.make_node("Gemm", ["f", "w3", "b3"], ["output"], name="fc", transB=1),
    ]
    graph = helper.make_graph(
        nodes, "auto_pad",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", 2, 7, 7])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, ["batch", 2])], inits)
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(proto)
    # The reference: the same network in PyTorch (SAME_* with even totals are symmetric pads).
    x = torch.randn(4, 2, 7, 7, generator=torch.Generator().manual_seed(8))
    d = lambda a: torch.from_numpy(a.astype(np.float64))  # noqa: E731
    with torch.no_grad():
        h = torch.relu(torch.nn.functional.conv2d(x.double(), d(w1), d(b1), padding=1))
        h = torch.nn.functional.max_pool2d(h, 2)
        h = torch.nn.functional.conv2d(h, d(w2), d(b2), stride=2, padding=1)
        y = torch.flatten(h, 1) @ d(w3).t() + d(b3)
    reference = {"input_shape": [2, 7, 7], "inputs": x.flatten(1).double().tolist(),
                 "outputs": y.tolist(),
                 "theta": np.concatenate([a.astype(np.float64).ravel() for a in
                                          (w1, b1, w2, b2, w3, b3)]).tolist()}
    save("onnx_auto_pad.onnx", proto, reference)


def main():
    torch.manual_seed(10)
    export("onnx_flatten_view.onnx", FlattenView(), (2, 6, 6), opset_version=13,
           do_constant_folding=False)
    torch.manual_seed(12)
    export("onnx_flatten_mul.onnx", FlattenView(mul=True), (2, 6, 6))
    merged_linear_branches()
    torch.manual_seed(13)
    model = ConvBn()
    model.bn.running_mean.copy_(torch.randn(3) * 0.5)
    model.bn.running_var.copy_(torch.rand(3) + 0.5)
    model.bn.weight.data.copy_(torch.randn(3) * 0.5 + 1.0)
    # The exporter folds the BatchNorm in float32: the outputs agree to about 1e-7.
    export("onnx_bn_folded.onnx", model, (2, 5, 5), with_theta=False, tolerance=1e-6)
    torch.manual_seed(14)
    export("onnx_avgpool_pad.onnx", AvgPad(), (1, 8, 8), opset_version=13)
    auto_pad()


if __name__ == "__main__":
    main()
