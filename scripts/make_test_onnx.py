#!/usr/bin/python3
"""Writes the ONNX test models of tests/onnx_test.cpp into tests/data, with reference outputs.

Run with Debian's Python (torch 1.13, onnx 1.12): /usr/bin/python3 scripts/make_test_onnx.py

Models (fixed seeds, float32 weights, batch dimension first):
  lenet5.onnx         LeNet-5 on 1x28x28: Conv, Relu, MaxPool, Flatten, Gemm
  conv1d.onnx         Conv1d with groups, dilation, padding and stride, LeakyRelu, Dropout,
                      AveragePool (count_include_pad 0), Flatten, Gemm; batch dimension symbolic
  residual.onnx       a small residual net: Conv (no bias) + BatchNormalization + Relu, a skip
                      Add, a downsampling 1x1 conv, Concat, Sub, AveragePool, GlobalAveragePool,
                      a Reshape to flatten, MatMul + Add; height and width symbolic (the import
                      needs input_shape = 3,16,16)
  aliases.onnx        two batch norms whose weights (and biases) are equal: the exporter merges
                      them into one initializer and aliases the other with an Identity node
  unsupported.onnx    Gemm, Sigmoid, Gemm, Tanh, Gemm: refused, both operations listed
  ceil_mode.onnx      a MaxPool with ceil_mode (read since issue 31)

Export flags: torch.onnx.export in eval mode fuses Conv + BatchNormalization (its "eval
peephole" pass folds the batch norm into the convolution's weights). training=PRESERVE with the
model in eval mode skips that pass and still exports inference-mode BatchNormalization nodes;
do_constant_folding=False keeps every parameter an initializer named after the model's
parameter (constant folding would fold and rename them). opset 13.

onnx_reference.json holds, per model: the input shape, a few input samples (flattened, the
data columns of pathlift), the model's outputs on them computed in float64 (the float32 weights
cast exactly), and theta in pathlift's order (model.parameters() order, batch norms' weight and
bias replaced by a = gamma / sqrt(var + eps), b = beta - a mean, a MatMul's (in, out) weight
transposed) for the models small enough.
"""

import json
import os

import torch
from torch import nn

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data")


class LeNet5(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5, padding=2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.pool = nn.MaxPool2d(2)
        self.fc1 = nn.Linear(400, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        x = self.pool(torch.relu(self.conv1(x)))
        x = self.pool(torch.relu(self.conv2(x)))
        x = torch.flatten(x, 1)
        return self.fc3(torch.relu(self.fc2(torch.relu(self.fc1(x)))))


class Conv1dNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv1d(4, 8, 3, padding=2, dilation=2, groups=2)
        self.conv2 = nn.Conv1d(8, 8, 3, stride=2, padding=1, groups=4)
        self.act = nn.LeakyReLU(0.1)
        self.drop = nn.Dropout(0.5)
        self.pool = nn.AvgPool1d(3, stride=2, padding=1, count_include_pad=False)
        self.fc = nn.Linear(8 * 4, 5)

    def forward(self, x):
        x = torch.relu(self.conv1(x))
        x = self.pool(self.drop(self.act(self.conv2(x))))
        return self.fc(torch.flatten(x, 1))


class Residual(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(8)
        self.down = nn.Conv2d(8, 4, 1, stride=2, bias=False)
        self.bn3 = nn.BatchNorm2d(4)
        self.branch = nn.Conv2d(8, 4, 3, stride=2, padding=1)
        self.other = nn.Conv2d(8, 8, 1, stride=2)
        self.pool = nn.AvgPool2d(2)
        self.gap = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Parameter(torch.randn(8, 6) * 0.3)  # x @ fc: exported as MatMul
        self.fc_bias = nn.Parameter(torch.randn(6) * 0.1)

    def forward(self, x):
        x = torch.relu(self.bn1(self.conv1(x)))
        x = torch.relu(self.bn2(self.conv2(x)) + x)
        y = torch.cat([self.bn3(self.down(x)), self.branch(x)], 1)
        y = torch.relu(y - self.other(x))
        y = self.gap(self.pool(y))
        return y.reshape(-1, 8) @ self.fc + self.fc_bias


class Aliases(nn.Module):
    """Two batch norms with PyTorch's initial weight (1) and bias (0) but different running
    statistics: the exporter keeps one initializer for the equal parameters and names the
    others by Identity nodes."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(2, 4, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(4)
        self.conv2 = nn.Conv2d(4, 4, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(4)
        self.fc = nn.Linear(4 * 4 * 4, 3)

    def forward(self, x):
        x = torch.relu(self.bn1(self.conv1(x)))
        x = torch.relu(self.bn2(self.conv2(x)))
        return self.fc(torch.flatten(x, 1))


class CeilPool(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 2, 3)
        self.pool = nn.MaxPool2d(2, ceil_mode=True)
        self.fc = nn.Linear(2 * 3 * 3, 2)

    def forward(self, x):
        return self.fc(torch.flatten(self.pool(self.conv(x)), 1))


class Unsupported(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 3)
        self.fc2 = nn.Linear(3, 3)
        self.fc3 = nn.Linear(3, 2)

    def forward(self, x):
        return self.fc3(torch.tanh(self.fc2(torch.sigmoid(self.fc1(x)))))


def randomise_batch_norms(model):
    """Non-trivial running statistics and affine parameters, as after training."""
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.copy_(torch.randn_like(m.running_mean) * 0.5)
            m.running_var.copy_(torch.rand_like(m.running_var) + 0.5)
            m.weight.data.copy_(torch.randn_like(m.weight) * 0.5 + 1.0)
            m.bias.data.copy_(torch.randn_like(m.bias) * 0.2)


def theta(model, transposed=()):
    """pathlift's theta: model.parameters() order, batch norms as a and b (float64), the
    (in, out) weights of a MatMul (`transposed`) as (out, in) like a Linear's."""
    bn = {}
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            w = m.weight.double()
            a = w / torch.sqrt(m.running_var.double() + m.eps)
            bn[id(m.weight)] = a
            bn[id(m.bias)] = m.bias.double() - a * m.running_mean.double()
    out = []
    for name, p in model.named_parameters():
        value = bn.get(id(p), p.detach().double())
        out += (value.t() if name in transposed else value).flatten().tolist()
    return out


def export(name, model, shape, dynamic_axes=None, samples=3, with_theta=True, transposed=()):
    model.eval()
    x = torch.randn(samples, *shape)
    path = os.path.join(OUT, name)
    torch.onnx.export(model, x[:1], path, input_names=["input"], output_names=["output"],
                      opset_version=13, training=torch.onnx.TrainingMode.PRESERVE,
                      do_constant_folding=False, dynamic_axes=dynamic_axes)
    with torch.no_grad():
        y = model.double()(x.double())
    entry = {"input_shape": list(shape), "inputs": x.flatten(1).double().tolist(),
             "outputs": y.flatten(1).tolist()}
    if with_theta:
        entry["theta"] = theta(model, transposed)
    print(f"{name}: {os.path.getsize(path)} bytes")
    return entry


def main():
    torch.manual_seed(0)
    reference = {}
    reference["lenet5.onnx"] = export("lenet5.onnx", LeNet5(), (1, 28, 28), with_theta=False)
    torch.manual_seed(1)
    reference["conv1d.onnx"] = export("conv1d.onnx", Conv1dNet(), (4, 16),
                                      dynamic_axes={"input": {0: "batch"}})
    torch.manual_seed(2)
    residual = Residual()
    randomise_batch_norms(residual)
    reference["residual.onnx"] = export("residual.onnx", residual, (3, 16, 16),
                                        dynamic_axes={"input": {0: "batch", 2: "h", 3: "w"}},
                                        transposed=("fc",))
    torch.manual_seed(5)
    aliases = Aliases()
    for bn in (aliases.bn1, aliases.bn2):
        bn.running_mean.copy_(torch.randn(4) * 0.5)
        bn.running_var.copy_(torch.rand(4) + 0.5)
    reference["aliases.onnx"] = export("aliases.onnx", aliases, (2, 4, 4))
    torch.manual_seed(3)
    export("unsupported.onnx", Unsupported(), (4,), with_theta=False)
    torch.manual_seed(4)
    export("ceil_mode.onnx", CeilPool(), (1, 7, 7), with_theta=False)
    with open(os.path.join(OUT, "onnx_reference.json"), "w") as f:
        json.dump(reference, f)
        f.write("\n")


if __name__ == "__main__":
    main()
